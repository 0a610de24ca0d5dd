//===- OffloadActivations.cpp - kept activations to host memory -----------===//
//
// MiCS's prefetched activation offload on the rank-local training step:
// every activation the backward reads (a forward value that depends on the
// step's data inputs: not a parameter, nor a cast or gather of one) is
// copied to the host arena during the next layer's forward and copied back
// one layer ahead of the backward that reads it:
//
//   %a = ...                      // forward (the copy starts here)
//   %h = xf.offload %a            // at the end of the next layer's forward
//   ...                           // %a's workspace is free from here
//   %r = xf.reload %h             // when the backward of the layer above starts
//   ... = xf.gelu_grad %dy, %r    // the backward reads the reload
//
// Values are grouped by (micro-batch, layer) of their defining op (the
// layers of -xf-recompute, passes/train/StepPhases.h; the embedding before
// the layers is a layer of its own, the head after them is never offloaded),
// and a micro-batch's layers are ordered by when their own backward starts.
// A layer's reloads are placed where the backward of the layer above starts:
// the copy runs while that layer's backward computes. The layer a
// micro-batch's backward needs first (its last) is not offloaded: its
// backward follows at once. With -xf-recompute only what
// recomputation keeps (the layer inputs) is left to offload.
//
// -xf-plan-memory places xf.offload results in the host arena and lowering
// makes both ops asynchronous copies (rt.copy_start / rt.wait), which
// -rt-schedule-collectives moves apart as far as the planned buffers allow.
// The values are unchanged: the step computes bit-identical results.
//
//===----------------------------------------------------------------------===//

#include "passes/Debug.h"
#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/train/StepPhases.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"

#include <limits>
#include <map>
#include <tuple>

#define DEBUG_TYPE "xf-offload-activations"

namespace shardc {
#define GEN_PASS_DEF_XFOFFLOADACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;

namespace {

/// (pipeline stage, micro-batch, layer); stage -1 without a pipeline.
using Key = std::tuple<int64_t, int64_t, int64_t>;

struct Candidate {
  Value value;
  unsigned lastForward;   ///< position of the last forward op reading it (or defining it)
  unsigned firstBackward; ///< position of the first backward op reading it
  /// Read in the forward only by its own layer (not the layer's output,
  /// which the next layer's backward reads first).
  bool internal;
};

struct XfOffloadActivationsPass
    : shardc::impl::XfOffloadActivationsBase<XfOffloadActivationsPass> {
  using XfOffloadActivationsBase::XfOffloadActivationsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-offload-activations",
                                                      "run it on a training step");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    if (minBytes < 0) {
      func.emitError() << "xf-offload-activations: min-bytes must be non-negative, got "
                       << static_cast<int64_t>(minBytes);
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError() << "xf-offload-activations: @" << func.getName()
                       << " is not a training step of one block";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    if (!body.getOps<xf::OffloadOp>().empty()) {
      func.emitError() << "xf-offload-activations: @" << func.getName()
                       << " already offloads activations";
      return signalPassFailure();
    }
    StepPhases phases = classifyStep(func);
    if (phases.backward.empty()) {
      func.emitError() << "xf-offload-activations: @" << func.getName()
                       << " has no backward (no loss gradient): nothing to offload for";
      return signalPassFailure();
    }
    std::vector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);

    // Activations: values that depend on a data input.
    llvm::DenseSet<Value> activation;
    for (BlockArgument arg : body.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), xf::XfDialect::kInputAttrName))
        activation.insert(arg);
    for (Operation *op : ops)
      if (llvm::any_of(op->getOperands(), [&](Value v) { return activation.contains(v); }))
        activation.insert(op->result_begin(), op->result_end());

    // The group of a forward op: (micro-batch, layer); the ops of no layer
    // are the embedding before the layers (layer -1) or the head after them
    // (final norm, loss: after the last layer).
    constexpr int64_t kHead = std::numeric_limits<int64_t>::max();
    llvm::DenseMap<int64_t, unsigned> firstLayerOp; // per micro-batch
    for (Operation *op : ops)
      if (!phases.isBackward(op) && phases.layer.lookup(op) >= 0)
        firstLayerOp.try_emplace(phases.microBatch.lookup(op), phases.position.lookup(op));
    // Keys are (pipeline stage, micro-batch, layer): in a pipelined step each
    // stage's ranks run their own ops in block order, so offload and reload
    // points are taken among the ops of the value's stage.
    auto keyOf = [&](Operation *op) -> Key {
      int64_t mb = phases.microBatch.lookup(op), l = phases.layer.lookup(op);
      auto stageAttr = op->getAttrOfType<IntegerAttr>(xf::XfDialect::kStageAttrName);
      int64_t stage = stageAttr ? stageAttr.getInt() : -1;
      if (l < 0) {
        auto first = firstLayerOp.find(mb);
        if (first != firstLayerOp.end() && phases.position.lookup(op) > first->second)
          l = kHead;
      }
      return {stage, mb, l};
    };

    // Candidates, grouped by (micro-batch, layer) of their defining op.
    std::map<Key, SmallVector<Candidate>> groups;
    for (Operation *op : ops) {
      if (phases.isBackward(op))
        continue;
      for (Value r : op->getResults()) {
        auto type = dyn_cast<RankedTensorType>(r.getType());
        if (!activation.contains(r) || !type || !type.hasStaticShape() ||
            memory::byteSize(type) < minBytes || memory::byteSize(type) == 0)
          continue;
        Key key = keyOf(op);
        std::get<0>(key) = xf::stageOf(r); // a transfer's result: its receiving stage
        if (std::get<2>(key) == kHead)
          continue; // the head's backward comes first: nothing to gain
        Candidate c{r, phases.position.lookup(op), ~0u, true};
        for (Operation *user : r.getUsers()) {
          unsigned p = phases.position.lookup(user);
          if (phases.isBackward(user)) {
            c.firstBackward = std::min(c.firstBackward, p);
          } else {
            c.lastForward = std::max(c.lastForward, p);
            c.internal &= keyOf(user) == key;
          }
        }
        // Read by the backward, and only after its last forward read.
        if (c.firstBackward == ~0u || c.lastForward >= c.firstBackward)
          continue;
        groups[key].push_back(c);
      }
    }

    // Where each (micro-batch, layer)'s forward ends.
    std::map<Key, unsigned> forwardEnd;
    for (Operation *op : ops)
      if (!phases.isBackward(op)) {
        unsigned &end = forwardEnd[keyOf(op)];
        end = std::max(end, phases.position.lookup(op));
      }
    // A value is offloaded at the end of the next layer's forward: its copy
    // (started right after its definition) has that layer to run in, as the
    // copy back has the backward of the layer above.
    auto offloadPoint = [&](const Key &key, const Candidate &c) {
      auto next = forwardEnd.upper_bound(key);
      if (next == forwardEnd.end() || std::get<0>(next->first) != std::get<0>(key) ||
          std::get<1>(next->first) != std::get<1>(key))
        return c.lastForward;
      return std::max(c.lastForward, next->second);
    };

    // Per micro-batch, the layers in the order the backward needs them: by
    // when the layer's own backward starts (its first backward read of a
    // value only the layer reads; a layer's output is read first by the
    // backward of the layer above).
    struct Group {
      Key key;
      unsigned start = ~0u;
      SmallVector<Candidate> *members;
    };
    std::vector<Group> order;
    for (auto &[key, members] : groups) {
      Group g{key, ~0u, &members};
      unsigned any = ~0u;
      for (const Candidate &c : members) {
        any = std::min(any, c.firstBackward);
        if (c.internal)
          g.start = std::min(g.start, c.firstBackward);
      }
      if (g.start == ~0u)
        g.start = any;
      order.push_back(g);
    }
    llvm::sort(order, [](const Group &a, const Group &b) {
      return std::make_tuple(std::get<0>(a.key), std::get<1>(a.key), a.start) <
             std::make_tuple(std::get<0>(b.key), std::get<1>(b.key), b.start);
    });

    OpBuilder b(func.getContext());
    int64_t values = 0, bytes = 0;
    for (size_t i = 1; i < order.size(); ++i) {
      // The layer the backward of a micro-batch needs first (its last; in a
      // pipeline, the stage's last) stays.
      if (std::get<0>(order[i - 1].key) != std::get<0>(order[i].key) ||
          std::get<1>(order[i - 1].key) != std::get<1>(order[i].key))
        continue;
      // Prefetched when the backward of the layer above starts.
      unsigned reloadAt = order[i - 1].start;
      for (const Candidate &c : *order[i].members) {
        // Back before its first backward read at the latest.
        unsigned backAt = std::min(reloadAt, c.firstBackward);
        // Nothing to gain where the copy back would start before the value
        // is offloaded (the backward that needs it first follows its forward).
        if (backAt <= c.lastForward)
          continue;
        unsigned offloadAt = offloadPoint(order[i].key, c);
        if (offloadAt >= backAt)
          offloadAt = c.lastForward;
        Value v = c.value;
        // A pipelined step: the copies run on the stage holding the value
        // (a transfer's result is held by its receiving stage).
        int64_t stage = xf::stageOf(v);
        b.setInsertionPointAfter(ops[offloadAt]);
        auto off = xf::OffloadOp::create(b, v.getLoc(), v.getType(), v);
        b.setInsertionPoint(ops[backAt]);
        auto back = xf::ReloadOp::create(b, v.getLoc(), v.getType(), off.getResult());
        if (stage >= 0) {
          off->setAttr(xf::XfDialect::kStageAttrName, b.getI64IntegerAttr(stage));
          back->setAttr(xf::XfDialect::kStageAttrName, b.getI64IntegerAttr(stage));
        }
        v.replaceUsesWithIf(back.getResult(),
                            [&](OpOperand &use) { return phases.isBackward(use.getOwner()); });
        ++values;
        bytes += memory::byteSize(cast<ShapedType>(v.getType()));
        SHARDC_DEBUG(DBGS() << "stage " << std::get<0>(order[i].key) << " micro-batch "
                            << std::get<1>(order[i].key) << " layer "
                            << std::get<2>(order[i].key) << ": offload " << v.getType()
                            << " after op " << offloadAt << ", reload before op "
                            << backAt << " (first backward read " << c.firstBackward
                            << ")\n");
      }
    }
    offloadedValues += values;
    offloadedBytes += bytes;
  }
};

} // namespace
