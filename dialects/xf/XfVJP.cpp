//===- XfVJP.cpp - reverse-mode derivative rules of the xf ops ------------===//
//
// One VJPOpInterface implementation per differentiable op. Each rule receives
// the gradient of the loss with respect to the op's result and builds the
// gradients with respect to its operands from the op's own operands and
// result (the saved activations). Gradients have exactly the type of the
// value they belong to; where a low-precision operand meets an f32 gradient
// (mixed precision), the rule casts the gradient to the operand's type, as
// autocast does.
//
//===----------------------------------------------------------------------===//

#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace shardc::xf;

#include "dialects/xf/XfInterfaces.cpp.inc"

namespace {

RankedTensorType tensorTypeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `v` converted to `type` (same shape), through xf.cast if the element types
/// differ.
Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return CastOp::create(b, loc, type, v);
}

/// `v` with the element type of `like` (shape of `v`).
Value castElementsLike(OpBuilder &b, Location loc, Value v, Value like) {
  RankedTensorType t = tensorTypeOf(v);
  return castTo(b, loc, v, t.clone(tensorTypeOf(like).getElementType()));
}

} // namespace

//===----------------------------------------------------------------------===//
// Index and constant ops: nothing flows back
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::buildVJP(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &) {
  return success();
}

LogicalResult FillOp::buildVJP(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &) {
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &grads) {
  Value dy = castElementsLike(b, getLoc(), dys[0], getTable());
  grads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(), dy, getIds()));
  grads.push_back(nullptr); // ids
  return success();
}

//===----------------------------------------------------------------------===//
// Matmul: dA = dC (x) B and dB = A (x) dC as einsums over the same letters
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                 SmallVectorImpl<Value> &grads) {
  std::string error;
  std::optional<Einsum> e = Einsum::parse(getEquation(), error);
  if (!e)
    return emitOpError() << error;
  Location loc = getLoc();
  // With bf16/f16 operands the result (and so its gradient) is f32; the
  // backward GEMMs take the gradient in the operands' type.
  Value dy = castElementsLike(b, loc, dys[0], getLhs());
  Value dLhs = MatmulOp::create(b, loc, getLhs().getType(),
                                b.getStringAttr(e->out + "," + e->rhs + "->" + e->lhs), dy,
                                getRhs());
  Value dRhs = MatmulOp::create(b, loc, getRhs().getType(),
                                b.getStringAttr(e->lhs + "," + e->out + "->" + e->rhs), getLhs(),
                                dy);
  grads.append({dLhs, dRhs});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &grads) {
  // A narrower operand (widened by the add) gets the gradient in its own type.
  grads.append({castElementsLike(b, getLoc(), dys[0], getLhs()),
                castElementsLike(b, getLoc(), dys[0], getRhs())});
  return success();
}

LogicalResult BiasAddOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &grads) {
  Value dy = dys[0];
  int64_t rank = tensorTypeOf(dy).getRank();
  Value dbias = dy;
  if (rank > 1) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d + 1 < rank; ++d)
      dims.push_back(d);
    dbias = ReduceSumOp::create(b, getLoc(), getBias().getType(), dy, b.getDenseI64ArrayAttr(dims));
  }
  grads.append({dy, dbias});
  return success();
}

LogicalResult ScaleOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                SmallVectorImpl<Value> &grads) {
  grads.push_back(ScaleOp::create(b, getLoc(), dys[0], getFactor().convertToDouble()));
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &grads) {
  grads.push_back(GeluGradOp::create(b, getLoc(), getType(), dys[0], getX()));
  return success();
}

LogicalResult SwigluOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                 SmallVectorImpl<Value> &grads) {
  auto g = SwigluGradOp::create(b, getLoc(), getType(), getType(), dys[0], getGate(), getUp());
  grads.append({g.getDgate(), g.getDup()});
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &grads) {
  grads.push_back(SoftmaxGradOp::create(b, getLoc(), getType(), dys[0], getResult()));
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &grads) {
  // The mask is a function of (seed, step, key, index): applying the same op
  // to the gradient multiplies it by the same mask and 1/(1-rate).
  grads.push_back(DropoutOp::create(b, getLoc(), getType(), dys[0], getRateAttr(), getKeyAttr()));
  return success();
}

LogicalResult RopeOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &grads) {
  grads.push_back(RopeOp::create(b, getLoc(), getType(), dys[0], getThetaAttr(),
                                 getInverse() ? UnitAttr() : b.getUnitAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and attention: fused backward ops
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &grads) {
  // dy has the result's type (bf16 where the result is a bf16 GEMM input);
  // dx has the input's.
  Type g = getGamma().getType();
  auto op = LayerNormGradOp::create(b, getLoc(), getX().getType(), g, g, dys[0], getX(), getGamma(),
                                    /*dresidual=*/Value(), getEpsilonAttr());
  grads.append({op.getDx(), op.getDgamma(), op.getDbeta()});
  return success();
}

LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &grads) {
  auto op = RmsNormGradOp::create(b, getLoc(), getX().getType(), getGamma().getType(), dys[0], getX(),
                                  getGamma(), /*dresidual=*/Value(), getEpsilonAttr());
  grads.append({op.getDx(), op.getDgamma()});
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &grads) {
  Type kt = getK().getType();
  auto op = AttentionGradOp::create(b, getLoc(), getType(), kt, kt, dys[0], getQ(), getK(), getV(),
                                    getResult(), getCausalAttr(), getScaleAttr());
  grads.append({op.getDq(), op.getDk(), op.getDv()});
  return success();
}

LogicalResult PackedAttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(PackedAttentionGradOp::create(b, getLoc(), getQkv().getType(), dys[0], getQkv(),
                                                getResult(), getCausalAttr(), getScaleAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and type ops: the inverse movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &grads) {
  grads.push_back(ReshapeOp::create(b, getLoc(), getX().getType(), dys[0]));
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                 SmallVectorImpl<Value> &grads) {
  SmallVector<Type> types(getXs().getTypes());
  auto split = SplitOp::create(b, getLoc(), types, dys[0], getDimAttr());
  grads.append(split.getResults().begin(), split.getResults().end());
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  grads.push_back(TransposeOp::create(b, getLoc(), getX().getType(), dys[0],
                                      b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult CastOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &grads) {
  grads.push_back(castTo(b, getLoc(), dys[0], getX().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &grads) {
  grads.push_back(CrossEntropyGradOp::create(b, getLoc(), getLogits().getType(), dys[0],
                                             getLogits(), getTargets(), getMask(),
                                             getIgnoreIndexAttr(), getClassesAttr()));
  grads.push_back(nullptr); // targets
  if (getMask())
    grads.push_back(nullptr); // a mask selects tokens; it has no gradient
  return success();
}

LogicalResult LinearCrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> dys,
                                             SmallVectorImpl<Value> &grads) {
  auto op = LinearCrossEntropyGradOp::create(
      b, getLoc(), getX().getType(), getWeight().getType(), dys[0], getX(), getWeight(),
      getTargets(), getMask(), getVocabMajorAttr(), getIgnoreIndexAttr(), getClassesAttr());
  grads.append({op.getDx(), op.getDweight(), nullptr});
  if (getMask())
    grads.push_back(nullptr);
  return success();
}
