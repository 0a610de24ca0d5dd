//===- Schedule.cpp - collectives as early as their inputs allow ----------===//
//
// The partitioner puts each collective right before the op that needs its
// result, so a step waits on every gradient reduction at the optimizer and
// on every parameter gather at its layer. Reordering the tensor-level step
// issues them early instead (before memory planning, so the plan sees the
// new lifetimes):
//  - a collective of a computed value moves right after that value's
//    definition (gradient reductions start as soon as each gradient exists;
//    a widening cast or reshape only the collective reads moves up with it,
//    issueAfterInput),
//    except a reshard of a forward value that only the backward reads (the
//    row-parallel dW's input moved to its layout, a sequence-parallel
//    re-gather): it stays by its first reader, as Megatron-LM re-gathers in
//    the backward, rather than hold its result from the forward across the
//    activation peak;
//  - a collective of a step argument (a ZeRO-3/FSDP parameter gather, or a
//    ZeRO-1/2 gather of the bf16 copy cast from its master) moves
//    up to the first use of the previous such gather: one layer of prefetch,
//    so the gathered parameters of at most two layers are alive at once;
//  - a slice (local) that is its operand's only reader moves right after
//    the operand's definition, so the whole value dies there.
// -rt-schedule-collectives then splits each into start/wait at the buffer
// level.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/schedule/Schedule.h"
#include "passes/train/StepPhases.h"

#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "xf-schedule"

namespace shardc {
#define GEN_PASS_DEF_XFSCHEDULE
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;

void shardc::issueAfterInput(Operation *op) {
  Block *block = op->getBlock();
  Operation *base = op->getOperand(0).getDefiningOp();
  if (!base || base->getBlock() != block)
    return;
  // Climb single-use casts and reshapes to what they are computed from.
  SmallVector<Operation *> chain;
  while (isa<xf::CastOp, xf::ReshapeOp>(base) && base->getResult(0).hasOneUse()) {
    Operation *up = base->getOperand(0).getDefiningOp();
    if (!up || up->getBlock() != block)
      break;
    chain.push_back(base);
    base = up;
  }
  for (Operation *c : llvm::reverse(chain)) {
    c->moveAfter(base);
    base = c;
  }
  op->moveAfter(base);
}

namespace {

/// Collectives that communicate (all_slice is local).
bool communicates(Operation *op) {
  return isa<shard::AllGatherOp, shard::AllReduceOp, shard::ReduceScatterOp,
             shard::AllToAllOp>(op);
}

/// The first op in the block that uses a result of `op`.
Operation *firstUser(Operation *op) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *u = op->getBlock()->findAncestorOpInBlock(*user);
    if (u && (!first || u->isBeforeInBlock(first)))
      first = u;
  }
  return first;
}

struct XfSchedulePass : shardc::impl::XfScheduleBase<XfSchedulePass> {
  using XfScheduleBase::XfScheduleBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-schedule");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (communicates(&op))
        collectives.push_back(&op);
    StepPhases phases = classifyStep(func);
    Operation *previousGather = nullptr;
    for (Operation *op : collectives) {
      Value input = op->getOperand(0);
      // A weight's bf16 copy made from its master for this gather alone
      // (ZeRO-1/2) prefetches like the argument, the cast moving with it.
      auto made = input.getDefiningOp<xf::CastOp>();
      if (made && (!input.hasOneUse() || !isa<BlockArgument>(made.getX())))
        made = nullptr;
      if (Operation *def = input.getDefiningOp(); def && !made) {
        if (def->getBlock() == &block && !phases.reshardsForBackward(op))
          issueAfterInput(op);
        continue;
      }
      // A step argument: prefetch one gather ahead.
      if (previousGather) {
        Operation *target = firstUser(previousGather);
        if (target && target->isBeforeInBlock(op)) {
          op->moveBefore(target);
          if (made)
            made->moveBefore(op);
        }
      }
      previousGather = op;
    }
    // A slice (local: no communication) that is its operand's only reader
    // moves right after the operand's definition: a gradient made whole on
    // every rank and sliced to its optimizer shard (where propagation
    // computed it whole) is then held as its shard until the update, not
    // whole across the rest of the backward.
    SmallVector<shard::AllSliceOp> slices(block.getOps<shard::AllSliceOp>());
    for (shard::AllSliceOp slice : slices) {
      Operation *def = slice.getInput().getDefiningOp();
      if (def && def->getBlock() == &block && slice.getInput().hasOneUse())
        slice->moveAfter(def);
    }
  }
};

} // namespace
