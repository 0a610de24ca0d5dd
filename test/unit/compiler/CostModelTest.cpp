//===- CostModelTest.cpp - meshes, resharding plans and the cost model ----===//

#include "compiler/cost/CostModel.h"
#include "compiler/sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace shardc;
using namespace shardc::cost;
using namespace shardc::sharding;

namespace {

constexpr Axis kDp = 0, kTp = 1;

Mesh mesh(const std::string &spec) {
  std::string error;
  auto m = Mesh::parse(spec, error);
  EXPECT_TRUE(succeeded(m)) << error;
  return *m;
}

/// A sharding from per-dim axis lists and partial axes.
TensorSharding sh(std::initializer_list<std::initializer_list<Axis>> dims,
                  std::initializer_list<Axis> partial = {}) {
  TensorSharding s;
  for (auto d : dims)
    s.dims.push_back(AxisList(d.begin(), d.end()));
  s.addPartial(llvm::ArrayRef<Axis>(partial.begin(), partial.end()));
  return s;
}

AxisList axes(std::initializer_list<Axis> a) { return AxisList(a.begin(), a.end()); }

HardwareDesc loadShipped(const std::string &name) {
  std::string error;
  auto hw = HardwareDesc::byName(name, error);
  EXPECT_TRUE(succeeded(hw)) << error;
  return succeeded(hw) ? *hw : HardwareDesc();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replaceOnce(std::string s, const std::string &from, const std::string &to) {
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << "'" << from << "' not in the fixture";
  if (pos != std::string::npos)
    s.replace(pos, from.size(), to);
  return s;
}

const char *kGoodJson = R"({
  "name": "test box",
  "source": "made up for the test",
  "notes": "unknown fields are ignored",
  "devices_per_node": 4,
  "memory_bytes": 1000,
  "peak_flops": {"f32": 1e12, "bf16": 4e12},
  "links": [
    {"name": "fast", "bandwidth": 1e11, "latency": 1e-6},
    {"name": "slow", "bandwidth": 1e10, "latency": 1e-5}
  ]
})";

std::string parseError(const std::string &json) {
  std::string error;
  auto hw = HardwareDesc::parse(json, error);
  EXPECT_TRUE(failed(hw)) << "parsed: " << json;
  EXPECT_FALSE(error.empty());
  return error;
}

//===----------------------------------------------------------------------===//
// Ring formulas
//===----------------------------------------------------------------------===//

TEST(RingFormulas, ClosedForms) {
  const double b = 1024.0 * 1024.0;
  for (int64_t n : {1, 2, 4, 8}) {
    double frac = static_cast<double>(n - 1) / static_cast<double>(n);
    EXPECT_DOUBLE_EQ(ringAllReduceBytes(b, n), 2.0 * frac * b) << n;
    EXPECT_DOUBLE_EQ(ringAllGatherBytes(b, n), frac * b) << n;
    EXPECT_DOUBLE_EQ(ringReduceScatterBytes(b, n), frac * b) << n;
    EXPECT_DOUBLE_EQ(allToAllBytes(b, n), frac * b) << n;
  }
  // Spelled out.
  EXPECT_DOUBLE_EQ(ringAllReduceBytes(b, 1), 0.0);
  EXPECT_DOUBLE_EQ(ringAllReduceBytes(b, 2), b);
  EXPECT_DOUBLE_EQ(ringAllReduceBytes(b, 4), 1.5 * b);
  EXPECT_DOUBLE_EQ(ringAllReduceBytes(b, 8), 1.75 * b);
  EXPECT_DOUBLE_EQ(ringAllGatherBytes(b, 2), 0.5 * b);
  EXPECT_DOUBLE_EQ(ringAllGatherBytes(b, 4), 0.75 * b);
  EXPECT_DOUBLE_EQ(ringReduceScatterBytes(b, 8), 0.875 * b);
  EXPECT_DOUBLE_EQ(allToAllBytes(b, 1), 0.0);
  EXPECT_DOUBLE_EQ(allToAllBytes(b, 0), 0.0);
  EXPECT_DOUBLE_EQ(ringAllGatherBytes(b, 0), 0.0);
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

TEST(Mesh, ParseGood) {
  std::string error;
  auto m = Mesh::parse("dp=2,tp=4", error);
  ASSERT_TRUE(succeeded(m)) << error;
  EXPECT_EQ(m->names, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(m->sizes, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(m->numRanks(), 8);
  EXPECT_EQ(m->axisIndex("tp"), 1);
  EXPECT_EQ(m->axisIndex("pp"), -1);
  EXPECT_EQ(m->str(), "dp=2,tp=4");
  EXPECT_EQ(m->axesName(axes({kDp, kTp})), "dp,tp");
  EXPECT_EQ(m->axesName({}), "-");

  auto spaced = Mesh::parse(" dp = 2 , tp=4 ", error);
  ASSERT_TRUE(succeeded(spaced)) << error;
  EXPECT_EQ(spaced->str(), "dp=2,tp=4");
}

TEST(Mesh, ParseBad) {
  for (const char *spec : {"dp=0", "dp=2,dp=2", "x", "2=dp", "", "dp=-1", "dp=2,", "dp=two"}) {
    std::string error;
    auto m = Mesh::parse(spec, error);
    EXPECT_TRUE(failed(m)) << "accepted '" << spec << "'";
    EXPECT_FALSE(error.empty()) << spec;
  }
  std::string error;
  (void)Mesh::parse("dp=2,dp=2", error);
  EXPECT_NE(error.find("dp"), std::string::npos) << error;
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
  (void)Mesh::parse("dp=0", error);
  EXPECT_NE(error.find("dp=0"), std::string::npos) << error;
}

TEST(Mesh, CoordsGroupsShardIndex) {
  Mesh m = mesh("dp=2,tp=4");
  EXPECT_EQ(m.coords(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(m.coords(5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.coords(7), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(m.coords(3), (std::vector<int64_t>{0, 3}));
  for (int64_t r = 0; r < m.numRanks(); ++r)
    EXPECT_EQ(m.linearRank(m.coords(r)), r);

  EXPECT_EQ(m.group(axes({kTp}), 5), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(m.group(axes({kDp}), 5), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(m.group(axes({kTp}), 0), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.group(axes({kDp}), 2), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(m.group({}, 6), (std::vector<int64_t>{6}));
  // Both axes: ordered by shardIndex, first axis major.
  EXPECT_EQ(m.group(axes({kDp, kTp}), 3), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.group(axes({kTp, kDp}), 3), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));

  std::vector<int64_t> c5 = m.coords(5);
  EXPECT_EQ(m.shardIndex(axes({kTp}), c5), 1);
  EXPECT_EQ(m.shardIndex(axes({kDp}), c5), 1);
  EXPECT_EQ(m.shardIndex(axes({kDp, kTp}), c5), 5);
  EXPECT_EQ(m.shardIndex(axes({kTp, kDp}), c5), 3);
  EXPECT_EQ(m.shardIndex({}, c5), 0);
  // Group members sit at shardIndex 0..n-1 in order.
  std::vector<int64_t> g = m.group(axes({kTp, kDp}), 6);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_EQ(m.shardIndex(axes({kTp, kDp}), m.coords(g[i])), static_cast<int64_t>(i));
  EXPECT_EQ(m.size(axes({kDp, kTp})), 8);
  EXPECT_EQ(m.size({}), 1);
}

//===----------------------------------------------------------------------===//
// TensorSharding
//===----------------------------------------------------------------------===//

TEST(TensorSharding, LocalShape) {
  Mesh m = mesh("dp=2,tp=4");
  auto bad = sh({{kTp}}).localShape({6}, m);
  EXPECT_TRUE(failed(bad));
  auto good = sh({{kTp}, {}}).localShape({8, 6}, m);
  ASSERT_TRUE(succeeded(good));
  EXPECT_EQ(*good, (llvm::SmallVector<int64_t>{2, 6}));
  auto both = sh({{kDp, kTp}, {}}).localShape({16, 3}, m);
  ASSERT_TRUE(succeeded(both));
  EXPECT_EQ(*both, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_TRUE(failed(sh({{kDp, kTp}}).localShape({12}, m)));
  // Partial axes do not shrink the local shape.
  auto partial = sh({{}, {}}, {kTp}).localShape({4, 4}, m);
  ASSERT_TRUE(succeeded(partial));
  EXPECT_EQ(*partial, (llvm::SmallVector<int64_t>{4, 4}));
}

TEST(TensorSharding, Str) {
  Mesh m = mesh("dp=2,tp=4");
  EXPECT_EQ(sh({{kDp}, {}, {kTp}}, {kTp}).str(m), "[dp, -, tp] partial(tp)");
  EXPECT_EQ(sh({{kDp, kTp}, {}}).str(m), "[dp+tp, -]");
  EXPECT_EQ(sh({{}, {}}, {kTp, kDp}).str(m), "[-, -] partial(dp,tp)");
  EXPECT_EQ(TensorSharding::replicated(0).str(m), "[]");
}

TEST(TensorSharding, Predicates) {
  EXPECT_TRUE(TensorSharding::replicated(2).isReplicated());
  EXPECT_FALSE(sh({{}, {}}, {kTp}).isReplicated());
  EXPECT_FALSE(sh({{}, {}}, {kTp}).isSplit());
  EXPECT_TRUE(sh({{}, {kDp}}).isSplit());
  EXPECT_EQ(sh({{kTp}, {}}, {kDp}).usedAxes(), axes({kDp, kTp}));
  TensorSharding s = sh({{}});
  s.addPartial(axes({kTp, kDp, kTp}));
  EXPECT_EQ(s.partial, axes({kDp, kTp}));
  EXPECT_EQ(s.withoutPartial(), sh({{}}));
}

//===----------------------------------------------------------------------===//
// planReshard
//===----------------------------------------------------------------------===//

TEST(PlanReshard, Identity) {
  EXPECT_TRUE(planReshard(sh({{kDp}, {}}), sh({{kDp}, {}})).empty());
  EXPECT_TRUE(planReshard(sh({{}, {}}, {kTp}), sh({{}, {}}, {kTp})).empty());
}

TEST(PlanReshard, PartialToReplicatedIsAllReduce) {
  TensorSharding from = sh({{}, {}}, {kTp});
  auto steps = planReshard(from, sh({{}, {}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllReduce);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].before, from);
}

TEST(PlanReshard, PartialToSplitIsReduceScatter) {
  TensorSharding from = sh({{}, {}}, {kTp});
  auto steps = planReshard(from, sh({{kTp}, {}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::ReduceScatter);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_EQ(steps[0].before, from);
}

TEST(PlanReshard, SplitToReplicatedIsAllGather) {
  TensorSharding from = sh({{kDp}, {}});
  auto steps = planReshard(from, sh({{}, {}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllGather);
  EXPECT_EQ(steps[0].axes, axes({kDp}));
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_EQ(steps[0].before, from);
}

TEST(PlanReshard, ReplicatedToSplitIsAllSlice) {
  auto steps = planReshard(sh({{}, {}}), sh({{}, {kTp}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllSlice);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].dim, 1);
}

TEST(PlanReshard, MiCSReduceScatterThenAllReduce) {
  // partial(dp,tp) -> [tp, -]: reduce-scatter within tp, all-reduce across dp.
  TensorSharding from = sh({{}, {}}, {kDp, kTp});
  auto steps = planReshard(from, sh({{kTp}, {}}));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::ReduceScatter);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_EQ(steps[0].before, from);
  EXPECT_EQ(steps[1].kind, CollectiveStep::AllReduce);
  EXPECT_EQ(steps[1].axes, axes({kDp}));
  EXPECT_EQ(steps[1].before, sh({{kTp}, {}}, {kDp}));
}

TEST(PlanReshard, SliceBeforeAllReduce) {
  // partial(dp) -> [-, tp] (a weight gradient summed over dp, its update split
  // over tp): the local slice comes first, so the all-reduce moves 1/t.
  TensorSharding from = sh({{}, {}}, {kDp});
  auto steps = planReshard(from, sh({{}, {kTp}}));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllSlice);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].before, from);
  EXPECT_EQ(steps[1].kind, CollectiveStep::AllReduce);
  EXPECT_EQ(steps[1].axes, axes({kDp}));
  EXPECT_EQ(steps[1].before, sh({{}, {kTp}}, {kDp}));
  // Fewer bytes than reducing first and slicing after (1/8 on tp=8).
  CostModel cm(mesh("dp=2,tp=8"), loadShipped("h100-8x-nvlink-ib"));
  double sliced = cm.reshardTime(from, sh({{}, {kTp}}), 1 << 20);
  double whole = cm.reshardTime(from, sh({{}, {}}), 1 << 20);
  EXPECT_LT(sliced, whole);
}

TEST(PlanReshard, SliceThenReduceScatter) {
  // partial(dp) -> [tp+dp, -]: slice over tp, then reduce-scatter over dp
  // (not an all-reduce and a second slice).
  TensorSharding from = sh({{}, {}}, {kDp});
  auto steps = planReshard(from, sh({{kTp, kDp}, {}}));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllSlice);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[1].kind, CollectiveStep::ReduceScatter);
  EXPECT_EQ(steps[1].axes, axes({kDp}));
  EXPECT_EQ(steps[1].dim, 0);
  EXPECT_EQ(steps[1].before, sh({{kTp}, {}}, {kDp}));
}

/// One step of a reshard: its kind, axes and dim.
void expectStep(const CollectiveStep &s, CollectiveStep::Kind kind, const AxisList &on,
                int64_t dim) {
  EXPECT_EQ(s.kind, kind);
  EXPECT_EQ(s.axes, on);
  EXPECT_EQ(s.dim, dim);
}

TEST(PlanReshard, NearerAxisReducesFirstFartherGathersFirst) {
  // A ZeRO state split over a factored data axis (mesh dp=64,dq=4: rows over
  // dp, columns over dq). The sum is reduce-scattered over the later mesh
  // axis (dq: ranks inside a node) first, so the one over dp moves a quarter
  // of the gradient between nodes; the parameter is gathered over dp first,
  // on the smallest pieces, then over dq.
  TensorSharding from = sh({{}, {}}, {kDp, kTp});
  TensorSharding split = sh({{kDp}, {kTp}});
  auto steps = planReshard(from, split);
  ASSERT_EQ(steps.size(), 2u);
  expectStep(steps[0], CollectiveStep::ReduceScatter, axes({kTp}), 1);
  expectStep(steps[1], CollectiveStep::ReduceScatter, axes({kDp}), 0);
  EXPECT_EQ(steps[1].before, sh({{}, {kTp}}, {kDp}));
  auto back = planReshard(split, sh({{}, {}}));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kind, CollectiveStep::AllGather);
  EXPECT_EQ(back[0].axes, axes({kDp}));
  EXPECT_EQ(back[1].kind, CollectiveStep::AllGather);
  EXPECT_EQ(back[1].axes, axes({kTp}));
  // The same order whichever dim holds which axis.
  auto swapped = planReshard(from, sh({{kTp}, {kDp}}));
  ASSERT_EQ(swapped.size(), 2u);
  EXPECT_EQ(swapped[0].axes, axes({kTp}));
  EXPECT_EQ(swapped[0].dim, 0);
  auto swappedBack = planReshard(sh({{kTp}, {kDp}}), sh({{}, {}}));
  ASSERT_EQ(swappedBack.size(), 2u);
  EXPECT_EQ(swappedBack[0].axes, axes({kDp}));
  EXPECT_EQ(swappedBack[0].dim, 1);
  // Fewer bytes on the farther link: on 8 nodes of 8 (dp=8 between nodes,
  // dq=8 inside), reducing over dq first is the cheaper order.
  CostModel cm(mesh("dp=8,dq=8"), loadShipped("h100-8x-nvlink-ib"));
  double nearFirst = 0, farFirst = 0;
  for (const CollectiveStep &s : steps)
    nearFirst += cm.stepTime(s, 64 << 20);
  CollectiveStep far{CollectiveStep::ReduceScatter, axes({kDp}), 0, -1, from};
  CollectiveStep near{CollectiveStep::ReduceScatter, axes({kTp}), 1, -1,
                      sh({{kDp}, {}}, {kTp})};
  farFirst = cm.stepTime(far, 64 << 20) + cm.stepTime(near, 64 << 20);
  EXPECT_LT(nearFirst, farFirst);
}

TEST(PlanReshard, SliceOtherDimThenReduceScatter) {
  // partial(dp) -> [dp, tp] (ZeRO-1/2 + tp: a weight gradient every tp rank
  // holds whole, where attention runs replicated over tp, reduce-scattered
  // into the optimizer's rows over dp and columns over tp): the tp slice is
  // local and comes first, so the reduce-scatter moves the tp shard, not the
  // whole gradient (GPT-2 1.5B bf16 dp=4 x tp=2 zero1+tp: 553 MB less).
  TensorSharding from = sh({{}, {}}, {kDp});
  TensorSharding to = sh({{kDp}, {kTp}});
  auto steps = planReshard(from, to);
  ASSERT_EQ(steps.size(), 2u);
  expectStep(steps[0], CollectiveStep::AllSlice, axes({kTp}), 1);
  expectStep(steps[1], CollectiveStep::ReduceScatter, axes({kDp}), 0);
  EXPECT_EQ(steps[1].before, sh({{}, {kTp}}, {kDp}));
  CostModel cm(mesh("dp=4,tp=2"), loadShipped("h100-8x-nvlink-ib"));
  double bytes = 0;
  for (const CollectiveStep &step : steps)
    bytes += cm.stepBytes(step, 1 << 20);
  EXPECT_DOUBLE_EQ(bytes, 3.0 / 4.0 * (1 << 20) / 2); // (d-1)/d of the tp shard
}

TEST(PlanReshard, DropMinorAxisIsAllGather) {
  TensorSharding from = sh({{kDp, kTp}, {}});
  auto steps = planReshard(from, sh({{kDp}, {}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllGather);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_EQ(steps[0].before, from);
}

TEST(PlanReshard, MoveAxisBetweenDimsIsOneAllToAll) {
  auto steps = planReshard(sh({{kDp}, {}}), sh({{}, {kDp}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllToAll);
  EXPECT_EQ(steps[0].axes, axes({kDp}));
  EXPECT_EQ(steps[0].dim, 1);       // split
  EXPECT_EQ(steps[0].concatDim, 0); // concatenated
  EXPECT_EQ(steps[0].before, sh({{kDp}, {}}));
}

TEST(PlanReshard, AxisNotAtTheEndOfItsDimIsGatheredThenSliced) {
  // dp is not the minor axis of dim 0, so it cannot move by itself.
  auto steps = planReshard(sh({{kDp, kTp}, {}}), sh({{kTp}, {kDp}}));
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllGather);
  EXPECT_EQ(steps.back().kind, CollectiveStep::AllSlice);
}

TEST(PlanReshard, KeepsPendingSumTheTargetKeeps) {
  // partial(dp,tp) -> partial(dp): only tp is reduced.
  auto steps = planReshard(sh({{}}, {kDp, kTp}), sh({{}}, {kDp}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, CollectiveStep::AllReduce);
  EXPECT_EQ(steps[0].axes, axes({kTp}));
}

//===----------------------------------------------------------------------===//
// Hardware descriptions
//===----------------------------------------------------------------------===//

TEST(HardwareDesc, EveryShippedFileLoads) {
  std::vector<std::string> names = HardwareDesc::shippedNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "h100-8x-nvlink-ib"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu-mpi"), names.end());
  for (const std::string &name : names) {
    std::string error;
    auto hw = HardwareDesc::byName(name, error);
    ASSERT_TRUE(succeeded(hw)) << name << ": " << error;
    EXPECT_FALSE(hw->name.empty()) << name;
    EXPECT_GE(hw->devicesPerNode, 1) << name;
    EXPECT_GT(hw->memoryBytes, 0) << name;
    EXPECT_GT(hw->peakFlops.at("f32"), 0) << name;
    EXPECT_FALSE(hw->links.empty()) << name;
    // By path as well.
    auto byPath = HardwareDesc::byName(std::string(SHARDC_HARDWARE_DIR) + "/" + name + ".json",
                                       error);
    ASSERT_TRUE(succeeded(byPath)) << error;
    EXPECT_EQ(byPath->name, hw->name);
  }
}

TEST(HardwareDesc, H100Numbers) {
  HardwareDesc hw = loadShipped("h100-8x-nvlink-ib");
  EXPECT_EQ(hw.devicesPerNode, 8);
  EXPECT_DOUBLE_EQ(hw.memoryBytes, 80.0 * 1024 * 1024 * 1024);
  ASSERT_EQ(hw.links.size(), 2u);
  EXPECT_EQ(hw.links[0].name, "nvlink");
  EXPECT_EQ(hw.links[1].name, "infiniband");
  EXPECT_DOUBLE_EQ(hw.links[1].bandwidth, 5e10);
  EXPECT_DOUBLE_EQ(hw.peakFlops.at("bf16"), 9.89e14);
  EXPECT_DOUBLE_EQ(hw.peakFlops.at("f32"), 6.7e13);
}

TEST(HardwareDesc, UnknownNameListsKnownOnes) {
  std::string error;
  EXPECT_TRUE(failed(HardwareDesc::byName("no-such-box", error)));
  EXPECT_NE(error.find("no-such-box"), std::string::npos) << error;
  EXPECT_NE(error.find("cpu-mpi"), std::string::npos) << error;
  EXPECT_TRUE(failed(HardwareDesc::byName("/nonexistent/box.json", error)));
  EXPECT_NE(error.find("/nonexistent/box.json"), std::string::npos) << error;
}

TEST(HardwareDesc, ParsesAndIgnoresUnknownFields) {
  std::string error;
  auto hw = HardwareDesc::parse(kGoodJson, error);
  ASSERT_TRUE(succeeded(hw)) << error;
  EXPECT_EQ(hw->name, "test box");
  EXPECT_EQ(hw->devicesPerNode, 4);
  EXPECT_DOUBLE_EQ(hw->memoryBytes, 1000);
  EXPECT_DOUBLE_EQ(hw->peakFlops.at("bf16"), 4e12);
  ASSERT_EQ(hw->links.size(), 2u);
  EXPECT_EQ(hw->links[1].name, "slow");
  EXPECT_DOUBLE_EQ(hw->links[1].latency, 1e-5);
}

TEST(HardwareDesc, MalformedJson) {
  std::string error = parseError(R"({"name": "x", "devices_per_node": 8,)");
  EXPECT_NE(error.find("JSON"), std::string::npos) << error;
  error = parseError("[1, 2]");
  EXPECT_NE(error.find("expected object"), std::string::npos) << error;
}

TEST(HardwareDesc, MissingFieldIsNamed) {
  std::string error = parseError(replaceOnce(kGoodJson, R"("devices_per_node": 4,)", ""));
  EXPECT_NE(error.find("devices_per_node"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;

  error = parseError(replaceOnce(kGoodJson, R"("memory_bytes": 1000,)", ""));
  EXPECT_NE(error.find("memory_bytes"), std::string::npos) << error;

  error = parseError(replaceOnce(kGoodJson, R"("latency": 1e-5)", R"("lat": 1e-5)"));
  EXPECT_NE(error.find("links[1].latency"), std::string::npos) << error;

  error = parseError(replaceOnce(kGoodJson, R"("f32": 1e12, )", ""));
  EXPECT_NE(error.find("f32"), std::string::npos) << error;
}

TEST(HardwareDesc, BadValuesAreNamed) {
  std::string error = parseError(replaceOnce(kGoodJson, R"("devices_per_node": 4)",
                                             R"("devices_per_node": 0)"));
  EXPECT_NE(error.find("devices_per_node"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("devices_per_node": 4)",
                                 R"("devices_per_node": "4")"));
  EXPECT_NE(error.find("devices_per_node"), std::string::npos) << error;
  EXPECT_NE(error.find("integer"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("memory_bytes": 1000)", R"("memory_bytes": 0)"));
  EXPECT_NE(error.find("memory_bytes"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("bandwidth": 1e11)", R"("bandwidth": 0)"));
  EXPECT_NE(error.find("links[0].bandwidth"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("latency": 1e-6)", R"("latency": -1)"));
  EXPECT_NE(error.find("links[0].latency"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("f32": 1e12)", R"("f32": 0)"));
  EXPECT_NE(error.find("f32"), std::string::npos) << error;
  error = parseError(replaceOnce(kGoodJson, R"("bf16": 4e12)", R"("bf16": "fast")"));
  EXPECT_NE(error.find("bf16"), std::string::npos) << error;

  std::string noLinks = kGoodJson;
  size_t begin = noLinks.find('[', noLinks.find("\"links\""));
  size_t end = noLinks.rfind(']');
  noLinks.replace(begin, end - begin + 1, "[]");
  error = parseError(noLinks);
  EXPECT_NE(error.find("links"), std::string::npos) << error;
}

TEST(HardwareDesc, LoadNamesTheFile) {
  std::string path = testing::TempDir() + "shardc_cost_model_bad_hw.json";
  {
    std::ofstream out(path);
    out << replaceOnce(kGoodJson, R"("memory_bytes": 1000,)", "");
  }
  std::string error;
  EXPECT_TRUE(failed(HardwareDesc::load(path, error)));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("memory_bytes"), std::string::npos) << error;
  std::remove(path.c_str());
}

//===----------------------------------------------------------------------===//
// CostModel
//===----------------------------------------------------------------------===//

TEST(CostModel, LinkChoiceOnH100) {
  CostModel cm(mesh("dp=2,tp=8"), loadShipped("h100-8x-nvlink-ib"));
  EXPECT_EQ(cm.linkFor(axes({kTp})).name, "nvlink");
  EXPECT_EQ(cm.linkFor(axes({kDp})).name, "infiniband");
  EXPECT_EQ(cm.linkFor(axes({kDp, kTp})).name, "infiniband");
  EXPECT_EQ(cm.linkFor({}).name, "nvlink");
  // dp=4,tp=2: a dp group {0,2,4,6} fits in one node of 8.
  CostModel small(mesh("dp=4,tp=2"), loadShipped("h100-8x-nvlink-ib"));
  EXPECT_EQ(small.linkFor(axes({kDp})).name, "nvlink");
  EXPECT_EQ(small.linkFor(axes({kDp, kTp})).name, "nvlink");
  // tp=16 spans two nodes.
  CostModel wide(mesh("tp=16"), loadShipped("h100-8x-nvlink-ib"));
  EXPECT_EQ(wide.linkFor(axes({0})).name, "infiniband");
}

TEST(CostModel, AllReduceOverTpUsesNvlinkOverDpUsesInfiniband) {
  HardwareDesc hw = loadShipped("h100-8x-nvlink-ib");
  const Link nvlink = hw.links[0], ib = hw.links[1];
  CostModel cm(mesh("dp=2,tp=8"), hw);
  const double g = 1024.0 * 1024.0 * 1024.0; // 1 GiB gradient

  auto tpSteps = planReshard(sh({{}, {}}, {kTp}), sh({{}, {}}));
  ASSERT_EQ(tpSteps.size(), 1u);
  double tpBytes = 2.0 * 7.0 / 8.0 * g;
  EXPECT_DOUBLE_EQ(cm.stepBytes(tpSteps[0], g), tpBytes);
  EXPECT_DOUBLE_EQ(cm.stepTime(tpSteps[0], g), tpBytes / nvlink.bandwidth + 14 * nvlink.latency);
  EXPECT_NEAR(cm.stepTime(tpSteps[0], g), tpBytes / 3.6e11 + 14 * 5e-6, 1e-12);

  auto dpSteps = planReshard(sh({{}, {}}, {kDp}), sh({{}, {}}));
  ASSERT_EQ(dpSteps.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(dpSteps[0], g), g);
  EXPECT_DOUBLE_EQ(cm.stepTime(dpSteps[0], g), g / ib.bandwidth + 2 * ib.latency);
  EXPECT_GT(cm.stepTime(dpSteps[0], g), cm.stepTime(tpSteps[0], g));
}

TEST(CostModel, AllReduceAcrossNodesTakesTheTreeWhereFaster) {
  HardwareDesc hw = loadShipped("h100-8x-nvlink-ib");
  const Link nvlink = hw.links[0], ib = hw.links[1];
  // 512 devices: dp=64 over 64 nodes (one rank per node), tp=8 inside one.
  CostModel cm(mesh("dp=64,tp=8"), hw);
  auto dp = planReshard(sh({}, {kDp}), sh({}));
  ASSERT_EQ(dp.size(), 1u);
  // A scalar: the tree's 2 * log2(64) latencies, not the ring's 2 * 63.
  const double s = 4.0;
  double ringBytes = 2.0 * 63.0 / 64.0 * s;
  double tree = (2.0 * s / 0.92 - ringBytes) / ib.bandwidth + 12 * ib.latency;
  EXPECT_DOUBLE_EQ(cm.allReduceOverhead(axes({kDp}), s), tree);
  EXPECT_DOUBLE_EQ(cm.stepTime(dp[0], s), ringBytes / ib.bandwidth + tree);
  EXPECT_LT(cm.stepTime(dp[0], s), 126 * ib.latency);
  // The bytes moved stay the ring's (static figures).
  EXPECT_DOUBLE_EQ(cm.stepBytes(dp[0], s), ringBytes);
  // 8 GiB: the ring's bandwidth wins over the tree's latency.
  const double g = 8.0 * (1 << 30);
  EXPECT_DOUBLE_EQ(cm.allReduceOverhead(axes({kDp}), g), 126 * ib.latency);
  // Inside a node: always the ring.
  EXPECT_DOUBLE_EQ(cm.allReduceOverhead(axes({kTp}), s), 14 * nvlink.latency);
  // dp x tp over 64 nodes of 8: log2(64) between nodes + a chain of 7 inside.
  EXPECT_DOUBLE_EQ(cm.allReduceOverhead(axes({kDp, kTp}), s),
                   (2.0 * s / 0.92 - 2.0 * 511.0 / 512.0 * s) / ib.bandwidth +
                       2 * (6 + 7) * ib.latency);
}

TEST(CostModel, StepBytesUseTheLocalSize) {
  CostModel cm(mesh("dp=2,tp=8"), loadShipped("h100-8x-nvlink-ib"));
  const double g = 1600.0;
  // Partial axes do not shrink the local size; split axes do.
  auto ar = planReshard(sh({{kDp}, {}}, {kTp}), sh({{kDp}, {}}));
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(ar[0], g), 2.0 * 7.0 / 8.0 * (g / 2));
  // Reduce-scatter of the full local input.
  auto rs = planReshard(sh({{}, {}}, {kTp}), sh({{kTp}, {}}));
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(rs[0], g), 7.0 / 8.0 * g);
  EXPECT_DOUBLE_EQ(cm.stepTime(rs[0], g),
                   7.0 / 8.0 * g / cm.hardware().links[0].bandwidth +
                       7 * cm.hardware().links[0].latency);
  // All-gather: gathered bytes = local x n.
  auto ag = planReshard(sh({{kDp, kTp}, {}}), sh({{kDp}, {}}));
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(ag[0], g), 7.0 / 8.0 * (g / 2));
  auto agDp = planReshard(sh({{kDp}, {}}), sh({{}, {}}));
  ASSERT_EQ(agDp.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(agDp[0], g), 0.5 * g);
  EXPECT_DOUBLE_EQ(cm.stepTime(agDp[0], g),
                   0.5 * g / cm.hardware().links[1].bandwidth + cm.hardware().links[1].latency);
  // All-to-all: its local input.
  CollectiveStep a2a{CollectiveStep::AllToAll, axes({kTp}), 0, 1, sh({{}, {kTp}})};
  EXPECT_DOUBLE_EQ(cm.stepBytes(a2a, g), 7.0 / 8.0 * (g / 8));
  // Slices are free.
  auto slice = planReshard(sh({{}, {}}), sh({{}, {kTp}}));
  ASSERT_EQ(slice.size(), 1u);
  EXPECT_DOUBLE_EQ(cm.stepBytes(slice[0], g), 0.0);
  EXPECT_DOUBLE_EQ(cm.stepTime(slice[0], g), 0.0);
}

TEST(CostModel, ReshardTimeSumsThePlan) {
  CostModel cm(mesh("dp=2,tp=8"), loadShipped("h100-8x-nvlink-ib"));
  const double g = 1 << 30;
  TensorSharding from = sh({{}, {}}, {kDp, kTp}), to = sh({{kTp}, {}});
  auto steps = planReshard(from, to);
  ASSERT_EQ(steps.size(), 2u);
  const Link &nv = cm.hardware().links[0], &ib = cm.hardware().links[1];
  double rs = 7.0 / 8.0 * g / nv.bandwidth + 7 * nv.latency;
  double ar = (g / 8) / ib.bandwidth + 2 * ib.latency; // 2(2-1)/2 of the g/8 shard
  EXPECT_DOUBLE_EQ(cm.reshardTime(from, to, g), rs + ar);
  // MiCS beats all-reducing everything then slicing.
  double flat = 2.0 * 15.0 / 16.0 * g / ib.bandwidth + 30 * ib.latency;
  EXPECT_LT(cm.reshardTime(from, to, g), flat);
  EXPECT_DOUBLE_EQ(cm.reshardTime(to, to, g), 0.0);
}

TEST(CostModel, ComputeTimeByElementType) {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  CostModel cm(mesh("dp=2,tp=8"), loadShipped("h100-8x-nvlink-ib"));
  const double flops = 1e15;
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, b.getF32Type()), flops / 6.7e13);
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, b.getBF16Type()), flops / 9.89e14);
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, b.getF16Type()), flops / 9.89e14);
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, b.getF64Type()), flops / 6.7e13);
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, b.getI32Type()), flops / 6.7e13);
  EXPECT_DOUBLE_EQ(cm.computeTime(flops, mlir::Type()), flops / 6.7e13);
  // No bf16 entry on the CPU: falls back to f32.
  CostModel cpu(mesh("dp=2"), loadShipped("cpu-mpi"));
  EXPECT_DOUBLE_EQ(cpu.computeTime(flops, b.getBF16Type()),
                   flops / cpu.hardware().peakFlops.at("f32"));
}

TEST(CostModel, CpuMpiLinks) {
  HardwareDesc hw = loadShipped("cpu-mpi");
  EXPECT_EQ(hw.devicesPerNode, 2);
  CostModel one(mesh("dp=2"), hw);
  EXPECT_EQ(one.linkFor(axes({0})).name, hw.links[0].name);
  CostModel two(mesh("dp=2,tp=2"), hw);
  EXPECT_EQ(two.linkFor(axes({kTp})).name, hw.links[0].name);
  EXPECT_EQ(two.linkFor(axes({kDp})).name, hw.links[1].name);
}

TEST(CostModel, SingleLinkIsUsedEverywhere) {
  std::string error;
  std::string json = kGoodJson;
  size_t cut = json.find(",\n    {\"name\": \"slow\"");
  ASSERT_NE(cut, std::string::npos);
  json.erase(cut, json.find('}', cut) + 1 - cut);
  auto hw = HardwareDesc::parse(json, error);
  ASSERT_TRUE(succeeded(hw)) << error << "\n" << json;
  ASSERT_EQ(hw->links.size(), 1u);
  CostModel cm(mesh("dp=4,tp=4"), *hw);
  EXPECT_EQ(cm.linkFor(axes({kDp})).name, "fast");
  EXPECT_EQ(cm.linkFor(axes({kTp})).name, "fast");
}

} // namespace
