//===- Params.h - parameter values and data batches for a model -*- C++ -*-===//
//
// Builds the argument list of a model function: parameters initialized by the
// counter-based RNG (seed, name, global element index) or loaded from
// safetensors, and data inputs cut from a token file.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_PARAMS_H
#define SHARDC_COMPILER_EXECUTOR_PARAMS_H

#include "compiler/executor/Executor.h"
#include "dialects/xf/Params.h"

#include <map>
#include <string>

namespace shardc::data {
class TokenFile;
}

namespace shardc::exec {

/// Parameter values by name.
using ParamValues = std::map<std::string, HostTensor>;

/// Initializes every parameter of `func` from `seed`.
ParamValues initParams(mlir::func::FuncOp func, uint64_t seed);

/// Loads every parameter of `func` from a safetensors file; tensors stored in
/// another float dtype are converted (rounded to nearest even). Throws
/// rt::Error naming the file and the tensor on a missing tensor or a shape
/// mismatch.
ParamValues loadParams(mlir::func::FuncOp func, const std::string &path);

/// Initializes every parameter of `func` from released weights: a Hugging Face
/// GPT-2 safetensors file (names with or without the `transformer.` prefix;
/// `attn.c_attn` [h, 3h] Conv1D (in, out) weight and [3h] bias split into
/// q/k/v; `lm_head.weight` accepted when tied, i.e. equal to `wte.weight`;
/// HF's `attn.bias`/`attn.masked_bias` buffers ignored), `shardc export`'s
/// output (the same names) or shardc's own layout (split q/k/v). A token
/// embedding with fewer rows than the model's (50257 vs the padded 50304) is
/// copied and the extra rows are zero. Throws rt::Error naming the tensor on a
/// missing tensor, a shape mismatch (expected and found shapes) or an
/// unknown extra tensor.
ParamValues initParamsFrom(mlir::func::FuncOp func, const std::string &path);

/// Saves parameters to a safetensors file (atomically).
void saveParams(const ParamValues &params, const std::string &path,
                const std::map<std::string, std::string> &metadata = {});

/// Cuts one batch for the function's data inputs from `tokens` at `position`
/// and returns the full argument list (inputs and parameters, in order).
/// BERT-style functions (a `token_types` input) get masked-LM inputs: 15% of
/// positions, chosen by the counter-based RNG keyed by (seed, position), are
/// replaced by `maskToken` and become targets; the others are ignored (-100).
std::vector<HostTensor> buildArguments(mlir::func::FuncOp func, const ParamValues &params,
                                       const data::TokenFile &tokens, int64_t position,
                                       uint64_t seed, int32_t maskToken = -1);

/// Fills the data inputs of micro-batch `microBatch` (arguments whose
/// `xf.micro_batch` is that index; arguments without one count as 0) with the
/// batch at `position`, as buildArguments does. `args` is resized to the
/// function's arity; other entries are left alone.
void fillInputs(mlir::func::FuncOp func, std::vector<HostTensor> &args,
                const data::TokenFile &tokens, int64_t position, uint64_t seed,
                int32_t maskToken, int64_t microBatch);

/// Converts a float HostTensor to another float dtype (round to nearest even).
HostTensor convertFloat(const HostTensor &t, DType to);

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_PARAMS_H
