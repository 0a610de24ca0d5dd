//===- OpTable.cpp - the kernel-level ops of the runtime, declared once ---===//

#include "runtime/abi/OpTable.h"

#include <cstdio>
#include <cstdlib>

namespace shardc::abi {

namespace {

constexpr AttrKind F64 = AttrKind::F64, I64 = AttrKind::I64, Unit = AttrKind::Unit,
                   I64Array = AttrKind::I64Array, Str = AttrKind::String, Axes = AttrKind::Axes,
                   Red = AttrKind::Reduction;

AttrSpec req(const char *name, AttrKind kind) { return {name, kind, true}; }
AttrSpec opt(const char *name, AttrKind kind) { return {name, kind, false}; }

/// Every (operand, result) pair of an op whose kernel is pointwise over all
/// of them.
std::vector<InPlace> allPairs(uint8_t operands, uint8_t results) {
  std::vector<InPlace> v;
  for (uint8_t o = 0; o < operands; ++o)
    for (uint8_t r = 0; r < results; ++r)
      v.push_back({o, r});
  return v;
}

const std::vector<InPlace> kFirst = {{0, 0}};
const std::vector<InPlace> kEither = {{0, 0}, {1, 0}};

std::vector<OpSpec> build() {
  using C = OpCode;
  // The cross-entropy family: the ignored id, the true vocabulary size of a
  // padded one and the token mean's group.
  std::vector<AttrSpec> ce = {req("ignore_index", I64), opt("classes", I64),
                              opt("token_axes", Axes)};
  std::vector<AttrSpec> linearCe = {req("ignore_index", I64), opt("classes", I64),
                                    opt("vocab_major", Unit), opt("token_axes", Axes)};
  std::vector<AttrSpec> attention = {opt("causal", Unit), req("scale", F64)};
  std::vector<AttrSpec> eps = {req("epsilon", F64)};
  std::vector<OpSpec> t = {
      // code, name, operands min..max, results, collective, attributes, in place[, view]
      {C::Embedding, "xf.embedding", 2, 2, 1, false, {}, {}},
      {C::Iota, "xf.iota", 0, 0, 1, false, {req("dim", I64)}, {}},
      {C::Matmul, "xf.matmul", 2, 2, 1, false, {req("equation", Str)}, {}},
      {C::Add, "xf.add", 2, 2, 1, false, {}, kEither},
      {C::BiasAdd, "xf.bias_add", 2, 2, 1, false, {}, kFirst},
      {C::LayerNorm, "xf.layernorm", 3, 3, 1, false, eps, kFirst},
      {C::RmsNorm, "xf.rmsnorm", 2, 2, 1, false, eps, kFirst},
      {C::Gelu, "xf.gelu", 1, 1, 1, false, {}, kFirst},
      {C::Swiglu, "xf.swiglu", 2, 2, 1, false, {}, kEither},
      {C::Softmax, "xf.softmax", 1, 1, 1, false, {}, kFirst},
      {C::Attention, "xf.attention", 3, 3, 1, false, attention, {}},
      {C::Rope, "xf.rope", 1, 1, 1, false, {req("theta", F64), opt("inverse", Unit)}, kFirst},
      {C::Dropout, "xf.dropout", 1, 1, 1, false, {req("rate", F64), req("key", I64)}, kFirst},
      {C::Reshape, "xf.reshape", 1, 1, 1, false, {}, kFirst, /*viewInPlace=*/true},
      {C::Transpose, "xf.transpose", 1, 1, 1, false, {req("permutation", I64Array)}, {}},
      {C::Cast, "xf.cast", 1, 1, 1, false, {}, kFirst},
      {C::Fill, "xf.fill", 0, 0, 1, false, {req("value", F64)}, {}},
      {C::Scale, "xf.scale", 1, 1, 1, false, {req("factor", F64)}, kFirst},
      {C::CrossEntropy, "xf.cross_entropy", 2, 3, 1, false, ce, {}},
      {C::LinearCrossEntropy, "xf.linear_cross_entropy", 3, 4, 1, false, linearCe, {}},
      {C::CrossEntropyGrad, "xf.cross_entropy_grad", 3, 4, 1, false, ce, {}},
      {C::LinearCrossEntropyGrad, "xf.linear_cross_entropy_grad", 4, 5, 2, false, linearCe, {}},
      {C::GeluGrad, "xf.gelu_grad", 2, 2, 1, false, {}, kEither},
      // Pointwise: all three inputs are read before either output is written.
      {C::SwigluGrad, "xf.swiglu_grad", 3, 3, 2, false, {}, allPairs(3, 2)},
      {C::SoftmaxGrad, "xf.softmax_grad", 2, 2, 1, false, {}, kFirst},
      // The optional 4th operand is the residual gradient added to dx (in place).
      {C::LayerNormGrad, "xf.layernorm_grad", 3, 4, 3, false, eps, {{3, 0}}},
      {C::RmsNormGrad, "xf.rmsnorm_grad", 3, 4, 2, false, eps, {{3, 0}}},
      {C::AttentionGrad, "xf.attention_grad", 5, 5, 3, false, attention, {}},
      {C::EmbeddingGrad, "xf.embedding_grad", 2, 2, 1, false, {}, {}},
      {C::ReduceSum, "xf.reduce_sum", 1, 1, 1, false, {req("dims", I64Array)}, {}},
      {C::SumSquares, "xf.sum_squares", 1, 1, 1, false, {}, {}},
      {C::ClipGradNorm, "xf.clip_grad_norm", 1, 2, 3, false, {req("max_norm", F64)}, {}},
      {C::LrSchedule, "xf.lr_schedule", 1, 1, 1, false,
       {req("lr", F64), req("min_lr", F64), req("warmup", I64), req("decay_steps", I64)}, {}},
      // param -> param, m -> m, v -> v.
      {C::AdamW, "xf.adamw", 7, 8, 3, false,
       {req("beta1", F64), req("beta2", F64), req("epsilon", F64), req("weight_decay", F64)},
       {{0, 0}, {2, 1}, {3, 2}}},
      {C::CountStep, "xf.count_step", 1, 2, 1, false, {}, {}},
      {C::LossScaleUpdate, "xf.loss_scale_update", 3, 3, 2, false,
       {req("window", I64), req("factor", F64), req("min_scale", F64)}, {}},
      // Multi-tensor (-xf-fuse-optimizer): one list of gradients -> one sum.
      {C::MultiSumSquares, "xf.multi_sum_squares", 0, 0, 1, false, {}, {}, false, 1, 0},
      // Lists params, grads, m, v, then lr, grad_scale, step[, skip] ->
      // lists params, m, v, then the copies `copies` names; in place like
      // xf.adamw, list by list.
      {C::MultiAdamW, "xf.multi_adamw", 3, 4, 0, false,
       {req("beta1", F64), req("beta2", F64), req("epsilon", F64), req("weight_decay", F64),
        req("decay", I64Array), req("copies", I64Array)},
       {{0, 0}, {2, 1}, {3, 2}}, false, 4, 3, true},
      // GEMMs with epilogues (-xf-fuse-epilogues): x, w[, bias | pre].
      {C::MatmulBias, "xf.matmul_bias", 3, 3, 1, false, {req("equation", Str)}, {}},
      {C::MatmulBiasGelu, "xf.matmul_bias_gelu", 3, 3, 2, false, {req("equation", Str)}, {}},
      {C::MatmulDGelu, "xf.matmul_dgelu", 3, 3, 1, false, {req("equation", Str)}, {}},
      {C::MatmulBGrad, "xf.matmul_bgrad", 2, 2, 2, false, {req("equation", Str)}, {}},
      {C::AllGather, "shard.all_gather", 1, 1, 1, true,
       {opt("grid_axes", Axes), req("gather_axis", I64)}, {}},
      {C::AllReduce, "shard.all_reduce", 1, 1, 1, true,
       {opt("grid_axes", Axes), opt("reduction", Red)}, {}},
      {C::ReduceScatter, "shard.reduce_scatter", 1, 1, 1, true,
       {opt("grid_axes", Axes), req("scatter_axis", I64), opt("reduction", Red)}, {}},
      {C::AllSlice, "shard.all_slice", 1, 1, 1, true,
       {opt("grid_axes", Axes), req("slice_axis", I64)}, {}},
      {C::AllToAll, "shard.all_to_all", 1, 1, 1, true,
       {opt("grid_axes", Axes), req("split_axis", I64), req("concat_axis", I64)}, {}},
      // Pipeline point-to-point: stage `from` sends, stage `to` receives.
      {C::Transfer, "xf.transfer", 1, 1, 1, true,
       {opt("grid_axes", Axes), req("from", I64), req("to", I64)}, {}},
      // Activation offload (-xf-offload-activations): copies between the
      // workspace and the host arena. Lowering makes them asynchronous
      // copies (rt.copy_start); as kernels they are plain copies.
      {C::Offload, "xf.offload", 1, 1, 1, false, {}, {}},
      {C::Reload, "xf.reload", 1, 1, 1, false, {}, {}},
      // The fused Q/K/V projection: n >= 1 tensors joined along `dim`, and
      // the inverse, one tensor cut along `dim` into n results. Copies, not
      // views: neither may share a buffer.
      {C::Concat, "xf.concat", 0, 0, 1, false, {req("dim", I64)}, {}, false, 1, 0},
      {C::Split, "xf.split", 1, 1, 0, false, {req("dim", I64)}, {}, false, 0, 1},
      // Attention reading q, k, v in place from one [B, S, Hkv, G + 2, D]
      // qkv (Megatron's grouped layout); the gradient writes dq, dk, dv into
      // the same slots of one dqkv: dout, qkv, out -> dqkv.
      {C::PackedAttention, "xf.packed_attention", 1, 1, 1, false, attention, {}},
      {C::PackedAttentionGrad, "xf.packed_attention_grad", 3, 3, 1, false, attention, {}},
  };
  for (size_t i = 0; i < t.size(); ++i)
    if (static_cast<size_t>(t[i].code) != i) {
      std::fprintf(stderr, "shardc: op table entry %zu (%s) is out of OpCode order\n", i,
                   t[i].name);
      std::abort();
    }
  return t;
}

} // namespace

const std::vector<OpSpec> &opTable() {
  static const std::vector<OpSpec> table = build();
  return table;
}

const OpSpec *findOp(std::string_view name) {
  for (const OpSpec &op : opTable())
    if (name == op.name)
      return &op;
  return nullptr;
}

const AttrSpec *findAttr(const OpSpec &op, std::string_view name) {
  for (const AttrSpec &a : op.attrs)
    if (name == a.name)
      return &a;
  return nullptr;
}

int64_t listLength(const OpSpec &op, size_t operands, size_t results) {
  const bool fixedOperands = operands >= op.minOperands && operands <= op.maxOperands;
  if (op.tensorLists == 0 && op.resultLists == 0)
    return fixedOperands && results == op.results ? 0 : -1;
  if (op.tensorLists == 0) { // only the results form lists (xf.split)
    if (!fixedOperands || results <= op.results || (results - op.results) % op.resultLists != 0)
      return -1;
    return static_cast<int64_t>((results - op.results) / op.resultLists);
  }
  for (size_t scalars = op.minOperands; scalars <= op.maxOperands; ++scalars) {
    if (operands <= scalars || (operands - scalars) % op.tensorLists != 0)
      continue;
    size_t n = (operands - scalars) / op.tensorLists;
    size_t fixed = op.resultLists * n + op.results;
    if (results == fixed || (op.extraResults && results > fixed && results <= fixed + n))
      return static_cast<int64_t>(n);
  }
  return -1;
}

std::string arityText(const OpSpec &op) {
  auto range = [](unsigned lo, unsigned hi) {
    return std::to_string(lo) + (lo == hi ? "" : ".." + std::to_string(hi));
  };
  if (op.tensorLists == 0 && op.resultLists == 0)
    return "takes " + range(op.minOperands, op.maxOperands) + " operands and " +
           std::to_string(op.results) + " results";
  if (op.tensorLists == 0)
    return "takes " + range(op.minOperands, op.maxOperands) + " operands and " +
           std::to_string(op.resultLists) + " lists of n >= 1 results" +
           (op.results ? " and " + std::to_string(op.results) + " more" : "");
  std::string s = "takes " + std::to_string(op.tensorLists) + " lists of n >= 1 tensors and " +
                  range(op.minOperands, op.maxOperands) + " scalar operands, and ";
  if (op.resultLists)
    s += std::to_string(op.resultLists) + " lists of n" + (op.results ? " and " : "");
  if (op.results || !op.resultLists)
    s += std::to_string(op.results);
  s += op.extraResults ? " results (then up to n more)" : " results";
  return s;
}

bool mayShareBuffer(OpCode code, size_t operand, size_t result, size_t operands,
                    size_t results) {
  const OpSpec &op = opSpec(code);
  if (op.tensorLists == 0) {
    for (const InPlace &p : op.inPlace)
      if (p.operand == operand && p.result == result)
        return true;
    return false;
  }
  int64_t n = listLength(op, operands, results);
  if (n <= 0)
    return false;
  size_t un = static_cast<size_t>(n);
  if (operand >= op.tensorLists * un || result >= op.resultLists * un ||
      operand % un != result % un)
    return false;
  for (const InPlace &p : op.inPlace)
    if (p.operand == operand / un && p.result == result / un)
      return true;
  return false;
}

const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::F64:
    return "f64";
  case AttrKind::I64:
    return "i64";
  case AttrKind::Unit:
    return "unit";
  case AttrKind::I64Array:
    return "i64 array";
  case AttrKind::String:
    return "string";
  case AttrKind::Axes:
    return "mesh axes";
  case AttrKind::Reduction:
    return "reduction kind";
  }
  return "?";
}

namespace {
std::string computeOpTableFingerprint() {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  auto num = [&](uint64_t v) { mix(std::to_string(v)); };
  num(kProgramVersion);
  for (const OpSpec &op : opTable()) {
    num(static_cast<uint64_t>(op.code));
    mix(op.name);
    num(op.minOperands);
    num(op.maxOperands);
    num(op.results);
    num(op.collective);
    num(op.viewInPlace);
    num(op.tensorLists);
    num(op.resultLists);
    num(op.extraResults);
    for (const AttrSpec &a : op.attrs) {
      mix(a.name);
      num(static_cast<uint64_t>(a.kind));
      num(a.required);
    }
    for (const InPlace &p : op.inPlace) {
      num(p.operand);
      num(p.result);
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}
} // namespace

std::string opTableFingerprint() {
  // The table is constant: hashed once (the memory planner asks per kernel).
  static const std::string fingerprint = computeOpTableFingerprint();
  return fingerprint;
}

} // namespace shardc::abi
