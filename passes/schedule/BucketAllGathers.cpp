//===- BucketAllGathers.cpp - fewer, larger ZeRO parameter gathers --------===//
//
// ZeRO-1/2 gather every updated parameter once per step on its own (the
// whole-step gathers, xf.gather_once): hundreds of small collectives, each
// paying its ring's latency (GPT-2 1.5B under ZeRO-1 on 64 nodes: ~600 per
// step, (R - 1) + (S - 1) hops each over a factored data axis). DeepSpeed
// and Megatron's distributed optimizer gather buckets of parameters instead.
// An all-gather over n ranks concatenates the ranks' blocks along its
// gathered dim; where that dim is the first of any size above one, each
// rank's block is contiguous in the gathered tensor's row-major order, so
// the blocks of several parameters side by side ([1, k] each, concatenated
// along the second dim) gather as one [n, sum k] whose column ranges, split
// back and reshaped, are the parameters gathered. Data movement only: the
// results are bit-identical to the separate gathers.
//
// Members: whole-step all-gathers of step arguments (or of the bf16 copies
// ZeRO-1/2 make from them) over the same mesh
// axes, of one element type, pipeline stage and group size, with
// contiguous blocks. In the order the step first reads them, they fill
// buckets of up to `bucket-bytes` gathered bytes; a bucket's gather runs
// where its first member did (every input is a step argument, or a cast of
// one that moves there with it, so each is ready there), its members'
// readers read its pieces.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/schedule/Buckets.h"

#include "compiler/sharding/Sharding.h"
#include "dialects/xf/XfDialect.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

#include <tuple>

namespace shardc {
#define GEN_PASS_DEF_XFBUCKETALLGATHERS
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::xf;

namespace {

/// Ranks in `ag`'s group: its result's gathered dim over its input's.
int64_t groupSize(shard::AllGatherOp ag) {
  return ranksAlong(cast<RankedTensorType>(ag.getResult().getType()),
                    cast<RankedTensorType>(ag.getInput().getType()),
                    ag.getGatherAxis().getSExtValue());
}

} // namespace

bool shardc::isBucketableAllGather(shard::AllGatherOp ag) {
  auto in = dyn_cast<RankedTensorType>(ag.getInput().getType());
  if (!in || !in.hasStaticShape() || !ag->hasAttr(sharding::kGatherOnceAttr) ||
      !isArgumentLayout(ag.getInput(),
                        [](Operation *def) { return isa<ReshapeOp, ConcatOp, CastOp>(def); }))
    return false;
  return contiguousBlocks(in, ag.getGatherAxis().getSExtValue()) && groupSize(ag) > 1;
}

namespace {

/// A bucket member: a whole-step gather of a step argument itself, or of the
/// bf16 copy made from it (not a bucket already), whose blocks are contiguous.
bool isMember(shard::AllGatherOp ag) {
  return argumentOrCastOf(ag.getInput()) && isBucketableAllGather(ag);
}


struct XfBucketAllGathersPass : shardc::impl::XfBucketAllGathersBase<XfBucketAllGathersPass> {
  using XfBucketAllGathersBase::XfBucketAllGathersBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-bucket-all-gathers");
    if (failed(target))
      return signalPassFailure();
    if (!*target || bucketBytes <= 0 || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    // Members by (axes, element type, stage, group size, grid), in the order
    // the step reads them (each gather sits at its first use).
    using Key = std::tuple<SmallVector<int16_t>, Type, int64_t, int64_t, StringRef>;
    SmallVector<std::pair<Key, SmallVector<shard::AllGatherOp>>> groups;
    for (auto ag : body.getOps<shard::AllGatherOp>()) {
      if (!isMember(ag))
        continue;
      auto stage = ag->getAttrOfType<IntegerAttr>(XfDialect::kStageAttrName);
      Key key{SmallVector<int16_t>(ag.getGridAxes()),
              cast<RankedTensorType>(ag.getInput().getType()).getElementType(),
              stage ? stage.getInt() : -1, groupSize(ag), ag.getGrid()};
      auto it = llvm::find_if(groups, [&](const auto &g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {}});
        it = std::prev(groups.end());
      }
      it->second.push_back(ag);
    }
    for (auto &[key, members] : groups) {
      SmallVector<shard::AllGatherOp> bucket;
      int64_t bytes = 0;
      for (shard::AllGatherOp ag : members) {
        bucket.push_back(ag);
        bytes += tensorValueBytes(ag.getResult());
        if (bytes >= bucketBytes) {
          flush(bucket);
          bytes = 0;
        }
      }
      flush(bucket);
    }
  }

  /// One gather of the members' blocks side by side, where the first member
  /// was.
  void flush(SmallVector<shard::AllGatherOp> &members) {
    if (members.size() < 2) {
      members.clear();
      return;
    }
    shard::AllGatherOp first = members.front();
    OpBuilder builder(first);
    Location loc = first.getLoc();
    const int64_t n = groupSize(first);
    Type elem = cast<RankedTensorType>(first.getInput().getType()).getElementType();
    Attribute stage = first->getAttr(XfDialect::kStageAttrName);
    auto staged = [&](Operation *op) {
      if (stage)
        op->setAttr(XfDialect::kStageAttrName, stage);
      return op;
    };
    SmallVector<Value> blocks;
    SmallVector<Type> pieces;
    int64_t total = 0;
    for (shard::AllGatherOp m : members) {
      // A copy made from its master (an argument) moves up to the bucket.
      if (Operation *made = m.getInput().getDefiningOp(); made && !made->isBeforeInBlock(first))
        made->moveBefore(first);
      int64_t block = cast<RankedTensorType>(m.getInput().getType()).getNumElements();
      total += block;
      blocks.push_back(staged(ReshapeOp::create(builder, loc,
                                                RankedTensorType::get({1, block}, elem),
                                                m.getInput()))
                           ->getResult(0));
      pieces.push_back(RankedTensorType::get({n, block}, elem));
    }
    Value side = staged(ConcatOp::create(builder, loc, RankedTensorType::get({1, total}, elem),
                                         blocks, builder.getI64IntegerAttr(1)))
                     ->getResult(0);
    Operation *gather = staged(shard::AllGatherOp::create(
        builder, loc, RankedTensorType::get({n, total}, elem), first.getGrid(),
        first.getGridAxes(), side, APInt(64, 0)));
    gather->setAttr(sharding::kGatherOnceAttr, builder.getUnitAttr());
    auto split = cast<SplitOp>(staged(
        SplitOp::create(builder, loc, pieces, gather->getResult(0), builder.getI64IntegerAttr(1))));
    // (The builder inserts before the first member: erased last.)
    for (auto [m, piece] : llvm::zip(members, split.getResults()))
      m.getResult().replaceAllUsesWith(
          staged(ReshapeOp::create(builder, loc, m.getResult().getType(), piece))->getResult(0));
    for (shard::AllGatherOp m : members)
      m.erase();
    members.clear();
  }
};

} // namespace
