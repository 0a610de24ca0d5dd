//===- InitFrom.h - model weights from a safetensors file -------*- C++ -*-===//
//
// `--init-from FILE` of `shardc run`, `shardc train` and a compiled step:
// the parameters of a model, by name, from a safetensors file written by
// Hugging Face (GPT-2: names with or without `transformer.`, the fused
// Conv1D `attn.c_attn` split into q/k/v, a 50257-row vocabulary padded with
// zero rows to the model's, a stored `lm_head.weight` that must be the tied
// embedding, the causal-mask buffers ignored) or by shardc (`shardc export`,
// `shardc run/train --save`). Any other tensor, a missing parameter or a
// shape mismatch is an Error naming the tensor, the found and expected shapes
// and the parameter. MLIR-free: the compiler's executor and the runtime both
// read through it.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CHECKPOINT_INITFROM_H
#define SHARDC_RUNTIME_CHECKPOINT_INITFROM_H

#include "runtime/HostTensor.h"
#include "runtime/checkpoint/Safetensors.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc::ckpt {

/// A parameter of the model: its name, whether it is an embedding table (its
/// rows may be padded) and its (global) shape.
struct InitParam {
  std::string name;
  bool embedding = false;
  std::vector<int64_t> shape;
};

/// The parameters of `params` in a safetensors file: the header is read and
/// every name, shape and layout rule above checked when it is built (all the
/// errors); tensor data is read only by readBlock, and only the block asked
/// for (a rank reads the rows and columns it holds, never the whole file;
/// a stored tied lm_head is compared with wte in 1 MiB chunks). A block that
/// is a whole file tensor is checked against its CRC32C if the file has one
/// (shardc's files); a partial block cannot be.
class InitSource {
public:
  InitSource(const std::string &path, const std::vector<InitParam> &params);
  /// The block [offsets, offsets + shape) of parameter `param` (global
  /// coordinates, the model's shape), in the file's dtype; padding rows zero.
  rt::HostTensor readBlock(const std::string &param, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &shape) const;
  rt::HostTensor readWhole(const std::string &param) const;
  /// Tensor bytes read from the file so far.
  uint64_t bytesRead() const { return bytesRead_; }

private:
  struct Source {
    std::string tensor; ///< the file's tensor (a fused c_attn for q/k/v)
    rt::DType dtype = rt::DType::F32;
    std::vector<int64_t> shape;     ///< the parameter's
    std::vector<int64_t> fileShape; ///< the file tensor's (fewer rows: padding)
    int64_t colOffset = 0;          ///< into the file tensor's last dim
  };
  SafetensorsIndex index_;
  std::map<std::string, Source> sources_;
  mutable std::ifstream file_; ///< one stream for every read
  mutable uint64_t bytesRead_ = 0;
};

/// Every parameter of `params`, in the file's dtype with the parameter's
/// shape. Throws rt::Error.
std::map<std::string, rt::HostTensor> readInitParams(const std::string &path,
                                                 const std::vector<InitParam> &params);

} // namespace shardc::ckpt

#endif // SHARDC_RUNTIME_CHECKPOINT_INITFROM_H
