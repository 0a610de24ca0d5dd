//===- XfOps.cpp - xf operation verifiers ---------------------------------===//
//
// Shape rules live in the verifiers: each checks what a user can get wrong and
// names the operand, the dimension and both sizes.
//
//===----------------------------------------------------------------------===//

#include "dialects/xf/XfOps.h"
#include "dialects/xf/Einsum.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace shardc::xf;

static RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A norm's result type after `->`, written only where it differs from the
/// input's (xf.layernorm, xf.rmsnorm: a result stored in another float type).
static ParseResult parseStorageType(OpAsmParser &parser, Type x, Type &result) {
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = x;
  return success();
}
static void printStorageType(OpAsmPrinter &printer, Operation *, Type x, Type result) {
  if (result != x)
    printer << " -> " << result;
}

/// xf.multi_adamw: the moments and new values have the parameters' types,
/// which are written once; the gradients too, unless `grads` lists their
/// own (bf16/f16 gradients read as they were reduced).
static ParseResult parseParamTypes(OpAsmParser &parser, TypeRange params,
                                   SmallVectorImpl<Type> &grads, SmallVectorImpl<Type> &m,
                                   SmallVectorImpl<Type> &v, SmallVectorImpl<Type> &newParams,
                                   SmallVectorImpl<Type> &newM, SmallVectorImpl<Type> &newV) {
  for (SmallVectorImpl<Type> *list : {&m, &v, &newParams, &newM, &newV})
    list->assign(params.begin(), params.end());
  if (failed(parser.parseOptionalKeyword("grads"))) {
    grads.assign(params.begin(), params.end());
    return success();
  }
  return parser.parseTypeList(grads);
}
static void printParamTypes(OpAsmPrinter &printer, Operation *, TypeRange params,
                            TypeRange grads, TypeRange, TypeRange, TypeRange, TypeRange,
                            TypeRange) {
  if (grads == params)
    return;
  printer << "grads ";
  llvm::interleaveComma(grads, printer);
}

/// A norm gradient's `dy` type after the keyword `dy`, written only where it
/// differs from `x`'s (the forward's result was stored in another type).
static ParseResult parseGradientType(OpAsmParser &parser, Type x, Type &dy) {
  if (succeeded(parser.parseOptionalKeyword("dy")))
    return parser.parseType(dy);
  dy = x;
  return success();
}
static void printGradientType(OpAsmPrinter &printer, Operation *, Type x, Type dy) {
  if (dy != x)
    printer << " dy " << dy;
}

/// `b` has the shape of `a` (its element type may differ).
static LogicalResult verifySameShape(Operation *op, StringRef aName, Value a, StringRef bName,
                                     Value b) {
  RankedTensorType at = tensorOf(a), bt = tensorOf(b);
  if (at.getShape() != bt.getShape())
    return op->emitOpError() << bName << " " << bt << " must have the shape of " << aName << " "
                             << at;
  return success();
}

/// Checks that `vec` is a rank-1 tensor as long as the last dimension of `x`,
/// with the element type of `x`.
static LogicalResult verifyLastDimVector(Operation *op, StringRef what, Value x, Value vec) {
  RankedTensorType xt = tensorOf(x), vt = tensorOf(vec);
  if (xt.getRank() < 1)
    return op->emitOpError() << "input must have rank >= 1";
  int64_t n = xt.getShape().back();
  if (vt.getRank() != 1 || vt.getDimSize(0) != n)
    return op->emitOpError() << what << " must be "
                             << RankedTensorType::get({n}, xt.getElementType())
                             << " to match the last dimension of the input, got " << vt;
  if (vt.getElementType() != xt.getElementType())
    return op->emitOpError() << what << " element type " << vt.getElementType()
                             << " differs from the input's " << xt.getElementType();
  return success();
}

static LogicalResult verifyResultIs(Operation *op, Type expected) {
  if (op->getResult(0).getType() != expected)
    return op->emitOpError() << "result type " << op->getResult(0).getType()
                             << " should be " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp, IotaOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = tensorOf(getTable()), ids = tensorOf(getIds());
  if (table.getRank() != 2)
    return emitOpError() << "table must have rank 2 ([vocab, hidden]), got " << table;
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  return verifyResultIs(*this, RankedTensorType::get(shape, table.getElementType()));
}

LogicalResult IotaOp::verify() {
  int64_t rank = getResult().getType().getRank();
  if (getDim() < 0 || getDim() >= rank)
    return emitOpError() << "dim " << getDim() << " is out of range for a rank-" << rank
                         << " result";
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The checks of xf.matmul (and the GEMMs with epilogues): the equation, the
/// operand element types, the result's type. Returns the parsed equation.
static FailureOr<Einsum> verifyContraction(Operation *op, StringRef equation, Value lhsValue,
                                           Value rhsValue, Value resultValue) {
  std::string error;
  std::optional<Einsum> e = Einsum::parse(equation, error);
  if (!e)
    return op->emitOpError() << error;
  RankedTensorType lhs = tensorOf(lhsValue), rhs = tensorOf(rhsValue);
  auto shape = e->inferShape(lhs.getShape(), rhs.getShape(), error);
  if (!shape)
    return op->emitOpError() << error;
  Type elt = lhs.getElementType();
  if (rhs.getElementType() != elt)
    return op->emitOpError() << "operand element types differ: " << elt << " and "
                             << rhs.getElementType();
  RankedTensorType result = tensorOf(resultValue);
  Type out = result.getElementType();
  bool widened = out.isF32() && (elt.isBF16() || elt.isF16());
  if (out != elt && !widened)
    return op->emitOpError() << "result element type " << out << " must be " << elt
                             << (elt.isBF16() || elt.isF16() ? " or f32" : "");
  if (result.getShape() != ArrayRef<int64_t>(*shape))
    return op->emitOpError() << "result type " << result << " should have shape "
                             << RankedTensorType::get(*shape, out) << " for '" << equation
                             << "'";
  return *e;
}

LogicalResult MatmulOp::verify() {
  return verifyContraction(*this, getEquation(), getLhs(), getRhs(), getResult());
}

/// A bias of the GEMM's result: one value per element of its last dimension,
/// in the result's element type.
static LogicalResult verifyEpilogueBias(Operation *op, Value bias, Value result) {
  RankedTensorType b = tensorOf(bias), r = tensorOf(result);
  if (b.getRank() != 1 || r.getRank() < 1 || b.getDimSize(0) != r.getShape().back() ||
      b.getElementType() != r.getElementType())
    return op->emitOpError() << "bias " << b << " must be a vector of the result's last "
                             << "dimension and element type (" << r << ")";
  return success();
}

LogicalResult MatmulBiasOp::verify() {
  if (failed(verifyContraction(*this, getEquation(), getLhs(), getRhs(), getResult())))
    return failure();
  return verifyEpilogueBias(*this, getBias(), getResult());
}

/// A GELU's pre-activation beside the GEMM: shaped and typed like its result.
static LogicalResult verifyPreActivation(Operation *op, Value pre, Value result) {
  if (pre.getType() != result.getType())
    return op->emitOpError() << "the pre-activation " << pre.getType()
                             << " must have the result's type " << result.getType();
  return success();
}

LogicalResult MatmulBiasGeluOp::verify() {
  if (failed(verifyContraction(*this, getEquation(), getLhs(), getRhs(), getResult())) ||
      failed(verifyEpilogueBias(*this, getBias(), getResult())))
    return failure();
  return verifyPreActivation(*this, getPre(), getResult());
}

LogicalResult MatmulDGeluOp::verify() {
  if (failed(verifyContraction(*this, getEquation(), getLhs(), getRhs(), getResult())))
    return failure();
  return verifyPreActivation(*this, getPre(), getResult());
}

LogicalResult MatmulBGradOp::verify() {
  FailureOr<Einsum> e = verifyContraction(*this, getEquation(), getLhs(), getRhs(), getResult());
  if (failed(e))
    return failure();
  SmallVector<int64_t> kept;
  RankedTensorType rhs = tensorOf(getRhs());
  for (auto [i, letter] : llvm::enumerate(e->rhs))
    if (StringRef(e->out).contains(letter))
      kept.push_back(rhs.getDimSize(i));
  auto db = cast<RankedTensorType>(getDbias().getType());
  if (db.getShape() != ArrayRef<int64_t>(kept))
    return emitOpError() << "the bias gradient " << db << " must have rhs's uncontracted "
                         << "dimensions " << RankedTensorType::get(kept, db.getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise and normalization
//===----------------------------------------------------------------------===//

LogicalResult AddOp::verify() {
  auto result = cast<RankedTensorType>(getResult().getType());
  Type elem = result.getElementType();
  bool same = true;
  for (auto [name, v] : {std::pair<const char *, Value>{"lhs", getLhs()}, {"rhs", getRhs()}}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getShape() != result.getShape())
      return emitOpError() << name << " shape " << t << " differs from the result's " << result;
    Type e = t.getElementType();
    if (e == elem)
      continue;
    same = false;
    if (e.getIntOrFloatBitWidth() >= elem.getIntOrFloatBitWidth())
      return emitOpError() << name << " element type " << e
                           << " is neither the result's (" << elem
                           << ") nor a narrower float the add widens";
  }
  if (!same && getLhs().getType() != result && getRhs().getType() != result)
    return emitOpError() << "at most one operand may be narrower than the result " << result;
  return success();
}

/// `%x, %y : T` when the three types agree, else `%x, %y : L, R -> T`.
ParseResult AddOp::parse(OpAsmParser &parser, OperationState &state) {
  SmallVector<OpAsmParser::UnresolvedOperand, 2> operands;
  Type lhs, rhs, result;
  if (parser.parseOperandList(operands, 2) || parser.parseOptionalAttrDict(state.attributes) ||
      parser.parseColonType(lhs))
    return failure();
  rhs = result = lhs;
  if (succeeded(parser.parseOptionalComma()) &&
      (parser.parseType(rhs) || parser.parseArrow() || parser.parseType(result)))
    return failure();
  state.addTypes(result);
  return parser.resolveOperands(operands, {lhs, rhs}, parser.getNameLoc(), state.operands);
}

void AddOp::print(OpAsmPrinter &p) {
  p << ' ' << getLhs() << ", " << getRhs();
  p.printOptionalAttrDict((*this)->getAttrs());
  p << " : " << getLhs().getType();
  if (getLhs().getType() != getResult().getType() || getRhs().getType() != getResult().getType())
    p << ", " << getRhs().getType() << " -> " << getResult().getType();
}

LogicalResult BiasAddOp::verify() {
  if (failed(verifyLastDimVector(*this, "bias", getX(), getBias())))
    return failure();
  return verifyResultIs(*this, getX().getType());
}

LogicalResult SoftmaxOp::verify() {
  if (getX().getType().getRank() < 1)
    return emitOpError() << "input must have rank >= 1";
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyLastDimVector(*this, "gamma", getX(), getGamma())) ||
      failed(verifyLastDimVector(*this, "beta", getX(), getBeta())))
    return failure();
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError() << "epsilon must be positive";
  return verifySameShape(*this, "the input", getX(), "the result", getResult());
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyLastDimVector(*this, "gamma", getX(), getGamma())))
    return failure();
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError() << "epsilon must be positive";
  return verifySameShape(*this, "the input", getX(), "the result", getResult());
}

namespace {
/// The added residual gradient, if any, has dx's (= x's) type.
LogicalResult verifyResidualGradient(Operation *op, Value x, Value dresidual) {
  if (dresidual && dresidual.getType() != x.getType())
    return op->emitOpError() << "the added residual gradient must have x's type " << x.getType()
                             << ", got " << dresidual.getType();
  return success();
}
} // namespace

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyResidualGradient(*this, getX(), getDresidual())))
    return failure();
  return verifySameShape(*this, "x", getX(), "dy", getDy());
}

LogicalResult RmsNormGradOp::verify() {
  if (failed(verifyResidualGradient(*this, getX(), getDresidual())))
    return failure();
  return verifySameShape(*this, "x", getX(), "dy", getDy());
}

//===----------------------------------------------------------------------===//
// AttentionOp, RopeOp, DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  RankedTensorType q = tensorOf(getQ()), k = tensorOf(getK()), v = tensorOf(getV());
  for (auto [name, t] : {std::pair{"q", q}, {"k", k}, {"v", v}})
    if (t.getRank() != 4)
      return emitOpError() << name << " must have rank 4 ([batch, seq, heads, head_dim]), got "
                           << t;
  if (k != v)
    return emitOpError() << "k and v must have the same type, got " << k << " and " << v;
  if (k.getElementType() != q.getElementType())
    return emitOpError() << "q and k/v element types differ: " << q.getElementType() << " and "
                         << k.getElementType();
  static const char *dimName[] = {"batch", "seq", "heads", "head_dim"};
  // A partitioned op (xf.factor_axes) may hold a block of the query rows
  // against every key.
  bool rowBlock = (*this)->hasAttr(XfDialect::kFactorAxesAttrName) &&
                  q.getDimSize(1) <= k.getDimSize(1);
  for (int d : {0, 1, 3})
    if (q.getDimSize(d) != k.getDimSize(d) && !(d == 1 && rowBlock))
      return emitOpError() << dimName[d] << " of q (" << q.getDimSize(d) << ") and k/v ("
                           << k.getDimSize(d) << ") differ";
  if (q.getDimSize(2) % k.getDimSize(2) != 0)
    return emitOpError() << "kv heads (" << k.getDimSize(2) << ") must divide query heads ("
                         << q.getDimSize(2) << ")";
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError() << "scale must be positive";
  return verifyResultIs(*this, q);
}

/// The attention a packed `[batch, seq, kv_heads, group + 2, head_dim]`
/// projection gives: `[batch, seq, kv_heads * group, head_dim]`, or a failure
/// reported on `op`.
static FailureOr<SmallVector<int64_t>> packedAttentionShape(Operation *op, RankedTensorType qkv) {
  if (qkv.getRank() != 5) {
    op->emitOpError() << "qkv must have rank 5 ([batch, seq, kv_heads, group + 2, head_dim]), got "
                      << qkv;
    return failure();
  }
  if (qkv.getDimSize(3) < 3) {
    op->emitOpError() << "qkv's slot dimension (" << qkv.getDimSize(3)
                      << ") must hold at least one query, a key and a value";
    return failure();
  }
  return SmallVector<int64_t>{qkv.getDimSize(0), qkv.getDimSize(1),
                              qkv.getDimSize(2) * (qkv.getDimSize(3) - 2), qkv.getDimSize(4)};
}

LogicalResult PackedAttentionOp::verify() {
  auto shape = packedAttentionShape(*this, getQkv().getType());
  if (failed(shape))
    return failure();
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError() << "scale must be positive";
  auto want = RankedTensorType::get(*shape, getQkv().getType().getElementType());
  if (getType() != want)
    return emitOpError() << "result must be " << want << ", got " << getType();
  return success();
}

LogicalResult PackedAttentionGradOp::verify() {
  auto shape = packedAttentionShape(*this, getQkv().getType());
  if (failed(shape))
    return failure();
  auto want = RankedTensorType::get(*shape, getQkv().getType().getElementType());
  if (getDout().getType() != want)
    return emitOpError() << "dout and out must be " << want << ", got " << getDout().getType();
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getXs().empty())
    return emitOpError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(getXs().front().getType());
  int64_t rank = first.getRank(), dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is outside the operands' rank " << rank;
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (auto [i, x] : llvm::enumerate(getXs())) {
    auto t = cast<RankedTensorType>(x.getType());
    if (t.getRank() != rank || t.getElementType() != first.getElementType())
      return emitOpError() << "operand #" << i << " (" << t << ") differs from operand #0 ("
                           << first << ") in rank or element type";
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && t.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << "operand #" << i << " differs from operand #0 in dim " << d
                             << " (" << t.getDimSize(d) << " vs " << first.getDimSize(d) << ")";
    shape[dim] += t.getDimSize(dim);
  }
  auto want = RankedTensorType::get(shape, first.getElementType());
  if (getType() != want)
    return emitOpError() << "result must be " << want << ", got " << getType();
  return success();
}

LogicalResult SplitOp::verify() {
  auto x = getX().getType();
  int64_t rank = x.getRank(), dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is outside the operand's rank " << rank;
  if (getResults().empty())
    return emitOpError() << "needs at least one result";
  int64_t total = 0;
  for (auto [i, r] : llvm::enumerate(getResults())) {
    auto t = cast<RankedTensorType>(r.getType());
    if (t.getRank() != rank || t.getElementType() != x.getElementType())
      return emitOpError() << "result #" << i << " (" << t << ") differs from the operand (" << x
                           << ") in rank or element type";
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && t.getDimSize(d) != x.getDimSize(d))
        return emitOpError() << "result #" << i << " differs from the operand in dim " << d
                             << " (" << t.getDimSize(d) << " vs " << x.getDimSize(d) << ")";
    total += t.getDimSize(dim);
  }
  if (total != x.getDimSize(dim))
    return emitOpError() << "the results' sizes in dim " << dim << " sum to " << total
                         << ", not the operand's " << x.getDimSize(dim);
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType x = getX().getType();
  if (x.getRank() != 4)
    return emitOpError() << "input must have rank 4 ([batch, seq, heads, head_dim]), got " << x;
  if (x.getDimSize(3) % 2 != 0)
    return emitOpError() << "head_dim " << x.getDimSize(3) << " must be even";
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError() << "theta must be positive";
  return success();
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError() << "rate " << rate << " must be in [0, 1)";
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp, TransposeOp, CastOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getX().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element type changes from " << in.getElementType() << " to "
                         << out.getElementType() << "; use xf.cast";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << in << " (" << in.getNumElements()
                         << " elements) to " << out << " (" << out.getNumElements()
                         << " elements)";
  return success();
}

LogicalResult TransferOp::verify() {
  if (getFrom() < 0 || getTo() < 0 || getFrom() == getTo())
    return emitOpError() << "moves from stage " << getFrom() << " to stage " << getTo()
                         << "; stages are distinct and non-negative";
  if (getGridAxes().size() != 1 || getGridAxes()[0] < 0)
    return emitOpError() << "needs exactly one (pipeline) grid axis, got "
                         << getGridAxes().size();
  return success();
}

LogicalResult OffloadOp::verify() {
  for (Operation *user : getResult().getUsers())
    if (!isa<ReloadOp>(user))
      return emitOpError() << "an offloaded value is read only by xf.reload, not by '"
                           << user->getName() << "'";
  return success();
}

LogicalResult ReloadOp::verify() {
  if (!getInput().getDefiningOp<OffloadOp>())
    return emitOpError("reloads a value that no xf.offload produced");
  return success();
}

LogicalResult TransposeOp::verify() {
  auto in = cast<RankedTensorType>(getX().getType());
  ArrayRef<int64_t> perm = getPermutation();
  if ((int64_t)perm.size() != in.getRank())
    return emitOpError() << "permutation has " << perm.size() << " entries for a rank-"
                         << in.getRank() << " input";
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "permutation must hold each of 0.." << in.getRank() - 1
                           << " once";
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  return verifyResultIs(*this, RankedTensorType::get(shape, in.getElementType()));
}

LogicalResult CastOp::verify() {
  RankedTensorType in = getX().getType(), out = getResult().getType();
  if (in.getShape() != out.getShape())
    return emitOpError() << "cast must keep the shape: " << in << " vs " << out;
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Shared checks of the two losses: `targets` is the token shape, `mask` (if
/// any) matches it, and the loss is f32 (f64 for f64 inputs).
static LogicalResult verifyLossOperands(Operation *op, RankedTensorType input, StringRef inputName,
                                        Value targets, Value mask, Type lossType) {
  RankedTensorType tt = tensorOf(targets);
  if (input.getRank() < 1 || input.getShape().drop_back() != tt.getShape())
    return op->emitOpError() << "targets " << tt << " must have the shape of " << inputName << " "
                             << input << " without its last dimension";
  if (mask && tensorOf(mask).getShape() != tt.getShape())
    return op->emitOpError() << "mask " << mask.getType() << " must have the shape of targets "
                             << tt;
  Type want = input.getElementType().isF64() ? Type(Float64Type::get(op->getContext()))
                                              : Type(Float32Type::get(op->getContext()));
  if (cast<RankedTensorType>(lossType).getElementType() != want)
    return op->emitOpError() << "loss must be " << RankedTensorType::get({}, want) << " for "
                             << inputName
                             << " of element type " << input.getElementType();
  return success();
}

/// `classes` (the true vocabulary size, when given) is in [1, vocab]. On a
/// partitioned op whose vocabulary is split (it keeps its factor axes) the
/// operand holds one block and `classes` stays global: only >= 1 here (the
/// runtime checks it against the global vocabulary).
static LogicalResult verifyClasses(Operation *op, std::optional<int64_t> classes, int64_t vocab) {
  if (op->hasAttr(XfDialect::kFactorAxesAttrName))
    vocab = ShapedType::kDynamic;
  if (classes && (*classes < 1 || (!ShapedType::isDynamic(vocab) && *classes > vocab)))
    return op->emitOpError() << "classes = " << *classes << " must be in [1, "
                             << (ShapedType::isDynamic(vocab) ? std::string("the vocabulary")
                                                              : std::to_string(vocab))
                             << "] (the vocabulary dimension)";
  return success();
}

/// The vocabulary size of a linear loss's weight.
static int64_t weightVocab(RankedTensorType w, bool vocabMajor) {
  return w.getRank() == 2 ? w.getDimSize(vocabMajor ? 0 : 1) : ShapedType::kDynamic;
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (failed(verifyLossOperands(*this, logits, "logits", getTargets(), getMask(),
                                getLoss().getType())))
    return failure();
  return verifyClasses(*this, getClasses(), logits.getShape().back());
}

LogicalResult LinearCrossEntropyOp::verify() {
  RankedTensorType x = getX().getType(), w = getWeight().getType();
  if (w.getRank() != 2)
    return emitOpError() << "weight must have rank 2, got " << w;
  if (w.getElementType() != x.getElementType())
    return emitOpError() << "weight element type " << w.getElementType() << " differs from x's "
                         << x.getElementType();
  int64_t hidden = getVocabMajor() ? w.getDimSize(1) : w.getDimSize(0);
  if (x.getRank() < 1 || x.getShape().back() != hidden)
    return emitOpError() << "hidden size of x (" << (x.getRank() ? x.getShape().back() : 0)
                         << ") does not match the weight " << w
                         << (getVocabMajor() ? " ([vocab, hidden])" : " ([hidden, vocab])");
  if (failed(verifyLossOperands(*this, x, "x", getTargets(), getMask(), getLoss().getType())))
    return failure();
  return verifyClasses(*this, getClasses(), weightVocab(w, getVocabMajor()));
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::verify() {
  RankedTensorType x = getX().getType();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> dims = getDims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= x.getRank() || (i > 0 && dims[i] <= dims[i - 1]))
      return emitOpError() << "dims must be sorted, unique and in [0, " << x.getRank() << ")";
  for (int64_t d = 0; d < x.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      shape.push_back(x.getDimSize(d));
  return verifyResultIs(*this, RankedTensorType::get(shape, x.getElementType()));
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType dy = getDy().getType(), ids = tensorOf(getIds()), table = getDtable().getType();
  if (table.getRank() != 2 || table.getElementType() != dy.getElementType())
    return emitOpError() << "result must be a [vocab, hidden] table of " << dy.getElementType()
                         << ", got " << table;
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  if (dy.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "dy " << dy << " must have the shape of ids followed by hidden ("
                         << table.getDimSize(1) << ")";
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  // dlogits has the logits' type by AllTypesMatch.
  RankedTensorType logits = getLogits().getType();
  if (failed(verifyLossOperands(*this, logits, "logits", getTargets(), getMask(),
                                getDloss().getType())))
    return failure();
  return verifyClasses(*this, getClasses(), logits.getShape().back());
}

LogicalResult LinearCrossEntropyGradOp::verify() {
  RankedTensorType x = getX().getType(), w = getWeight().getType();
  if (w.getRank() != 2 || w.getElementType() != x.getElementType())
    return emitOpError() << "weight must be a rank-2 tensor of x's element type, got " << w;
  if (failed(verifyLossOperands(*this, x, "x", getTargets(), getMask(), getDloss().getType())))
    return failure();
  return verifyClasses(*this, getClasses(), weightVocab(w, getVocabMajor()));
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult LrScheduleOp::verify() {
  double lr = getLr().convertToDouble(), minLr = getMinLr().convertToDouble();
  if (!(lr >= 0.0) || !(minLr >= 0.0) || minLr > lr)
    return emitOpError() << "need 0 <= min_lr <= lr, got lr = " << lr << ", min_lr = " << minLr;
  if (getWarmup() < 0 || getDecaySteps() < 0)
    return emitOpError() << "warmup and decay_steps must not be negative";
  return success();
}

/// AdamW's settings (xf.adamw, xf.multi_adamw): betas in [0, 1), epsilon
/// positive, weight decay not negative.
template <class Op> static LogicalResult verifyAdamWSettings(Op op) {
  double b1 = op.getBeta1().convertToDouble(), b2 = op.getBeta2().convertToDouble();
  if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0))
    return op.emitOpError() << "beta1 and beta2 must be in [0, 1), got " << b1 << " and " << b2;
  if (!(op.getEpsilon().convertToDouble() > 0.0))
    return op.emitOpError() << "epsilon must be positive";
  if (!(op.getWeightDecay().convertToDouble() >= 0.0))
    return op.emitOpError() << "weight_decay must not be negative";
  return success();
}

LogicalResult AdamWOp::verify() { return verifyAdamWSettings(*this); }

LogicalResult MultiSumSquaresOp::verify() {
  if (getXs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

LogicalResult MultiAdamWOp::verify() {
  const size_t n = getParams().size();
  if (n == 0)
    return emitOpError("needs at least one parameter");
  if (getGrads().size() != n || getM().size() != n || getV().size() != n ||
      getNewParams().size() != n || getNewM().size() != n || getNewV().size() != n)
    return emitOpError() << "lists params, grads, m, v and their new values must all hold " << n
                         << " tensors";
  for (size_t i = 0; i < n; ++i) {
    Type t = getParams()[i].getType();
    for (Type other : {getM()[i].getType(), getV()[i].getType(), getNewParams()[i].getType(),
                       getNewM()[i].getType(), getNewV()[i].getType()})
      if (other != t)
        return emitOpError() << "tensor #" << i << ": " << other << " differs from the parameter's "
                             << t;
    // The gradient: the parameter's type, or its shape in a narrower float
    // (a bf16/f16 gradient the kernel widens as it reads it).
    auto param = tensorOf(getParams()[i]);
    auto grad = tensorOf(getGrads()[i]);
    if (grad != param && (grad.getShape() != param.getShape() ||
                          grad.getElementType().getIntOrFloatBitWidth() >=
                              param.getElementType().getIntOrFloatBitWidth()))
      return emitOpError() << "gradient #" << i << " " << grad << " must be the parameter's type "
                           << param << " or its shape in a narrower float";
  }
  if (failed(verifyAdamWSettings(*this)))
    return failure();
  if (getDecay().size() != n || llvm::any_of(getDecay(), [](int64_t d) { return d != 0 && d != 1; }))
    return emitOpError() << "decay must hold one 0 or 1 per parameter (" << n << ")";
  ArrayRef<int64_t> copies = getCopies();
  if (copies.size() != getNewCopies().size())
    return emitOpError() << "copies names " << copies.size() << " parameters but there are "
                         << getNewCopies().size() << " copy results";
  for (auto [k, p] : llvm::enumerate(copies)) {
    if (p < 0 || p >= static_cast<int64_t>(n) || (k > 0 && p <= copies[k - 1]))
      return emitOpError("copies must name parameters in increasing order");
    auto param = tensorOf(getParams()[p]);
    auto copy = cast<RankedTensorType>(getNewCopies()[k].getType());
    if (copy.getShape() != param.getShape() ||
        !(copy.getElementType().isBF16() || copy.getElementType().isF16()))
      return emitOpError() << "copy #" << k << " " << copy << " must be a bf16/f16 tensor of "
                           << "parameter #" << p << "'s shape " << param;
  }
  return success();
}

LogicalResult LossScaleUpdateOp::verify() {
  if (getWindow() < 1)
    return emitOpError() << "window must be at least 1, got " << getWindow();
  if (!(getFactor().convertToDouble() > 1.0))
    return emitOpError() << "factor must be greater than 1";
  if (!(getMinScale().convertToDouble() > 0.0))
    return emitOpError() << "min_scale must be positive";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/xf/XfOps.cpp.inc"
