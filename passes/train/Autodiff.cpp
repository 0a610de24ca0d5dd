//===- Autodiff.cpp - reverse-mode differentiation of xf functions --------===//
//
// Builds the gradient function of a forward + loss model. The pass knows no
// op: each op's derivative comes from its VJPOpInterface (XfVJP.cpp). The
// pass clones the forward once per micro-batch, walks each clone backwards
// from the loss, sums the gradients of values with several uses and returns
// the loss and one gradient per parameter.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace shardc {
#define GEN_PASS_DEF_XFAUTODIFF
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;

static constexpr int64_t kMaxMicroBatches = 4096;
using namespace shardc::xf;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// The loss a forward function returns: one 0-d f32 or f64 tensor.
FailureOr<Value> findLoss(func::FuncOp f) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  auto isScalarLoss = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.getRank() == 0 && (t.getElementType().isF32() || t.getElementType().isF64());
  };
  if (ret.getNumOperands() != 1 || !isScalarLoss(ret.getOperand(0))) {
    std::string types;
    llvm::raw_string_ostream os(types);
    llvm::interleaveComma(ret.getOperandTypes(), os);
    return ret.emitError() << "@" << f.getSymName()
                           << " must return exactly one scalar loss (tensor<f32> or "
                              "tensor<f64>) to be differentiated; it returns ("
                           << types << ")";
  }
  return ret.getOperand(0);
}

/// `v` cloned (with what it is built from, once per `map`) at `b`.
Value rebuild(OpBuilder &b, Value v, IRMapping &map) {
  Operation *def = v.getDefiningOp();
  if (!def || map.contains(v))
    return map.lookupOrDefault(v);
  for (Value o : def->getOperands())
    rebuild(b, o, map);
  // A replay of forward values in the backward, as -xf-recompute's: the
  // step's phases (StepPhases.h) count it as backward.
  b.clone(*def, map)->setAttr(XfDialect::kRecomputedAttrName, b.getUnitAttr());
  return map.lookup(v);
}

/// Packed weights (-xf-fuse-qkv's concatenations of parameters) that the
/// backward ops from `first` on read are rebuilt right before each of them:
/// the forward's copy then dies with its forward reader instead of living
/// until the backward (3·h² elements per layer, 737 MB for GPT-2 1.5B in
/// bf16), for one more copy of the weights per use.
void rebuildPackedWeights(Operation *first, const llvm::DenseSet<Operation *> &forward) {
  SmallVector<Operation *> ops;
  for (Operation *op = first; op; op = op->getNextNode())
    ops.push_back(op);
  for (Operation *op : ops)
    for (OpOperand &use : op->getOpOperands()) {
      Operation *def = use.get().getDefiningOp();
      bool concat = false;
      auto layout = [&](Operation *op) {
        concat |= isa<ConcatOp>(op);
        return isa<ReshapeOp, TransposeOp, CastOp, ConcatOp>(op);
      };
      if (!def || !forward.contains(def) || !isArgumentLayout(use.get(), layout) || !concat)
        continue;
      OpBuilder b(op);
      IRMapping map;
      use.set(rebuild(b, use.get(), map));
    }
}

class Autodiff : public shardc::impl::XfAutodiffBase<Autodiff> {
public:
  using XfAutodiffBase::XfAutodiffBase;

  void runOnOperation() override {
    if (failed(build()))
      signalPassFailure();
  }

private:
  LogicalResult build();

  /// Adds `g` to the gradient of `v`.
  void accumulate(OpBuilder &b, Value v, Value g) {
    auto [it, inserted] = grads_.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, v.getLoc(), it->second, g);
  }

  /// Runs the VJP rules of `ops` in reverse order.
  LogicalResult backward(OpBuilder &b, ArrayRef<Operation *> ops);

  llvm::DenseMap<Value, Value> grads_;
};

LogicalResult Autodiff::backward(OpBuilder &b, ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads_.lookup(r));
      any |= resultGrads.back() != nullptr;
    }
    if (!any)
      continue; // does not reach the loss
    auto vjp = dyn_cast<VJPOpInterface>(op);
    if (!vjp)
      return op->emitError() << "'" << op->getName()
                             << "' is not differentiable (it has no VJP rule), but the loss "
                                "depends on its result";
    SmallVector<Value> operandGrads;
    if (failed(vjp.buildVJP(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitError() << "VJP rule of '" << op->getName() << "' returned "
                             << operandGrads.size() << " gradients for "
                             << op->getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g || !isFloatTensor(operand))
        continue;
      if (g.getType() != operand.getType())
        return op->emitError() << "VJP rule of '" << op->getName() << "' returned a gradient of type "
                               << g.getType() << " for an operand of type " << operand.getType();
      accumulate(b, operand, g);
    }
    for (Value r : op->getResults())
      grads_.erase(r); // activations' gradients are dead once consumed
  }
  return success();
}

LogicalResult Autodiff::build() {
  ModuleOp module = getOperation();
  auto src = module.lookupSymbol<func::FuncOp>(function);
  if (!src || src.isExternal())
    return module.emitError() << "-xf-autodiff: no function @" << function << " with a body";
  if (module.lookupSymbol(output))
    return src.emitError() << "-xf-autodiff: a symbol @" << output << " already exists";
  // Each micro-batch is a clone of the forward in the step: bounded so a typo
  // cannot ask for billions of them.
  if (microBatches < 1 || microBatches > kMaxMicroBatches)
    return src.emitError() << "-xf-autodiff: micro-batches must be in [1, " << kMaxMicroBatches
                              << "], got " << static_cast<int64_t>(microBatches);
  if (!src.getBody().hasOneBlock())
    return src.emitError() << "-xf-autodiff: @" << function << " must have a single block";
  FailureOr<Value> srcLoss = findLoss(src);
  if (failed(srcLoss))
    return failure();
  auto lossType = cast<RankedTensorType>(srcLoss->getType());

  // Signature: inputs per micro-batch, then parameters, then the loss scale.
  MLIRContext *ctx = &getContext();
  std::vector<ParamArg> params = getParams(src);
  SmallVector<unsigned> inputArgs;
  for (unsigned i = 0; i < src.getNumArguments(); ++i)
    if (!src.getArgAttr(i, XfDialect::kParamAttrName))
      inputArgs.push_back(i);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (int64_t j = 0; j < microBatches; ++j)
    for (unsigned i : inputArgs) {
      argTypes.push_back(src.getArgument(i).getType());
      NamedAttrList attrs(src.getArgAttrDict(i));
      attrs.set(XfDialect::kMicroBatchAttrName, IntegerAttr::get(IntegerType::get(ctx, 64), j));
      argAttrs.push_back(attrs.getDictionary(ctx));
    }
  for (const ParamArg &p : params) {
    argTypes.push_back(p.type);
    NamedAttrList attrs(src.getArgAttrDict(p.index));
    attrs.set(XfDialect::kStateAttrName,
              StringAttr::get(ctx, "param:" + p.attr.getName().str()));
    argAttrs.push_back(attrs.getDictionary(ctx));
  }
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  if (lossScale) {
    argTypes.push_back(f32Scalar);
    argAttrs.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, XfDialect::kStateAttrName),
                             StringAttr::get(ctx, "loss_scale"))}));
  }
  SmallVector<Type> resultTypes{lossType};
  for (const ParamArg &p : params)
    resultTypes.push_back(p.type);

  OpBuilder b(ctx);
  b.setInsertionPointAfter(src);
  auto dst = func::FuncOp::create(b, src.getLoc(), output, b.getFunctionType(argTypes, resultTypes));
  dst.setAllArgAttrs(argAttrs);
  Block *body = dst.addEntryBlock();
  b.setInsertionPointToEnd(body);
  unsigned paramBase = microBatches * inputArgs.size();
  Value scaleArg = lossScale ? body->getArgument(paramBase + params.size()) : Value();

  // The backward of micro-batch j is seeded with 1/k (times the loss scale).
  double inv = 1.0 / static_cast<double>(microBatches);
  Location loc = src.getLoc();
  auto seed = [&]() -> Value {
    if (!scaleArg)
      return FillOp::create(b, loc, lossType, b.getF64FloatAttr(inv));
    Value s = scaleArg;
    if (lossType != f32Scalar)
      s = CastOp::create(b, loc, lossType, s);
    return microBatches == 1 ? s : ScaleOp::create(b, loc, s, inv).getResult();
  };

  SmallVector<Value> losses;
  for (int64_t j = 0; j < microBatches; ++j) {
    IRMapping map;
    for (auto [n, i] : llvm::enumerate(inputArgs))
      map.map(src.getArgument(i), body->getArgument(j * inputArgs.size() + n));
    for (auto [n, p] : llvm::enumerate(params))
      map.map(src.getArgument(p.index), body->getArgument(paramBase + n));
    SmallVector<Operation *> forwardOps;
    for (Operation &op : src.getBody().front().without_terminator()) {
      Operation *clone = b.clone(op, map);
      if (auto dropout = dyn_cast<DropoutOp>(clone); dropout && j > 0)
        dropout.setKey(dropout.getKey() + (j << 32));
      forwardOps.push_back(clone);
    }
    Value loss = map.lookup(*srcLoss);
    losses.push_back(loss);
    grads_[loss] = seed();
    Operation *beforeBackward = body->empty() ? nullptr : &body->back();
    if (failed(backward(b, forwardOps))) {
      dst.erase();
      return failure();
    }
    rebuildPackedWeights(beforeBackward ? beforeBackward->getNextNode() : &body->front(),
                         llvm::DenseSet<Operation *>(forwardOps.begin(), forwardOps.end()));
    grads_.erase(loss);
  }

  Value loss = losses.front();
  if (microBatches > 1) {
    for (Value l : ArrayRef<Value>(losses).drop_front())
      loss = AddOp::create(b, loc, loss, l);
    loss = ScaleOp::create(b, loc, loss, inv);
  }
  SmallVector<Value> results{loss};
  for (auto [n, p] : llvm::enumerate(params)) {
    Value g = grads_.lookup(body->getArgument(paramBase + n));
    results.push_back(g ? g : FillOp::create(b, loc, p.type, b.getF64FloatAttr(0.0)).getResult());
  }
  func::ReturnOp::create(b, loc, results);
  dst.setResultAttr(0, XfDialect::kReportAttrName, b.getStringAttr("loss"));
  for (auto [n, p] : llvm::enumerate(params))
    dst.setResultAttr(n + 1, XfDialect::kGradAttrName, b.getStringAttr(p.attr.getName()));
  grads_.clear();
  return success();
}

} // namespace
