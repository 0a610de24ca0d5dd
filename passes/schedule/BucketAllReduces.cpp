//===- BucketAllReduces.cpp - fewer, larger gradient reductions -----------===//
//
// Data parallelism all-reduces every gradient on its own: hundreds of small,
// latency-bound collectives. The memory plan puts the reduced gradients one
// after the other in the grads arena, so consecutive all-reduces over the
// same axes write one contiguous range. Each member's input is copied into
// its output place where its all-reduce was, and one in-place all-reduce of
// the whole range runs when the bucket is full or before anything reads a
// member. Sums are elementwise in group order, so the result is bit-identical
// to the separate reductions (PyTorch DDP's buckets, 25 MiB by default).
//
//===----------------------------------------------------------------------===//

#include "passes/Debug.h"
#include "passes/Passes.h"
#include "passes/schedule/BufferAccess.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rt-bucket-all-reduces"

namespace shardc {
#define GEN_PASS_DEF_RTBUCKETALLREDUCES
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::schedule;

namespace {

/// A sum all-reduce into the grads arena: a bucket candidate.
bool isCandidate(rt_dialect::CollectiveOp c) {
  auto reduction = c.getAttrs().getAs<StringAttr>("reduction");
  auto out = rangeOf(c.getOutput());
  return c.getKind() == "shard.all_reduce" && reduction && reduction.getValue() == "sum" &&
         rangeOf(c.getInput()) && out && out->arena == memory::Grads;
}

struct Bucket {
  SmallVector<rt_dialect::CollectiveOp> members;
  schedule::Range range{0, 0, 0};
  Type elementType;
  ArrayRef<int16_t> axes;
  /// The pipeline stage of the members (a pipelined step's `rt.stage`).
  Attribute stage;
};

struct RtBucketAllReducesPass : shardc::impl::RtBucketAllReducesBase<RtBucketAllReducesPass> {
  using RtBucketAllReducesBase::RtBucketAllReducesBase;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    func::FuncOp func = getOperation();
    if (func.getBody().hasOneBlock())
      bucket(func.getBody().front());
  }

  /// Replaces the members by copies into their outputs and one in-place
  /// all-reduce of the range, inserted before `before`.
  void flush(Bucket &b, Operation *before) {
    if (b.members.size() >= 2) {
      OpBuilder builder(before);
      Location loc = b.members.front().getLoc();
      int64_t elementBytes = (b.elementType.getIntOrFloatBitWidth() + 7) / 8;
      auto type = MemRefType::get({(b.range.end - b.range.begin) / elementBytes}, b.elementType);
      Value whole = rt_dialect::ViewOp::create(builder, loc, type, b.range.arena, b.range.begin);
      for (rt_dialect::CollectiveOp c : b.members) {
        OpBuilder at(c);
        auto copy = rt_dialect::CopyOp::create(at, c.getLoc(), c.getInput(), c.getOutput());
        if (b.stage)
          copy->setAttr(memory::kRtStageAttr, b.stage);
      }
      auto reduce = rt_dialect::CollectiveOp::create(builder, loc, "shard.all_reduce",
                                                     builder.getDenseI16ArrayAttr(b.axes), whole,
                                                     whole, /*scratch=*/Value(),
                                                     b.members.front().getAttrsAttr());
      if (b.stage)
        reduce->setAttr(memory::kRtStageAttr, b.stage);
      SHARDC_DEBUG(DBGS() << "bucket of " << b.members.size() << " all-reduces, "
                              << b.range.end - b.range.begin << " bytes\n");
      for (rt_dialect::CollectiveOp c : b.members)
        c.erase();
    }
    b = Bucket();
  }

  void bucket(Block &block) {
    Bucket b;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto c = dyn_cast<rt_dialect::CollectiveOp>(op);
      if (c && isCandidate(c)) {
        schedule::Range out = *rangeOf(c.getOutput());
        Type element = c.getOutput().getType().getElementType();
        // Joins when it continues the range (up to the alignment gap), with
        // the same axes and element type, and the bucket has room.
        bool joins = !b.members.empty() && out.arena == b.range.arena &&
                     out.begin == memory::alignUp(b.range.end) && element == b.elementType &&
                     c.getAxes() == b.axes && out.end - b.range.begin <= bucketBytes &&
                     c->getAttr(memory::kRtStageAttr) == b.stage;
        if (!joins) {
          flush(b, c);
          b.range = out;
          b.elementType = element;
          b.axes = c.getAxes();
          b.stage = c->getAttr(memory::kRtStageAttr);
        }
        b.range.end = out.end;
        b.members.push_back(c);
        continue;
      }
      if (b.members.empty())
        continue;
      // Anything that touches the bucket's range needs it reduced first.
      Access a = accessOf(&op);
      bool touches = !a.known;
      for (const schedule::Range &r : llvm::concat<schedule::Range>(a.reads, a.writes))
        touches |= r.overlaps(b.range);
      if (touches)
        flush(b, &op);
    }
    if (!b.members.empty())
      flush(b, block.getTerminator());
  }
};

} // namespace
