//===- ScheduleCollectives.cpp - overlap communication with compute -------===//
//
// Every rt.collective becomes an rt.collective_start / rt.wait pair (and
// the rt.copy_start / rt.wait pairs of activation offload are moved alike); the
// start moves up past every op it does not conflict with (issued as soon as
// its input is written and its output free), the wait moves down past every
// op that does not touch its buffers (waited on just before the first op
// that needs them). What lies between runs while the collective is in
// flight. Conflicts are byte ranges of the planned arenas, so the memory plan
// stays valid: a parameter all-gather rises up to the last use of what last
// occupied its output bytes (the prefetch the plan allows).
//
//===----------------------------------------------------------------------===//

#include "passes/Debug.h"
#include "passes/Passes.h"
#include "passes/schedule/BufferAccess.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "rt-schedule-collectives"

namespace shardc {
#define GEN_PASS_DEF_RTSCHEDULECOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::schedule;

namespace {

struct RtScheduleCollectivesPass
    : shardc::impl::RtScheduleCollectivesBase<RtScheduleCollectivesPass> {
  using RtScheduleCollectivesBase::RtScheduleCollectivesBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().hasOneBlock())
      schedule(func.getBody().front());
  }

  void schedule(Block &block) {
    // Views are pure: all at the top, so that nothing waits on a view.
    SmallVector<rt_dialect::ViewOp> views;
    for (auto v : block.getOps<rt_dialect::ViewOp>())
      views.push_back(v);
    for (auto v : llvm::reverse(views))
      v->moveBefore(&block, block.begin());

    // Starts and waits to move: every collective's, and the copies lowering
    // already made asynchronous (activation offload's rt.copy_start).
    SmallVector<Operation *> starts, waits;
    for (auto c : llvm::make_early_inc_range(block.getOps<rt_dialect::CollectiveOp>())) {
      OpBuilder b(c);
      auto start = rt_dialect::CollectiveStartOp::create(
          b, c.getLoc(), rt_dialect::EventType::get(c.getContext()), c.getKindAttr(),
          c.getAxesAttr(), c.getInput(), c.getOutput(), c.getScratch(), c.getAttrsAttr());
      if (Attribute stage = c->getAttr(memory::kRtStageAttr)) // a pipelined step's
        start->setAttr(memory::kRtStageAttr, stage);
      auto wait = rt_dialect::WaitOp::create(b, c.getLoc(), start.getEvent());
      starts.push_back(start);
      waits.push_back(wait);
      c.erase();
    }
    for (auto copy : block.getOps<rt_dialect::CopyStartOp>()) {
      starts.push_back(copy);
      waits.push_back(*copy.getEvent().getUsers().begin());
    }
    if (!overlap)
      return;
    int64_t movedUp = 0, movedDown = 0;
    for (Operation *start : starts) {
      Access mine = accessOf(start);
      while (Operation *prev = start->getPrevNode()) {
        if (isa<rt_dialect::ViewOp>(prev) || mine.conflicts(accessOf(prev)))
          break;
        start->moveBefore(prev);
        ++movedUp;
      }
    }
    for (Operation *wait : llvm::reverse(waits)) {
      Access mine = accessOf(wait);
      while (Operation *next = wait->getNextNode()) {
        if (mine.conflicts(accessOf(next)))
          break;
        wait->moveAfter(next);
        ++movedDown;
      }
    }
    SHARDC_DEBUG(DBGS() << starts.size() << " collectives: starts moved up " << movedUp
                            << " ops, waits down " << movedDown << "\n");
  }
};

} // namespace
