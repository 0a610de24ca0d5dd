//===- MixedPrecision.cpp - bf16/fp16 compute with f32 master weights -----===//
//
// Autocast for xf: the ops whose cost is in the tensor cores (matmul,
// attention, the fused logit GEMM) read bf16 or fp16 copies of their f32
// operands, and (activations=compute, the default) the values between them
// stay in the compute type: GEMM and attention results, bias adds, GELU,
// SwiGLU, reshapes. The residual stream, norm statistics, losses and
// reductions stay f32; a norm that only feeds GEMMs stores its result in the
// compute type. This is PyTorch autocast's policy, with each value rounded
// where autocast rounds it. The f32 parameters remain the master weights
// that AdamW updates.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/FunctionTarget.h"

#include "dialects/xf/Params.h"
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

/// Whether `op` computes elementwise (or moves data) and so may run on the
/// compute type wherever its inputs are in it: the activations between the
/// GEMMs of a block.
bool followsInputType(Operation *op) {
  return isa<GeluOp, SwigluOp, SoftmaxOp, RopeOp, DropoutOp, ScaleOp, ReshapeOp, TransposeOp,
             BiasAddOp, AddOp>(op);
}

/// Whether `v` reaches a loss through reshapes and transposes only (logits).
bool feedsLoss(Value v) {
  for (Operation *user : v.getUsers()) {
    if (isa<CrossEntropyOp>(user))
      return true;
    if (isa<ReshapeOp, TransposeOp>(user) && feedsLoss(user->getResult(0)))
      return true;
  }
  return false;
}

class MixedPrecision : public shardc::impl::XfMixedPrecisionBase<MixedPrecision> {
public:
  using XfMixedPrecisionBase::XfMixedPrecisionBase;

  void runOnOperation() override;

private:
  /// `v` converted to element type `elt` by one xf.cast right after its
  /// definition, shared by every op that reads it so.
  Value castOnce(Value v, Type elt, llvm::DenseMap<Value, Value> &cache) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() == elt)
      return v;
    auto it = cache.find(v);
    if (it != cache.end())
      return it->second;
    OpBuilder b(&getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    Value c = CastOp::create(b, v.getLoc(), t.clone(elt), v);
    cache[v] = c;
    return c;
  }
  /// The compute-type copy of `v` (itself if it is stored so already). A
  /// reshape or concat of parameters (-xf-fuse-qkv's packed weights) is
  /// rebuilt on the compute type over their casts: the casts are then of
  /// parameters, which -xf-adamw's low-precision copies replace, instead of
  /// one cast of the packed weight per step.
  Value lowered(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !isF32(v) ||
        !isArgumentLayout(v, [](Operation *op) { return isa<ReshapeOp, ConcatOp>(op); }))
      return castOnce(v, compute_, lowered_);
    if (auto it = lowered_.find(v); it != lowered_.end())
      return it->second;
    SmallVector<Value> operands;
    for (Value o : def->getOperands())
      operands.push_back(lowered(o));
    OpBuilder b(def);
    b.setInsertionPointAfter(def);
    Operation *low = b.clone(*def);
    low->setOperands(operands);
    low->getResult(0).setType(cast<RankedTensorType>(v.getType()).clone(compute_));
    layoutLeftovers_.push_back(def);
    return lowered_[v] = low->getResult(0);
  }
  /// The f32 copy of a value this pass moved to the compute type, for an op
  /// that computes on f32 (a residual add, a norm, a loss).
  Value raised(Value v) { return castOnce(v, f32_, raised_); }

  bool isF32(Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); }
  bool isLow(Value v) { return cast<RankedTensorType>(v.getType()).getElementType() == compute_; }
  /// Stores `r` in the compute type from now on.
  void lower(Value r) {
    r.setType(cast<RankedTensorType>(r.getType()).clone(compute_));
    moved_.insert(r);
  }

  void autocast(Operation *op);
  /// Replaces f32 attention `op` by `low`, its compute-type twin: the result
  /// stays low with low activations, else is cast back to f32.
  void replaceByLow(Operation *op, Value low) {
    Value result = low;
    if (lowActivations_) {
      moved_.insert(low);
    } else {
      OpBuilder b(op);
      result = CastOp::create(b, op->getLoc(), op->getResult(0).getType(), low);
    }
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }
  void storeNormsLow();

  Type compute_, f32_;
  bool lowActivations_ = true, lowResidual_ = false;
  llvm::DenseMap<Value, Value> lowered_, raised_;
  /// f32 layout ops lowered() rebuilt on the compute type; erased at the end
  /// when nothing reads them any more.
  SmallVector<Operation *> layoutLeftovers_;
  /// Values this pass moved from f32 to the compute type.
  llvm::DenseSet<Value> moved_;
};

/// One op, in program order (its operands are settled).
void MixedPrecision::autocast(Operation *op) {
  auto floatOperands = [&] {
    SmallVector<OpOperand *> v;
    for (OpOperand &o : op->getOpOperands())
      if (isa<FloatType>(cast<RankedTensorType>(o.get().getType()).getElementType()))
        v.push_back(&o);
    return v;
  };
  auto f32OrLow = [&](Value v) { return isF32(v) || isLow(v); };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    if (!f32OrLow(mm.getLhs()) || !f32OrLow(mm.getRhs()) || !isF32(mm.getResult()))
      return;
    mm.getLhsMutable().assign(lowered(mm.getLhs()));
    mm.getRhsMutable().assign(lowered(mm.getRhs()));
    // The GEMM accumulates in f32 and rounds its result once; logits stay f32
    // for the loss.
    if (lowActivations_ && !feedsLoss(mm.getResult()))
      lower(mm.getResult());
    return;
  }
  if (auto lce = dyn_cast<LinearCrossEntropyOp>(op)) {
    if (f32OrLow(lce.getX()) && f32OrLow(lce.getWeight())) {
      lce.getXMutable().assign(lowered(lce.getX()));
      lce.getWeightMutable().assign(lowered(lce.getWeight()));
    }
    return;
  }
  if (auto at = dyn_cast<AttentionOp>(op)) {
    if (!isF32(at.getResult()) || !f32OrLow(at.getQ()) || !f32OrLow(at.getK()) ||
        !f32OrLow(at.getV()))
      return;
    OpBuilder b(at);
    auto low = AttentionOp::create(b, at.getLoc(), lowered(at.getQ()), lowered(at.getK()),
                                   lowered(at.getV()), at.getCausal(),
                                   at.getScale().convertToDouble());
    replaceByLow(at, low);
    return;
  }
  if (auto at = dyn_cast<PackedAttentionOp>(op)) {
    if (!isF32(at.getResult()) || !f32OrLow(at.getQkv()))
      return;
    OpBuilder b(at);
    Value qkv = lowered(at.getQkv());
    auto low = PackedAttentionOp::create(
        b, at.getLoc(), at.getType().clone(cast<RankedTensorType>(qkv.getType()).getElementType()),
        qkv, at.getCausalAttr(), at.getScaleAttr());
    replaceByLow(at, low);
    return;
  }
  if (!lowActivations_)
    return;
  SmallVector<OpOperand *> operands = floatOperands();
  bool anyMoved = llvm::any_of(operands, [&](OpOperand *o) { return moved_.contains(o->get()); });
  if (!anyMoved)
    return;
  // An elementwise op or view on compute-type inputs runs on the compute
  // type: its other f32 operands (a bias) are cast, its result stays low. An
  // add of a low and an f32 value is a residual add: it stays f32 (below)
  // unless the residual stream is low too, and then so are the norms reading
  // the stream (their scale and shift cast).
  bool allMoved =
      llvm::all_of(operands, [&](OpOperand *o) { return moved_.contains(o->get()); });
  bool runsLow = isa<LayerNormOp, RmsNormOp>(op)
                     ? lowResidual_ && moved_.contains(op->getOperand(0))
                     : followsInputType(op) && (allMoved || !isa<AddOp>(op) || lowResidual_);
  bool allLowOrMovable =
      runsLow && op->getNumResults() == 1 && isF32(op->getResult(0)) &&
      llvm::all_of(operands,
                   [&](OpOperand *o) { return moved_.contains(o->get()) || isF32(o->get()); });
  if (allLowOrMovable) {
    for (OpOperand *o : operands)
      o->set(lowered(o->get()));
    lower(op->getResult(0));
    return;
  }
  // Anything else computes on f32, as the model wrote it: the residual
  // stream, norms, losses, reductions.
  for (OpOperand *o : operands)
    if (moved_.contains(o->get()))
      o->set(raised(o->get()));
}

/// A norm whose every reader takes its result in the compute type (the GEMM
/// inputs of a pre-norm block) stores the result so, rounded once from its
/// f32 computation, instead of being cast after it.
void MixedPrecision::storeNormsLow() {
  SmallVector<Operation *> norms;
  getOperation().walk([&](Operation *op) {
    if (isa<LayerNormOp, RmsNormOp>(op) && isF32(op->getResult(0)))
      norms.push_back(op);
  });
  for (Operation *op : norms) {
    Value r = op->getResult(0);
    if (r.use_empty() || !llvm::all_of(r.getUsers(), [&](Operation *u) {
          return isa<CastOp>(u) && isLow(u->getResult(0));
        }))
      continue;
    SmallVector<Operation *> casts(r.getUsers().begin(), r.getUsers().end());
    r.setType(cast<RankedTensorType>(r.getType()).clone(compute_));
    for (Operation *c : casts) {
      c->getResult(0).replaceAllUsesWith(r);
      c->erase();
    }
  }
}

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
  if (activations == "compute") {
    lowActivations_ = true;
  } else if (activations == "f32") {
    lowActivations_ = false;
  } else {
    f.emitError() << "-xf-mixed-precision: activations must be 'compute' or 'f32', got '"
                  << activations << "'";
    return signalPassFailure();
  }
  if (residual == "f32") {
    lowResidual_ = false;
  } else if (residual == "compute") {
    lowResidual_ = true;
  } else {
    f.emitError() << "-xf-mixed-precision: residual must be 'f32' or 'compute', got '" << residual
                  << "'";
    return signalPassFailure();
  }
  if (lowResidual_ && !lowActivations_) {
    f.emitError() << "-xf-mixed-precision: residual=compute needs activations=compute";
    return signalPassFailure();
  }
  f32_ = b.getF32Type();
  lowered_.clear();
  raised_.clear();
  moved_.clear();
  SmallVector<Operation *> ops;
  for (Operation &op : f.getBody().front())
    ops.push_back(&op); // the terminator too: it returns what the model wrote
  for (Operation *op : ops)
    autocast(op);
  if (lowActivations_)
    storeNormsLow();
  // Consumers were rebuilt after their operands: erase in reverse.
  for (Operation *op : llvm::reverse(layoutLeftovers_))
    if (op->use_empty())
      op->erase();
  layoutLeftovers_.clear();
}

} // namespace
