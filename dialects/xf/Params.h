//===- Params.h - parameters and inputs of a model function -----*- C++ -*-===//
//
// A model function's arguments are data inputs (`xf.input`) and parameters
// (`xf.param`). Passes, the executor, the summary and checkpoints all read
// them through these helpers.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_DIALECTS_XF_PARAMS_H
#define SHARDC_DIALECTS_XF_PARAMS_H

#include "dialects/xf/XfDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace shardc::xf {

struct ParamArg {
  unsigned index;
  ParamAttr attr;
  mlir::RankedTensorType type;
  int64_t numel() const { return type.getNumElements(); }
};

struct InputArg {
  unsigned index;
  std::string kind; ///< tokens | targets | token_types | loss_mask
  mlir::RankedTensorType type;
};

std::vector<ParamArg> getParams(mlir::func::FuncOp func);
std::vector<InputArg> getInputs(mlir::func::FuncOp func);

/// The layer a parameter belongs to: the first dot-separated component of
/// its name that is a number ("transformer.h.3.mlp.c_fc.weight" -> 3), else
/// -1 (embeddings, the final norm). Read by the passes that group a step's
/// ops by layer (-xf-recompute, -xf-pipeline).
int64_t layerIndexOf(llvm::StringRef name);


/// The pipeline stage of a value of a pipelined step (-xf-pipeline): its
/// argument's or defining op's `xf.stage`, a transfer's receiving stage; -1
/// (every stage) without one. Read by the memory planner, lowering and the
/// reference executor alike.
int64_t stageOf(mlir::Value v);

/// Whether `v` is function arguments moved only by ops `isLayout` accepts
/// (reshapes, concats, ...: each of their operands again such a value); a
/// function argument itself is one. -xf-fuse-qkv's packed weights are: a
/// reshape of a concat of reshapes of parameters.
bool isArgumentLayout(mlir::Value v, llvm::function_ref<bool(mlir::Operation *)> isLayout);

/// The step argument `v` is, or the argument a cast of which it is (ZeRO-1/2
/// make a weight's bf16 copy from its fp32 master's shard right before
/// gathering it); null otherwise.
mlir::BlockArgument argumentOrCastOf(mlir::Value v);

/// The model function of a module: @forward if present, else the only
/// function with a body. Emits an error and returns null otherwise.
mlir::func::FuncOp getModelFunction(mlir::ModuleOp module, llvm::StringRef name = "");

} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_PARAMS_H
