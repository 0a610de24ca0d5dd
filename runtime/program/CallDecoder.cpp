//===- CallDecoder.cpp - the call table, decoded once ---------------------===//

#include "runtime/program/CallDecoder.h"
#include "runtime/program/KernelScratch.h"

#include <algorithm>

namespace shardc::rt {

namespace {

bool has(const std::string &s, char c) { return s.find(c) != std::string::npos; }

} // namespace

Equation parseEquation(const std::string &eq) {
  size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      eq.find(',', comma + 1) < arrow)
    throw Error("equation '" + eq + "' must have the form 'lhs,rhs->out'");
  Equation e{eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1), eq.substr(arrow + 2),
             "", "", "", ""};
  for (const std::string *part : {&e.lhs, &e.rhs, &e.out})
    for (size_t i = 0; i < part->size(); ++i) {
      char c = (*part)[i];
      if (c < 'a' || c > 'z' || part->find(c, i + 1) != std::string::npos)
        throw Error("equation '" + eq + "' must use distinct lower-case letters per operand");
    }
  for (char c : e.out) {
    bool l = has(e.lhs, c), r = has(e.rhs, c);
    if (!l && !r)
      throw Error("result letter '" + std::string(1, c) + "' of '" + eq + "' is in no operand");
    (l && r ? e.batch : l ? e.lhsFree : e.rhsFree) += c;
  }
  for (char c : e.lhs)
    if (!has(e.out, c)) {
      if (!has(e.rhs, c))
        throw Error("letter '" + std::string(1, c) + "' of '" + eq + "' is summed in lhs only");
      e.contracted += c;
    }
  for (char c : e.rhs)
    if (!has(e.out, c) && !has(e.lhs, c))
      throw Error("letter '" + std::string(1, c) + "' of '" + eq + "' is summed in rhs only");
  return e;
}

bool isCollectiveKind(OpKind k) { return abi::opSpec(k).collective; }

bool isCrossEntropyKind(OpKind k) {
  return k == OpKind::CrossEntropy || k == OpKind::LinearCrossEntropy ||
         k == OpKind::CrossEntropyGrad || k == OpKind::LinearCrossEntropyGrad;
}

void failCall(const DecodedCall &d, const std::string &what) { throw Error(d.where() + ": " + what); }


namespace {

using Decoded = DecodedCall;

[[noreturn]] void fail(const Decoded &d, const std::string &what) { failCall(d, what); }

void need(const Decoded &d, bool cond, const std::string &what) {
  if (!cond)
    fail(d, what);
}

const nlohmann::json *attr(const Call &c, const char *name) {
  auto it = c.attrs.find(name);
  return it == c.attrs.end() || it->is_null() ? nullptr : &*it;
}

double attrF64(const Call &c, const Decoded &d, const char *name) {
  const nlohmann::json *a = attr(c, name);
  if (!a || !a->is_number())
    fail(d, std::string("attribute '") + name + "' is missing or not a number");
  return a->get<double>();
}

int64_t attrI64(const Call &c, const Decoded &d, const char *name,
                std::optional<int64_t> fallback = std::nullopt) {
  const nlohmann::json *a = attr(c, name);
  if (!a && fallback)
    return *fallback;
  if (!a || !a->is_number_integer())
    fail(d, std::string("attribute '") + name + "' is missing or not an integer");
  return a->get<int64_t>();
}

/// A unit attribute: present (as true) or absent.
bool attrUnit(const Call &c, const Decoded &d, const char *name) {
  const nlohmann::json *a = attr(c, name);
  if (!a)
    return false;
  if (!a->is_boolean())
    fail(d, std::string("attribute '") + name + "' must be true or absent");
  return a->get<bool>();
}

std::vector<int64_t> attrInts(const Call &c, const Decoded &d, const char *name) {
  const nlohmann::json *a = attr(c, name);
  if (!a || !a->is_array())
    fail(d, std::string("attribute '") + name + "' is missing or not an array");
  std::vector<int64_t> v;
  for (const nlohmann::json &e : *a) {
    if (!e.is_number_integer())
      fail(d, std::string("attribute '") + name + "' must hold integers");
    v.push_back(e.get<int64_t>());
  }
  return v;
}


/// The attributes against the op table: each one known and of its kind,
/// the required ones present.
void checkAttrs(const Call &c, const Decoded &d, const abi::OpSpec &spec) {
  if (!c.attrs.is_object())
    fail(d, "'attrs' must be an object");
  for (auto it = c.attrs.begin(); it != c.attrs.end(); ++it) {
    const abi::AttrSpec *a = abi::findAttr(spec, it.key());
    if (!a)
      fail(d, "attribute '" + it.key() + "' is not one of the op's (runtime/abi/OpTable.cpp)");
    const nlohmann::json &v = it.value();
    bool ok = false;
    switch (a->kind) {
    case abi::AttrKind::F64:
      ok = v.is_number();
      break;
    case abi::AttrKind::I64:
      ok = v.is_number_integer();
      break;
    case abi::AttrKind::Unit:
      ok = v.is_boolean();
      break;
    case abi::AttrKind::String:
    case abi::AttrKind::Reduction:
      ok = v.is_string();
      break;
    case abi::AttrKind::I64Array:
    case abi::AttrKind::Axes:
      ok = v.is_array() && std::all_of(v.begin(), v.end(),
                                       [](const nlohmann::json &e) { return e.is_number_integer(); });
      break;
    }
    if (!ok)
      fail(d, "attribute '" + it.key() + "' must be " + abi::attrKindName(a->kind) + ", not " +
                  v.dump());
  }
  for (const abi::AttrSpec &a : spec.attrs)
    if (a.required && !c.attrs.contains(a.name))
      fail(d, std::string("attribute '") + a.name + "' (" + abi::attrKindName(a.kind) +
                  ") is missing");
}

/// The block of dim `dim` of tensor `index` given per-tensor, per-dim axes
/// (the whole dim without placement).
Block place(const MeshDesc &mesh, const std::vector<int64_t> &coords,
            const std::vector<std::vector<Axes>> &axes, size_t index, const TensorType &t,
            size_t dim) {
  Block b;
  b.local = dim < t.shape.size() ? t.shape[dim] : 1;
  b.global = b.local;
  if (index >= axes.size() || dim >= axes[index].size() || axes[index][dim].empty())
    return b;
  b.axes = axes[index][dim];
  b.offset = mesh.shardIndex(b.axes, coords) * b.local;
  b.global = b.local * mesh.size(b.axes);
  return b;
}

/// (operand, dim) of a cross-entropy op that holds the vocabulary.
std::pair<size_t, size_t> vocabDimOf(const Decoded &d) {
  auto last = [&](size_t i) {
    return std::pair<size_t, size_t>(i, d.operands[i].shape.empty()
                                            ? 0
                                            : d.operands[i].shape.size() - 1);
  };
  switch (d.kind) {
  case OpKind::CrossEntropy:
    return last(0);
  case OpKind::CrossEntropyGrad:
    return last(1);
  case OpKind::LinearCrossEntropy:
    return {1, d.vocabMajor ? 0 : 1};
  default: // LinearCrossEntropyGrad
    return {2, d.vocabMajor ? 0 : 1};
  }
}

/// Checks shapes and reads the attributes of a local (non-collective) op.
void decodeLocal(const Call &c, Decoded &d, const MeshDesc &mesh,
                 const std::vector<int64_t> &coords) {
  const auto &in = d.operands;
  const auto &out = d.results;
  auto floatOperand = [&](size_t i) {
    need(d, isFloat(in[i].dtype), "operand #" + std::to_string(i) + " must be a float tensor");
  };
  // Attention: q (operand qi) against k (operand ki): batch and head size
  // agree; q holds the block of query rows its placement gives (d.block:
  // every row unless the rows are split), k every key.
  auto queryRows = [&](size_t qi, size_t ki) {
    need(d, in[ki].shape[0] == in[qi].shape[0] && in[ki].shape[3] == in[qi].shape[3],
         "q, k and v must agree in batch and head size");
    d.block = place(mesh, coords, c.operandAxes, qi, in[qi], 1);
    need(d, d.block.global == in[ki].shape[1],
         "q holds " + std::to_string(d.block.local) + " of " + std::to_string(d.block.global) +
             " query rows, but k has " + std::to_string(in[ki].shape[1]) +
             " keys (a query block must be a split of the whole sequence)");
  };
  auto idOperand = [&](size_t i) {
    need(d, in[i].dtype == DType::I32, "operand #" + std::to_string(i) + " must be i32 ids");
  };
  auto floatResults = [&] {
    for (size_t i = 0; i < out.size(); ++i)
      need(d, isFloat(out[i].dtype), "result #" + std::to_string(i) + " must be a float tensor");
  };
  auto sameNumel = [&](size_t operand, size_t result) {
    need(d, in[operand].numel() == out[result].numel(),
         "operand #" + std::to_string(operand) + " " + shape_str(in[operand].shape) +
             " and result #" + std::to_string(result) + " " + shape_str(out[result].shape) +
             " differ in size");
  };
  auto scalar = [&](const TensorType &t, const char *what) {
    need(d, t.numel() == 1, std::string(what) + " must hold one value, not " + shape_str(t.shape));
  };
  auto rank4 = [&](const TensorType &t, const char *what) {
    need(d, t.shape.size() == 4, std::string(what) + " must be [B, S, H, D], not " +
                                     shape_str(t.shape));
  };

  switch (d.kind) {
  case OpKind::Embedding: {
    floatOperand(0);
    idOperand(1);
    floatResults();
    need(d, in[0].shape.size() == 2, "the table must be [vocab, hidden]");
    need(d, out[0].numel() == in[1].numel() * in[0].shape[1],
         "the result must hold one table row per id");
    d.block = place(mesh, coords, c.operandAxes, 0, in[0], 0);
    break;
  }
  case OpKind::Iota:
    need(d, out[0].dtype == DType::I32, "the result must be i32");
    d.dim = attrI64(c, d, "dim");
    need(d, d.dim >= 0 && d.dim < static_cast<int64_t>(out[0].shape.size()),
         "dim " + std::to_string(d.dim) + " is outside the result " + shape_str(out[0].shape));
    d.block = place(mesh, coords, c.resultAxes, 0, out[0], d.dim);
    break;
  case OpKind::Matmul:
  case OpKind::MatmulBias:
  case OpKind::MatmulBiasGelu:
  case OpKind::MatmulDGelu:
  case OpKind::MatmulBGrad: {
    floatOperand(0);
    floatOperand(1);
    floatResults();
    const nlohmann::json *eqAttr = attr(c, "equation");
    need(d, eqAttr && eqAttr->is_string(), "attribute 'equation' is missing or not a string");
    try {
      d.eq = parseEquation(eqAttr->get<std::string>());
    } catch (const Error &e) {
      fail(d, e.what());
    }
    const Equation &e = d.eq;
    need(d, in[0].shape.size() == e.lhs.size() && in[1].shape.size() == e.rhs.size() &&
                out[0].shape.size() == e.out.size(),
         "operand ranks do not match equation '" + eqAttr->get<std::string>() + "'");
    std::fill(std::begin(d.letter), std::end(d.letter), -1);
    for (size_t i = 0; i < e.lhs.size(); ++i)
      d.letter[e.lhs[i] - 'a'] = in[0].shape[i];
    for (size_t i = 0; i < e.rhs.size(); ++i) {
      int64_t &s = d.letter[e.rhs[i] - 'a'];
      need(d, s < 0 || s == in[1].shape[i],
           std::string("dimension '") + e.rhs[i] + "' differs between lhs and rhs");
      s = in[1].shape[i];
    }
    for (size_t i = 0; i < e.out.size(); ++i)
      need(d, d.letter[e.out[i] - 'a'] == out[0].shape[i],
           "the result shape " + shape_str(out[0].shape) + " does not match the equation");
    auto product = [&](const std::string &letters) {
      int64_t p = 1;
      for (char ch : letters)
        p *= d.letter[ch - 'a'];
      return p;
    };
    const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
    d.transA = e.lhs == B + K + M && e.lhs != B + M + K;
    d.transB = e.rhs == B + N + K && e.rhs != B + K + N;
    d.batch = product(B);
    d.m = product(M);
    d.n = product(N);
    d.k = product(K);
    // The epilogue's operand and second result.
    switch (d.kind) {
    case OpKind::MatmulBias:
    case OpKind::MatmulBiasGelu:
      floatOperand(2);
      need(d, !out[0].shape.empty() && in[2].numel() == out[0].shape.back(),
           "the bias must have the result's last dim");
      if (d.kind == OpKind::MatmulBiasGelu)
        need(d, out[1].shape == out[0].shape, "the pre-activation must have the result's shape");
      break;
    case OpKind::MatmulDGelu:
      floatOperand(2);
      need(d, in[2].shape == out[0].shape, "the pre-activation must have the result's shape");
      break;
    case OpKind::MatmulBGrad: {
      // dbias: rhs summed over its contracted letters.
      int64_t kept = 1;
      d.dims.clear();
      for (size_t i = 0; i < e.rhs.size(); ++i)
        if (e.out.find(e.rhs[i]) == std::string::npos)
          d.dims.push_back(static_cast<int64_t>(i));
        else
          kept *= in[1].shape[i];
      need(d, out[1].numel() == kept, "the bias gradient must have rhs's uncontracted size");
      break;
    }
    default:
      break;
    }
    break;
  }
  case OpKind::Add:
  case OpKind::Swiglu:
    floatOperand(0);
    floatOperand(1);
    floatResults();
    sameNumel(0, 0);
    sameNumel(1, 0);
    break;
  case OpKind::BiasAdd:
    floatOperand(0);
    floatOperand(1);
    floatResults();
    sameNumel(0, 0);
    need(d, in[1].numel() == lastDim(in[0]), "the bias must have the last dim of x");
    break;
  case OpKind::Gelu:
  case OpKind::Softmax:
  case OpKind::Cast:
    floatOperand(0);
    floatResults();
    sameNumel(0, 0);
    break;
  case OpKind::Scale:
    floatOperand(0);
    floatResults();
    sameNumel(0, 0);
    d.factor = attrF64(c, d, "factor");
    break;
  case OpKind::Fill:
    floatResults();
    d.value = attrF64(c, d, "value");
    break;
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
    for (size_t i = 0; i < in.size(); ++i) {
      floatOperand(i);
      if (i > 0)
        need(d, in[i].numel() == lastDim(in[0]), "gamma and beta must have the last dim of x");
    }
    floatResults();
    sameNumel(0, 0);
    d.epsilon = attrF64(c, d, "epsilon");
    break;
  case OpKind::Attention:
    for (size_t i = 0; i < 3; ++i)
      floatOperand(i);
    floatResults();
    rank4(in[0], "q");
    rank4(in[1], "k");
    need(d, in[1].shape == in[2].shape, "k and v must have the same shape");
    queryRows(0, 1);
    sameNumel(0, 0);
    d.causal = attrUnit(c, d, "causal");
    d.scale = attrF64(c, d, "scale");
    break;
  case OpKind::PackedAttention:
  case OpKind::PackedAttentionGrad: {
    // qkv [B, S, Hkv, G + 2, D]: per kv head its G query heads, k and v.
    const bool grad = d.kind == OpKind::PackedAttentionGrad;
    const size_t qi = grad ? 1 : 0;
    for (size_t i = 0; i < in.size(); ++i)
      floatOperand(i);
    floatResults();
    const auto &qkv = in[qi].shape;
    need(d, qkv.size() == 5, "qkv must be [B, S, Hkv, G + 2, D], not " + shape_str(qkv));
    need(d, qkv[3] >= 3,
         "qkv " + shape_str(qkv) + " holds " + std::to_string(qkv[3]) +
             " heads per kv head; it needs G >= 1 query heads, k and v (G + 2 >= 3)");
    const std::vector<int64_t> attended = {qkv[0], qkv[1], qkv[2] * (qkv[3] - 2), qkv[4]};
    if (grad) {
      need(d, in[0].shape == attended && in[2].shape == attended,
           "dout and out must be [B, S, Hkv * G, D] = " + shape_str(attended) + ", not " +
               shape_str(in[0].shape) + " and " + shape_str(in[2].shape));
      need(d, out[0].shape == qkv,
           "dqkv must have qkv's shape " + shape_str(qkv) + ", not " + shape_str(out[0].shape));
    } else {
      need(d, out[0].shape == attended,
           "the result must be [B, S, Hkv * G, D] = " + shape_str(attended) + ", not " +
               shape_str(out[0].shape));
    }
    // The kernels read whole sequences: no block of the query rows.
    for (size_t i = 0; i < in.size(); ++i) {
      const Block rows = place(mesh, coords, c.operandAxes, i, in[i], 1);
      need(d, rows.local == rows.global,
           "operand #" + std::to_string(i) + " holds " + std::to_string(rows.local) + " of " +
               std::to_string(rows.global) +
               " sequence rows; packed attention needs the whole sequence (split the heads, "
               "or use xf.attention)");
    }
    d.causal = attrUnit(c, d, "causal");
    d.scale = attrF64(c, d, "scale");
    break;
  }
  case OpKind::Concat:
  case OpKind::Split: {
    // Concat: n operands -> one result; split: one operand -> n results.
    // Every tensor has the joined one's rank, dtype and shape but in `dim`,
    // where the parts' sizes sum to the joined one's.
    const bool concat = d.kind == OpKind::Concat;
    const std::vector<TensorType> &parts = concat ? in : out;
    const TensorType &whole = concat ? out[0] : in[0];
    const char *part = concat ? "operand" : "result";
    d.dim = attrI64(c, d, "dim");
    const int64_t rank = static_cast<int64_t>(whole.shape.size());
    need(d, d.dim >= 0 && d.dim < rank,
         "dim " + std::to_string(d.dim) + " is outside the " +
             std::string(concat ? "result " : "operand ") + shape_str(whole.shape));
    int64_t sum = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const TensorType &t = parts[i];
      std::string name = std::string(part) + " #" + std::to_string(i) + " " + shape_str(t.shape);
      need(d, t.dtype == whole.dtype,
           name + " must have the " + (concat ? "result's" : "operand's") + " dtype");
      bool agree = static_cast<int64_t>(t.shape.size()) == rank;
      for (int64_t k = 0; agree && k < rank; ++k)
        agree = k == d.dim || t.shape[k] == whole.shape[k];
      need(d, agree,
           name + " must match " + shape_str(whole.shape) + " in every dim but " +
               std::to_string(d.dim));
      sum += t.shape[d.dim];
    }
    need(d, sum == whole.shape[d.dim],
         "the " + std::string(part) + "s' sizes in dim " + std::to_string(d.dim) + " sum to " +
             std::to_string(sum) + ", not " + std::to_string(whole.shape[d.dim]) + " (" +
             shape_str(whole.shape) + ")");
    break;
  }
  case OpKind::Rope:
    floatOperand(0);
    floatResults();
    rank4(in[0], "x");
    sameNumel(0, 0);
    d.theta = attrF64(c, d, "theta");
    d.inverse = attrUnit(c, d, "inverse");
    d.block = place(mesh, coords, c.resultAxes, 0, out[0], 1);
    break;
  case OpKind::Dropout:
    floatOperand(0);
    floatResults();
    sameNumel(0, 0);
    d.rate = attrF64(c, d, "rate");
    d.key = attrI64(c, d, "key");
    for (size_t dim = 0; dim < out[0].shape.size(); ++dim) {
      Block b = place(mesh, coords, c.resultAxes, 0, out[0], dim);
      d.dropOffset.push_back(b.offset);
      d.dropGlobal.push_back(b.global);
    }
    break;
  case OpKind::Reshape:
    need(d, in[0].dtype == out[0].dtype && in[0].numel() == out[0].numel(),
         "the result must have the operand's dtype and size");
    break;
  case OpKind::Offload:
  case OpKind::Reload:
    need(d, in[0].dtype == out[0].dtype && in[0].shape == out[0].shape,
         "the result must have the operand's type");
    break;
  case OpKind::Transpose: {
    need(d, in[0].dtype == out[0].dtype, "the result must have the operand's dtype");
    d.permutation = attrInts(c, d, "permutation");
    size_t rank = in[0].shape.size();
    std::vector<bool> seen(rank, false);
    need(d, d.permutation.size() == rank && out[0].shape.size() == rank,
         "the permutation must name every dim once");
    for (size_t i = 0; i < rank; ++i) {
      int64_t p = d.permutation[i];
      need(d, p >= 0 && p < static_cast<int64_t>(rank) && !seen[p],
           "the permutation must name every dim once");
      seen[p] = true;
      need(d, out[0].shape[i] == in[0].shape[p], "the result shape does not match the permutation");
    }
    break;
  }
  case OpKind::CrossEntropy:
  case OpKind::LinearCrossEntropy:
  case OpKind::CrossEntropyGrad:
  case OpKind::LinearCrossEntropyGrad: {
    bool grad = d.kind == OpKind::CrossEntropyGrad || d.kind == OpKind::LinearCrossEntropyGrad;
    bool linear =
        d.kind == OpKind::LinearCrossEntropy || d.kind == OpKind::LinearCrossEntropyGrad;
    d.ignoreIndex = attrI64(c, d, "ignore_index");
    if (linear)
      d.vocabMajor = attrUnit(c, d, "vocab_major");
    size_t i = 0;
    if (grad) {
      floatOperand(0);
      scalar(in[0], "dloss");
      ++i;
    }
    const TensorType &first = in[i];
    int64_t rows = rowsOf(first);
    floatOperand(i++);
    if (linear) {
      floatOperand(i);
      need(d, in[i].shape.size() == 2, "the weight must be 2-d");
      int64_t hidden = lastDim(first);
      need(d, in[i].shape[d.vocabMajor ? 1 : 0] == hidden,
           "the weight's hidden dim must be the last dim of x");
      ++i;
    }
    idOperand(i);
    need(d, in[i].numel() == rows, "there must be one target per row");
    ++i;
    if (in.size() > i) {
      floatOperand(i);
      need(d, in[i].numel() == rows, "there must be one mask value per row");
    }
    floatResults();
    if (!grad)
      scalar(out[0], "the loss");
    else if (linear)
      need(d, out[0].numel() == first.numel() && out[1].numel() == in[grad + 1].numel(),
           "the gradients must have the shapes of x and the weight");
    else
      need(d, out[0].numel() == first.numel(), "dlogits must have the shape of the logits");
    auto [operand, dim] = vocabDimOf(d);
    d.block = place(mesh, coords, c.operandAxes, operand, in[operand], dim);
    d.classes = attrI64(c, d, "classes", d.block.global);
    need(d, d.classes >= 1 && d.classes <= d.block.global,
         "classes = " + std::to_string(d.classes) + " must be in [1, " +
             std::to_string(d.block.global) + "] (the vocabulary)");
    if (const nlohmann::json *t = attr(c, "token_axes")) {
      try {
        d.tokenAxes = t->get<Axes>();
      } catch (const nlohmann::json::exception &) {
        fail(d, "attribute 'token_axes' must be an array of mesh axes");
      }
      for (int a : d.tokenAxes)
        need(d, a >= 0 && a < static_cast<int>(mesh.sizes.size()),
             "token_axes names mesh axis " + std::to_string(a) + ", outside " + mesh.str());
    }
    break;
  }
  case OpKind::GeluGrad:
  case OpKind::SoftmaxGrad:
    floatOperand(0);
    floatOperand(1);
    floatResults();
    sameNumel(0, 0);
    sameNumel(1, 0);
    break;
  case OpKind::SwigluGrad:
    for (size_t i = 0; i < 3; ++i) {
      floatOperand(i);
      sameNumel(i, 0);
    }
    floatResults();
    sameNumel(0, 1);
    break;
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
    for (size_t i = 0; i < in.size(); ++i)
      floatOperand(i);
    floatResults();
    sameNumel(0, 0);
    sameNumel(1, 0);
    if (in.size() == 4) {
      sameNumel(3, 0);
      need(d, in[3].dtype == out[0].dtype, "the added residual gradient must have dx's dtype");
    }
    need(d, in[2].numel() == lastDim(in[1]), "gamma must have the last dim of x");
    for (size_t r = 1; r < out.size(); ++r)
      need(d, out[r].numel() == lastDim(in[1]), "dgamma and dbeta must have the last dim of x");
    d.epsilon = attrF64(c, d, "epsilon");
    break;
  case OpKind::AttentionGrad:
    for (size_t i = 0; i < 5; ++i)
      floatOperand(i);
    floatResults();
    rank4(in[1], "q");
    rank4(in[2], "k");
    need(d, in[0].numel() == in[1].numel() && in[4].numel() == in[1].numel() &&
                in[3].shape == in[2].shape,
         "dout and out must have the shape of q, v that of k");
    queryRows(1, 2);
    sameNumel(1, 0);
    sameNumel(2, 1);
    sameNumel(3, 2);
    d.causal = attrUnit(c, d, "causal");
    d.scale = attrF64(c, d, "scale");
    break;
  case OpKind::EmbeddingGrad:
    floatOperand(0);
    idOperand(1);
    floatResults();
    need(d, out[0].shape.size() == 2, "the result must be [vocab, hidden]");
    need(d, in[0].numel() == in[1].numel() * out[0].shape[1],
         "dy must hold one row of the table's width per id");
    d.block = place(mesh, coords, c.resultAxes, 0, out[0], 0);
    break;
  case OpKind::ReduceSum: {
    floatOperand(0);
    floatResults();
    d.dims = attrInts(c, d, "dims");
    int64_t kept = 1;
    for (size_t i = 0; i < in[0].shape.size(); ++i)
      if (std::find(d.dims.begin(), d.dims.end(), static_cast<int64_t>(i)) == d.dims.end())
        kept *= in[0].shape[i];
    need(d, kept == out[0].numel(), "the result does not have the kept dims' size");
    break;
  }
  case OpKind::SumSquares:
  case OpKind::MultiSumSquares:
    for (size_t i = 0; i < in.size(); ++i)
      floatOperand(i);
    need(d, out[0].dtype == DType::F32 && out[0].numel() == 1, "the result must be an f32 scalar");
    break;
  case OpKind::ClipGradNorm:
    for (const TensorType &t : in)
      scalar(t, "every operand");
    for (const TensorType &t : out)
      need(d, t.dtype == DType::F32 && t.numel() == 1, "every result must be an f32 scalar");
    d.maxNorm = attrF64(c, d, "max_norm");
    break;
  case OpKind::LrSchedule:
    scalar(in[0], "the step");
    need(d, out[0].dtype == DType::F32 && out[0].numel() == 1, "the result must be an f32 scalar");
    d.lr = attrF64(c, d, "lr");
    d.minLr = attrF64(c, d, "min_lr");
    d.warmup = attrI64(c, d, "warmup");
    d.decaySteps = attrI64(c, d, "decay_steps");
    break;
  case OpKind::AdamW:
  case OpKind::MultiAdamW: {
    // Lists params, grads, m, v (n each; xf.adamw: n = 1), then lr,
    // grad_scale, step[, skip]; results: lists params, m, v, then the copies
    // (xf.multi_adamw).
    const size_t n = d.kind == OpKind::AdamW ? 1 : static_cast<size_t>(d.lists);
    for (size_t i = 0; i < 4 * n; ++i) {
      floatOperand(i);
      sameNumel(i, i % n);
    }
    for (size_t i = 4 * n; i < in.size(); ++i)
      scalar(in[i], "lr, grad_scale, step and skip");
    floatResults();
    for (size_t k = 0; k < n; ++k) {
      sameNumel(k, n + k);
      sameNumel(k, 2 * n + k);
    }
    d.beta1 = attrF64(c, d, "beta1");
    d.beta2 = attrF64(c, d, "beta2");
    d.epsilon = attrF64(c, d, "epsilon");
    d.weightDecay = attrF64(c, d, "weight_decay");
    if (d.kind == OpKind::AdamW)
      break;
    d.decay = attrInts(c, d, "decay");
    d.copies = attrInts(c, d, "copies");
    need(d, d.decay.size() == n && std::all_of(d.decay.begin(), d.decay.end(),
                                               [](int64_t x) { return x == 0 || x == 1; }),
         "'decay' must hold one 0 or 1 per parameter");
    need(d, d.copies.size() == out.size() - 3 * n,
         "'copies' must name one parameter per copy result");
    for (size_t k = 0; k < d.copies.size(); ++k) {
      int64_t p = d.copies[k];
      need(d, p >= 0 && p < static_cast<int64_t>(n) && (k == 0 || p > d.copies[k - 1]),
           "'copies' must name parameters in increasing order");
      const TensorType &copy = out[3 * n + k];
      need(d, copy.numel() == in[p].numel() &&
                  (copy.dtype == DType::BF16 || copy.dtype == DType::F16),
           "copy result #" + std::to_string(3 * n + k) + " must be a bf16/f16 tensor of the size "
               "of parameter #" + std::to_string(p));
    }
    break;
  }
  case OpKind::CountStep:
    for (const TensorType &t : in)
      scalar(t, "every operand");
    need(d, out[0].dtype == DType::I32 && out[0].numel() == 1, "the result must be an i32 scalar");
    break;
  case OpKind::LossScaleUpdate:
    for (const TensorType &t : in)
      scalar(t, "every operand");
    need(d, out[0].dtype == DType::F32 && out[0].numel() == 1 && out[1].dtype == DType::I32 &&
                out[1].numel() == 1,
         "the results must be an f32 and an i32 scalar");
    d.window = attrI64(c, d, "window");
    d.factor = attrF64(c, d, "factor");
    d.minScale = attrF64(c, d, "min_scale");
    break;
  default:
    fail(d, "not a local op");
  }
}

void decodeCollective(const Call &c, Decoded &d) {
  const TensorType &in = d.operands[0], &out = d.results[0];
  need(d, in.dtype == out.dtype, "the result must have the operand's dtype");
  if (const nlohmann::json *a = attr(c, "grid_axes")) {
    try {
      d.gridAxes = a->get<Axes>();
    } catch (const nlohmann::json::exception &) {
      fail(d, "attribute 'grid_axes' must be an array of mesh axes");
    }
  }
  auto axisAttr = [&](const char *name) {
    int64_t v = attrI64(c, d, name);
    need(d, v >= 0 && v < static_cast<int64_t>(in.shape.size()),
         std::string(name) + " " + std::to_string(v) + " is outside the operand " +
             shape_str(in.shape));
    return v;
  };
  auto reduction = [&] {
    const nlohmann::json *r = attr(c, "reduction");
    std::string kind = r && r->is_string() ? r->get<std::string>() : "sum";
    if (kind == "sum")
      return Reduction::Sum;
    if (kind == "max")
      return Reduction::Max;
    if (kind == "min")
      return Reduction::Min;
    fail(d, "reduction '" + kind + "' is not supported (sum, max and min are)");
  };
  switch (d.kind) {
  case OpKind::AllGather:
    d.axis = axisAttr("gather_axis");
    break;
  case OpKind::AllReduce:
    d.reduction = reduction();
    need(d, in.shape == out.shape, "the result must have the operand's shape");
    break;
  case OpKind::ReduceScatter:
    d.axis = axisAttr("scatter_axis");
    d.reduction = reduction();
    break;
  case OpKind::AllSlice:
    d.axis = axisAttr("slice_axis");
    break;
  case OpKind::Transfer: {
    // From and to: the sending and receiving members of the pipeline group.
    d.axis = attrI64(c, d, "from");
    d.axis2 = attrI64(c, d, "to");
    need(d, d.axis >= 0 && d.axis2 >= 0 && d.axis != d.axis2,
         "moves from stage " + std::to_string(d.axis) + " to stage " + std::to_string(d.axis2));
    need(d, in.shape == out.shape, "the result must have the operand's shape");
    need(d, !d.gridAxes || d.gridAxes->size() == 1, "needs one (pipeline) grid axis");
    break;
  }
  default: // AllToAll
    d.axis = axisAttr("split_axis");
    d.axis2 = axisAttr("concat_axis");
    break;
  }
}

} // namespace

std::unique_ptr<DecodedCall> decodeCall(const Program &program, size_t i,
                                        const std::vector<int64_t> &coords) {
  const Call &c = program.calls[i];
  auto d = std::make_unique<Decoded>();
  d->index = static_cast<int>(i);
  d->op = c.op;
  d->operands = c.operands;
  d->results = c.results;
  const abi::OpSpec *info = abi::findOp(c.op);
  if (!info)
    fail(*d, "the runtime does not support this op");
  d->kind = info->code;
  d->lists = abi::listLength(*info, c.operands.size(), c.results.size());
  need(*d, d->lists >= 0,
       "has " + std::to_string(c.operands.size()) + " operands and " +
           std::to_string(c.results.size()) + " results; it " + abi::arityText(*info));
  checkAttrs(c, *d, *info);
  // The compute type: the first float operand's, else the first result's.
  DType decider = c.results[0].dtype;
  for (const TensorType &t : c.operands)
    if (isFloat(t.dtype)) {
      decider = t.dtype;
      break;
    }
  d->f64 = decider == DType::F64;
  if (isCollectiveKind(d->kind)) {
    decodeCollective(c, *d);
  } else {
    decodeLocal(c, *d, program.mesh, coords);
  }
  if (c.scratch > 0) {
    // A plan of another build of the kernels is refused here, not when a
    // kernel runs past its scratch. (A collective's copy of an overlapping
    // input is checked when it runs: the overlap is the buffers'.)
    int64_t bytes = callScratchBytes(*d, program.mesh);
    if (isCollectiveKind(d->kind) && c.comm >= 0 &&
        c.comm < static_cast<int>(program.comms.size()))
      bytes = scratch::collectiveStaging(*d, program.mesh.size(program.comms[c.comm].axes),
                                         false, false)
                  .total;
    need(*d, c.scratch >= bytes,
         "the plan gives it " + std::to_string(c.scratch) +
             " bytes of scratch, its kernel needs " + std::to_string(bytes));
    d->scratch = c.scratch;
  }
  return d;
}

std::vector<size_t> operandsToCopy(const DecodedCall &d, void *const *buffers) {
  std::vector<size_t> copies;
  const size_t numOperands = d.operands.size(), numResults = d.results.size();
  for (size_t i = 0; i < numOperands; ++i) {
    auto *a = static_cast<const uint8_t *>(buffers[i]);
    int64_t aBytes = d.operands[i].bytes();
    for (size_t r = 0; r < numResults; ++r) {
      auto *b = static_cast<const uint8_t *>(buffers[numOperands + r]);
      int64_t bBytes = d.results[r].bytes();
      if (aBytes == 0 || bBytes == 0 || a + aBytes <= b || b + bBytes <= a)
        continue;
      if (a == b && aBytes == bBytes && d.operands[i].dtype == d.results[r].dtype &&
          inPlaceOk(d, i, r))
        continue;
      copies.push_back(i);
      break;
    }
  }
  return copies;
}

void checkCollectiveShapes(const DecodedCall &d, int64_t n) {
  const TensorType &in = d.operands[0], &out = d.results[0];
  auto divisible = [&](int64_t dim) {
    if (in.shape[dim] % n != 0)
      throw Error("cannot cut dim " + std::to_string(dim) + " of " + shape_str(in.shape) +
                  " into " + std::to_string(n) + " equal parts");
  };
  std::vector<int64_t> shape = in.shape;
  switch (d.kind) {
  case OpKind::AllGather:
    shape[d.axis] *= n;
    break;
  case OpKind::AllReduce:
    break;
  case OpKind::ReduceScatter:
  case OpKind::AllSlice:
    divisible(d.axis);
    shape[d.axis] /= n;
    break;
  case OpKind::AllToAll:
    divisible(d.axis);
    shape[d.axis] /= n;
    shape[d.axis2] *= n;
    break;
  case OpKind::Transfer:
    if (d.axis >= n || d.axis2 >= n)
      throw Error("moves from stage " + std::to_string(d.axis) + " to stage " +
                  std::to_string(d.axis2) + " on a pipeline of " + std::to_string(n) +
                  " stages");
    break;
  default:
    throw Error("not a collective");
  }
  if (shape != out.shape)
    throw Error("on a group of " + std::to_string(n) + " ranks the result is " +
                shape_str(shape) + ", but the call's result type is " + shape_str(out.shape));
}

} // namespace shardc::rt
