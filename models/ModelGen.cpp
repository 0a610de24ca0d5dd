//===- ModelGen.cpp - GPT-2, BERT and LLaMA model builders ----------------===//

#include "models/ModelGen.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#include <algorithm>

using namespace mlir;
using namespace shardc;
using namespace shardc::models;
namespace xf = shardc::xf;

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

static ModelConfig gpt2(std::string name, int64_t hidden, int64_t layers, int64_t heads) {
  ModelConfig c;
  c.family = Family::GPT2;
  c.name = std::move(name);
  c.hidden = hidden;
  c.layers = layers;
  c.heads = heads;
  return c;
}

/// Megatron-LM Table 1: head size 96, vocabulary padded to 51,200 (a multiple
/// of 128 x 8 so that 8-way model parallelism keeps 128-aligned shards).
static ModelConfig megatron(std::string name, int64_t hidden, int64_t layers, int64_t heads) {
  ModelConfig c = gpt2(std::move(name), hidden, layers, heads);
  c.vocabPadMultiple = 1024;
  c.batch = 8;
  return c;
}

static ModelConfig bert(std::string name, int64_t hidden, int64_t layers, int64_t heads,
                        bool preLN) {
  ModelConfig c;
  c.family = Family::BERT;
  c.name = std::move(name);
  c.vocab = 30522;
  c.positions = 512;
  c.seq = 512;
  c.hidden = hidden;
  c.layers = layers;
  c.heads = heads;
  c.normEps = 1e-12;
  c.preLN = preLN;
  return c;
}

static ModelConfig llama(std::string name, int64_t hidden, int64_t layers, int64_t heads,
                         int64_t kvHeads, int64_t ffn) {
  ModelConfig c;
  c.family = Family::LLAMA;
  c.name = std::move(name);
  c.vocab = 32000;
  c.positions = 4096;
  c.seq = 4096;
  c.batch = 1;
  c.hidden = hidden;
  c.layers = layers;
  c.heads = heads;
  c.kvHeads = kvHeads;
  c.ffn = ffn;
  return c;
}

/// Test-sized models: the GPT-2 vocabulary (so real tokenized text works),
/// two layers, a short sequence.
static ModelConfig tiny(ModelConfig c) {
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.vocab = 50257;
  c.positions = 64;
  c.seq = 32;
  c.batch = 4;
  if (c.family == Family::LLAMA) {
    c.kvHeads = 2;
    c.ffn = 176;
  }
  return c;
}

const std::vector<Preset> &shardc::models::presets() {
  static const std::vector<Preset> all = [] {
    std::vector<Preset> p;
    auto add = [&](ModelConfig c, std::string what) { p.push_back({c.name, what, c}); };
    add(tiny(gpt2("gpt2-tiny", 0, 0, 0)), "GPT-2 shape, h=64, L=2, 4 heads, T=32 (tests)");
    add(gpt2("gpt2-124m", 768, 12, 12), "GPT-2 small as released (124,439,808 params)");
    add(gpt2("gpt2-355m", 1024, 24, 16), "GPT-2 medium as released");
    add(gpt2("gpt2-774m", 1280, 36, 20), "GPT-2 large as released");
    add(gpt2("gpt2-1.5b", 1600, 48, 25), "GPT-2 XL as released");
    add(megatron("megatron-1.2b", 1536, 40, 16), "Megatron-LM Table 1, 1 GPU");
    add(megatron("megatron-2.5b", 1920, 54, 20), "Megatron-LM Table 1, 2-way MP");
    add(megatron("megatron-4.2b", 2304, 64, 24), "Megatron-LM Table 1, 4-way MP");
    add(megatron("megatron-8.3b", 3072, 72, 32), "Megatron-LM Table 1, 8-way MP");
    ModelConfig bt = tiny(bert("bert-tiny", 0, 0, 0, false));
    bt.normEps = 1e-12;
    add(bt, "BERT post-LN shape, h=64, L=2 (tests)");
    bt.name = "bert-tiny-preln";
    bt.preLN = true;
    add(bt, "BERT pre-LN shape, h=64, L=2 (tests)");
    add(bert("bert-base", 768, 12, 12, false), "BERT-base, original post-LN block");
    add(bert("bert-base-preln", 768, 12, 12, true), "BERT-base, Megatron pre-LN block");
    add(bert("bert-large", 1024, 24, 16, false), "BERT-large, original post-LN block");
    add(bert("bert-large-preln", 1024, 24, 16, true), "BERT-large, Megatron pre-LN block");
    add(tiny(llama("llama-tiny", 0, 0, 0, 0, 0)),
        "LLaMA shape: RMSNorm, SwiGLU, RoPE, GQA 4q/2kv, h=64, L=2 (tests)");
    add(llama("llama2-7b", 4096, 32, 32, 32, 11008), "LLaMA-2 7B shapes");
    add(llama("llama2-13b", 5120, 40, 40, 40, 13824), "LLaMA-2 13B shapes");
    return p;
  }();
  return all;
}

std::optional<ModelConfig> shardc::models::findPreset(const std::string &name) {
  for (const Preset &p : presets())
    if (p.name == name)
      return p.config;
  return std::nullopt;
}

std::optional<Family> shardc::models::parseFamily(const std::string &name) {
  if (name == "gpt2")
    return Family::GPT2;
  if (name == "bert")
    return Family::BERT;
  if (name == "llama")
    return Family::LLAMA;
  return std::nullopt;
}

const char *shardc::models::familyName(Family f) {
  switch (f) {
  case Family::GPT2:
    return "gpt2";
  case Family::BERT:
    return "bert";
  case Family::LLAMA:
    return "llama";
  }
  return "?";
}

std::string shardc::models::validate(const ModelConfig &c) {
  auto positive = [](int64_t v) { return v > 0; };
  if (!positive(c.vocab) || !positive(c.vocabPadMultiple) || !positive(c.hidden) ||
      !positive(c.layers) || !positive(c.heads) || !positive(c.batch) || !positive(c.seq) ||
      c.kvHeads < 0 || c.ffn < 0)
    return "sizes must be positive";
  // Token ids are i32 and every tensor's element count must fit in int64
  // with room to spare: each size at most 2^31 - 1, and the largest tensor
  // (checked without overflow) at most 2^40 elements.
  constexpr int64_t kMaxSize = (int64_t(1) << 31) - 1, kMaxElements = int64_t(1) << 40;
  const std::pair<const char *, int64_t> sizes[] = {
      {"vocab", c.vocab},   {"vocab-pad-multiple", c.vocabPadMultiple},
      {"positions", c.positions}, {"hidden", c.hidden}, {"layers", c.layers},
      {"heads", c.heads}, {"kv-heads", c.kvHeads}, {"ffn", c.ffn}, {"batch", c.batch},
      {"seq", c.seq},       {"type-vocab", c.typeVocab}};
  for (auto [name, v] : sizes)
    if (v > kMaxSize)
      return llvm::formatv("{0} = {1} exceeds 2^31 - 1", name, v).str();
  auto product = [&](std::initializer_list<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d > 0 && n > kMaxElements / d)
        return kMaxElements + 1;
      n *= std::max<int64_t>(d, 1);
    }
    return n;
  };
  for (auto [what, n] : {std::make_pair("the embedding table", product({c.paddedVocab(), c.hidden})),
                         std::make_pair("an MLP weight", product({c.ffnOrDefault(), c.hidden})),
                         std::make_pair("the logits", product({c.batch, c.seq, c.paddedVocab()})),
                         std::make_pair("the attention scores",
                                        product({c.batch, c.heads, c.seq, c.seq}))})
    if (n > kMaxElements)
      return llvm::formatv("{0} would have more than 2^40 elements", what).str();
  if (c.hidden % c.heads != 0)
    return llvm::formatv("hidden size {0} is not divisible by {1} heads", c.hidden, c.heads).str();
  if (c.heads % c.kvHeadsOrHeads() != 0)
    return llvm::formatv("{0} kv heads do not divide {1} query heads", c.kvHeadsOrHeads(),
                         c.heads).str();
  if (c.family == Family::LLAMA && c.headDim() % 2 != 0)
    return llvm::formatv("RoPE needs an even head size, got {0}", c.headDim()).str();
  if (c.family != Family::LLAMA && c.seq > c.positions)
    return llvm::formatv("sequence length {0} exceeds the {1} learned positions", c.seq,
                         c.positions).str();
  if (!(c.dropout >= 0.0 && c.dropout < 1.0))
    return llvm::formatv("dropout {0} must be in [0, 1)", c.dropout).str();
  if (c.dtype != "f32" && c.dtype != "bf16" && c.dtype != "f16" && c.dtype != "f64")
    return "dtype must be one of f32, bf16, f16, f64, got '" + c.dtype + "'";
  return "";
}

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

namespace {

/// Builds one model function. Parameters are appended as arguments as the
/// body asks for them, so the argument order follows the forward pass.
class ModelBuilder {
public:
  ModelBuilder(MLIRContext &ctx, const ModelConfig &c)
      : c(c), b(&ctx), loc(b.getUnknownLoc()) {
    if (c.dtype == "bf16")
      elt = b.getBF16Type();
    else if (c.dtype == "f16")
      elt = b.getF16Type();
    else if (c.dtype == "f64")
      elt = b.getF64Type();
    else
      elt = b.getF32Type();
  }

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType t(ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, elt); }
  RankedTensorType ids(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI32Type());
  }

  Value input(StringRef kind, RankedTensorType type) {
    Value v = body->addArgument(type, loc);
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(xf::XfDialect::kInputAttrName, b.getStringAttr(kind))));
    return v;
  }
  Value param(const std::string &name, ArrayRef<int64_t> shape, xf::ParamRole role,
              xf::InitKind init, double std = 0.0) {
    Value v = body->addArgument(t(shape), loc);
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        xf::XfDialect::kParamAttrName,
        xf::ParamAttr::get(b.getContext(), name, role, init, std))));
    return v;
  }
  Value weight(const std::string &name, ArrayRef<int64_t> shape, double std) {
    return param(name, shape, xf::ParamRole::weight, xf::InitKind::normal, std);
  }
  Value bias(const std::string &name, int64_t n) {
    return param(name, {n}, xf::ParamRole::bias, xf::InitKind::zeros);
  }
  Value normScale(const std::string &name, int64_t n) {
    return param(name, {n}, xf::ParamRole::norm_scale, xf::InitKind::ones);
  }

  ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

  /// x[B,S,in] @ w, with w as [in, out] (Conv1D) or [out, in] (nn.Linear).
  Value linear(Value x, Value w, bool outMajor, Value bias = {}) {
    ArrayRef<int64_t> ws = shapeOf(w);
    int64_t out = outMajor ? ws[0] : ws[1];
    Value y = xf::MatmulOp::create(b, loc, t({c.batch, c.seq, out}),
                                   outMajor ? "bsh,oh->bso" : "bsh,ho->bso", x, w);
    return bias ? xf::BiasAddOp::create(b, loc, y, bias).getResult() : y;
  }
  Value layernorm(Value x, const std::string &prefix, const char *w = "weight",
                  const char *bn = "bias") {
    Value g = normScale(prefix + "." + w, c.hidden);
    Value bb = bias(prefix + "." + bn, c.hidden);
    return xf::LayerNormOp::create(b, loc, x, g, bb, c.normEps);
  }
  Value add(Value x, Value y) { return xf::AddOp::create(b, loc, x.getType(), x, y); }
  Value dropout(Value x) {
    if (c.dropout == 0.0)
      return x;
    return xf::DropoutOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(c.dropout),
                                 b.getI64IntegerAttr(nextDropoutKey++));
  }
  Value heads(Value x, int64_t n) {
    return xf::ReshapeOp::create(b, loc, t({c.batch, c.seq, n, c.headDim()}), x);
  }
  Value merge(Value x) {
    return xf::ReshapeOp::create(b, loc, t({c.batch, c.seq, c.hidden}), x);
  }
  Value attention(Value q, Value k, Value v, bool causal) {
    return xf::AttentionOp::create(b, loc, q, k, v, causal,
                                   1.0 / std::sqrt(static_cast<double>(c.headDim())));
  }
  Value embed(Value table, Value idx) {
    int64_t h = shapeOf(table)[1];
    return xf::EmbeddingOp::create(b, loc, t({c.batch, c.seq, h}), table, idx);
  }
  Value positions() {
    return xf::IotaOp::create(b, loc, ids({c.batch, c.seq}), b.getI64IntegerAttr(1));
  }
  /// The mean token loss over the true vocabulary: the padding columns of a
  /// padded vocabulary never receive probability (`classes`).
  Value crossEntropy(Value logits, Value targets) {
    auto loss = RankedTensorType::get({}, elt.isF64() ? b.getF64Type() : b.getF32Type());
    IntegerAttr classes =
        c.paddedVocab() > c.vocab ? b.getI64IntegerAttr(c.vocab) : IntegerAttr();
    return xf::CrossEntropyOp::create(b, loc, loss, logits, targets, Value(),
                                      b.getI64IntegerAttr(-100), classes);
  }

  /// N(0, std) for matrices; output projections that feed the residual get
  /// std / sqrt(2 L) (Megatron-LM, GPT-2).
  double residualStd() const { return c.initStd / std::sqrt(2.0 * c.layers); }

  Value gpt2();
  Value bert();
  Value llama();

  const ModelConfig &c;
  OpBuilder b;
  Location loc;
  Type elt;
  Block *body = nullptr;
  SmallVector<Attribute> argAttrs;
  int64_t nextDropoutKey = 0;
};

Value ModelBuilder::gpt2() {
  int64_t V = c.paddedVocab(), H = c.hidden;
  Value tokens = input("tokens", ids({c.batch, c.seq}));
  Value targets = input("targets", ids({c.batch, c.seq}));
  Value wte = param("transformer.wte.weight", {V, H}, xf::ParamRole::embedding,
                    xf::InitKind::normal, c.initStd);
  Value wpe = param("transformer.wpe.weight", {c.positions, H}, xf::ParamRole::embedding,
                    xf::InitKind::normal, c.initStd);
  Value x = dropout(add(embed(wte, tokens), embed(wpe, positions())));
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string p = "transformer.h." + std::to_string(l) + ".";
    Value h = layernorm(x, p + "ln_1");
    auto proj = [&](const char *n) {
      std::string name = p + "attn." + n;
      return heads(linear(h, weight(name + ".weight", {H, H}, c.initStd), false,
                          bias(name + ".bias", H)),
                   c.heads);
    };
    Value q = proj("q_proj"), k = proj("k_proj"), v = proj("v_proj");
    Value a = merge(attention(q, k, v, /*causal=*/true));
    a = linear(a, weight(p + "attn.c_proj.weight", {H, H}, residualStd()), false,
               bias(p + "attn.c_proj.bias", H));
    x = add(x, dropout(a));
    h = layernorm(x, p + "ln_2");
    int64_t F = c.ffnOrDefault();
    Value f = linear(h, weight(p + "mlp.c_fc.weight", {H, F}, c.initStd), false,
                     bias(p + "mlp.c_fc.bias", F));
    f = xf::GeluOp::create(b, loc, f.getType(), f);
    f = linear(f, weight(p + "mlp.c_proj.weight", {F, H}, residualStd()), false,
               bias(p + "mlp.c_proj.bias", H));
    x = add(x, dropout(f));
  }
  x = layernorm(x, "transformer.ln_f");
  // The LM head is tied to the token embedding.
  Value logits = xf::MatmulOp::create(b, loc, t({c.batch, c.seq, V}), "bsh,vh->bsv", x, wte);
  return crossEntropy(logits, targets);
}

Value ModelBuilder::bert() {
  int64_t V = c.paddedVocab(), H = c.hidden, F = c.ffnOrDefault();
  Value tokens = input("tokens", ids({c.batch, c.seq}));
  Value types = input("token_types", ids({c.batch, c.seq}));
  Value targets = input("targets", ids({c.batch, c.seq}));
  Value word = param("bert.embeddings.word_embeddings.weight", {V, H},
                     xf::ParamRole::embedding, xf::InitKind::normal, c.initStd);
  Value pos = param("bert.embeddings.position_embeddings.weight", {c.positions, H},
                    xf::ParamRole::embedding, xf::InitKind::normal, c.initStd);
  Value typ = param("bert.embeddings.token_type_embeddings.weight", {c.typeVocab, H},
                    xf::ParamRole::embedding, xf::InitKind::normal, c.initStd);
  Value x = add(add(embed(word, tokens), embed(pos, positions())), embed(typ, types));
  // The original BERT normalizes the embeddings; the pre-LN block normalizes
  // at the start of every sublayer instead and once at the end.
  if (!c.preLN)
    x = layernorm(x, "bert.embeddings.LayerNorm");
  x = dropout(x);
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    Value h = c.preLN ? layernorm(x, p + "attention.ln") : x;
    auto proj = [&](const char *n) {
      std::string name = p + "attention.self." + n;
      return heads(linear(h, weight(name + ".weight", {H, H}, c.initStd), true,
                          bias(name + ".bias", H)),
                   c.heads);
    };
    Value q = proj("query"), k = proj("key"), v = proj("value");
    Value a = merge(attention(q, k, v, /*causal=*/false));
    a = linear(a, weight(p + "attention.output.dense.weight", {H, H}, residualStd()), true,
               bias(p + "attention.output.dense.bias", H));
    x = add(x, dropout(a));
    if (!c.preLN)
      x = layernorm(x, p + "attention.output.LayerNorm");
    h = c.preLN ? layernorm(x, p + "mlp.ln") : x;
    Value f = linear(h, weight(p + "intermediate.dense.weight", {F, H}, c.initStd), true,
                     bias(p + "intermediate.dense.bias", F));
    f = xf::GeluOp::create(b, loc, f.getType(), f);
    f = linear(f, weight(p + "output.dense.weight", {H, F}, residualStd()), true,
               bias(p + "output.dense.bias", H));
    x = add(x, dropout(f));
    if (!c.preLN)
      x = layernorm(x, p + "output.LayerNorm");
  }
  if (c.preLN)
    x = layernorm(x, "bert.encoder.final_layernorm");
  // Masked-LM head: dense + GELU + LayerNorm, decoder tied to the word
  // embedding plus an output bias. Unmasked positions carry target -100.
  Value h = linear(x, weight("cls.predictions.transform.dense.weight", {H, H}, c.initStd), true,
                   bias("cls.predictions.transform.dense.bias", H));
  h = xf::GeluOp::create(b, loc, h.getType(), h);
  h = layernorm(h, "cls.predictions.transform.LayerNorm");
  Value logits = xf::MatmulOp::create(b, loc, t({c.batch, c.seq, V}), "bsh,vh->bsv", h, word);
  logits = xf::BiasAddOp::create(b, loc, logits, bias("cls.predictions.bias", V));
  return crossEntropy(logits, targets);
}

Value ModelBuilder::llama() {
  int64_t V = c.paddedVocab(), H = c.hidden, F = c.ffnOrDefault();
  int64_t kvH = c.kvHeadsOrHeads(), D = c.headDim();
  Value tokens = input("tokens", ids({c.batch, c.seq}));
  Value targets = input("targets", ids({c.batch, c.seq}));
  Value x = embed(param("model.embed_tokens.weight", {V, H}, xf::ParamRole::embedding,
                        xf::InitKind::normal, c.initStd),
                  tokens);
  auto rms = [&](Value v, const std::string &name) {
    return xf::RmsNormOp::create(b, loc, v, normScale(name, H), c.normEps).getResult();
  };
  auto rope = [&](Value v) {
    return xf::RopeOp::create(b, loc, v.getType(), v, b.getF64FloatAttr(c.ropeTheta))
        .getResult();
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value h = rms(x, p + "input_layernorm.weight");
    Value q = heads(linear(h, weight(p + "self_attn.q_proj.weight", {H, H}, c.initStd), true),
                    c.heads);
    Value k = heads(
        linear(h, weight(p + "self_attn.k_proj.weight", {kvH * D, H}, c.initStd), true), kvH);
    Value v = heads(
        linear(h, weight(p + "self_attn.v_proj.weight", {kvH * D, H}, c.initStd), true), kvH);
    Value a = merge(attention(rope(q), rope(k), v, /*causal=*/true));
    a = linear(a, weight(p + "self_attn.o_proj.weight", {H, H}, residualStd()), true);
    x = add(x, dropout(a));
    h = rms(x, p + "post_attention_layernorm.weight");
    Value gate = linear(h, weight(p + "mlp.gate_proj.weight", {F, H}, c.initStd), true);
    Value up = linear(h, weight(p + "mlp.up_proj.weight", {F, H}, c.initStd), true);
    Value f = xf::SwigluOp::create(b, loc, gate.getType(), gate, up);
    f = linear(f, weight(p + "mlp.down_proj.weight", {H, F}, residualStd()), true);
    x = add(x, dropout(f));
  }
  x = rms(x, "model.norm.weight");
  Value logits = linear(x, weight("lm_head.weight", {V, H}, c.initStd), true);
  return crossEntropy(logits, targets);
}

/// The whole configuration, so a tool can rebuild the model at another size
/// (configFromModule).
DictionaryAttr configAttr(Builder &b, const ModelConfig &c) {
  auto i64 = [&](const char *name, int64_t v) { return b.getNamedAttr(name, b.getI64IntegerAttr(v)); };
  auto f64 = [&](const char *name, double v) { return b.getNamedAttr(name, b.getF64FloatAttr(v)); };
  return b.getDictionaryAttr({
      b.getNamedAttr("family", b.getStringAttr(familyName(c.family))),
      b.getNamedAttr("name", b.getStringAttr(c.name)),
      i64("vocab", c.vocab),
      i64("vocab_pad", c.vocabPadMultiple),
      i64("positions", c.positions),
      i64("layers", c.layers),
      i64("hidden", c.hidden),
      i64("heads", c.heads),
      i64("kv_heads", c.kvHeadsOrHeads()),
      i64("ffn", c.ffnOrDefault()),
      i64("type_vocab", c.typeVocab),
      i64("batch", c.batch),
      i64("seq", c.seq),
      f64("norm_eps", c.normEps),
      f64("dropout", c.dropout),
      f64("rope_theta", c.ropeTheta),
      f64("init_std", c.initStd),
      b.getNamedAttr("pre_ln", b.getBoolAttr(c.preLN)),
      b.getNamedAttr("dtype", b.getStringAttr(c.dtype)),
  });
}

OwningOpRef<ModuleOp> ModelBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, "forward", b.getFunctionType({}, {}));
  body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  Value loss = c.family == Family::GPT2 ? gpt2() : c.family == Family::BERT ? bert() : llama();
  func::ReturnOp::create(b, loc, loss);
  func.setFunctionType(b.getFunctionType(body->getArgumentTypes(), {loss.getType()}));
  func.setAllArgAttrs(argAttrs);
  module->getOperation()->setAttr("xf.model", configAttr(b, c));
  return module;
}

} // namespace

OwningOpRef<ModuleOp> shardc::models::buildModel(MLIRContext &ctx, const ModelConfig &config) {
  ctx.loadDialect<xf::XfDialect, func::FuncDialect>();
  return ModelBuilder(ctx, config).build();
}

std::optional<ModelConfig> shardc::models::configFromModule(ModuleOp module, std::string &why) {
  auto dict = module->getAttrOfType<DictionaryAttr>("xf.model");
  if (!dict) {
    why = "the module has no xf.model attribute (not written by `shardc gen`)";
    return std::nullopt;
  }
  ModelConfig c;
  bool ok = true;
  // Reads one field of type A into `field` (through `get`), or records the
  // first missing key.
  auto read = [&](auto attrTag, const char *key, auto &field, auto get) {
    using A = typename decltype(attrTag)::type;
    if (auto a = dict.getAs<A>(key))
      field = get(a);
    else if (ok) {
      why = std::string("its xf.model has no '") + key + "' (written by an older `shardc gen`?)";
      ok = false;
    }
  };
  auto str = [&](const char *key, std::string &field) {
    read(llvm::type_identity<StringAttr>{}, key, field, [](StringAttr a) { return a.str(); });
  };
  auto i64 = [&](const char *key, int64_t &field) {
    read(llvm::type_identity<IntegerAttr>{}, key, field, [](IntegerAttr a) { return a.getInt(); });
  };
  auto f64 = [&](const char *key, double &field) {
    read(llvm::type_identity<FloatAttr>{}, key, field,
         [](FloatAttr a) { return a.getValueAsDouble(); });
  };
  std::string family;
  str("family", family);
  str("name", c.name);
  i64("vocab", c.vocab);
  i64("vocab_pad", c.vocabPadMultiple);
  i64("positions", c.positions);
  i64("layers", c.layers);
  i64("hidden", c.hidden);
  i64("heads", c.heads);
  i64("kv_heads", c.kvHeads);
  i64("ffn", c.ffn);
  i64("type_vocab", c.typeVocab);
  i64("batch", c.batch);
  i64("seq", c.seq);
  f64("norm_eps", c.normEps);
  f64("dropout", c.dropout);
  f64("rope_theta", c.ropeTheta);
  f64("init_std", c.initStd);
  str("dtype", c.dtype);
  read(llvm::type_identity<BoolAttr>{}, "pre_ln", c.preLN, [](BoolAttr a) { return a.getValue(); });
  if (!ok)
    return std::nullopt;
  std::optional<Family> f = parseFamily(family);
  if (!f) {
    why = "its xf.model names an unknown family '" + family + "'";
    return std::nullopt;
  }
  c.family = *f;
  if (std::string err = validate(c); !err.empty()) {
    why = "its xf.model is not a valid model: " + err;
    return std::nullopt;
  }
  // The attribute must describe this module: rebuilt, the forward function
  // has the same signature (types, parameter names and initializers).
  OwningOpRef<ModuleOp> rebuilt = buildModel(*module->getContext(), c);
  auto mine = module.lookupSymbol<func::FuncOp>("forward");
  auto theirs = rebuilt->lookupSymbol<func::FuncOp>("forward");
  if (!mine || mine.getFunctionType() != theirs.getFunctionType() ||
      mine.getAllArgAttrs() != theirs.getAllArgAttrs() ||
      mine.getBody().front().getOperations().size() !=
          theirs.getBody().front().getOperations().size()) {
    why = "its @forward differs from what its xf.model generates (edited by hand?)";
    return std::nullopt;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Summary
//===----------------------------------------------------------------------===//

static void countParams(MLIRContext &ctx, const ModelConfig &c, int64_t &total,
                        int64_t &embedding) {
  OwningOpRef<ModuleOp> m = buildModel(ctx, c);
  total = embedding = 0;
  for (const xf::ParamArg &p : xf::getParams(*m->getOps<func::FuncOp>().begin())) {
    total += p.numel();
    if (p.attr.getRole() == xf::ParamRole::embedding)
      embedding += p.numel();
  }
}

Summary shardc::models::summarize(MLIRContext &ctx, const ModelConfig &c) {
  Summary s;
  countParams(ctx, c, s.params, s.embeddingParams);
  ModelConfig unpadded = c;
  unpadded.vocabPadMultiple = 1;
  int64_t ignored;
  countParams(ctx, unpadded, s.paramsUnpadded, ignored);
  // Attention score and value GEMMs: 2 x (2 T h) FLOPs per token and layer
  // forward, x3 with the backward; a causal mask halves the useful work, as
  // llm.c and Megatron count it (6 L h T).
  double full = 12.0 * c.layers * c.hidden * c.seq;
  s.attentionFlopsPerToken = c.family == Family::BERT ? full : full / 2;
  s.flopsPerToken = 6.0 * s.params + s.attentionFlopsPerToken;
  s.tokensPerBatch = c.batch * c.seq;
  return s;
}

static std::string gib(double bytes) {
  return llvm::formatv("{0,10:F2} GiB", bytes / (1024.0 * 1024.0 * 1024.0)).str();
}

std::string shardc::models::formatSummary(const ModelConfig &c, const Summary &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  double N = static_cast<double>(s.params);
  os << llvm::formatv("model            {0} ({1}{2})\n", c.name, familyName(c.family),
                      c.family == Family::BERT ? (c.preLN ? ", pre-LN" : ", post-LN") : "");
  os << llvm::formatv("shape            L={0} h={1} heads={2} kv_heads={3} ffn={4} "
                      "vocab={5} (padded {6}) T={7} B={8} {9}\n",
                      c.layers, c.hidden, c.heads, c.kvHeadsOrHeads(), c.ffnOrDefault(),
                      c.vocab, c.paddedVocab(), c.seq, c.batch, c.dtype);
  os << llvm::formatv("parameters       {0} ({1:F3}e9) with the padded vocabulary\n", s.params,
                      N / 1e9);
  os << llvm::formatv("parameters       {0} ({1:F3}e9) with the vocabulary of {2}\n",
                      s.paramsUnpadded, s.paramsUnpadded / 1e9, c.vocab);
  os << llvm::formatv("  embeddings     {0}\n", s.embeddingParams);
  os << llvm::formatv("FLOPs/token      {0:E3} = 6N {1:E3} + attention {2:E3} "
                      "({3} L h T{4})\n",
                      s.flopsPerToken, 6.0 * N, s.attentionFlopsPerToken,
                      c.family == Family::BERT ? "12" : "6",
                      c.family == Family::BERT ? "" : ", causal");
  os << llvm::formatv("FLOPs/batch      {0:E3} for {1} tokens\n",
                      s.flopsPerToken * s.tokensPerBatch, s.tokensPerBatch);
  os << "memory (Transformer Math, bytes per parameter x N)\n";
  os << "  precision        weights    gradients    optimizer       total\n";
  os << llvm::formatv("  fp32             {0} {1} {2} {3}   (4 + 4 + 8 [m, v])\n",
                      gib(4 * N), gib(4 * N), gib(8 * N), gib(16 * N));
  os << llvm::formatv("  mixed bf16/fp16  {0} {1} {2} {3}   (2 + 2 + 12 [fp32 copy, m, v])\n",
                      gib(2 * N), gib(2 * N), gib(12 * N), gib(16 * N));
  // Korthikanti et al.: s b h L (34 + 5 a s / h) bytes without recomputation
  // (t = 1), 2 s b h L with full recomputation.
  double sbhL = static_cast<double>(c.seq) * c.batch * c.hidden * c.layers;
  os << llvm::formatv("  activations      {0} no recomputation, {1} full "
                      "recomputation (16-bit, B={2})\n",
                      gib(sbhL * (34.0 + 5.0 * c.heads * c.seq / c.hidden)), gib(2 * sbhL),
                      c.batch);
  return out;
}
