//===- FuseQKV.cpp - one GEMM for the Q, K and V projections --------------===//
//
// Three projections of the same input are three GEMMs that each read the
// input, and in the backward three dx GEMMs summed by two adds and three dW
// GEMMs that each read the input again. Against the weights concatenated in
// Megatron's grouped layout they are one GEMM each way, and attention reads
// q, k and v in place from the packed result (xf.packed_attention). The
// description in Passes.td states what is matched.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"

#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"
#include "mlir/IR/Builders.h"

#include <array>

namespace shardc {
#define GEN_PASS_DEF_XFFUSEQKV
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::xf;

namespace {

/// One projection feeding attention: reshape(bias_add?(matmul(x, w), b)).
struct Projection {
  MatmulOp mm;
  BiasAddOp bias; ///< null without a bias
  ReshapeOp reshape;
  int64_t heads = 0, headDim = 0;
};

/// The projection behind attention operand `v`, or nullopt with the reason
/// in `why`.
std::optional<Projection> projectionOf(Value v, std::string &why) {
  Projection p;
  p.reshape = v.getDefiningOp<ReshapeOp>();
  if (!p.reshape || !p.reshape->hasOneUse()) {
    why = "an operand is not a single-use reshape of a projection";
    return std::nullopt;
  }
  Value flat = p.reshape.getX();
  p.bias = flat.getDefiningOp<BiasAddOp>();
  if (p.bias) {
    if (!p.bias->hasOneUse()) {
      why = "a projection's bias add has another reader";
      return std::nullopt;
    }
    flat = p.bias.getX();
  }
  p.mm = flat.getDefiningOp<MatmulOp>();
  if (!p.mm || !p.mm->hasOneUse()) {
    why = "an operand is not a single-use GEMM";
    return std::nullopt;
  }
  std::string error;
  std::optional<Einsum> e = Einsum::parse(p.mm.getEquation(), error);
  // x [tokens..., in] @ w [in, out] -> [tokens..., out], tokens = batch, seq.
  if (!e || e->contracted.size() != 1 || e->rhsFree.size() != 1 || !e->batch.empty() ||
      e->rhs.size() != 2 || e->rhs[0] != e->contracted[0] || e->lhs.size() != 3 ||
      e->lhs.back() != e->contracted[0] || e->out != e->lhs.substr(0, 2) + e->rhsFree) {
    why = "a projection is not [batch, seq, in] x [in, out]";
    return std::nullopt;
  }
  auto flatType = cast<RankedTensorType>(flat.getType());
  auto headsType = cast<RankedTensorType>(p.reshape.getType());
  if (headsType.getRank() != 4 || headsType.getDimSize(0) != flatType.getDimSize(0) ||
      headsType.getDimSize(1) != flatType.getDimSize(1)) {
    why = "a projection's reshape does not only split its features into heads";
    return std::nullopt;
  }
  p.heads = headsType.getDimSize(2);
  p.headDim = headsType.getDimSize(3);
  return p;
}

class XfFuseQKVPass : public shardc::impl::XfFuseQKVBase<XfFuseQKVPass> {
public:
  using XfFuseQKVBase::XfFuseQKVBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-fuse-qkv");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    if (headsDivisibleBy < 1) {
      func.emitError() << "xf-fuse-qkv: heads-divisible-by must be at least 1, got "
                       << headsDivisibleBy;
      return signalPassFailure();
    }
    SmallVector<AttentionOp> attentions;
    func.walk([&](AttentionOp at) { attentions.push_back(at); });
    for (AttentionOp at : attentions)
      fuse(at);
  }

private:
  /// Rewrites one attention and its projections; leaves them when they do
  /// not match.
  void fuse(AttentionOp at) {
    std::string why;
    std::optional<Projection> q = projectionOf(at.getQ(), why), k, v;
    if (q)
      k = projectionOf(at.getK(), why);
    if (k)
      v = projectionOf(at.getV(), why);
    if (!v)
      return;
    Value x = q->mm.getLhs();
    if (k->mm.getLhs() != x || v->mm.getLhs() != x ||
        k->mm.getEquation() != q->mm.getEquation() || v->mm.getEquation() != q->mm.getEquation())
      return;
    if (bool(q->bias) != bool(k->bias) || bool(q->bias) != bool(v->bias))
      return;
    Type elem = cast<RankedTensorType>(at.getType()).getElementType();
    for (Projection *p : {&*q, &*k, &*v})
      if (cast<RankedTensorType>(p->mm.getRhs().getType()).getElementType() != elem ||
          cast<RankedTensorType>(p->mm.getType()).getElementType() != elem)
        return;
    const int64_t kvHeads = k->heads, headDim = q->headDim;
    if (kvHeads % headsDivisibleBy != 0)
      return;
    const int64_t group = q->heads / kvHeads, slots = group + 2;
    const int64_t in = cast<RankedTensorType>(x.getType()).getDimSize(2);

    OpBuilder b(at);
    Location loc = at.getLoc();
    auto tensor = [&](ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, elem); };
    auto reshape = [&](Value value, ArrayRef<int64_t> shape) -> Value {
      return ReshapeOp::create(b, loc, tensor(shape), value);
    };
    // The weights [in, heads * head_dim] as [in, kv_heads, slots, head_dim];
    // the biases [heads * head_dim] as [kv_heads, slots, head_dim].
    auto packed = [&](ArrayRef<Value> pieces, ArrayRef<int64_t> lead) -> Value {
      SmallVector<Value> parts;
      const std::array<int64_t, 3> slotsOf = {group, 1, 1};
      for (auto [piece, n] : llvm::zip(pieces, slotsOf)) {
        SmallVector<int64_t> shape(lead);
        shape.append({kvHeads, n, headDim});
        parts.push_back(reshape(piece, shape));
      }
      SmallVector<int64_t> shape(lead);
      shape.append({kvHeads, slots, headDim});
      Value all = ConcatOp::create(b, loc, tensor(shape), parts,
                                   b.getI64IntegerAttr(static_cast<int64_t>(lead.size()) + 1));
      SmallVector<int64_t> flat(lead);
      flat.push_back(kvHeads * slots * headDim);
      return reshape(all, flat);
    };
    Value w = packed({q->mm.getRhs(), k->mm.getRhs(), v->mm.getRhs()}, {in});
    auto xType = cast<RankedTensorType>(x.getType());
    const int64_t batch = xType.getDimSize(0), seq = xType.getDimSize(1);
    Value qkv = MatmulOp::create(b, loc, tensor({batch, seq, kvHeads * slots * headDim}),
                                 q->mm.getEquationAttr(), x, w);
    if (q->bias)
      qkv = BiasAddOp::create(b, loc, qkv.getType(), qkv,
                              packed({q->bias.getBias(), k->bias.getBias(), v->bias.getBias()},
                                     {}));
    qkv = reshape(qkv, {batch, seq, kvHeads, slots, headDim});
    auto fused = PackedAttentionOp::create(b, loc, at.getType(), qkv, at.getCausalAttr(),
                                           at.getScaleAttr());
    at.getResult().replaceAllUsesWith(fused.getResult());
    at.erase();
    for (Projection *p : {&*q, &*k, &*v}) {
      p->reshape.erase();
      if (p->bias)
        p->bias.erase();
      p->mm.erase();
    }
  }
};

} // namespace
