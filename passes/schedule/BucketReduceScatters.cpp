//===- BucketReduceScatters.cpp - fewer, larger ZeRO gradient reductions --===//
//
// ZeRO reduce-scatters every gradient on its own: hundreds of small
// collectives, each paying its ring's latency (GPT-2 1.5B under ZeRO-1 on
// 64 nodes: ~600 per step, (64 - 1) hops each). DeepSpeed and Megatron's
// distributed optimizer reduce-scatter buckets of gradients instead. A
// reduce-scatter over n ranks hands rank r the r-th of n equal blocks of its
// input; where that block is contiguous (the scattered dim is the first
// dim of any size above one), a gradient is [n, size / n] in row-major
// order, and gradients side by side in that shape — concatenated along
// the second dim — scatter as one: rank r receives its block of each, one
// after the other, which a split along the second dim hands back out. Sums
// are elementwise in group order, so the results are bit-identical to the
// separate reductions.
//
// Members: sum reduce-scatters over the same mesh axes, of the same
// element type, on the same pipeline stage, whose results only the
// optimizer reads (AdamW, the gradient norm's sums of squares, through
// widening casts). A bucket is flushed when its inputs reach `bucket-bytes`,
// before any other op reads a member's result, and at the end; the merged
// collective runs where the bucket's last member did, each member first
// moved up to its gradient (issueAfterInput), so buckets fill as the
// backward makes the gradients, not at the optimizer.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/schedule/Buckets.h"
#include "passes/schedule/Schedule.h"
#include "passes/train/StepPhases.h"

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

#include <tuple>

namespace shardc {
#define GEN_PASS_DEF_XFBUCKETREDUCESCATTERS
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::xf;

namespace {

/// Ranks in `rs`'s group: its input's scattered dim over its result's.
int64_t groupSize(shard::ReduceScatterOp rs) {
  return ranksAlong(cast<RankedTensorType>(rs.getInput().getType()),
                    cast<RankedTensorType>(rs.getResult().getType()),
                    rs.getScatterAxis().getSExtValue());
}

} // namespace

/// A bucket member: a sum reduce-scatter of a gradient whose blocks are
/// contiguous, read only by the optimizer.
bool shardc::isBucketableReduceScatter(shard::ReduceScatterOp rs) {
  auto in = dyn_cast<RankedTensorType>(rs.getInput().getType());
  if (!in || !in.hasStaticShape() || rs.getReduction() != shard::ReductionKind::Sum)
    return false;
  if (!contiguousBlocks(in, rs.getScatterAxis().getSExtValue()))
    return false;
  int64_t n = groupSize(rs);
  return n > 1 && in.getNumElements() % n == 0 && feedsOnlyTheOptimizer(rs);
}

namespace {


struct Bucket {
  SmallVector<shard::ReduceScatterOp> members;
  int64_t bytes = 0;
};

struct XfBucketReduceScattersPass
    : shardc::impl::XfBucketReduceScattersBase<XfBucketReduceScattersPass> {
  using XfBucketReduceScattersBase::XfBucketReduceScattersBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-bucket-reduce-scatters");
    if (failed(target))
      return signalPassFailure();
    if (!*target || bucketBytes <= 0 || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    // Each member first moves up to its gradient (the partitioner puts it,
    // and the widening cast before it, by the optimizer): buckets then fill
    // in the order the backward makes the gradients and each reduces where
    // its last member's gradient was made, instead of every gradient held
    // whole until the end of the step (-xf-schedule issues a lone
    // collective early, but cannot move a bucket's concat).
    SmallVector<shard::ReduceScatterOp> members;
    for (auto rs : body.getOps<shard::ReduceScatterOp>())
      if (isBucketableReduceScatter(rs))
        members.push_back(rs);
    for (shard::ReduceScatterOp rs : members)
      issueAfterInput(rs);
    // Open buckets by (axes, element type, stage, group size, grid), in the
    // order they opened (so the end's flushes are in a fixed order).
    using Key = std::tuple<SmallVector<int16_t>, Type, int64_t, int64_t, StringRef>;
    SmallVector<std::pair<Key, Bucket>> open;
    auto keyOf = [&](shard::ReduceScatterOp rs) {
      auto stage = rs->getAttrOfType<IntegerAttr>(XfDialect::kStageAttrName);
      return Key{SmallVector<int16_t>(rs.getGridAxes()),
                 cast<RankedTensorType>(rs.getInput().getType()).getElementType(),
                 stage ? stage.getInt() : -1, groupSize(rs), rs.getGrid()};
    };
    auto bucketOf = [&](const Key &key) -> Bucket & {
      for (auto &[k, b] : open)
        if (k == key)
          return b;
      open.push_back({key, Bucket{}});
      return open.back().second;
    };
    auto close = [&](const Key &key, Operation *before) {
      for (auto *it = open.begin(); it != open.end(); ++it)
        if (it->first == key) {
          flush(it->second, before);
          open.erase(it);
          return;
        }
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      // A member's result read by anything but a later member's bucket:
      // its bucket reduces first.
      for (Value v : op.getOperands())
        if (auto rs = v.getDefiningOp<shard::ReduceScatterOp>())
          for (auto &[k, b] : open)
            if (llvm::is_contained(b.members, rs)) {
              Key key = k;
              close(key, &op);
              break;
            }
      auto rs = dyn_cast<shard::ReduceScatterOp>(&op);
      if (!rs || !isBucketableReduceScatter(rs))
        continue;
      Key key = keyOf(rs);
      Bucket &b = bucketOf(key);
      b.members.push_back(rs);
      b.bytes += tensorValueBytes(rs.getInput());
      if (b.bytes >= bucketBytes)
        close(key, rs->getNextNode());
    }
    while (!open.empty()) {
      Key key = open.front().first;
      close(key, body.getTerminator());
    }
  }

  /// One reduce-scatter of the members' gradients side by side, inserted
  /// before `before` (after every member).
  void flush(Bucket &b, Operation *before) {
    if (b.members.size() < 2) {
      b.members.clear();
      return;
    }
    shard::ReduceScatterOp first = b.members.front();
    OpBuilder builder(before);
    Location loc = b.members.back().getLoc();
    const int64_t n = groupSize(first);
    Type elem = cast<RankedTensorType>(first.getInput().getType()).getElementType();
    Attribute stage = b.members.back()->getAttr(XfDialect::kStageAttrName);
    auto staged = [&](Operation *op) {
      if (stage)
        op->setAttr(XfDialect::kStageAttrName, stage);
      return op;
    };
    SmallVector<Value> rows;
    SmallVector<Type> pieces;
    int64_t total = 0;
    for (shard::ReduceScatterOp m : b.members) {
      int64_t block = cast<RankedTensorType>(m.getInput().getType()).getNumElements() / n;
      total += block;
      rows.push_back(staged(ReshapeOp::create(builder, loc, RankedTensorType::get({n, block}, elem),
                                              m.getInput()))
                         ->getResult(0));
      pieces.push_back(RankedTensorType::get({1, block}, elem));
    }
    Value side = staged(ConcatOp::create(builder, loc, RankedTensorType::get({n, total}, elem),
                                         rows, builder.getI64IntegerAttr(1)))
                     ->getResult(0);
    Value reduced =
        staged(shard::ReduceScatterOp::create(builder, loc, RankedTensorType::get({1, total}, elem),
                                              first.getGrid(), first.getGridAxes(), side,
                                              shard::ReductionKind::Sum, APInt(64, 0)))
            ->getResult(0);
    auto split = cast<SplitOp>(
        staged(SplitOp::create(builder, loc, pieces, reduced, builder.getI64IntegerAttr(1))));
    for (auto [m, piece] : llvm::zip(b.members, split.getResults())) {
      Value shard = staged(ReshapeOp::create(builder, loc, m.getResult().getType(), piece))
                        ->getResult(0);
      m.getResult().replaceAllUsesWith(shard);
      m.erase();
    }
    b.members.clear();
  }
};

} // namespace
