//===- XfShardingRules.cpp - sharding rules of the xf ops -----------------===//
//
// One ShardingRuleOpInterface implementation per op (ShardingRule.h defines
// the factors and their kinds). Every rule is computed from the op's own
// operand and result types and attributes, so on partitioned IR it describes
// the local op. Where splitting a dimension would need the op to communicate
// in a way the partitioner does not model, the dimension gets a Replicated
// factor: that is always correct, only less parallel.
//
// FLOP counts are estimates for the cost model: 2 per multiply-add of a GEMM,
// a small constant per element for elementwise and normalization ops, nothing
// for pure data movement (reshape, transpose, gathers).
//
//===----------------------------------------------------------------------===//

#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#include <cassert>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

using namespace mlir;
using namespace shardc::xf;

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }

double numElements(Value v) {
  return static_cast<double>(cast<ShapedType>(v.getType()).getNumElements());
}

/// Adds one factor of `kind` per dimension of `shape` and returns the tensor's
/// factors (dimension i maps to the i-th new factor).
TensorFactors addDimFactors(OpShardingRule &rule, ArrayRef<int64_t> shape,
                            FactorKind kind = FactorKind::Parallel) {
  TensorFactors t;
  for (int64_t size : shape)
    t.push_back({rule.addFactor(size, kind)});
  return t;
}

/// The factors of an elementwise op on `type`: every dimension its own
/// Parallel factor.
TensorFactors elementwise(OpShardingRule &rule, Type type) {
  return addDimFactors(rule, cast<ShapedType>(type).getShape());
}

/// Like elementwise(), but the last dimension, which the op reduces over and
/// broadcasts back (layer norm, softmax), is Replicated: a split row would need
/// its statistics exchanged.
TensorFactors rowwise(OpShardingRule &rule, Type type) {
  TensorFactors t = elementwise(rule, type);
  if (!t.empty())
    rule.factors[t.back().front()].kind = FactorKind::Replicated;
  return t;
}

/// The single factor of dimension `dim` of `t`.
ShardingFactor &factorOf(OpShardingRule &rule, const TensorFactors &t, int64_t dim) {
  assert(t[dim].size() == 1 && "dimension has several factors");
  return rule.factors[t[dim].front()];
}

/// `t` with one more (minor-most) dimension made of factor `f`.
TensorFactors withDim(TensorFactors t, int f) {
  t.push_back({f});
  return t;
}

/// The rule of an op whose operands and results all have the shape of result
/// 0 or are 0-d scalars (learning rate, step counter, skip flag): one Parallel
/// factor per dimension, shared by every tensor of that shape.
OpShardingRule elementwiseRule(Operation *op, double flopsPerElement) {
  OpShardingRule rule;
  Value ref = op->getResult(0);
  TensorFactors t = elementwise(rule, ref.getType());
  auto map = [&](Value v) {
    if (shapeOf(v).empty())
      return TensorFactors{};
    assert(shapeOf(v) == shapeOf(ref) && "elementwise operand of another shape");
    return t;
  };
  for (Value v : op->getOperands())
    rule.operands.push_back(map(v));
  for (Value v : op->getResults())
    rule.results.push_back(map(v));
  rule.flops = flopsPerElement * numElements(ref);
  return rule;
}

/// A rule that splits nothing: every dimension of every tensor its own
/// Replicated factor. The fallback for ops the verifier would reject.
OpShardingRule replicatedRule(Operation *op) {
  OpShardingRule rule;
  for (Value v : op->getOperands())
    rule.operands.push_back(addDimFactors(rule, shapeOf(v), FactorKind::Replicated));
  for (Value v : op->getResults())
    rule.results.push_back(addDimFactors(rule, shapeOf(v), FactorKind::Replicated));
  return rule;
}

//===----------------------------------------------------------------------===//
// Reshape factorization
//===----------------------------------------------------------------------===//

/// Factors shared by the operand and result of a row-major reshape. Both
/// shapes are walked in groups of consecutive dimensions with equal products:
/// - a dimension of size 1 is its own factor;
/// - one dimension on each side: one shared factor;
/// - one operand dimension split into several result dimensions
///   (`64 -> 4x16`): a factor per result dimension; the operand dimension maps
///   to all of them, major to minor (and symmetrically for a merge);
/// - several dimensions on both sides (`6x4 -> 4x6`): no dimension lines up
///   with a factor of the other side, so every dimension of the group gets its
///   own Replicated factor (correct, never split).
void reshapeFactors(OpShardingRule &rule, ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                    TensorFactors &inFactors, TensorFactors &outFactors) {
  inFactors.assign(in.size(), {});
  outFactors.assign(out.size(), {});
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    if (i < in.size() && in[i] == 1) {
      inFactors[i++] = {rule.addFactor(1)};
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      outFactors[j++] = {rule.addFactor(1)};
      continue;
    }
    // The smallest group [i, i2) x [j, j2) with equal products.
    size_t i2 = i, j2 = j;
    int64_t inProd = 1, outProd = 1;
    do {
      if (inProd <= outProd && i2 < in.size())
        inProd *= in[i2++];
      else if (j2 < out.size())
        outProd *= out[j2++];
      else if (i2 < in.size())
        inProd *= in[i2++];
      else
        break; // element counts differ: the verifier rejects this reshape
    } while (inProd != outProd);

    if (inProd != outProd || i2 - i == 0 || j2 - j == 0 ||
        (i2 - i > 1 && j2 - j > 1)) {
      for (size_t d = i; d < i2; ++d)
        inFactors[d] = {rule.addFactor(in[d], FactorKind::Replicated)};
      for (size_t d = j; d < j2; ++d)
        outFactors[d] = {rule.addFactor(out[d], FactorKind::Replicated)};
    } else if (i2 - i == 1) {
      // One operand dimension onto one or more result dimensions.
      for (size_t d = j; d < j2; ++d) {
        int f = rule.addFactor(out[d]);
        outFactors[d] = {f};
        inFactors[i].push_back(f);
      }
    } else {
      // Several operand dimensions merged into one result dimension.
      for (size_t d = i; d < i2; ++d) {
        int f = rule.addFactor(in[d]);
        inFactors[d] = {f};
        outFactors[j].push_back(f);
      }
    }
    i = i2;
    j = j2;
  }
}

//===----------------------------------------------------------------------===//
// Attention and loss factors
//===----------------------------------------------------------------------===//

/// Factors of `[batch, seq, heads, head_dim]` attention tensors. Query head h
/// reads kv head h / group, so the query heads factor as [kv_heads, group]
/// (major to minor) and a split of the kv heads splits the query heads with
/// them. The query rows may split (each shard attends its rows to every key:
/// the way to split attention over tp when the heads do not divide it); the
/// keys stay whole (a query needs every key it attends to), and so does
/// head_dim (it is contracted by q.k). Split query rows of causal attention
/// need their global position (indexed: the local op reads its offset), and
/// their work grows with it (triangular: the last shard does the most).
/// dk and dv sum over the query rows: with the rows split they are partial.
struct AttentionFactors {
  TensorFactors q;  ///< q, the result, dout, dq
  TensorFactors kv; ///< k, v, dk, dv
};

AttentionFactors attentionFactors(OpShardingRule &rule, Value q, Value k, bool causal) {
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k);
  int batch = rule.addFactor(qs[0]);
  int qSeq = rule.addFactor(qs[1]);
  rule.factors[qSeq].indexed = causal;
  rule.factors[qSeq].triangular = causal;
  rule.factors[qSeq].spare = true;
  int kvSeq = rule.addFactor(ks[1], FactorKind::Replicated);
  int kvHeads = rule.addFactor(ks[2]);
  int headDim = rule.addFactor(qs[3], FactorKind::Replicated);
  AttentionFactors a;
  a.kv = OpShardingRule::dims({batch, kvSeq, kvHeads, headDim});
  a.q = OpShardingRule::dims({batch, qSeq, kvHeads, headDim});
  if (int64_t group = qs[2] / ks[2]; group > 1)
    a.q[2].push_back(rule.addFactor(group));
  return a;
}

/// FLOPs of `gemms` score-sized GEMMs (q.k or p.v), causal ones skipping the
/// masked pairs. A local op of split query rows (fewer rows than keys) is
/// priced as the shard that does the most: the last rows, which see every
/// key before them.
double attentionFlops(Value q, Value k, bool causal, double gemms) {
  ArrayRef<int64_t> s = shapeOf(q);
  double sq = static_cast<double>(s[1]), skv = static_cast<double>(shapeOf(k)[1]);
  double pairs = causal ? sq * (skv - sq) + 0.5 * sq * sq : sq * skv;
  return gemms * 2.0 * s[0] * s[2] * pairs * s[3];
}

/// Factors of a softmax cross-entropy over `[tokens..., vocab]`. The loss is a
/// mean over the tokens (normalized); the vocabulary is a log-sum-exp the op
/// combines across shards, and indexed because the target's logit (its
/// one-hot column in the gradient) is found from the global target id.
struct LossFactors {
  TensorFactors tokens;
  int vocab;
};

LossFactors lossFactors(OpShardingRule &rule, ArrayRef<int64_t> tokenShape, int64_t vocab,
                        bool backward) {
  LossFactors l;
  // Split vocabulary: per row max and sum of exponentials, and for the loss
  // the target logit.
  rule.lseStatisticsPerRow = backward ? 2 : 3;
  l.tokens = addDimFactors(rule, tokenShape);
  for (const DimFactors &d : l.tokens)
    rule.factors[d.front()].normalized = true;
  l.vocab = rule.addFactor(vocab);
  rule.factors[l.vocab].logSumExp = true;
  rule.factors[l.vocab].indexed = true;
  return l;
}

/// The factors of a logit weight, `[vocab, hidden]` or `[hidden, vocab]`.
TensorFactors weightFactors(bool vocabMajor, int vocab, int hidden) {
  return vocabMajor ? OpShardingRule::dims({vocab, hidden})
                    : OpShardingRule::dims({hidden, vocab});
}

/// The rule of the fused logit GEMM + cross-entropy and of its gradient:
/// operands `[dloss,] x, weight, targets[, mask]`, `gemms` logit-sized GEMMs.
/// The hidden dimension is Replicated: the log-sum-exp of a partial x @ W is
/// not a partial sum.
OpShardingRule linearLossRule(Value x, Value weight, bool vocabMajor, bool hasDloss,
                              bool hasMask, double gemms) {
  OpShardingRule rule;
  ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(weight);
  int64_t vocabSize = vocabMajor ? ws[0] : ws[1];
  LossFactors l = lossFactors(rule, xs.drop_back(), vocabSize, hasDloss);
  int hidden = rule.addFactor(xs.back(), FactorKind::Replicated);
  TensorFactors xFactors = withDim(l.tokens, hidden);
  TensorFactors wFactors = weightFactors(vocabMajor, l.vocab, hidden);
  if (hasDloss)
    rule.operands.push_back({});
  rule.operands.append({xFactors, wFactors, l.tokens});
  if (hasMask)
    rule.operands.push_back(l.tokens);
  if (hasDloss) {
    rule.results = {xFactors, wFactors};
    rule.linearGroups = {{0}};
    // dx sums weight rows over the vocabulary: partial over a split one.
    rule.lseSumResults = {0};
  } else {
    rule.results = {TensorFactors()};
  }
  double tokens = numElements(x) / xs.back();
  rule.flops = 2 * gemms * tokens * static_cast<double>(vocabSize) * static_cast<double>(xs.back());
  return rule;
}

/// The rule of cross-entropy and of its gradient: operands `[dloss,] logits,
/// targets[, mask]`.
OpShardingRule crossEntropyRule(Value logits, bool hasDloss, bool hasMask) {
  OpShardingRule rule;
  ArrayRef<int64_t> ls = shapeOf(logits);
  LossFactors l = lossFactors(rule, ls.drop_back(), ls.back(), hasDloss);
  TensorFactors lf = withDim(l.tokens, l.vocab);
  if (hasDloss)
    rule.operands.push_back({});
  rule.operands.append({lf, l.tokens});
  if (hasMask)
    rule.operands.push_back(l.tokens);
  if (hasDloss) {
    rule.results = {lf};
    rule.linearGroups = {{0}};
  } else {
    rule.results = {TensorFactors()};
  }
  // max, exp, sum and the target pick (and the softmax minus one-hot).
  rule.flops = 5.0 * numElements(logits);
  return rule;
}

} // namespace

//===----------------------------------------------------------------------===//
// Embedding and index ops
//===----------------------------------------------------------------------===//

OpShardingRule EmbeddingOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors tokens = addDimFactors(rule, shapeOf(getIds()));
  ArrayRef<int64_t> table = shapeOf(getTable());
  // A split vocabulary: each shard looks up the ids in its rows and yields
  // zeros for the others, so the result is a partial sum over the shards.
  int vocab = rule.addFactor(table[0], FactorKind::Reduction);
  rule.factors[vocab].indexed = true;
  int hidden = rule.addFactor(table[1]);
  rule.operands = {OpShardingRule::dims({vocab, hidden}), tokens};
  rule.results = {withDim(tokens, hidden)};
  rule.linearGroups = {{0}}; // rows of a partial table are partial rows
  return rule;
}

OpShardingRule IotaOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 0);
  // The values are the global indices along `dim`.
  factorOf(rule, rule.results[0], getDim()).indexed = true;
  return rule;
}

//===----------------------------------------------------------------------===//
// Contractions and elementwise ops
//===----------------------------------------------------------------------===//

OpShardingRule MatmulOp::getShardingRule() {
  std::string error;
  std::optional<Einsum> e = Einsum::parse(getEquation(), error);
  if (!e)
    return replicatedRule(*this);
  OpShardingRule rule;
  // One factor per letter: Parallel if it reaches the result, else contracted.
  llvm::DenseMap<char, int> factorOfLetter;
  auto mapOperand = [&](StringRef letters, ArrayRef<int64_t> shape) {
    TensorFactors t;
    for (auto [letter, size] : llvm::zip(letters, shape)) {
      auto [it, inserted] = factorOfLetter.try_emplace(letter, 0);
      if (inserted)
        it->second = rule.addFactor(size, StringRef(e->out).contains(letter)
                                              ? FactorKind::Parallel
                                              : FactorKind::Reduction);
      t.push_back({it->second});
    }
    return t;
  };
  rule.operands = {mapOperand(e->lhs, shapeOf(getLhs())), mapOperand(e->rhs, shapeOf(getRhs()))};
  rule.results = {mapOperand(e->out, shapeOf(getResult()))};
  rule.linearGroups = {{0}, {1}};
  double macs = 1;
  for (const ShardingFactor &f : rule.factors)
    macs *= static_cast<double>(f.size);
  rule.flops = 2 * macs;
  return rule;
}

OpShardingRule AddOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 1);
  rule.linearGroups = {{0, 1}};
  return rule;
}

OpShardingRule BiasAddOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors x = elementwise(rule, getX().getType());
  rule.operands = {x, {x.back()}};
  rule.results = {x};
  rule.linearGroups = {{0, 1}};
  rule.flops = numElements(getResult());
  return rule;
}

OpShardingRule GeluOp::getShardingRule() { return elementwiseRule(*this, 8); }

OpShardingRule SwigluOp::getShardingRule() { return elementwiseRule(*this, 6); }

OpShardingRule SoftmaxOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors x = rowwise(rule, getX().getType());
  rule.operands = {x};
  rule.results = {x};
  rule.flops = 5 * numElements(getResult());
  return rule;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

OpShardingRule LayerNormOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors x = rowwise(rule, getX().getType());
  DimFactors features = x.back();
  rule.operands = {x, {features}, {features}};
  rule.results = {x};
  rule.flops = 8 * numElements(getResult());
  return rule;
}

OpShardingRule RmsNormOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors x = rowwise(rule, getX().getType());
  rule.operands = {x, {x.back()}};
  rule.results = {x};
  rule.flops = 5 * numElements(getResult());
  return rule;
}

//===----------------------------------------------------------------------===//
// Attention, rope, dropout
//===----------------------------------------------------------------------===//

OpShardingRule AttentionOp::getShardingRule() {
  OpShardingRule rule;
  AttentionFactors a = attentionFactors(rule, getQ(), getK(), getCausal());
  rule.operands = {a.q, a.kv, a.kv};
  rule.results = {a.q};
  rule.flops = attentionFlops(getQ(), getK(), getCausal(), /*gemms=*/2); // q.k and p.v
  return rule;
}

/// Factors of a packed attention: `qkv` [batch, seq, kv_heads, group + 2,
/// head_dim] and the `[batch, seq, heads, head_dim]` tensors (result, dout).
/// The heads split with the kv heads; the sequence is whole (it holds the
/// keys as well as the queries) and so are the slots and head_dim.
struct PackedAttentionFactors {
  TensorFactors qkv, q;
};

PackedAttentionFactors packedAttentionFactors(OpShardingRule &rule, Value qkv) {
  ArrayRef<int64_t> s = shapeOf(qkv);
  int batch = rule.addFactor(s[0]);
  int seq = rule.addFactor(s[1], FactorKind::Replicated);
  int kvHeads = rule.addFactor(s[2]);
  int slots = rule.addFactor(s[3], FactorKind::Replicated);
  int headDim = rule.addFactor(s[4], FactorKind::Replicated);
  PackedAttentionFactors a;
  a.qkv = OpShardingRule::dims({batch, seq, kvHeads, slots, headDim});
  a.q = OpShardingRule::dims({batch, seq, kvHeads, headDim});
  if (int64_t group = s[3] - 2; group > 1)
    a.q[2].push_back(rule.addFactor(group, FactorKind::Replicated));
  return a;
}

OpShardingRule PackedAttentionOp::getShardingRule() {
  OpShardingRule rule;
  PackedAttentionFactors a = packedAttentionFactors(rule, getQkv());
  rule.operands = {a.qkv};
  rule.results = {a.q};
  // The keys are the queries' own rows: q and k have the result's sequence.
  rule.flops = attentionFlops(getResult(), getResult(), getCausal(), /*gemms=*/2);
  return rule;
}

OpShardingRule RopeOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 4);
  const TensorFactors &x = rule.results[0];
  // The angle depends on the global position; rotate-half pairs element i
  // with element i + head_dim/2.
  factorOf(rule, x, 1).indexed = true;
  factorOf(rule, x, 3).kind = FactorKind::Replicated;
  rule.linearGroups = {{0}};
  return rule;
}

OpShardingRule DropoutOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 2);
  // The mask of an element is a function of its global index.
  for (ShardingFactor &f : rule.factors)
    f.indexed = true;
  rule.linearGroups = {{0}};
  return rule;
}

//===----------------------------------------------------------------------===//
// Shape and type ops
//===----------------------------------------------------------------------===//

OpShardingRule ReshapeOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in, out;
  reshapeFactors(rule, shapeOf(getX()), shapeOf(getResult()), in, out);
  rule.operands = {in};
  rule.results = {out};
  rule.linearGroups = {{0}};
  return rule;
}

/// Concat and split: every dimension but `dim` is one factor all tensors
/// share; each tensor's `dim` is a Replicated factor of its own (a split
/// there would interleave the pieces).
static OpShardingRule concatRule(ValueRange pieces, Value whole, int64_t dim, bool split) {
  OpShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(whole);
  TensorFactors shared(shape.size());
  for (auto [d, size] : llvm::enumerate(shape))
    if (static_cast<int64_t>(d) != dim)
      shared[d] = {rule.addFactor(size)};
  auto own = [&](Value v) {
    TensorFactors t = shared;
    t[dim] = {rule.addFactor(shapeOf(v)[dim], FactorKind::Replicated)};
    return t;
  };
  SmallVector<TensorFactors> parts;
  for (Value p : pieces)
    parts.push_back(own(p));
  TensorFactors all = own(whole);
  SmallVector<int, 2> group;
  if (split) {
    rule.operands = {all};
    rule.results.assign(parts.begin(), parts.end());
    group = {0};
  } else {
    rule.operands.assign(parts.begin(), parts.end());
    rule.results = {all};
    for (size_t i = 0; i < parts.size(); ++i)
      group.push_back(static_cast<int>(i));
  }
  rule.linearGroups = {group};
  return rule;
}

OpShardingRule ConcatOp::getShardingRule() {
  return concatRule(getXs(), getResult(), getDim(), /*split=*/false);
}

OpShardingRule SplitOp::getShardingRule() {
  return concatRule(getResults(), getX(), getDim(), /*split=*/true);
}

OpShardingRule TransposeOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in = elementwise(rule, getX().getType()), out;
  for (int64_t p : getPermutation())
    out.push_back(in[p]);
  rule.operands = {in};
  rule.results = {out};
  rule.linearGroups = {{0}};
  return rule;
}

OpShardingRule CastOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 1);
  rule.linearGroups = {{0}}; // up to rounding
  return rule;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

OpShardingRule CrossEntropyOp::getShardingRule() {
  return crossEntropyRule(getLogits(), /*hasDloss=*/false, getMask() != nullptr);
}

OpShardingRule LinearCrossEntropyOp::getShardingRule() {
  return linearLossRule(getX(), getWeight(), getVocabMajor(), /*hasDloss=*/false,
                        getMask() != nullptr, /*gemms=*/1);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

OpShardingRule FillOp::getShardingRule() { return elementwiseRule(*this, 0); }

OpShardingRule TransferOp::getShardingRule() { return elementwiseRule(*this, 0); }

OpShardingRule OffloadOp::getShardingRule() { return elementwiseRule(*this, 0); }

OpShardingRule ReloadOp::getShardingRule() { return elementwiseRule(*this, 0); }

OpShardingRule ScaleOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 1);
  rule.linearGroups = {{0}};
  return rule;
}

OpShardingRule ReduceSumOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> reduced = getDims();
  TensorFactors x, y;
  for (auto [d, size] : llvm::enumerate(shapeOf(getX()))) {
    bool isReduced = llvm::is_contained(reduced, static_cast<int64_t>(d));
    int f = rule.addFactor(size, isReduced ? FactorKind::Reduction : FactorKind::Parallel);
    x.push_back({f});
    if (!isReduced)
      y.push_back({f});
  }
  rule.operands = {x};
  rule.results = {y};
  rule.linearGroups = {{0}};
  rule.flops = numElements(getX());
  return rule;
}

OpShardingRule GeluGradOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 12);
  rule.linearGroups = {{0}}; // dy * gelu'(x)
  return rule;
}

OpShardingRule SwigluGradOp::getShardingRule() {
  OpShardingRule rule = elementwiseRule(*this, 10);
  rule.linearGroups = {{0}}; // both results are dy times a function of gate, up
  return rule;
}

OpShardingRule SoftmaxGradOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors y = rowwise(rule, getY().getType());
  rule.operands = {y, y};
  rule.results = {y};
  rule.linearGroups = {{0}}; // y * (dy - sum(dy * y))
  rule.flops = 4 * numElements(getY());
  return rule;
}

OpShardingRule LayerNormGradOp::getShardingRule() {
  OpShardingRule rule;
  // dgamma and dbeta sum over the tokens: partial sums when those are split.
  TensorFactors x = rowwise(rule, getX().getType());
  TensorFactors features = {x.back()};
  rule.operands = {x, x, features};
  rule.results = {x, features, features};
  rule.linearGroups = {{0}};
  if (getDresidual()) { // dx = f(dy) + dresidual: linear in the two together
    rule.operands.push_back(x);
    rule.linearGroups = {{0, 3}};
  }
  rule.flops = (getDresidual() ? 15 : 14) * numElements(getX());
  return rule;
}

OpShardingRule RmsNormGradOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors x = rowwise(rule, getX().getType());
  TensorFactors features = {x.back()};
  rule.operands = {x, x, features};
  rule.results = {x, features};
  rule.linearGroups = {{0}};
  if (getDresidual()) {
    rule.operands.push_back(x);
    rule.linearGroups = {{0, 3}};
  }
  rule.flops = (getDresidual() ? 11 : 10) * numElements(getX());
  return rule;
}

OpShardingRule AttentionGradOp::getShardingRule() {
  OpShardingRule rule;
  // dk and dv sum over the query heads of a kv head: the group factor is in q
  // and dq only, and the local op sums its own groups.
  AttentionFactors a = attentionFactors(rule, getQ(), getK(), getCausal());
  rule.operands = {a.q, a.q, a.kv, a.kv, a.q};
  rule.results = {a.q, a.kv, a.kv};
  // Every result is linear in dout given the forward values (the softmax
  // backward's row sums are sum(dout * out)).
  rule.linearGroups = {{0}};
  // q.k recomputed, then dv, dp, dq and dk.
  rule.flops = attentionFlops(getQ(), getK(), getCausal(), /*gemms=*/5);
  return rule;
}

OpShardingRule PackedAttentionGradOp::getShardingRule() {
  OpShardingRule rule;
  PackedAttentionFactors a = packedAttentionFactors(rule, getQkv());
  rule.operands = {a.q, a.qkv, a.q};
  rule.results = {a.qkv};
  rule.linearGroups = {{0}};
  rule.flops = attentionFlops(getDout(), getDout(), getCausal(), /*gemms=*/5);
  return rule;
}

OpShardingRule EmbeddingGradOp::getShardingRule() {
  OpShardingRule rule;
  // The token factors are absent from dtable: a split of them leaves partial
  // table gradients. Split rows accumulate only the ids inside the shard.
  TensorFactors tokens = addDimFactors(rule, shapeOf(getIds()));
  ArrayRef<int64_t> table = shapeOf(getDtable());
  int vocab = rule.addFactor(table[0]);
  rule.factors[vocab].indexed = true;
  int hidden = rule.addFactor(table[1]);
  rule.operands = {withDim(tokens, hidden), tokens};
  rule.results = {OpShardingRule::dims({vocab, hidden})};
  rule.linearGroups = {{0}};
  rule.flops = numElements(getDy());
  return rule;
}

OpShardingRule CrossEntropyGradOp::getShardingRule() {
  return crossEntropyRule(getLogits(), /*hasDloss=*/true, getMask() != nullptr);
}

OpShardingRule LinearCrossEntropyGradOp::getShardingRule() {
  // Logits recomputed, then dx and dweight.
  return linearLossRule(getX(), getWeight(), getVocabMajor(), /*hasDloss=*/true,
                        getMask() != nullptr, /*gemms=*/3);
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

OpShardingRule SumSquaresOp::getShardingRule() {
  OpShardingRule rule;
  // Split, each shard's result is a partial sum of squares.
  rule.operands = {addDimFactors(rule, shapeOf(getX()), FactorKind::Reduction)};
  rule.results = {TensorFactors()};
  rule.flops = 2 * numElements(getX());
  return rule;
}

// Scalar bookkeeping: every operand and result is 0-d.
OpShardingRule ClipGradNormOp::getShardingRule() { return elementwiseRule(*this, 6); }

OpShardingRule LrScheduleOp::getShardingRule() { return elementwiseRule(*this, 10); }

OpShardingRule CountStepOp::getShardingRule() { return elementwiseRule(*this, 1); }

OpShardingRule LossScaleUpdateOp::getShardingRule() { return elementwiseRule(*this, 3); }

// The GEMMs with epilogues exist only on rank-local tensors (after
// partitioning): nothing of them is split; their FLOPs are the GEMM's.
static double contractionFlops(StringRef equation, Value lhs, Value rhs) {
  std::string error;
  std::optional<Einsum> e = Einsum::parse(equation, error);
  if (!e)
    return 0;
  llvm::DenseMap<char, int64_t> size;
  for (auto [letter, n] : llvm::zip(e->lhs, shapeOf(lhs)))
    size[letter] = n;
  for (auto [letter, n] : llvm::zip(e->rhs, shapeOf(rhs)))
    size[letter] = n;
  double macs = 1;
  for (auto &entry : size)
    macs *= static_cast<double>(entry.second);
  return 2 * macs;
}

template <class Op> static OpShardingRule epilogueRule(Op op) {
  OpShardingRule rule = replicatedRule(op);
  rule.flops = contractionFlops(op.getEquation(), op.getLhs(), op.getRhs()) +
               static_cast<double>(numElements(op.getResult()));
  return rule;
}

OpShardingRule MatmulBiasOp::getShardingRule() { return epilogueRule(*this); }
OpShardingRule MatmulBiasGeluOp::getShardingRule() { return epilogueRule(*this); }
OpShardingRule MatmulDGeluOp::getShardingRule() { return epilogueRule(*this); }
OpShardingRule MatmulBGradOp::getShardingRule() { return epilogueRule(*this); }

// The multi-tensor ops exist only on rank-local tensors (after partitioning):
// nothing of them is split.
OpShardingRule MultiSumSquaresOp::getShardingRule() {
  OpShardingRule rule = replicatedRule(*this);
  for (Value x : getXs())
    rule.flops += 2 * numElements(x);
  return rule;
}

OpShardingRule MultiAdamWOp::getShardingRule() {
  OpShardingRule rule = replicatedRule(*this);
  for (Value p : getParams())
    rule.flops += 12 * numElements(p);
  return rule;
}

OpShardingRule AdamWOp::getShardingRule() {
  // param, grad, m, v and the results share factors; lr, grad_scale, step and
  // skip are 0-d scalars.
  return elementwiseRule(*this, 12);
}

//===----------------------------------------------------------------------===//
// The rules of a context, each computed once
//===----------------------------------------------------------------------===//

namespace {

/// What a rule is computed from: the op's name, its properties (its
/// attributes, compared as the op stores them: no attribute built), its
/// discardable attributes and its operand and result types, all but the
/// properties uniqued in the context.
struct RuleEntry {
  OperationName name;
  Attribute discardable;
  llvm::SmallVector<Type, 8> types; ///< operands, then results
  unsigned numOperands = 0;
  std::unique_ptr<char[]> properties; ///< a copy, initialized by the op's name
  OpShardingRule rule;

  RuleEntry(Operation *op) : name(op->getName()), discardable(op->getRawDictionaryAttrs()) {
    types.append(op->operand_type_begin(), op->operand_type_end());
    numOperands = op->getNumOperands();
    types.append(op->result_type_begin(), op->result_type_end());
    if (int bytes = name.getOpPropertyByteSize()) {
      properties = std::make_unique<char[]>(bytes);
      name.initOpProperties(properties.get(), op->getPropertiesStorage());
    }
  }
  ~RuleEntry() {
    if (properties)
      name.destroyOpProperties(properties.get());
  }
  RuleEntry(const RuleEntry &) = delete;
  RuleEntry &operator=(const RuleEntry &) = delete;

  bool matches(Operation *op) const {
    ArrayRef<Type> all(types);
    if (op->getName() != name || op->getRawDictionaryAttrs() != discardable ||
        op->getNumOperands() != numOperands ||
        !llvm::equal(op->getOperandTypes(), all.take_front(numOperands)) ||
        !llvm::equal(op->getResultTypes(), all.drop_front(numOperands)))
      return false;
    return !properties || name.compareOpProperties(properties.get(), op->getPropertiesStorage());
  }
};

size_t ruleHash(Operation *op) {
  OperationName name = op->getName();
  llvm::hash_code h = llvm::hash_combine(name.getAsOpaquePointer(),
                                         op->getRawDictionaryAttrs().getAsOpaquePointer(),
                                         op->getNumOperands());
  if (name.getOpPropertyByteSize())
    h = llvm::hash_combine(h, name.hashOpProperties(op->getPropertiesStorage()));
  for (Type t : op->getOperandTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  return static_cast<size_t>(h);
}

struct RuleCache {
  std::shared_mutex mutex;
  /// By hash; each entry on the heap: a rule handed out stays where it is.
  std::unordered_map<size_t, llvm::SmallVector<std::unique_ptr<RuleEntry>, 1>> rules;
};

/// Rules of ops in a context without the xf dialect loaded (an
/// out-of-tree op implementing the interface alone): kept for the thread.
thread_local std::deque<OpShardingRule> unloadedRules;

} // namespace

std::shared_ptr<void> shardc::xf::makeShardingRuleCache() {
  return std::make_shared<RuleCache>();
}

const OpShardingRule &shardc::xf::cachedShardingRule(ShardingRuleOpInterface iface) {
  Operation *op = iface.getOperation();
  auto *dialect = op->getContext()->getLoadedDialect<XfDialect>();
  if (!dialect || !dialect->shardingRules)
    return unloadedRules.emplace_back(iface.getShardingRule());
  auto &cache = *static_cast<RuleCache *>(dialect->shardingRules.get());
  size_t hash = ruleHash(op);
  auto find = [&]() -> const OpShardingRule * {
    auto it = cache.rules.find(hash);
    if (it != cache.rules.end())
      for (const std::unique_ptr<RuleEntry> &e : it->second)
        if (e->matches(op))
          return &e->rule;
    return nullptr;
  };
  {
    std::shared_lock<std::shared_mutex> lock(cache.mutex);
    if (const OpShardingRule *rule = find())
      return *rule;
  }
  auto entry = std::make_unique<RuleEntry>(op);
  entry->rule = iface.getShardingRule();
  std::unique_lock<std::shared_mutex> lock(cache.mutex);
  if (const OpShardingRule *rule = find()) // another thread's, meanwhile
    return *rule;
  return cache.rules[hash].emplace_back(std::move(entry))->rule;
}
