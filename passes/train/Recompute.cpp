//===- Recompute.cpp - activation recomputation in the training step ------===//
//
// Rewrites a synthesized training step so that the backward reads recomputed
// forward values instead of the stored ones, and the memory planner sees the
// forward values die at their last forward use:
//  - the forward ops are those that do not depend on a loss gradient
//    (cross_entropy_grad / linear_cross_entropy_grad and everything after);
//  - each forward op belongs to a layer (the index in its parameters' names,
//    "transformer.h.3.attn.q_proj.weight" -> 3; an op without parameters
//    inherits the largest layer of its operands; the embedding, the final
//    norm and the loss belong to none) and to a micro-batch (its inputs');
//  - policy "full": for every (micro-batch, layer) whose values the backward
//    reads, the layer's forward is replayed just before the first backward op
//    that reads one of them, from the values that enter the layer (its input
//    on the residual stream, the weights): only layer inputs are kept (a
//    layer's output, the next layer's input, is read as kept, not replayed);
//  - policy "selective": the GEMM and attention outputs are kept (a GEMM's
//    with its epilogue: the bias add and a GELU after it, which
//    -xf-fuse-epilogues computes in the GEMM) and the cheap ops between them
//    (norms, other activations, dropout, residual adds, reshapes, casts) are
//    replayed;
//  - `every=k` recomputes only layers whose index is a multiple of k.
// The replayed ops are the same ops on the same inputs (dropout keeps its key,
// so its mask), so the step computes bit-identical results.
//
//===----------------------------------------------------------------------===//

#include "passes/Debug.h"
#include "passes/Passes.h"
#include "passes/FunctionTarget.h"
#include "passes/train/StepPhases.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <map>

#define DEBUG_TYPE "xf-recompute"

namespace shardc {
#define GEN_PASS_DEF_XFRECOMPUTE
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::xf;

namespace {

struct XfRecomputePass : shardc::impl::XfRecomputeBase<XfRecomputePass> {
  using XfRecomputeBase::XfRecomputeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (policy == "none" && !regather)
      return;
    FailureOr<bool> target =
        shardc::isTargetFunction(func, function, "xf-recompute", "run -xf-autodiff and -xf-adamw first");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    if (policy != "full" && policy != "selective" && policy != "none") {
      func.emitError() << "xf-recompute: policy must be none, selective or full, not '"
                         << policy << "'";
      return signalPassFailure();
    }
    if (every < 1) {
      func.emitError() << "xf-recompute: every must be at least 1, got "
                         << static_cast<int64_t>(every);
      return signalPassFailure();
    }
    // The collectives sharding adds are recomputed like the ops: what the
    // forward gathers, the backward gathers again (-xf-partition).
    func->setAttr(XfDialect::kRegatherAttrName, UnitAttr::get(&getContext()));
    if (!func.getBody().hasOneBlock()) {
      func.emitError() << "xf-recompute: @" << function << " is not a training step of one block"
                       << " (run -xf-autodiff and -xf-adamw first)";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();

    // Forward and backward ops; layer and micro-batch of each forward op.
    StepPhases phases = classifyStep(func);
    const llvm::DenseSet<Operation *> &backward = phases.backward;
    llvm::DenseMap<Operation *, unsigned> &position = phases.position;
    std::map<std::pair<int64_t, int64_t>, SmallVector<Operation *>> groups;
    llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> groupOf;
    for (Operation &op : body.without_terminator()) {
      if (backward.contains(&op))
        continue;
      int64_t l = phases.layer.lookup(&op), mb = phases.microBatch.lookup(&op);
      if (l >= 0 && l % every == 0 && op.getNumResults() > 0) {
        groups[{mb, l}].push_back(&op);
        groupOf[&op] = {mb, l};
      }
    }

    // Which ops of a group are replayed (the others' results are kept).
    // Selective: the GEMM outputs are kept with their epilogue (a bias add
    // of a GEMM's result, and a GELU of that): -xf-fuse-epilogues computes
    // them in the GEMM's epilogue, rounded once under bf16, so replaying
    // them apart would round twice and change the numbers.
    auto isGemm = [](Value v) { return v.getDefiningOp<MatmulOp>() != nullptr; };
    auto isGemmBias = [&](Value v) {
      auto bias = v.getDefiningOp<BiasAddOp>();
      return bias && isGemm(bias->getOperand(0));
    };
    // Regathering without recomputation (policy none, regather): only the
    // reshapes, views of their operand's bytes, are replayed, so that a
    // backward read of a reshaped gathered value (attention's keys and
    // values split by query rows) reads the reshape's operand and gathers
    // it again, instead of the forward's gathered copy being kept.
    auto replayable = [&](Operation *op) {
      if (policy == "none")
        return isa<ReshapeOp>(op);
      if (policy == "full")
        return true;
      if (isa<MatmulOp, AttentionOp, PackedAttentionOp>(op))
        return false;
      if (isa<BiasAddOp>(op) && isGemm(op->getOperand(0)))
        return false;
      return !(isa<GeluOp>(op) && isGemmBias(op->getOperand(0)));
    };

    OpBuilder b(func.getContext());
    int64_t replayed = 0, layers = 0;
    for (auto &[key, ops] : groups) {
      // The group's values the backward reads.
      SmallVector<Value> needed;
      Operation *first = nullptr;
      for (Operation *op : ops) {
        if (!replayable(op))
          continue;
        for (Value r : op->getResults()) {
          // A value the forward reads outside the group (the layer's output:
          // the next layer's input) is kept anyway: the backward reads it,
          // not a replay (which would also make the next layer's backward
          // wait for this layer's replay).
          bool kept = llvm::any_of(r.getUsers(), [&](Operation *user) {
            auto it = groupOf.find(user);
            return !backward.contains(user) && (it == groupOf.end() || it->second != key);
          });
          if (kept)
            continue;
          for (Operation *user : r.getUsers())
            if (backward.contains(user)) {
              if (!llvm::is_contained(needed, r))
                needed.push_back(r);
              if (!first || position[user] < position[first])
                first = user;
            }
        }
      }
      if (needed.empty())
        continue;
      // The replayed slice: what the needed values depend on inside the
      // group, among the replayable ops.
      llvm::DenseSet<Operation *> slice;
      SmallVector<Operation *> work;
      for (Value v : needed)
        work.push_back(v.getDefiningOp());
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!slice.insert(op).second)
          continue;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && groupOf.lookup(def) == key && groupOf.count(def) && replayable(def))
            work.push_back(def);
      }
      SmallVector<Operation *> order(slice.begin(), slice.end());
      llvm::sort(order, [&](Operation *a, Operation *c) { return position[a] < position[c]; });
      b.setInsertionPoint(first);
      IRMapping map;
      for (Operation *op : order)
        b.clone(*op, map)->setAttr(XfDialect::kRecomputedAttrName, b.getUnitAttr());
      replayed += static_cast<int64_t>(order.size());
      ++layers;
      for (Value v : needed)
        v.replaceUsesWithIf(map.lookup(v),
                            [&](OpOperand &use) { return backward.contains(use.getOwner()); });
      SHARDC_DEBUG(DBGS() << "micro-batch " << key.first << " layer " << key.second << ": "
                          << order.size() << " ops replayed before " << first->getName()
                          << "\n");
    }
    recomputedOps += replayed;
    recomputedLayers += layers;
  }
};

} // namespace
