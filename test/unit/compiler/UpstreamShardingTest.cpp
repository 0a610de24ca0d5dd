//===- UpstreamShardingTest.cpp - upstream partition of xf vs shardc's ----===//
//
// The xf ops' upstream ShardingInterface models (dialects/xf/XfUpstreamSharding.cpp)
// let upstream `sharding-propagation` + `shard-partition` partition xf IR. Here the
// upstream-partitioned Megatron MLP is executed on the simulated mesh and compared
// with the unsharded run and with shardc's own partition (`-xf-propagate-sharding`
// + `-xf-partition`) of the same function: fp32 within 1e-5 (max-norm relative),
// and the same partitioned IR (op by op: names, operand and result types).
//
// Executing upstream's result: the reference executor runs a partitioned function
// when it carries `xf.grid = @mesh` and an `xf.sharding` layout on each argument
// and result (Executor.h); upstream partition leaves a plain function with local
// types. `upstreamPartition` below converts: after propagation it reads, for each
// argument, the split axes of the `shard.shard` ops using it and, for each result,
// those of the `shard.shard` producing it; after partition it sets them as
// `xf.sharding` (padded to the rank), sets `xf.grid`, and folds the identity
// `tensor.cast`s upstream's resharding may leave (none in these functions). The
// shard collectives upstream emits are the ones the executor simulates.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/executor/Executor.h"
#include "TensorTesting.h"
#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfUpstreamSharding.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace shardc;
using exec::DType;
using exec::HostTensor;
using test::close;
using test::randomF32;

namespace {

// B=2, S=8, H=16, 4H=64 on tp=2: W1 column-split, W2 row-split, annotated for
// their users as upstream expects (the lit test upstream-shard-xf.mlir checks the
// partitioned IR of the same function at smaller sizes).
const char *kMlp = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @mlp(%x: tensor<2x8x16xf32>, %w1: tensor<16x64xf32>, %b1: tensor<64xf32>,
               %w2: tensor<64x16xf32>, %b2: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %row = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %w1s = shard.shard %w1 to %col annotate_for_users : tensor<16x64xf32>
  %w2s = shard.shard %w2 to %row annotate_for_users : tensor<64x16xf32>
  %h = xf.matmul "bsh,hk->bsk" %x, %w1s : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
  %hb = xf.bias_add %h, %b1 : tensor<2x8x64xf32>, tensor<64xf32>
  %g = xf.gelu %hb : tensor<2x8x64xf32>
  %y = xf.matmul "bsk,kh->bsh" %g, %w2s : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
  %yb = xf.bias_add %y, %b2 : tensor<2x8x16xf32>, tensor<16xf32>
  %r = xf.add %x, %yb : tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}
)mlir";

// The same MLP as a pre-norm block with parameters, so shardc's `tp` preset
// applies: it splits a weight column-parallel when its matmul reads a norm
// output (W1), and lets propagation make W2 row-parallel. Upstream gets the
// same layout as explicit annotations.
const char *kBlock = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @block(%x: tensor<2x8x16xf32>,
    %g: tensor<16xf32> {xf.param = #xf.param<name = "ln.weight", role = norm_scale, init = ones>},
    %b: tensor<16xf32> {xf.param = #xf.param<name = "ln.bias", role = bias, init = zeros>},
    %w1: tensor<16x64xf32> {xf.param = #xf.param<name = "fc.weight", role = weight, init = normal, std = 2.0e-02>},
    %b1: tensor<64xf32> {xf.param = #xf.param<name = "fc.bias", role = bias, init = zeros>},
    %w2: tensor<64x16xf32> {xf.param = #xf.param<name = "proj.weight", role = weight, init = normal, std = 2.0e-02>},
    %b2: tensor<16xf32> {xf.param = #xf.param<name = "proj.bias", role = bias, init = zeros>}) -> tensor<2x8x16xf32> {
  %col = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %row = shard.sharding @mesh split_axes = [[0], []] : !shard.sharding
  %w1s = shard.shard %w1 to %col annotate_for_users : tensor<16x64xf32>
  %w2s = shard.shard %w2 to %row annotate_for_users : tensor<64x16xf32>
  %n = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %h = xf.matmul "bsh,hk->bsk" %n, %w1s : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
  %hb = xf.bias_add %h, %b1 : tensor<2x8x64xf32>, tensor<64xf32>
  %a = xf.gelu %hb : tensor<2x8x64xf32>
  %y = xf.matmul "bsk,kh->bsh" %a, %w2s : tensor<2x8x64xf32>, tensor<64x16xf32> -> tensor<2x8x16xf32>
  %yb = xf.bias_add %y, %b2 : tensor<2x8x16xf32>, tensor<16xf32>
  %r = xf.add %x, %yb : tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}
)mlir";

std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// The partitioned function as text without attributes: its argument and
/// result types, then per op its name, operand types and result types.
std::vector<std::string> structure(func::FuncOp f) {
  std::vector<std::string> lines;
  std::string sig = "func(";
  for (Type t : f.getArgumentTypes())
    sig += str(t) + " ";
  sig += ") -> (";
  for (Type t : f.getResultTypes())
    sig += str(t) + " ";
  lines.push_back(sig + ")");
  for (Operation &op : f.getBody().front()) {
    std::string line = op.getName().getStringRef().str() + " (";
    for (Type t : op.getOperandTypes())
      line += str(t) + " ";
    line += ") -> (";
    for (Type t : op.getResultTypes())
      line += str(t) + " ";
    lines.push_back(line + ")");
  }
  return lines;
}

int count(func::FuncOp f, StringRef opName) {
  int n = 0;
  f.walk([&](Operation *op) { n += op->getName().getStringRef() == opName; });
  return n;
}

/// The split axes of `sharding` (a shard.sharding value), one entry per
/// dimension of a rank-`rank` tensor.
shard::GridAxesArrayAttr layout(Value sharding, int64_t rank) {
  auto op = sharding.getDefiningOp<shard::ShardingOp>();
  if (!op)
    return nullptr;
  SmallVector<shard::GridAxesAttr> axes(op.getSplitAxes().getAxes());
  while (static_cast<int64_t>(axes.size()) < rank)
    axes.push_back(shard::GridAxesAttr::get(op.getContext(), {}));
  return shard::GridAxesArrayAttr::get(op.getContext(), axes);
}

class UpstreamSharding : public ::testing::Test {
protected:
  UpstreamSharding() {
    DialectRegistry registry;
    registerShardcDialects(registry);
    // As shardc-opt: func.return's model and the xf models.
    func::registerShardingInterfaceExternalModels(registry);
    xf::registerXfUpstreamShardingModels(registry);
    ctx_.appendDialectRegistry(registry);
    ctx_.loadAllAvailableDialects();
    static bool registered = [] {
      shard::registerShardPasses();
      registerShardcPasses();
      return true;
    }();
    (void)registered;
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &ctx_);
    EXPECT_TRUE(m) << "parse failed";
    return m;
  }

  /// Runs a textual pipeline on the module (the passes nested in it, as in
  /// `builtin.module(...)`); false (with the diagnostics in errors_) on failure.
  bool runPipeline(ModuleOp module, const std::string &pipeline) {
    PassManager pm(&ctx_, ModuleOp::getOperationName());
    std::string parseErrors;
    llvm::raw_string_ostream os(parseErrors);
    if (failed(parsePassPipeline(pipeline, pm, os))) {
      errors_ += "pipeline: " + parseErrors + "\n";
      return false;
    }
    return succeeded(pm.run(module));
  }

  /// Removes every shard annotation (the unsharded reference).
  static void stripAnnotations(ModuleOp module) {
    module.walk([](shard::ShardOp op) {
      op.getResult().replaceAllUsesWith(op.getSrc());
      op.erase();
    });
    module.walk([](shard::ShardingOp op) {
      if (op->use_empty())
        op.erase();
    });
  }

  /// Upstream propagation + partition of @name, made executable (see the file
  /// comment). Returns the partitioned function, or null on failure.
  func::FuncOp upstreamPartition(ModuleOp module, StringRef name) {
    if (!runPipeline(module, "func.func(sharding-propagation)"))
      return nullptr;
    auto f = module.lookupSymbol<func::FuncOp>(name);
    SmallVector<shard::GridAxesArrayAttr> argLayouts, resultLayouts;
    FlatSymbolRefAttr grid;
    for (BlockArgument arg : f.getArguments()) {
      int64_t rank = cast<RankedTensorType>(arg.getType()).getRank();
      shard::GridAxesArrayAttr l;
      for (Operation *user : arg.getUsers()) {
        auto shardOp = dyn_cast<shard::ShardOp>(user);
        if (!shardOp)
          continue;
        shard::GridAxesArrayAttr u = layout(shardOp.getSharding(), rank);
        grid = shardOp.getSharding().getDefiningOp<shard::ShardingOp>().getGridAttr();
        if (l && u != l) {
          ADD_FAILURE() << "argument " << arg.getArgNumber() << " has two shardings";
          return nullptr;
        }
        l = u;
      }
      if (!l) {
        ADD_FAILURE() << "argument " << arg.getArgNumber() << " has no sharding";
        return nullptr;
      }
      argLayouts.push_back(l);
    }
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    for (Value v : ret.getOperands()) {
      auto shardOp = v.getDefiningOp<shard::ShardOp>();
      if (!shardOp) {
        ADD_FAILURE() << "a result has no sharding";
        return nullptr;
      }
      resultLayouts.push_back(
          layout(shardOp.getSharding(), cast<RankedTensorType>(v.getType()).getRank()));
    }
    if (!runPipeline(module, "func.func(shard-partition)"))
      return nullptr;
    // Identity casts from resharding, and sharding ops no longer used.
    f.walk([](tensor::CastOp c) {
      if (c.getSource().getType() == c.getType()) {
        c.getResult().replaceAllUsesWith(c.getSource());
        c.erase();
      }
    });
    f.walk([](shard::ShardingOp op) {
      if (op->use_empty())
        op.erase();
    });
    f->setAttr(xf::XfDialect::kGridAttrName, grid);
    for (auto [i, l] : llvm::enumerate(argLayouts))
      f.setArgAttr(i, xf::XfDialect::kShardingAttrName, l);
    for (auto [i, l] : llvm::enumerate(resultLayouts))
      f.setResultAttr(i, xf::XfDialect::kShardingAttrName, l);
    if (failed(verify(module))) {
      ADD_FAILURE() << "the converted function does not verify";
      return nullptr;
    }
    return f;
  }

  /// shardc's own propagation (with `propagateOptions`) and partition of @name.
  func::FuncOp shardcPartition(ModuleOp module, StringRef name,
                               const std::string &propagateOptions = "") {
    std::string fn = "function=" + name.str();
    if (!runPipeline(module, "func.func(xf-propagate-sharding{" + fn + " " + propagateOptions +
                                 "},xf-partition{" + fn + "})"))
      return nullptr;
    return module.lookupSymbol<func::FuncOp>(name);
  }

  std::vector<HostTensor> run(func::FuncOp f, const std::vector<HostTensor> &args,
                              int *ranks = nullptr) {
    exec::Executor executor(f);
    if (ranks)
      *ranks = executor.numRanks();
    std::vector<HostTensor> results;
    EXPECT_TRUE(succeeded(executor.run(args, results)));
    return results;
  }

  /// Runs @name unsharded, partitioned by upstream and partitioned by shardc
  /// (`shardcText` as its input, `shardcOptions` for its propagation) on the
  /// same random inputs; checks the numbers and that both partitions are the
  /// same IR.
  void compare(const char *text, StringRef name, const char *shardcText,
               const std::string &shardcOptions) {
    ScopedDiagnosticHandler handler(&ctx_, [&](Diagnostic &d) {
      errors_ += d.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> reference = parse(text), upstream = parse(text),
                          own = parse(shardcText);
    ASSERT_TRUE(reference && upstream && own);
    stripAnnotations(*reference);
    auto refFunc = reference->lookupSymbol<func::FuncOp>(name);

    std::vector<HostTensor> args;
    for (auto [i, t] : llvm::enumerate(refFunc.getArgumentTypes())) {
      auto shape = cast<RankedTensorType>(t).getShape();
      args.push_back(randomF32({shape.begin(), shape.end()}, 11 + i));
    }

    func::FuncOp up = upstreamPartition(*upstream, name);
    ASSERT_TRUE(up) << errors_;
    func::FuncOp sc = shardcPartition(*own, name, shardcOptions);
    ASSERT_TRUE(sc) << errors_;

    // The same partitioned program: local types, ops, one all-reduce.
    EXPECT_EQ(structure(up), structure(sc));
    EXPECT_EQ(count(up, "shard.all_reduce"), 1);
    EXPECT_EQ(count(up, "shard.all_gather") + count(up, "shard.all_slice") +
                  count(up, "shard.reduce_scatter") + count(up, "shard.all_to_all"),
              0);

    int ranks = 0;
    std::vector<HostTensor> ref = run(refFunc, args, &ranks);
    EXPECT_EQ(ranks, 1);
    std::vector<HostTensor> gotUp = run(up, args, &ranks);
    EXPECT_EQ(ranks, 2);
    std::vector<HostTensor> gotSc = run(sc, args, &ranks);
    EXPECT_EQ(ranks, 2);
    ASSERT_EQ(ref.size(), 1u) << errors_;
    ASSERT_EQ(gotUp.size(), 1u) << errors_;
    ASSERT_EQ(gotSc.size(), 1u) << errors_;
    EXPECT_TRUE(close(gotUp[0], ref[0])) << "upstream partition vs unsharded";
    EXPECT_TRUE(close(gotSc[0], ref[0])) << "shardc partition vs unsharded";
    EXPECT_TRUE(close(gotUp[0], gotSc[0])) << "upstream partition vs shardc partition";
    EXPECT_TRUE(errors_.empty()) << errors_;
  }

  MLIRContext ctx_;
  std::string errors_;
};

// shardc propagates from the same annotations (W1 column-split, W2 row-split).
TEST_F(UpstreamSharding, MegatronMlpEqualsShardcPartition) {
  compare(kMlp, "mlp", kMlp, "");
}

// shardc from its `tp` preset alone (no annotations), upstream from explicit ones.
TEST_F(UpstreamSharding, PreNormBlockEqualsShardcTpPreset) {
  OwningOpRef<ModuleOp> bare = parse(kBlock);
  ASSERT_TRUE(bare);
  stripAnnotations(*bare);
  std::string text;
  llvm::raw_string_ostream os(text);
  bare->print(os);
  compare(kBlock, "block", text.c_str(), "strategy=tp");
}

} // namespace
