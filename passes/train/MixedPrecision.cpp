//===- MixedPrecision.cpp - bf16/fp16 compute with f32 master weights -----===//
//
// Autocast for xf: the ops whose cost is in the tensor cores (matmul,
// attention, the fused logit GEMM) read bf16 or fp16 copies of their f32
// operands; everything numerically delicate stays in f32. The f32 parameters
// remain the master weights that AdamW updates.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/FunctionTarget.h"

#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_XFMIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::xf;

namespace {

class MixedPrecision : public shardc::impl::XfMixedPrecisionBase<MixedPrecision> {
public:
  using XfMixedPrecisionBase::XfMixedPrecisionBase;

  void runOnOperation() override;

private:
  /// The low-precision copy of f32 value `v`, created once after its
  /// definition.
  Value lowered(Value v) {
    auto it = casts_.find(v);
    if (it != casts_.end())
      return it->second;
    OpBuilder b(&getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    auto t = cast<RankedTensorType>(v.getType());
    Value c = CastOp::create(b, v.getLoc(), t.clone(compute_), v);
    casts_[v] = c;
    return c;
  }

  bool isF32(Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); }

  Type compute_;
  llvm::DenseMap<Value, Value> casts_;
};

void MixedPrecision::runOnOperation() {
  func::FuncOp f = getOperation();
  FailureOr<bool> target = shardc::isTargetFunction(f, function, "-xf-mixed-precision");
  if (failed(target))
    return signalPassFailure();
  if (!*target)
    return;
  OpBuilder b(&getContext());
  if (compute == "bf16") {
    compute_ = b.getBF16Type();
  } else if (compute == "f16" || compute == "fp16") {
    compute_ = b.getF16Type();
  } else {
    f.emitError() << "-xf-mixed-precision: compute must be bf16 or f16, got '" << compute << "'";
    return signalPassFailure();
  }
  casts_.clear();
  SmallVector<Operation *> ops;
  f.walk([&](Operation *op) {
    if (isa<MatmulOp, AttentionOp, LinearCrossEntropyOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (isF32(mm.getLhs()) && isF32(mm.getRhs())) {
        mm.getLhsMutable().assign(lowered(mm.getLhs()));
        mm.getRhsMutable().assign(lowered(mm.getRhs()));
      }
    } else if (auto lce = dyn_cast<LinearCrossEntropyOp>(op)) {
      if (isF32(lce.getX()) && isF32(lce.getWeight())) {
        lce.getXMutable().assign(lowered(lce.getX()));
        lce.getWeightMutable().assign(lowered(lce.getWeight()));
      }
    } else if (auto at = dyn_cast<AttentionOp>(op)) {
      if (!isF32(at.getQ()))
        continue;
      b.setInsertionPoint(at);
      Value q = lowered(at.getQ()), k = lowered(at.getK()), v = lowered(at.getV());
      auto low = AttentionOp::create(b, at.getLoc(), q, k, v, at.getCausal(),
                                     at.getScale().convertToDouble());
      Value back = CastOp::create(b, at.getLoc(), at.getType(), low);
      at.getResult().replaceAllUsesWith(back);
      at.erase();
    }
  }
}

} // namespace
