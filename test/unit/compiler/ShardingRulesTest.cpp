//===- ShardingRulesTest.cpp - the sharding rules of the xf ops -----------===//
//
// Two kinds of checks of ShardingRuleOpInterface (XfShardingRules.cpp):
// - consistency, on every op of whole training steps (GPT-2 and LLaMA with
//   grouped-query attention, fp32, bf16 and fp16 with loss scaling) and of a
//   module holding the ops those do not use: one entry per operand and result,
//   one per dimension, valid factor indices, factor sizes multiplying to the
//   dimension sizes, no Reduction factor in a result;
// - the specific factors of the ops whose rules carry the sharding strategy
//   (matmul, reshape, attention, the losses, embedding, normalization).
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "dialects/xf/XfOps.h"
#include "models/ModelGen.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

using namespace mlir;
using namespace shardc;
using xf::DimFactors;
using xf::FactorKind;
using xf::OpShardingRule;
using xf::TensorFactors;

namespace {

/// Which passes turn a forward function into a training step.
struct Pipeline {
  std::string precision = "fp32"; ///< fp32 | bf16 | fp16
  bool fuseLoss = true;           ///< -xf-fuse-linear-cross-entropy
};

class ShardingRulesTest : public ::testing::Test {
protected:
  ShardingRulesTest() {
    DialectRegistry registry;
    registerShardcDialects(registry);
    ctx_.appendDialectRegistry(registry);
    ctx_.loadAllAvailableDialects();
  }

  /// Runs [mixed precision ->] [fusion ->] autodiff -> AdamW on @forward, as
  /// `shardc train` does.
  void buildTrainStep(ModuleOp module, const Pipeline &p) {
    PassManager pm(&ctx_);
    if (p.precision != "fp32") {
      XfMixedPrecisionOptions mp;
      mp.compute = p.precision == "bf16" ? "bf16" : "f16";
      pm.addNestedPass<func::FuncOp>(createXfMixedPrecision(mp));
    }
    if (p.fuseLoss)
      pm.addNestedPass<func::FuncOp>(createXfFuseLinearCrossEntropy());
    XfAutodiffOptions ad;
    ad.lossScale = p.precision == "fp16";
    pm.addPass(createXfAutodiff(ad));
    pm.addNestedPass<func::FuncOp>(createXfAdamW());
    ASSERT_TRUE(succeeded(pm.run(module)));
  }

  OwningOpRef<ModuleOp> generate(const std::string &preset, const Pipeline &p,
                                 double dropout = 0.0) {
    std::optional<models::ModelConfig> config = models::findPreset(preset);
    EXPECT_TRUE(config) << preset;
    if (!config)
      return nullptr;
    config->dropout = dropout;
    OwningOpRef<ModuleOp> module = models::buildModel(ctx_, *config);
    buildTrainStep(*module, p);
    return module;
  }

  OwningOpRef<ModuleOp> parse(const std::string &text) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx_);
    EXPECT_TRUE(module) << text;
    return module;
  }

  /// The rule of the first op of @f in `body` (a function of `args`).
  OpShardingRule ruleOf(const std::string &args, const std::string &body) {
    module_ = parse("func.func @f(" + args + ") {\n  " + body + "\n  return\n}\n");
    if (!module_)
      return {};
    auto f = module_->lookupSymbol<func::FuncOp>("f");
    op_ = &f.getBody().front().front();
    auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op_);
    EXPECT_TRUE(iface) << "no sharding rule: " << body;
    if (!iface)
      return {};
    OpShardingRule rule = iface.getShardingRule();
    expectConsistent(op_, rule);
    return rule;
  }

  /// Checks the rule of `op` against its types (see the file comment).
  static void expectConsistent(Operation *op, const OpShardingRule &rule) {
    std::string name = op->getName().getStringRef().str();
    SCOPED_TRACE(name);
    int numFactors = static_cast<int>(rule.factors.size());
    for (const auto &[i, f] : llvm::enumerate(rule.factors))
      EXPECT_GE(f.size, 1) << "factor " << i;
    ASSERT_EQ(rule.operands.size(), op->getNumOperands());
    ASSERT_EQ(rule.results.size(), op->getNumResults());
    std::vector<bool> used(numFactors, false);
    auto checkTensor = [&](Value v, const TensorFactors &t, bool isResult, const std::string &what) {
      SCOPED_TRACE(what);
      ArrayRef<int64_t> shape = cast<ShapedType>(v.getType()).getShape();
      ASSERT_EQ(t.size(), shape.size()) << "one entry per dimension";
      std::set<int> inTensor;
      for (auto [d, dim] : llvm::enumerate(t)) {
        int64_t product = 1;
        for (int f : dim) {
          ASSERT_TRUE(f >= 0 && f < numFactors) << "factor index " << f << " in dim " << d;
          EXPECT_TRUE(inTensor.insert(f).second) << "factor " << f << " twice in one tensor";
          used[f] = true;
          product *= rule.factors[f].size;
          if (isResult)
            EXPECT_NE(rule.factors[f].kind, FactorKind::Reduction)
                << "Reduction factor " << f << " in dim " << d;
        }
        EXPECT_EQ(product, shape[d]) << "factor sizes of dim " << d;
      }
    };
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      checkTensor(v, rule.operands[i], false, "operand " + std::to_string(i));
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      checkTensor(v, rule.results[i], true, "result " + std::to_string(i));
    for (int f = 0; f < numFactors; ++f)
      EXPECT_TRUE(used[f]) << "factor " << f << " is in no tensor";

    std::set<int> grouped;
    for (const auto &group : rule.linearGroups) {
      EXPECT_FALSE(group.empty()) << "empty linear group";
      for (int i : group) {
        EXPECT_TRUE(i >= 0 && i < static_cast<int>(op->getNumOperands())) << "linear operand " << i;
        EXPECT_TRUE(grouped.insert(i).second) << "operand " << i << " in two linear groups";
      }
    }
    bool hasLse = llvm::any_of(rule.factors, [](const auto &f) { return f.logSumExp; });
    for (int r : rule.lseSumResults) {
      EXPECT_TRUE(r >= 0 && r < static_cast<int>(op->getNumResults())) << "lse result " << r;
      EXPECT_TRUE(hasLse) << "lseSumResults without a logSumExp factor";
    }
    EXPECT_TRUE(std::isfinite(rule.flops) && rule.flops >= 0) << rule.flops;
  }

  /// Checks every xf op of `module`, recording which op names were seen.
  void checkModule(ModuleOp module) {
    module.walk([&](Operation *op) {
      if (op->getDialect() != ctx_.getLoadedDialect<xf::XfDialect>())
        return;
      auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op);
      ASSERT_TRUE(iface) << op->getName().getStringRef().str() << " has no sharding rule";
      seen_.insert(op->getName().getStringRef());
      ++numChecked_;
      expectConsistent(op, iface.getShardingRule());
    });
  }

  const xf::ShardingFactor &factor(const OpShardingRule &rule, int f) { return rule.factors[f]; }

  /// Factor sizes of a dimension, major to minor.
  static std::vector<int64_t> sizes(const OpShardingRule &rule, const DimFactors &dim) {
    std::vector<int64_t> s;
    for (int f : dim)
      s.push_back(rule.factors[f].size);
    return s;
  }

  MLIRContext ctx_;
  OwningOpRef<ModuleOp> module_;
  Operation *op_ = nullptr;
  llvm::StringSet<> seen_;
  int numChecked_ = 0;
};

/// Single factor of a dimension (most dimensions have exactly one).
int only(const DimFactors &dim) {
  EXPECT_EQ(dim.size(), 1u);
  return dim.empty() ? -1 : dim.front();
}

//===----------------------------------------------------------------------===//
// Consistency on whole training steps
//===----------------------------------------------------------------------===//

/// Ops of the xf dialect that none of the generated steps uses.
const char *kOtherOps = R"mlir(
func.func @other(%x: tensor<4x8x16xf32>, %ids: tensor<4x8xi32>, %m: tensor<4x8xf32>,
                 %s: tensor<f32>, %w: tensor<16x32xf32>, %a: tensor<2x3x4x5xf32>,
                 %st: tensor<i32>, %qkv: tensor<2x8x2x4x8xf32>, %do: tensor<2x8x4x8xf32>) {
  %pa = xf.packed_attention %qkv causal scale = 0.5 : tensor<2x8x2x4x8xf32> -> tensor<2x8x4x8xf32>
  %pag = xf.packed_attention_grad %do, %qkv, %pa causal scale = 0.5 : tensor<2x8x4x8xf32>, tensor<2x8x2x4x8xf32>
  %cat = xf.concat %x, %x dim = 1 : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
  %sp:3 = xf.split %cat dim = 1 : tensor<4x16x16xf32> -> tensor<4x4x16xf32>, tensor<4x4x16xf32>, tensor<4x8x16xf32>
  %t = xf.transpose %a [0, 2, 1, 3] : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %sm = xf.softmax %x : tensor<4x8x16xf32>
  %smg = xf.softmax_grad %x, %sm : tensor<4x8x16xf32>
  %l = xf.cross_entropy %x, %ids mask %m ignore_index = -100 : tensor<4x8x16xf32>, tensor<4x8xi32>, tensor<4x8xf32> -> tensor<f32>
  %dl = xf.cross_entropy_grad %s, %x, %ids mask %m ignore_index = -100 : tensor<f32>, tensor<4x8x16xf32>, tensor<4x8xi32>, tensor<4x8xf32>
  %lce = xf.linear_cross_entropy %x, %w, %ids mask %m ignore_index = -100 : tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<4x8xi32>, tensor<4x8xf32> -> tensor<f32>
  %dx, %dw = xf.linear_cross_entropy_grad %s, %x, %w, %ids mask %m ignore_index = -100 : tensor<f32>, tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<4x8xi32>, tensor<4x8xf32>
  %g = xf.gelu %x : tensor<4x8x16xf32>
  %gg = xf.gelu_grad %x, %g : tensor<4x8x16xf32>
  %r1 = xf.reshape %a : tensor<2x3x4x5xf32> -> tensor<3x2x20xf32>
  %r2 = xf.reshape %a : tensor<2x3x4x5xf32> -> tensor<1x6x1x20x1xf32>
  %r3 = xf.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %f = xf.fill 0.0 : tensor<3x5xf32>
  %sc = xf.scale %x factor = 0.5 : tensor<4x8x16xf32>
  %sq = xf.sum_squares %x : tensor<4x8x16xf32>
  %n, %gs, %inf = xf.clip_grad_norm %sq max_norm = 0.0
  %xfer = xf.transfer %x from 0 to 1 grid_axes = [0] : tensor<4x8x16xf32>
  %off = xf.offload %x : tensor<4x8x16xf32>
  %rel = xf.reload %off : tensor<4x8x16xf32>
  %b = xf.fill 0.0 : tensor<32xf32>
  %mb = xf.matmul_bias "bsh,ho->bso" %x, %w, %b : tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<4x8x32xf32>
  %mg, %pre = xf.matmul_bias_gelu "bsh,ho->bso" %x, %w, %b : tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<4x8x32xf32>, tensor<4x8x32xf32>
  %md = xf.matmul_dgelu "bsh,ho->bso" %x, %w, %pre : tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<4x8x32xf32> -> tensor<4x8x32xf32>
  %dwb, %dbb = xf.matmul_bgrad "bsh,bso->ho" %x, %mb : tensor<4x8x16xf32>, tensor<4x8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  %msq = xf.multi_sum_squares %x, %w : tensor<4x8x16xf32>, tensor<16x32xf32>
  %p:2, %pm:2, %pv:2, %pc = xf.multi_adamw params(%x, %w) grads(%x, %w) m(%x, %w) v(%x, %w) lr %s grad_scale %s step %st beta1 = 0.9 beta2 = 0.95 epsilon = 1.0e-08 weight_decay = 0.1 decay = [0, 1] copies = [1] : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<16x32xbf16>
  return
}
)mlir";

TEST_F(ShardingRulesTest, Gpt2TinyTrainStep) {
  std::string path = std::string(SHARDC_SOURCE_DIR) + "/models/gpt2-tiny.mlir";
  OwningOpRef<ModuleOp> module = loadModule(ctx_, path);
  ASSERT_TRUE(module) << path;
  buildTrainStep(*module, {});
  checkModule(*module);
  EXPECT_GT(numChecked_, 200);
  for (const char *op : {"xf.linear_cross_entropy_grad", "xf.attention_grad", "xf.adamw",
                         "xf.layernorm_grad", "xf.embedding_grad", "xf.reduce_sum"})
    EXPECT_TRUE(seen_.contains(op)) << op << " not in the step";
}

/// The rule the passes read (xf::cachedShardingRule) is the op's own rule,
/// computed once per distinct op: ops of the same name, attributes and types
/// (the layers of a step) share one; ops that differ in any do not.
TEST_F(ShardingRulesTest, CachedRulesAreTheOpsRulesOncePerDistinctOp) {
  std::string path = std::string(SHARDC_SOURCE_DIR) + "/models/gpt2-tiny.mlir";
  OwningOpRef<ModuleOp> module = loadModule(ctx_, path);
  ASSERT_TRUE(module) << path;
  buildTrainStep(*module, {});
  auto same = [](const OpShardingRule &a, const OpShardingRule &b) {
    if (a.factors.size() != b.factors.size())
      return false;
    for (size_t f = 0; f < a.factors.size(); ++f) {
      const xf::ShardingFactor &x = a.factors[f], &y = b.factors[f];
      if (x.size != y.size || x.kind != y.kind || x.normalized != y.normalized ||
          x.indexed != y.indexed || x.logSumExp != y.logSumExp ||
          x.triangular != y.triangular || x.spare != y.spare)
        return false;
    }
    return a.operands == b.operands && a.results == b.results &&
           a.linearGroups == b.linearGroups && a.lseSumResults == b.lseSumResults &&
           a.lseStatisticsPerRow == b.lseStatisticsPerRow && a.flops == b.flops;
  };
  std::map<const OpShardingRule *, std::set<std::string>> sharers;
  int ops = 0;
  module->walk([&](xf::ShardingRuleOpInterface iface) {
    const OpShardingRule &cached = xf::cachedShardingRule(iface);
    EXPECT_TRUE(same(cached, iface.getShardingRule()))
        << iface->getName().getStringRef().str();
    EXPECT_EQ(&cached, &xf::cachedShardingRule(iface)); // asked again: the same rule
    // What the rule is computed from, as text: one rule per distinct text.
    Operation *op = iface.getOperation();
    std::string key;
    llvm::raw_string_ostream os(key);
    os << op->getName() << " " << op->getPropertiesAsAttribute() << " "
       << op->getRawDictionaryAttrs() << " ";
    llvm::interleaveComma(op->getOperandTypes(), os);
    os << " -> ";
    llvm::interleaveComma(op->getResultTypes(), os);
    sharers[&cached].insert(key);
    ++ops;
  });
  EXPECT_GT(ops, 200);
  for (const auto &[rule, keys] : sharers)
    EXPECT_EQ(keys.size(), 1u) << "ops of different attributes or types share a rule";
  // The two layers' ops share their rules: far fewer rules than ops.
  EXPECT_LT(sharers.size() * 3, static_cast<size_t>(ops) * 2);
}

TEST_F(ShardingRulesTest, LlamaTinyGqaTrainStep) {
  // Unfused loss, so cross_entropy and its gradient appear; dropout for its
  // rule.
  OwningOpRef<ModuleOp> module = generate("llama-tiny", {"fp32", false}, /*dropout=*/0.1);
  ASSERT_TRUE(module);
  checkModule(*module);
  for (const char *op : {"xf.rmsnorm_grad", "xf.swiglu_grad", "xf.rope", "xf.dropout",
                         "xf.cross_entropy_grad", "xf.attention_grad"})
    EXPECT_TRUE(seen_.contains(op)) << op << " not in the step";
}

TEST_F(ShardingRulesTest, MixedPrecisionTrainSteps) {
  for (const char *preset : {"gpt2-tiny", "llama-tiny", "bert-tiny"})
    for (const char *precision : {"bf16", "fp16"}) {
      SCOPED_TRACE(std::string(preset) + " " + precision);
      OwningOpRef<ModuleOp> module = generate(preset, {precision, true});
      ASSERT_TRUE(module);
      checkModule(*module);
    }
  for (const char *op : {"xf.cast", "xf.loss_scale_update", "xf.count_step", "xf.clip_grad_norm",
                         "xf.lr_schedule"})
    EXPECT_TRUE(seen_.contains(op)) << op << " not in the steps";
}

/// Every registered xf op has a rule and is checked by some test module: a
/// new op without a consistent rule fails here.
TEST_F(ShardingRulesTest, EveryXfOpIsChecked) {
  std::string path = std::string(SHARDC_SOURCE_DIR) + "/models/gpt2-tiny.mlir";
  OwningOpRef<ModuleOp> gpt2 = loadModule(ctx_, path);
  ASSERT_TRUE(gpt2);
  buildTrainStep(*gpt2, {});
  checkModule(*gpt2);
  OwningOpRef<ModuleOp> llama = generate("llama-tiny", {"fp16", false}, /*dropout=*/0.1);
  ASSERT_TRUE(llama);
  checkModule(*llama);
  OwningOpRef<ModuleOp> other = parse(kOtherOps);
  ASSERT_TRUE(other);
  checkModule(*other);
  int numXfOps = 0;
  for (RegisteredOperationName name : ctx_.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "xf")
      continue;
    ++numXfOps;
    EXPECT_TRUE(seen_.contains(name.getStringRef())) << name.getStringRef().str() << " unchecked";
  }
  EXPECT_GT(numXfOps, 30);
}

//===----------------------------------------------------------------------===//
// Specific rules
//===----------------------------------------------------------------------===//

TEST_F(ShardingRulesTest, MatmulContractsTheLetterMissingFromTheResult) {
  OpShardingRule r = ruleOf("%x: tensor<4x32x64xf32>, %w: tensor<64x16xf32>",
                            R"(%y = xf.matmul "bsh,ho->bso" %x, %w : tensor<4x32x64xf32>, )"
                            R"(tensor<64x16xf32> -> tensor<4x32x16xf32>)");
  ASSERT_EQ(r.factors.size(), 4u);
  int b = only(r.operands[0][0]), s = only(r.operands[0][1]), h = only(r.operands[0][2]);
  int o = only(r.operands[1][1]);
  EXPECT_EQ(only(r.operands[1][0]), h);
  EXPECT_EQ(factor(r, h).kind, FactorKind::Reduction);
  EXPECT_EQ(factor(r, h).size, 64);
  for (int f : {b, s, o})
    EXPECT_EQ(factor(r, f).kind, FactorKind::Parallel);
  EXPECT_EQ(r.results[0], OpShardingRule::dims({b, s, o}));
  EXPECT_EQ(r.linearGroups.size(), 2u);
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 4 * 32 * 64 * 16);
}

TEST_F(ShardingRulesTest, MatmulWithTransposedRhsAndBatch) {
  OpShardingRule r = ruleOf("%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>",
                            R"(%y = xf.matmul "bqd,bkd->bqk" %q, %k : tensor<2x8x4xf32>, )"
                            R"(tensor<2x8x4xf32> -> tensor<2x8x8xf32>)");
  int b = only(r.operands[0][0]), d = only(r.operands[0][2]);
  EXPECT_EQ(only(r.operands[1][0]), b);
  EXPECT_EQ(only(r.operands[1][2]), d);
  EXPECT_EQ(factor(r, d).kind, FactorKind::Reduction);
  EXPECT_NE(only(r.operands[0][1]), only(r.operands[1][1])) << "q and k are different loops";
  EXPECT_EQ(r.results[0][2], r.operands[1][1]);
}

TEST_F(ShardingRulesTest, ReshapeSplitsAndMergesHeads) {
  OpShardingRule split = ruleOf("%x: tensor<4x32x64xf32>",
                                "%y = xf.reshape %x : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>");
  ASSERT_EQ(split.operands[0].size(), 3u);
  EXPECT_EQ(sizes(split, split.operands[0][2]), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(split.operands[0][2], (DimFactors{only(split.results[0][2]), only(split.results[0][3])}));
  EXPECT_EQ(split.operands[0][0], split.results[0][0]);
  EXPECT_EQ(split.operands[0][1], split.results[0][1]);
  for (const auto &f : split.factors)
    EXPECT_EQ(f.kind, FactorKind::Parallel);

  OpShardingRule merge = ruleOf("%x: tensor<4x32x4x16xf32>",
                                "%y = xf.reshape %x : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>");
  EXPECT_EQ(sizes(merge, merge.results[0][2]), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(merge.results[0][2], (DimFactors{only(merge.operands[0][2]), only(merge.operands[0][3])}));
  EXPECT_EQ(merge.linearGroups.size(), 1u);
}

TEST_F(ShardingRulesTest, ReshapeWithoutCommonFactorsIsReplicated) {
  // 6x4 -> 4x6: neither side's dimensions are products of the other's.
  OpShardingRule r = ruleOf("%x: tensor<2x6x4xf32>",
                            "%y = xf.reshape %x : tensor<2x6x4xf32> -> tensor<2x4x6xf32>");
  EXPECT_EQ(r.operands[0][0], r.results[0][0]);
  EXPECT_EQ(factor(r, only(r.operands[0][0])).kind, FactorKind::Parallel);
  for (const DimFactors &d : {r.operands[0][1], r.operands[0][2], r.results[0][1], r.results[0][2]})
    EXPECT_EQ(factor(r, only(d)).kind, FactorKind::Replicated);
}

TEST_F(ShardingRulesTest, ReshapeWithUnitDims) {
  OpShardingRule r = ruleOf("%x: tensor<4x1x64xf32>",
                            "%y = xf.reshape %x : tensor<4x1x64xf32> -> tensor<4x64x1xf32>");
  EXPECT_EQ(r.operands[0][0], r.results[0][0]);
  EXPECT_EQ(r.operands[0][2], r.results[0][1]);
  EXPECT_EQ(factor(r, only(r.operands[0][1])).size, 1);
}

TEST_F(ShardingRulesTest, GroupedQueryAttentionFactorsHeads) {
  OpShardingRule r = ruleOf(
      "%q: tensor<2x16x8x32xf32>, %k: tensor<2x16x2x32xf32>, %v: tensor<2x16x2x32xf32>",
      "%o = xf.attention %q, %k, %v causal scale = 1.0 : tensor<2x16x8x32xf32>, "
      "tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>");
  const TensorFactors &q = r.operands[0], &k = r.operands[1];
  ASSERT_EQ(q[2].size(), 2u);
  int kvh = q[2][0], g = q[2][1];
  EXPECT_EQ(factor(r, kvh).size, 2);
  EXPECT_EQ(factor(r, g).size, 4);
  EXPECT_EQ(k[2], DimFactors{kvh});
  EXPECT_EQ(r.operands[2], k);
  EXPECT_EQ(r.results[0], q);
  EXPECT_EQ(factor(r, only(q[0])).kind, FactorKind::Parallel);
  // The query rows may split (indexed and triangular under the causal mask,
  // a spare factor propagation may split by itself); the keys may not.
  const xf::ShardingFactor &rows = factor(r, only(q[1]));
  EXPECT_EQ(rows.kind, FactorKind::Parallel);
  EXPECT_TRUE(rows.indexed && rows.triangular && rows.spare);
  EXPECT_NE(only(q[1]), only(k[1]));
  EXPECT_EQ(factor(r, only(k[1])).kind, FactorKind::Replicated);
  EXPECT_EQ(factor(r, only(q[3])).kind, FactorKind::Replicated);
  EXPECT_EQ(factor(r, kvh).kind, FactorKind::Parallel);
  EXPECT_DOUBLE_EQ(r.flops, 0.5 * 4.0 * 2 * 8 * 16 * 16 * 32);

  // Bidirectional: the rows need no offset and do equal work.
  OpShardingRule mha = ruleOf(
      "%q: tensor<2x16x4x32xf32>",
      "%o = xf.attention %q, %q, %q scale = 1.0 : tensor<2x16x4x32xf32>, "
      "tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>");
  EXPECT_EQ(mha.operands[0][0], mha.operands[1][0]);
  EXPECT_EQ(mha.operands[0][2], mha.operands[1][2]);
  EXPECT_EQ(mha.operands[0][2].size(), 1u);
  const xf::ShardingFactor &mhaRows = factor(mha, only(mha.operands[0][1]));
  EXPECT_TRUE(mhaRows.spare && !mhaRows.indexed && !mhaRows.triangular);
  EXPECT_DOUBLE_EQ(mha.flops, 4.0 * 2 * 4 * 16 * 16 * 32);
}

TEST_F(ShardingRulesTest, AttentionOverAQueryRowBlockIsPricedAsItsLastShard) {
  // A partitioned op holds 4 of 16 query rows against every key: priced as
  // the shard that does the most (rows 12..15 see 12 + (1..4) keys).
  OpShardingRule r = ruleOf(
      "%q: tensor<2x4x8x32xf32>, %k: tensor<2x16x2x32xf32>",
      "%o = xf.attention %q, %k, %k causal scale = 1.0 {xf.factor_axes = [array<i16>, "
      "array<i16: 0>, array<i16>, array<i16>, array<i16>, array<i16>]} : "
      "tensor<2x4x8x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>");
  EXPECT_DOUBLE_EQ(r.flops, 4.0 * 2 * 8 * (4 * 12 + 0.5 * 4 * 4) * 32);
}

TEST_F(ShardingRulesTest, AttentionGradMatchesForward) {
  OpShardingRule r = ruleOf(
      "%q: tensor<2x16x8x32xf32>, %k: tensor<2x16x2x32xf32>",
      "%dq, %dk, %dv = xf.attention_grad %q, %q, %k, %k, %q causal scale = 1.0 : "
      "tensor<2x16x8x32xf32>, tensor<2x16x2x32xf32>");
  const TensorFactors &q = r.operands[1], &k = r.operands[2];
  EXPECT_EQ(q[2].size(), 2u);
  EXPECT_EQ(r.operands[0], q);
  EXPECT_EQ(r.operands[4], q);
  EXPECT_EQ(r.results[0], q);
  EXPECT_EQ(r.results[1], k);
  EXPECT_EQ(r.results[2], k);
  EXPECT_EQ(k[2], DimFactors{q[2][0]});
}

TEST_F(ShardingRulesTest, PackedAttentionSplitsBatchAndKvHeadsOnly) {
  // [b, s, kv_heads, group + 2, d] -> [b, s, kv_heads * group, d]: the query
  // heads are [kv_heads, group] and split with the kv heads; the sequence
  // (queries and keys alike), the slots and head_dim stay whole.
  OpShardingRule r = ruleOf("%qkv: tensor<2x16x4x4x32xf32>",
                            "%o = xf.packed_attention %qkv causal scale = 1.0 : "
                            "tensor<2x16x4x4x32xf32> -> tensor<2x16x8x32xf32>");
  const TensorFactors &qkv = r.operands[0], &o = r.results[0];
  EXPECT_EQ(o[0], qkv[0]);
  EXPECT_EQ(o[1], qkv[1]);
  ASSERT_EQ(o[2].size(), 2u);
  EXPECT_EQ(o[2][0], only(qkv[2]));
  EXPECT_EQ(factor(r, only(qkv[0])).kind, FactorKind::Parallel);
  EXPECT_EQ(factor(r, only(qkv[2])).kind, FactorKind::Parallel);
  for (int d : {1, 3, 4})
    EXPECT_EQ(factor(r, only(qkv[d])).kind, FactorKind::Replicated) << "dim " << d;
  EXPECT_EQ(factor(r, o[2][1]).kind, FactorKind::Replicated);
  // The same FLOPs as xf.attention on the unpacked tensors.
  EXPECT_DOUBLE_EQ(r.flops, 4.0 * 2 * 8 * (0.5 * 16 * 16) * 32);
  OpShardingRule g = ruleOf("%qkv: tensor<2x16x4x4x32xf32>, %o: tensor<2x16x8x32xf32>",
                            "%d = xf.packed_attention_grad %o, %qkv, %o causal scale = 1.0 : "
                            "tensor<2x16x8x32xf32>, tensor<2x16x4x4x32xf32>");
  EXPECT_EQ(g.results[0], g.operands[1]);
  EXPECT_EQ(g.operands[0], g.operands[2]);
  EXPECT_EQ(g.operands[0][2][0], only(g.operands[1][2]));
}

TEST_F(ShardingRulesTest, ConcatSharesEveryDimButItsOwn) {
  OpShardingRule r = ruleOf("%a: tensor<4x1x8xf32>, %b: tensor<4x2x8xf32>",
                            "%c = xf.concat %a, %b dim = 1 : tensor<4x1x8xf32>, "
                            "tensor<4x2x8xf32> -> tensor<4x3x8xf32>");
  const TensorFactors &a = r.operands[0], &b = r.operands[1], &c = r.results[0];
  for (int d : {0, 2}) {
    EXPECT_EQ(a[d], c[d]);
    EXPECT_EQ(b[d], c[d]);
  }
  for (const TensorFactors *t : {&a, &b, &c})
    EXPECT_EQ(factor(r, only((*t)[1])).kind, FactorKind::Replicated);
  EXPECT_NE(only(a[1]), only(c[1]));
  ASSERT_EQ(r.linearGroups.size(), 1u);
  EXPECT_EQ(r.linearGroups[0].size(), 2u);
}

TEST_F(ShardingRulesTest, LinearCrossEntropySplitsVocabByLogSumExp) {
  for (bool vocabMajor : {true, false}) {
    SCOPED_TRACE(vocabMajor ? "vocab_major" : "hidden_major");
    std::string w = vocabMajor ? "tensor<512x64xf32>" : "tensor<64x512xf32>";
    OpShardingRule r = ruleOf("%x: tensor<4x32x64xf32>, %w: " + w + ", %t: tensor<4x32xi32>",
                              "%l = xf.linear_cross_entropy %x, %w, %t " +
                                  std::string(vocabMajor ? "vocab_major " : "") +
                                  "ignore_index = -100 : tensor<4x32x64xf32>, " + w +
                                  ", tensor<4x32xi32> -> tensor<f32>");
    const TensorFactors &x = r.operands[0], &wt = r.operands[1];
    int vocab = only(wt[vocabMajor ? 0 : 1]), hidden = only(x[2]);
    EXPECT_EQ(only(wt[vocabMajor ? 1 : 0]), hidden);
    EXPECT_EQ(factor(r, vocab).size, 512);
    EXPECT_TRUE(factor(r, vocab).logSumExp);
    EXPECT_TRUE(factor(r, vocab).indexed);
    EXPECT_EQ(factor(r, vocab).kind, FactorKind::Parallel);
    EXPECT_EQ(factor(r, hidden).kind, FactorKind::Replicated);
    for (int d : {0, 1}) {
      EXPECT_EQ(r.operands[2][d], x[d]);
      EXPECT_TRUE(factor(r, only(x[d])).normalized);
      EXPECT_FALSE(factor(r, only(x[d])).logSumExp);
    }
    EXPECT_TRUE(r.results[0].empty());
    EXPECT_TRUE(r.lseSumResults.empty());
    EXPECT_DOUBLE_EQ(r.flops, 2.0 * 4 * 32 * 512 * 64);
  }
}

TEST_F(ShardingRulesTest, LinearCrossEntropyGradKeepsDxPartialOverVocab) {
  OpShardingRule r = ruleOf(
      "%s: tensor<f32>, %x: tensor<4x32x64xf32>, %w: tensor<512x64xf32>, %t: tensor<4x32xi32>",
      "%dx, %dw = xf.linear_cross_entropy_grad %s, %x, %w, %t vocab_major ignore_index = -100 : "
      "tensor<f32>, tensor<4x32x64xf32>, tensor<512x64xf32>, tensor<4x32xi32>");
  EXPECT_TRUE(r.operands[0].empty());
  EXPECT_EQ(r.results[0], r.operands[1]);
  EXPECT_EQ(r.results[1], r.operands[2]);
  EXPECT_EQ(r.lseSumResults, (SmallVector<int, 1>{0}));
  EXPECT_TRUE(factor(r, only(r.operands[2][0])).logSumExp);
}

TEST_F(ShardingRulesTest, CrossEntropyVocabIsIndexedLogSumExp) {
  OpShardingRule r = ruleOf("%l: tensor<4x32x512xf32>, %t: tensor<4x32xi32>",
                            "%loss = xf.cross_entropy %l, %t ignore_index = -100 : "
                            "tensor<4x32x512xf32>, tensor<4x32xi32> -> tensor<f32>");
  int vocab = only(r.operands[0][2]);
  EXPECT_TRUE(factor(r, vocab).logSumExp && factor(r, vocab).indexed);
  EXPECT_TRUE(factor(r, only(r.operands[0][0])).normalized);
  EXPECT_EQ(r.operands[1][1], r.operands[0][1]);
}

TEST_F(ShardingRulesTest, EmbeddingVocabIsIndexedReduction) {
  OpShardingRule r = ruleOf("%table: tensor<512x64xf32>, %ids: tensor<4x32xi32>",
                            "%y = xf.embedding %table, %ids : tensor<512x64xf32>, "
                            "tensor<4x32xi32> -> tensor<4x32x64xf32>");
  int vocab = only(r.operands[0][0]), hidden = only(r.operands[0][1]);
  EXPECT_EQ(factor(r, vocab).kind, FactorKind::Reduction);
  EXPECT_TRUE(factor(r, vocab).indexed);
  EXPECT_EQ(factor(r, hidden).kind, FactorKind::Parallel);
  EXPECT_EQ(r.results[0][2], DimFactors{hidden});
  EXPECT_EQ(r.results[0][0], r.operands[1][0]);
  EXPECT_EQ(r.results[0][1], r.operands[1][1]);

  OpShardingRule grad = ruleOf("%dy: tensor<4x32x64xf32>, %ids: tensor<4x32xi32>",
                               "%dt = xf.embedding_grad %dy, %ids : tensor<4x32x64xf32>, "
                               "tensor<4x32xi32> -> tensor<512x64xf32>");
  int gv = only(grad.results[0][0]);
  EXPECT_EQ(factor(grad, gv).kind, FactorKind::Parallel);
  EXPECT_TRUE(factor(grad, gv).indexed);
  EXPECT_EQ(grad.results[0][1], grad.operands[0][2]);
}

TEST_F(ShardingRulesTest, NormsReplicateTheNormalizedDim) {
  OpShardingRule ln = ruleOf("%x: tensor<4x32x64xf32>, %g: tensor<64xf32>",
                             "%y = xf.layernorm %x, %g, %g epsilon = 1.0e-05 : "
                             "tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>");
  int features = only(ln.operands[0][2]);
  EXPECT_EQ(factor(ln, features).kind, FactorKind::Replicated);
  EXPECT_EQ(factor(ln, only(ln.operands[0][0])).kind, FactorKind::Parallel);
  EXPECT_EQ(ln.operands[1], (TensorFactors{{features}}));
  EXPECT_EQ(ln.operands[2], (TensorFactors{{features}}));
  EXPECT_TRUE(ln.linearGroups.empty());

  OpShardingRule grad = ruleOf("%x: tensor<4x32x64xf32>, %g: tensor<64xf32>",
                               "%dx, %dg = xf.rmsnorm_grad %x, %x, %g epsilon = 1.0e-05 : "
                               "tensor<4x32x64xf32>, tensor<64xf32>");
  EXPECT_EQ(factor(grad, only(grad.operands[1][2])).kind, FactorKind::Replicated);
  EXPECT_EQ(grad.results[1], (TensorFactors{grad.operands[1][2]}));
}

TEST_F(ShardingRulesTest, PositionDependentOpsAreIndexed) {
  OpShardingRule rope = ruleOf("%x: tensor<2x16x4x32xf32>",
                               "%y = xf.rope %x theta = 1.0e+04 : tensor<2x16x4x32xf32>");
  const TensorFactors &x = rope.operands[0];
  EXPECT_TRUE(factor(rope, only(x[1])).indexed);
  EXPECT_FALSE(factor(rope, only(x[0])).indexed);
  EXPECT_EQ(factor(rope, only(x[3])).kind, FactorKind::Replicated);

  OpShardingRule iota = ruleOf("", "%p = xf.iota dim = 1 : tensor<4x32xi32>");
  EXPECT_FALSE(factor(iota, only(iota.results[0][0])).indexed);
  EXPECT_TRUE(factor(iota, only(iota.results[0][1])).indexed);

  OpShardingRule dropout = ruleOf("%x: tensor<4x32xf32>",
                                  "%y = xf.dropout %x rate = 0.1 key = 1 : tensor<4x32xf32>");
  for (const auto &f : dropout.factors)
    EXPECT_TRUE(f.indexed);
}

TEST_F(ShardingRulesTest, ReductionsAndOptimizer) {
  OpShardingRule sum = ruleOf("%x: tensor<4x32x64xf32>",
                              "%y = xf.reduce_sum %x dims = [0, 1] : tensor<4x32x64xf32> -> "
                              "tensor<64xf32>");
  EXPECT_EQ(factor(sum, only(sum.operands[0][0])).kind, FactorKind::Reduction);
  EXPECT_EQ(factor(sum, only(sum.operands[0][1])).kind, FactorKind::Reduction);
  EXPECT_EQ(sum.results[0], (TensorFactors{sum.operands[0][2]}));

  OpShardingRule sq = ruleOf("%x: tensor<64x32xf32>", "%s = xf.sum_squares %x : tensor<64x32xf32>");
  for (const auto &f : sq.factors)
    EXPECT_EQ(f.kind, FactorKind::Reduction);

  OpShardingRule adam = ruleOf(
      "%p: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<i32>",
      "%p2, %m2, %v2 = xf.adamw %p, %p, %p, %p, %lr, %lr, %step skip %lr beta1 = 0.9 "
      "beta2 = 0.95 epsilon = 1.0e-08 weight_decay = 0.01 : tensor<64x32xf32>");
  ASSERT_EQ(adam.operands.size(), 8u);
  for (int i : {1, 2, 3})
    EXPECT_EQ(adam.operands[i], adam.operands[0]);
  for (int i : {4, 5, 6, 7})
    EXPECT_TRUE(adam.operands[i].empty());
  for (const TensorFactors &t : adam.results)
    EXPECT_EQ(t, adam.operands[0]);
  EXPECT_TRUE(adam.linearGroups.empty());
}

TEST_F(ShardingRulesTest, BiasAddMapsBiasToLastDim) {
  OpShardingRule r = ruleOf("%x: tensor<4x32x64xf32>, %b: tensor<64xf32>",
                            "%y = xf.bias_add %x, %b : tensor<4x32x64xf32>, tensor<64xf32>");
  EXPECT_EQ(r.operands[1], (TensorFactors{r.operands[0][2]}));
  EXPECT_EQ(r.results[0], r.operands[0]);
  EXPECT_EQ(r.linearGroups, (decltype(r.linearGroups){{0, 1}}));
}

TEST_F(ShardingRulesTest, TransposePermutesFactors) {
  OpShardingRule r = ruleOf("%x: tensor<2x3x4x5xf32>",
                            "%y = xf.transpose %x [0, 2, 1, 3] : tensor<2x3x4x5xf32> -> "
                            "tensor<2x4x3x5xf32>");
  const TensorFactors &in = r.operands[0], &out = r.results[0];
  EXPECT_EQ(out, (TensorFactors{in[0], in[2], in[1], in[3]}));
}

} // namespace
