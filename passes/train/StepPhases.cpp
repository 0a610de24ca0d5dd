//===- StepPhases.cpp - forward and backward of a training step -----------===//

#include "passes/train/StepPhases.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/abi/OpTable.h"
#include "runtime/abi/StateNames.h"

using namespace mlir;
using namespace shardc::xf;

shardc::StepPhases shardc::classifyStep(func::FuncOp func) {
  StepPhases phases;
  Block &body = func.getBody().front();
  // Arguments: the layer of a parameter, the micro-batch of an input.
  llvm::DenseMap<Value, int64_t> layer, microBatch;
  llvm::DenseSet<Value> parameters;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    int64_t l = -1, mb = -1;
    if (auto p = func.getArgAttrOfType<ParamAttr>(i, XfDialect::kParamAttrName))
      l = layerIndexOf(p.getName());
    else if (auto st = func.getArgAttrOfType<StringAttr>(i, XfDialect::kStateAttrName);
             st && st.getValue().starts_with("param:"))
      l = layerIndexOf(st.getValue().drop_front(6));
    else if (st && !abi::lowPrecisionCopyOf(st.getValue()).empty())
      // The bf16/f16 copy the optimizer writes: its parameter's layer.
      l = layerIndexOf(abi::lowPrecisionCopyOf(st.getValue()));
    if (func.getArgAttr(i, XfDialect::kParamAttrName) ||
        func.getArgAttr(i, XfDialect::kStateAttrName))
      parameters.insert(arg);
    if (auto m = func.getArgAttrOfType<IntegerAttr>(i, XfDialect::kMicroBatchAttrName))
      mb = m.getInt();
    layer[arg] = l;
    microBatch[arg] = mb;
  }
  unsigned pos = 0;
  for (Operation &op : body.without_terminator()) {
    phases.position[&op] = pos++;
    // A replay -xf-recompute cloned into the backward runs in the backward.
    bool isBackward = isa<CrossEntropyGradOp, LinearCrossEntropyGradOp>(op) ||
                      op.hasAttr(XfDialect::kRecomputedAttrName);
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp(); def && phases.backward.contains(def))
        isBackward = true;
    if (isBackward) {
      phases.backward.insert(&op);
      continue;
    }
    int64_t paramLayer = -2, operandLayer = -1, mb = -1;
    for (Value v : op.getOperands()) {
      int64_t l = layer.lookup(v);
      if (parameters.contains(v))
        paramLayer = std::max(paramLayer, l);
      else
        operandLayer = std::max(operandLayer, l);
      mb = std::max(mb, microBatch.lookup(v));
    }
    int64_t l = paramLayer != -2 ? paramLayer : operandLayer;
    for (Value r : op.getResults()) {
      layer[r] = l;
      microBatch[r] = mb;
    }
    phases.layer[&op] = l;
    phases.microBatch[&op] = mb;
  }
  return phases;
}

bool shardc::StepPhases::readOnlyInBackward(Value v) const {
  if (v.use_empty())
    return false;
  for (Operation *user : v.getUsers()) {
    if (isBackward(user))
      continue;
    const abi::OpSpec *spec = abi::findOp(user->getName().getStringRef());
    bool view = spec && spec->viewInPlace && user->getNumOperands() == 1 &&
                user->getNumResults() == 1;
    if (!view || !readOnlyInBackward(user->getResult(0)))
      return false;
  }
  return true;
}

bool shardc::StepPhases::reshardsForBackward(Operation *op) const {
  if (op->getNumOperands() == 0 || op->getNumResults() != 1)
    return false;
  // The input's producer, behind in-place views (a reshape replayed in the
  // backward of a kept forward value views that value).
  Operation *def = op->getOperand(0).getDefiningOp();
  while (def && def->getBlock() == op->getBlock()) {
    const abi::OpSpec *spec = abi::findOp(def->getName().getStringRef());
    if (!spec || !spec->viewInPlace || def->getNumOperands() != 1 || def->getNumResults() != 1)
      break;
    def = def->getOperand(0).getDefiningOp();
  }
  return def && !isBackward(def) && readOnlyInBackward(op->getResult(0));
}

bool shardc::feedsOnlyTheOptimizer(Operation *op) {
  return !op->use_empty() && llvm::all_of(op->getUsers(), [](Operation *user) {
    return isa<AdamWOp, MultiAdamWOp, SumSquaresOp, MultiSumSquaresOp>(user) ||
           (isa<CastOp, SplitOp, ReshapeOp>(user) && feedsOnlyTheOptimizer(user));
  });
}
