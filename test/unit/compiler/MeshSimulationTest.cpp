//===- MeshSimulationTest.cpp - the executor on partitioned IR ------------===//
//
// Hand-written partitioned functions (xf.grid, local types, xf.sharding on the
// boundary, shard collectives, xf.factor_axes) run by the reference executor
// on every rank of their mesh, against the same computation written
// unsharded and run on one rank: fp32 within 1e-5 (max-norm relative), and
// bit for bit where the sharded run must reproduce the unsharded one exactly
// (data movement, dropout masks). Then the errors the simulation reports.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/executor/Executor.h"
#include "TensorTesting.h"
#include "runtime/cpu/Kernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace mlir;
using namespace shardc;
using exec::DType;
using exec::HostTensor;
using test::close;
using test::randomF32;

namespace {

/// `text` with every "{KEY}" replaced.
std::string subst(std::string text, const std::map<std::string, std::string> &vars) {
  for (const auto &[k, v] : vars) {
    std::string key = "{" + k + "}";
    for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + v.size()))
      text.replace(p, key.size(), v);
  }
  return text;
}

/// Small integers stored as f32: sums of a few are exact in any order.
HostTensor integersF32(std::vector<int64_t> shape, uint32_t seed) {
  HostTensor t(DType::F32, std::move(shape));
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(static_cast<int>(gen() % 41) - 20);
  return t;
}

HostTensor ids(std::vector<int64_t> shape, int32_t vocab, uint32_t seed, bool someIgnored = false) {
  HostTensor t(DType::I32, std::move(shape));
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int32_t>()[i] =
        someIgnored && gen() % 5 == 0 ? -100 : static_cast<int32_t>(gen() % vocab);
  return t;
}

HostTensor scalarF32(float v) {
  HostTensor t(DType::F32, {});
  t.data<float>()[0] = v;
  return t;
}

::testing::AssertionResult bitEqual(const HostTensor &a, const HostTensor &b) {
  if (a.dtype != b.dtype || a.shape != b.shape)
    return ::testing::AssertionFailure()
           << "shape " << rt::shape_str(a.shape) << " vs " << rt::shape_str(b.shape);
  if (a.bytes == b.bytes)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the bytes differ";
}

class MeshSimulation : public ::testing::Test {
protected:
  MeshSimulation() {
    DialectRegistry registry;
    registerShardcDialects(registry);
    ctx_.appendDialectRegistry(registry);
    ctx_.loadAllAvailableDialects();
  }

  /// Runs @f of `text`. Returns false (with the diagnostics in `errors`) if
  /// the module does not parse or the run fails.
  bool tryRun(const std::string &text, std::vector<HostTensor> args,
              std::vector<HostTensor> &results, std::string &errors, exec::RunOptions options = {},
              int *numRanks = nullptr, std::map<std::string, double> *profile = nullptr) {
    ScopedDiagnosticHandler handler(&ctx_, [&](Diagnostic &d) {
      errors += d.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx_);
    if (!module) {
      errors += "(parse failed)\n" + text;
      return false;
    }
    auto f = module->lookupSymbol<func::FuncOp>("f");
    exec::Executor executor(f, options);
    if (numRanks)
      *numRanks = executor.numRanks();
    bool ok = succeeded(executor.run(std::move(args), results));
    if (profile)
      *profile = executor.profile();
    return ok;
  }

  std::vector<HostTensor> run(const std::string &text, std::vector<HostTensor> args,
                              exec::RunOptions options = {}, int *numRanks = nullptr) {
    std::vector<HostTensor> results;
    std::string errors;
    EXPECT_TRUE(tryRun(text, std::move(args), results, errors, options, numRanks)) << errors;
    return results;
  }

  /// The diagnostics of a run that must fail.
  std::string runError(const std::string &text, std::vector<HostTensor> args) {
    std::vector<HostTensor> results;
    std::string errors;
    EXPECT_FALSE(tryRun(text, std::move(args), results, errors)) << "the run succeeded";
    return errors;
  }

  MLIRContext ctx_;
};

//===----------------------------------------------------------------------===//
// 1. Megatron MLP
//===----------------------------------------------------------------------===//

const char *kMlp = R"mlir(
func.func @f(%x: tensor<4x8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<4x8x16xf32> {
  %h = xf.matmul "bsh,hk->bsk" %x, %w1 : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
  %g = xf.gelu %h : tensor<4x8x32xf32>
  %y = xf.matmul "bsk,kh->bsh" %g, %w2 : tensor<4x8x32xf32>, tensor<32x16xf32> -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
)mlir";

// Column-parallel w1 (output features split over tp), row-parallel w2 (input
// features split), then the partial sums all-reduced.
const char *kMlpTp = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<4x8x16xf32>,
             %w1: tensor<16x16xf32> {xf.sharding = #shard<axisarray[[], [0]]>},
             %w2: tensor<16x16xf32> {xf.sharding = #shard<axisarray[[0], []]>})
    -> tensor<4x8x16xf32> attributes {xf.grid = @mesh} {
  %h = xf.matmul "bsh,hk->bsk" %x, %w1 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
  %g = xf.gelu %h : tensor<4x8x16xf32>
  %p = xf.matmul "bsk,kh->bsh" %g, %w2 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
  %y = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<4x8x16xf32> -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
)mlir";

// The same MLP on a dp x tp mesh: the batch split over dp as well.
const char *kMlpDpTp = R"mlir(
shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]}
func.func @f(%x: tensor<2x8x16xf32> {xf.sharding = #shard<axisarray[[0], [], []]>},
             %w1: tensor<16x16xf32> {xf.sharding = #shard<axisarray[[], [1]]>},
             %w2: tensor<16x16xf32> {xf.sharding = #shard<axisarray[[1], []]>})
    -> (tensor<2x8x16xf32> {xf.sharding = #shard<axisarray[[0], [], []]>}) attributes {xf.grid = @mesh} {
  %h = xf.matmul "bsh,hk->bsk" %x, %w1 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %g = xf.gelu %h : tensor<2x8x16xf32>
  %p = xf.matmul "bsk,kh->bsh" %g, %w2 : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %y = shard.all_reduce %p on @mesh grid_axes = [1] : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}
)mlir";

TEST_F(MeshSimulation, MegatronMlpEqualsUnsharded) {
  HostTensor x = randomF32({4, 8, 16}, 1), w1 = randomF32({16, 32}, 2), w2 = randomF32({32, 16}, 3);
  int ranks = 0;
  std::vector<HostTensor> ref = run(kMlp, {x, w1, w2}, {}, &ranks);
  EXPECT_EQ(ranks, 1);
  ASSERT_EQ(ref.size(), 1u);
  for (const char *text : {kMlpTp, kMlpDpTp}) {
    SCOPED_TRACE(text);
    std::vector<HostTensor> got = run(text, {x, w1, w2}, {}, &ranks);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(close(got[0], ref[0]));
  }
  EXPECT_EQ(ranks, 4);
}

TEST_F(MeshSimulation, ProfileCountsOpsOverRanks) {
  std::vector<HostTensor> results;
  std::string errors;
  std::map<std::string, double> profile;
  exec::RunOptions options;
  options.profile = true;
  ASSERT_TRUE(tryRun(kMlpDpTp,
                     {randomF32({4, 8, 16}, 1), randomF32({16, 32}, 2), randomF32({32, 16}, 3)},
                     results, errors, options, nullptr, &profile))
      << errors;
  EXPECT_TRUE(profile.count("xf.matmul"));
  EXPECT_TRUE(profile.count("xf.gelu"));
  EXPECT_TRUE(profile.count("shard.all_reduce"));
}

//===----------------------------------------------------------------------===//
// 2. Data parallel
//===----------------------------------------------------------------------===//

TEST_F(MeshSimulation, DataParallelMatmulThenAllGather) {
  const char *unsharded = R"mlir(
func.func @f(%x: tensor<4x8x16xf32>, %w: tensor<16x12xf32>) -> (tensor<4x8x12xf32>, tensor<4x8x12xf32>) {
  %y = xf.matmul "bsh,hk->bsk" %x, %w : tensor<4x8x16xf32>, tensor<16x12xf32> -> tensor<4x8x12xf32>
  return %y, %y : tensor<4x8x12xf32>, tensor<4x8x12xf32>
}
)mlir";
  // Result 0 is gathered in the IR; result 1 stays split and is assembled by
  // the executor from the owning ranks.
  const char *sharded = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
func.func @f(%x: tensor<2x8x16xf32> {xf.sharding = #shard<axisarray[[0], [], []]>},
             %w: tensor<16x12xf32>)
    -> (tensor<4x8x12xf32>, tensor<2x8x12xf32> {xf.sharding = #shard<axisarray[[0], [], []]>})
    attributes {xf.grid = @mesh} {
  %y = xf.matmul "bsh,hk->bsk" %x, %w : tensor<2x8x16xf32>, tensor<16x12xf32> -> tensor<2x8x12xf32>
  %g = shard.all_gather %y on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x8x12xf32> -> tensor<4x8x12xf32>
  return %g, %y : tensor<4x8x12xf32>, tensor<2x8x12xf32>
}
)mlir";
  HostTensor x = randomF32({4, 8, 16}, 4), w = randomF32({16, 12}, 5);
  std::vector<HostTensor> ref = run(unsharded, {x, w});
  std::vector<HostTensor> got = run(sharded, {x, w});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(close(got[0], ref[0]));
  EXPECT_TRUE(close(got[1], ref[1]));
  EXPECT_TRUE(bitEqual(got[0], got[1]));
}

//===----------------------------------------------------------------------===//
// 3. Collectives on a 2x2 mesh: group order
//===----------------------------------------------------------------------===//

const char *kGrid2x2 = R"mlir(shard.grid @mesh(shape = 2x2) {xf.axis_names = ["dp", "tp"]})mlir";

/// Rows [r0, r0 + n) of a 2-d tensor.
HostTensor rows(const HostTensor &t, int64_t r0, int64_t n) {
  HostTensor out(t.dtype, {n, t.shape[1]});
  int64_t bytes = t.shape[1] * rt::dtype_size(t.dtype);
  std::copy(t.bytes.begin() + r0 * bytes, t.bytes.begin() + (r0 + n) * bytes, out.bytes.begin());
  return out;
}

/// The row blocks of t in the given order.
HostTensor permuteRowBlocks(const HostTensor &t, std::vector<int64_t> order) {
  int64_t n = t.shape[0] / static_cast<int64_t>(order.size());
  HostTensor out = t;
  int64_t bytes = n * t.shape[1] * rt::dtype_size(t.dtype);
  for (size_t k = 0; k < order.size(); ++k)
    std::copy(t.bytes.begin() + order[k] * bytes, t.bytes.begin() + (order[k] + 1) * bytes,
              out.bytes.begin() + k * bytes);
  return out;
}

TEST_F(MeshSimulation, SliceAndGatherRoundTripsInGroupOrder) {
  // all_slice of a replicated tensor over [0, 1] and over [1, 0], returned
  // split the same way, gives the tensor back; gathered in the same order it
  // is the tensor again on every rank.
  std::string text = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<8x6xf32>)
    -> (tensor<2x6xf32> {xf.sharding = #shard<axisarray[[0, 1], []]>},
        tensor<2x6xf32> {xf.sharding = #shard<axisarray[[1, 0], []]>},
        tensor<8x6xf32>, tensor<8x6xf32>) attributes {xf.grid = @mesh} {
  %a = shard.all_slice %x on @mesh grid_axes = [0, 1] slice_axis = 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  %b = shard.all_slice %x on @mesh grid_axes = [1, 0] slice_axis = 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  %ga = shard.all_gather %a on @mesh grid_axes = [0, 1] gather_axis = 0 : tensor<2x6xf32> -> tensor<8x6xf32>
  %gb = shard.all_gather %b on @mesh grid_axes = [1, 0] gather_axis = 0 : tensor<2x6xf32> -> tensor<8x6xf32>
  return %a, %b, %ga, %gb : tensor<2x6xf32>, tensor<2x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}
)mlir";
  HostTensor x = randomF32({8, 6}, 6);
  std::vector<HostTensor> got = run(text, {x});
  ASSERT_EQ(got.size(), 4u);
  for (const HostTensor &t : got)
    EXPECT_TRUE(bitEqual(t, x));
}

TEST_F(MeshSimulation, GatherOrderFollowsGridAxes) {
  // x is split over [0, 1]: rank (dp, tp) holds block 2 dp + tp. Gathered
  // over [1, 0], member i = 2 tp + dp comes i-th: blocks 0, 2, 1, 3.
  std::string text = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<2x3xf32> {xf.sharding = #shard<axisarray[[0, 1], []]>})
    -> (tensor<8x3xf32>, tensor<8x3xf32>) attributes {xf.grid = @mesh} {
  %a = shard.all_gather %x on @mesh grid_axes = [0, 1] gather_axis = 0 : tensor<2x3xf32> -> tensor<8x3xf32>
  %b = shard.all_gather %x on @mesh grid_axes = [1, 0] gather_axis = 0 : tensor<2x3xf32> -> tensor<8x3xf32>
  return %a, %b : tensor<8x3xf32>, tensor<8x3xf32>
}
)mlir";
  HostTensor x = randomF32({8, 3}, 7);
  std::vector<HostTensor> got = run(text, {x});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(bitEqual(got[0], x));
  EXPECT_TRUE(bitEqual(got[1], permuteRowBlocks(x, {0, 2, 1, 3})));
}

TEST_F(MeshSimulation, ReduceScatterSumsAndScattersInGroupOrder) {
  // Each rank holds its own [4, 2] block of y (split over [0, 1]). Reduce-
  // scattered over [0, 1] and over [1, 0], member i keeps row i of the sum;
  // returned split the same way, both give the sum of the four blocks.
  // Integer values: the sums are exact in any order.
  std::string text = std::string(kGrid2x2) + R"mlir(
func.func @f(%y: tensor<4x2xf32> {xf.sharding = #shard<axisarray[[0, 1], []]>})
    -> (tensor<1x2xf32> {xf.sharding = #shard<axisarray[[0, 1], []]>},
        tensor<1x2xf32> {xf.sharding = #shard<axisarray[[1, 0], []]>},
        tensor<4x2xf32>, tensor<4x2xf32>) attributes {xf.grid = @mesh} {
  %a = shard.reduce_scatter %y on @mesh grid_axes = [0, 1] scatter_axis = 0 : tensor<4x2xf32> -> tensor<1x2xf32>
  %b = shard.reduce_scatter %y on @mesh grid_axes = [1, 0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<1x2xf32>
  %mx = shard.all_reduce %y on @mesh grid_axes = [0, 1] reduction = max : tensor<4x2xf32> -> tensor<4x2xf32>
  %mn = shard.all_reduce %y on @mesh grid_axes = [1, 0] reduction = min : tensor<4x2xf32> -> tensor<4x2xf32>
  return %a, %b, %mx, %mn : tensor<1x2xf32>, tensor<1x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
)mlir";
  HostTensor y = integersF32({16, 2}, 8);
  HostTensor sum(DType::F32, {4, 2}), mx(DType::F32, {4, 2}), mn(DType::F32, {4, 2});
  for (int64_t i = 0; i < 8; ++i) {
    float s = 0, hi = -1e30f, lo = 1e30f;
    for (int64_t b = 0; b < 4; ++b) {
      float v = y.data<float>()[b * 8 + i];
      s += v;
      hi = std::max(hi, v);
      lo = std::min(lo, v);
    }
    sum.data<float>()[i] = s;
    mx.data<float>()[i] = hi;
    mn.data<float>()[i] = lo;
  }
  std::vector<HostTensor> got = run(text, {y});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(bitEqual(got[0], sum));
  EXPECT_TRUE(bitEqual(got[1], sum));
  EXPECT_TRUE(bitEqual(got[2], mx));
  EXPECT_TRUE(bitEqual(got[3], mn));
}

TEST_F(MeshSimulation, AllToAllMovesTheSplitToAnotherDim) {
  // Split on dim 0 over tp, all_to_all to a split on dim 1 over tp.
  std::string text = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<3x8xf32> {xf.sharding = #shard<axisarray[[1], []]>})
    -> (tensor<6x4xf32> {xf.sharding = #shard<axisarray[[], [1]]>}) attributes {xf.grid = @mesh} {
  %y = shard.all_to_all %x on @mesh grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<3x8xf32> -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}
)mlir";
  HostTensor x = randomF32({6, 8}, 9);
  std::vector<HostTensor> got = run(text, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(bitEqual(got[0], x));
}

TEST_F(MeshSimulation, Bf16AllReduceRoundsOnce) {
  // 1 + 3 * 2^-9 in bf16 (8 significant bits) rounds to 1 + 2^-7 when summed
  // in f32 and rounded once; summed in bf16 pairwise it would stay 1.
  std::string text = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<1xbf16> {xf.sharding = #shard<axisarray[[0, 1]]>}) -> tensor<1xbf16>
    attributes {xf.grid = @mesh} {
  %s = shard.all_reduce %x on @mesh grid_axes = [0, 1] : tensor<1xbf16> -> tensor<1xbf16>
  return %s : tensor<1xbf16>
}
)mlir";
  HostTensor x(DType::BF16, {4});
  float values[] = {1.0f, 0.001953125f, 0.001953125f, 0.001953125f}; // 2^-9
  for (int i = 0; i < 4; ++i)
    x.data<uint16_t>()[i] = cpu::f32_to_bf16(values[i]);
  std::vector<HostTensor> got = run(text, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cpu::bf16_to_f32(got[0].data<uint16_t>()[0]), 1.0078125f);
}

//===----------------------------------------------------------------------===//
// 4. Vocabulary-parallel embedding
//===----------------------------------------------------------------------===//

TEST_F(MeshSimulation, VocabParallelEmbeddingEqualsUnsharded) {
  const char *unsharded = R"mlir(
func.func @f(%table: tensor<16x6xf32>, %ids: tensor<2x5xi32>, %dy: tensor<2x5x6xf32>)
    -> (tensor<2x5x6xf32>, tensor<16x6xf32>) {
  %e = xf.embedding %table, %ids : tensor<16x6xf32>, tensor<2x5xi32> -> tensor<2x5x6xf32>
  %g = xf.embedding_grad %dy, %ids : tensor<2x5x6xf32>, tensor<2x5xi32> -> tensor<16x6xf32>
  return %e, %g : tensor<2x5x6xf32>, tensor<16x6xf32>
}
)mlir";
  // Factors of both ops: ids dims (0, 1), vocabulary (2), hidden (3).
  const char *sharded = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%table: tensor<8x6xf32> {xf.sharding = #shard<axisarray[[0], []]>},
             %ids: tensor<2x5xi32>, %dy: tensor<2x5x6xf32>)
    -> (tensor<2x5x6xf32>, tensor<8x6xf32> {xf.sharding = #shard<axisarray[[0], []]>})
    attributes {xf.grid = @mesh} {
  %p = xf.embedding %table, %ids {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<8x6xf32>, tensor<2x5xi32> -> tensor<2x5x6xf32>
  %e = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<2x5x6xf32> -> tensor<2x5x6xf32>
  %g = xf.embedding_grad %dy, %ids {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<2x5x6xf32>, tensor<2x5xi32> -> tensor<8x6xf32>
  return %e, %g : tensor<2x5x6xf32>, tensor<8x6xf32>
}
)mlir";
  HostTensor table = randomF32({16, 6}, 10), dy = randomF32({2, 5, 6}, 11);
  HostTensor tokens = ids({2, 5}, 16, 12);
  // Ids in both halves of the vocabulary.
  tokens.data<int32_t>()[0] = 3;
  tokens.data<int32_t>()[1] = 12;
  std::vector<HostTensor> ref = run(unsharded, {table, tokens, dy});
  std::vector<HostTensor> got = run(sharded, {table, tokens, dy});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(close(got[0], ref[0]));
  EXPECT_TRUE(close(got[1], ref[1]));
}

//===----------------------------------------------------------------------===//
// 5. Vocabulary-parallel cross-entropy
//===----------------------------------------------------------------------===//

// x [2, 6, 8], weight [V, 8] (vocab-major) or [8, V]; loss, dx and dw.
const char *kLce = R"mlir(
func.func @f(%x: tensor<2x6x8xf32>, %w: tensor<{W}xf32>, %t: tensor<2x6xi32>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<2x6x8xf32>, tensor<{W}xf32>) {
  %loss = xf.linear_cross_entropy %x, %w, %t {VM} ignore_index = -100 : tensor<2x6x8xf32>, tensor<{W}xf32>, tensor<2x6xi32> -> tensor<f32>
  %dx, %dw = xf.linear_cross_entropy_grad %d, %x, %w, %t {VM} ignore_index = -100 : tensor<f32>, tensor<2x6x8xf32>, tensor<{W}xf32>, tensor<2x6xi32>
  return %loss, %dx, %dw : tensor<f32>, tensor<2x6x8xf32>, tensor<{W}xf32>
}
)mlir";

// Factors: tokens (0, 1), vocabulary (2), hidden (3). dx is a partial sum
// over tp (all-reduced); dw stays split and is gathered in the IR
// (vocab-major) or assembled by the executor (hidden-major).
const char *kLceTp = R"mlir(
shard.grid @mesh(shape = {N}) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<2x6x8xf32>, %w: tensor<{WL}xf32> {xf.sharding = #shard<axisarray[{WS}]>},
             %t: tensor<2x6xi32>, %d: tensor<f32>)
    -> (tensor<f32> {xf.report = "loss"}, tensor<2x6x8xf32>, tensor<{WR}xf32> {xf.sharding = #shard<axisarray[{WRS}]>})
    attributes {xf.grid = @mesh} {
  %loss = xf.linear_cross_entropy %x, %w, %t {VM} ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<2x6x8xf32>, tensor<{WL}xf32>, tensor<2x6xi32> -> tensor<f32>
  %dxp, %dw = xf.linear_cross_entropy_grad %d, %x, %w, %t {VM} ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>, array<i16>]} : tensor<f32>, tensor<2x6x8xf32>, tensor<{WL}xf32>, tensor<2x6xi32>
  %dx = shard.all_reduce %dxp on @mesh grid_axes = [0] : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
  {GATHER}
  return %loss, %dx, %dwr : tensor<f32>, tensor<2x6x8xf32>, tensor<{WR}xf32>
}
)mlir";

TEST_F(MeshSimulation, VocabParallelLinearCrossEntropyEqualsUnsharded) {
  const int64_t V = 24;
  HostTensor x = randomF32({2, 6, 8}, 13, -2.0, 2.0);
  HostTensor targets = ids({2, 6}, V, 14, /*someIgnored=*/true);
  HostTensor dloss = scalarF32(1.7f);
  for (bool vocabMajor : {true, false})
    for (int64_t n : {2, 4}) {
      SCOPED_TRACE(testing::Message() << "vocabMajor=" << vocabMajor << " tp=" << n);
      std::string vm = vocabMajor ? "vocab_major" : "";
      auto shape = [&](int64_t v) {
        return vocabMajor ? std::to_string(v) + "x8" : "8x" + std::to_string(v);
      };
      HostTensor w = randomF32(vocabMajor ? std::vector<int64_t>{V, 8} : std::vector<int64_t>{8, V},
                               15, -2.0, 2.0);
      std::vector<HostTensor> ref =
          run(subst(kLce, {{"W", shape(V)}, {"VM", vm}}), {x, w, targets, dloss});
      std::string gather =
          vocabMajor
              ? subst("%dwr = shard.all_gather %dw on @mesh grid_axes = [0] gather_axis = "
                      "0 : tensor<{WL}xf32> -> tensor<{W}xf32>",
                      {{"WL", shape(V / n)}, {"W", shape(V)}})
              : "%dwr = xf.scale %dw factor = 1.000000e+00 : tensor<" + shape(V / n) + "xf32>";
      std::string text = subst(kLceTp, {{"N", std::to_string(n)},
                                        {"WL", shape(V / n)},
                                        {"WS", vocabMajor ? "[0], []" : "[], [0]"},
                                        {"WR", vocabMajor ? shape(V) : shape(V / n)},
                                        {"WRS", vocabMajor ? "[], []" : "[], [0]"},
                                        {"VM", vm},
                                        {"GATHER", gather}});
      std::vector<HostTensor> got = run(text, {x, w, targets, dloss});
      ASSERT_EQ(got.size(), 3u);
      EXPECT_TRUE(close(got[0], ref[0])) << "loss";
      EXPECT_TRUE(close(got[1], ref[1])) << "dx";
      EXPECT_TRUE(close(got[2], ref[2])) << "dw";
    }
}

TEST_F(MeshSimulation, VocabParallelCrossEntropyOnSplitLogits) {
  const char *unsharded = R"mlir(
func.func @f(%l: tensor<4x3x12xf32>, %t: tensor<4x3xi32>, %m: tensor<4x3xf32>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<4x3x12xf32>) {
  %loss = xf.cross_entropy %l, %t mask %m ignore_index = -100 : tensor<4x3x12xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
  %g = xf.cross_entropy_grad %d, %l, %t mask %m ignore_index = -100 : tensor<f32>, tensor<4x3x12xf32>, tensor<4x3xi32>, tensor<4x3xf32>
  return %loss, %g : tensor<f32>, tensor<4x3x12xf32>
}
)mlir";
  // Logits split on the vocabulary over tp; factors: tokens (0, 1), vocab (2).
  const char *sharded = R"mlir(
shard.grid @mesh(shape = 3) {xf.axis_names = ["tp"]}
func.func @f(%l: tensor<4x3x4xf32> {xf.sharding = #shard<axisarray[[], [], [0]]>},
             %t: tensor<4x3xi32>, %m: tensor<4x3xf32>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<4x3x4xf32> {xf.sharding = #shard<axisarray[[], [], [0]]>})
    attributes {xf.grid = @mesh} {
  %loss = xf.cross_entropy %l, %t mask %m ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>]} : tensor<4x3x4xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
  %g = xf.cross_entropy_grad %d, %l, %t mask %m ignore_index = -100 {xf.factor_axes = [array<i16>, array<i16>, array<i16: 0>]} : tensor<f32>, tensor<4x3x4xf32>, tensor<4x3xi32>, tensor<4x3xf32>
  return %loss, %g : tensor<f32>, tensor<4x3x4xf32>
}
)mlir";
  HostTensor logits = randomF32({4, 3, 12}, 16, -20.0, 20.0);
  HostTensor targets = ids({4, 3}, 12, 17, /*someIgnored=*/true);
  HostTensor mask(DType::F32, {4, 3});
  for (int64_t i = 0; i < 12; ++i)
    mask.data<float>()[i] = i % 4 == 3 ? 0.0f : 1.0f;
  HostTensor dloss = scalarF32(0.6f);
  std::vector<HostTensor> ref = run(unsharded, {logits, targets, mask, dloss});
  std::vector<HostTensor> got = run(sharded, {logits, targets, mask, dloss});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(close(got[0], ref[0])) << "loss";
  EXPECT_TRUE(close(got[1], ref[1])) << "dlogits";
}

TEST_F(MeshSimulation, CrossEntropyWithTokensSplitOverDpAndVocabOverTp) {
  // Each dp shard computes its share of the mean over the whole dp group (its
  // sum over the group's count of unmasked targets), so the all-reduce over dp
  // is the global mean even when the shards mask different numbers of
  // targets; the backward likewise. The vocabulary groups are the tp pairs of
  // one dp coordinate.
  const char *unsharded = R"mlir(
func.func @f(%l: tensor<4x3x8xf32>, %t: tensor<4x3xi32>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<4x3x8xf32>) {
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<4x3x8xf32>, tensor<4x3xi32> -> tensor<f32>
  %g = xf.cross_entropy_grad %d, %l, %t ignore_index = -100 : tensor<f32>, tensor<4x3x8xf32>, tensor<4x3xi32>
  return %loss, %g : tensor<f32>, tensor<4x3x8xf32>
}
)mlir";
  std::string sharded = std::string(kGrid2x2) + R"mlir(
func.func @f(%l: tensor<2x3x4xf32> {xf.sharding = #shard<axisarray[[0], [], [1]]>},
             %t: tensor<2x3xi32> {xf.sharding = #shard<axisarray[[0], []]>}, %d: tensor<f32>)
    -> (tensor<f32>, tensor<2x3x4xf32> {xf.sharding = #shard<axisarray[[0], [], [1]]>})
    attributes {xf.grid = @mesh} {
  %local = xf.cross_entropy %l, %t ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<f32>
  %loss = shard.all_reduce %local on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %g = xf.cross_entropy_grad %d, %l, %t ignore_index = -100 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<f32>, tensor<2x3x4xf32>, tensor<2x3xi32>
  return %loss, %g : tensor<f32>, tensor<2x3x4xf32>
}
)mlir";
  HostTensor logits = randomF32({4, 3, 8}, 18, -5.0, 5.0);
  HostTensor dloss = scalarF32(1.0f);
  for (int masked : {0, 1, 4}) {
    SCOPED_TRACE(testing::Message() << masked << " targets of dp shard 0 masked");
    HostTensor targets = ids({4, 3}, 8, 19);
    for (int i = 0; i < masked; ++i)
      targets.data<int32_t>()[i] = -100; // rows 0-1 belong to dp shard 0
    std::vector<HostTensor> ref = run(unsharded, {logits, targets, dloss});
    std::vector<HostTensor> got = run(sharded, {logits, targets, dloss});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(close(got[0], ref[0])) << "loss";
    EXPECT_TRUE(close(got[1], ref[1])) << "dlogits";
  }
}

//===----------------------------------------------------------------------===//
// 6. Ops that depend on global indices
//===----------------------------------------------------------------------===//

TEST_F(MeshSimulation, DropoutSplitOverTwoAxesHasTheUnshardedMask) {
  const char *unsharded = R"mlir(
func.func @f(%x: tensor<8x3x8xf32>) -> (tensor<8x3x8xf32>, tensor<8x3x8xf32>) {
  %a = xf.dropout %x rate = 5.000000e-01 key = 3 : tensor<8x3x8xf32>
  %b = xf.dropout %x rate = 3.000000e-01 key = 4 : tensor<8x3x8xf32>
  return %a, %b : tensor<8x3x8xf32>, tensor<8x3x8xf32>
}
)mlir";
  // %a: dim 0 over dp, dim 2 over tp. %b: dim 0 over both axes, tp major.
  std::string sharded = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<4x3x4xf32> {xf.sharding = #shard<axisarray[[0], [], [1]]>},
             %y: tensor<2x3x8xf32> {xf.sharding = #shard<axisarray[[1, 0], [], []]>})
    -> (tensor<4x3x4xf32> {xf.sharding = #shard<axisarray[[0], [], [1]]>},
        tensor<2x3x8xf32> {xf.sharding = #shard<axisarray[[1, 0], [], []]>})
    attributes {xf.grid = @mesh} {
  %a = xf.dropout %x rate = 5.000000e-01 key = 3 {xf.factor_axes = [array<i16: 0>, array<i16>, array<i16: 1>]} : tensor<4x3x4xf32>
  %b = xf.dropout %y rate = 3.000000e-01 key = 4 {xf.factor_axes = [array<i16: 1, 0>, array<i16>, array<i16>]} : tensor<2x3x8xf32>
  return %a, %b : tensor<4x3x4xf32>, tensor<2x3x8xf32>
}
)mlir";
  HostTensor x = randomF32({8, 3, 8}, 20, 0.5, 1.5);
  exec::RunOptions options;
  options.training = true;
  options.seed = 99;
  options.step = 5;
  std::vector<HostTensor> ref = run(unsharded, {x}, options);
  std::vector<HostTensor> got = run(sharded, {x, x}, options);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(bitEqual(got[0], ref[0]));
  EXPECT_TRUE(bitEqual(got[1], ref[1]));
}

TEST_F(MeshSimulation, IotaAndRopeWithSplitSequence) {
  const char *unsharded = R"mlir(
func.func @f(%x: tensor<2x8x2x4xf32>) -> (tensor<2x8xi32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) {
  %p = xf.iota dim = 1 : tensor<2x8xi32>
  %r = xf.rope %x theta = 1.000000e+04 : tensor<2x8x2x4xf32>
  %i = xf.rope %x theta = 1.000000e+04 inverse : tensor<2x8x2x4xf32>
  return %p, %r, %i : tensor<2x8xi32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>
}
)mlir";
  // Batch over dp, sequence over tp.
  std::string sharded = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<1x4x2x4xf32> {xf.sharding = #shard<axisarray[[0], [1], [], []]>})
    -> (tensor<1x4xi32> {xf.sharding = #shard<axisarray[[0], [1]]>},
        tensor<1x4x2x4xf32> {xf.sharding = #shard<axisarray[[0], [1], [], []]>},
        tensor<1x4x2x4xf32> {xf.sharding = #shard<axisarray[[0], [1], [], []]>})
    attributes {xf.grid = @mesh} {
  %p = xf.iota dim = 1 {xf.factor_axes = [array<i16: 0>, array<i16: 1>]} : tensor<1x4xi32>
  %r = xf.rope %x theta = 1.000000e+04 {xf.factor_axes = [array<i16: 0>, array<i16: 1>, array<i16>, array<i16>]} : tensor<1x4x2x4xf32>
  %i = xf.rope %x theta = 1.000000e+04 inverse {xf.factor_axes = [array<i16: 0>, array<i16: 1>, array<i16>, array<i16>]} : tensor<1x4x2x4xf32>
  return %p, %r, %i : tensor<1x4xi32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
}
)mlir";
  HostTensor x = randomF32({2, 8, 2, 4}, 21);
  std::vector<HostTensor> ref = run(unsharded, {x});
  std::vector<HostTensor> got = run(sharded, {x});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(bitEqual(got[0], ref[0]));
  EXPECT_TRUE(close(got[1], ref[1]));
  EXPECT_TRUE(close(got[2], ref[2]));
}

//===----------------------------------------------------------------------===//
// 7. Errors
//===----------------------------------------------------------------------===//

TEST_F(MeshSimulation, WrongGlobalArgumentShapeIsReported) {
  // Integer tokens through integer collectives (the sum of the two dp halves).
  const char *text = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["dp"]}
func.func @f(%x: tensor<2x8xi32> {xf.input = "tokens", xf.sharding = #shard<axisarray[[0], []]>})
    -> tensor<2x8xi32> attributes {xf.grid = @mesh} {
  %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x8xi32> -> tensor<4x8xi32>
  %s = shard.all_slice %g on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x8xi32> -> tensor<2x8xi32>
  %r = shard.all_reduce %s on @mesh grid_axes = [0] : tensor<2x8xi32> -> tensor<2x8xi32>
  return %r : tensor<2x8xi32>
}
)mlir";
  // The local shape given as if it were global.
  std::string errors = runError(text, {ids({2, 8}, 50, 22)});
  EXPECT_NE(errors.find("argument #0 (input 'tokens')"), std::string::npos) << errors;
  EXPECT_NE(errors.find("global value is I32 [4, 8]"), std::string::npos) << errors;
  EXPECT_NE(errors.find("was given I32 [2, 8]"), std::string::npos) << errors;
  // The right global shape runs.
  HostTensor tokens = ids({4, 8}, 50, 22);
  std::vector<HostTensor> got = run(text, {tokens});
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_EQ(got[0].data<int32_t>()[i],
              tokens.data<int32_t>()[i] + tokens.data<int32_t>()[i + 16]);
}

TEST_F(MeshSimulation, ReplicatedResultThatDiffersAcrossRanksIsReported) {
  // An all_slice result is rank-dependent: returned as replicated it is a
  // partitioner bug; returned split it is fine.
  const char *text = R"mlir(
shard.grid @mesh(shape = 2) {xf.axis_names = ["tp"]}
func.func @f(%x: tensor<4x3xf32>) -> (tensor<2x3xf32> {xf.report = "slice"{SHARDING}})
    attributes {xf.grid = @mesh} {
  %l = shard.all_slice %x on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  return %l : tensor<2x3xf32>
}
)mlir";
  HostTensor x = randomF32({4, 3}, 23);
  std::string errors = runError(subst(text, {{"SHARDING", ""}}), {x});
  EXPECT_NE(errors.find("result #0 (report 'slice')"), std::string::npos) << errors;
  EXPECT_NE(errors.find("replicated over mesh axes tp"), std::string::npos) << errors;
  EXPECT_NE(errors.find("rank 0 (tp=0) and rank 1 (tp=1) hold different values"), std::string::npos)
      << errors;
  std::vector<HostTensor> got =
      run(subst(text, {{"SHARDING", ", xf.sharding = #shard<axisarray[[0], []]>"}}), {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(bitEqual(got[0], x));
}

TEST_F(MeshSimulation, UnsupportedReductionAndCollectiveOutsideAMesh) {
  std::string product = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> attributes {xf.grid = @mesh} {
  %p = shard.all_reduce %x on @mesh grid_axes = [0] reduction = product : tensor<2xf32> -> tensor<2xf32>
  return %p : tensor<2xf32>
}
)mlir";
  std::string errors = runError(product, {randomF32({2}, 24)});
  EXPECT_NE(errors.find("reduction 'product' is not supported"), std::string::npos) << errors;

  std::string noGrid = std::string(kGrid2x2) + R"mlir(
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %p = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  return %p : tensor<2xf32>
}
)mlir";
  errors = runError(noGrid, {randomF32({2}, 25)});
  EXPECT_NE(errors.find("needs a partitioned function"), std::string::npos) << errors;
}

} // namespace
