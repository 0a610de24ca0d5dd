//===- Pipeline.cpp - pipeline parallelism: stages, transfers, schedule ---===//
//
// -xf-pipeline cuts a partitioned training step into pipeline stages along
// one mesh axis. The step stays one SPMD function: every op carries the
// stage whose ranks run it (`xf.stage`), values cross stages in xf.transfer
// ops (the sender's ranks send, the receiver's receive), and the op order is
// a static schedule of the step's micro-batches. Four steps:
//
//  1. Chunks. The layers (the index in the parameters' names) are cut into
//     stages x virtual-stages chunks of consecutive layers: at the given
//     layer indices, or so that the largest chunk's FLOPs (forward ops'
//     FLOPs from their sharding rules; the embedding counts to the first
//     chunk, the final norm, the logit GEMM and the loss to the last) is as
//     small as possible. Chunk c runs on stage c mod stages.
//  2. Ops. Forward ops take the latest chunk of their operands (a layer's
//     parameters pull its ops into its chunk); backward ops the chunk of the
//     forward values and parameters they read, or, reading gradients only
//     (sums of gradient contributions), the earliest chunk of those; the
//     optimizer the chunk of its parameter. What this leaves open (the
//     embedding, constants, the learning-rate schedule; parameters without
//     a layer, their moments, the step counter) takes the earliest chunk of
//     its users: the tied embedding's table sits with the lookup on the
//     first stage, the logit GEMM gets it in a transfer, and its gradient
//     contributions (summed on the last stage over the micro-batches) come
//     back once to be added to the lookup's; the gradient norm's sum of
//     squares is likewise summed per stage first. Data inputs are on every
//     stage. Reports (loss, gradient norm) are sent to stage 0.
//  3. Transfers. A value read on another stage than its own crosses once
//     per receiving stage, right after it is made.
//  4. Schedule. The ops fall into units: the forward F(j, c) and backward
//     B(j, c) of micro-batch j on chunk c (recomputed forward ops replayed
//     in the backward belong to B), and the tail (the gradient norm and the
//     optimizer step, after every backward). Each stage runs its units in
//     the schedule's order (GPipe: all forwards, then all backwards; 1F1B:
//     stages-s-1 warm-up forwards, then one forward and one backward in
//     turn; interleaved: Megatron's 1F1B over virtual-stage chunks, groups
//     of `stages` micro-batches; with `schedule-stages` P' each stage runs
//     the order of the stage of a P'-stage pipeline it stands for, its first
//     stages then its last). With a forward as one time slot and a
//     backward as two, the units' start times follow from the stage order
//     and the data dependences between units; the function's ops are
//     reordered by start time. That order is a topological order that every
//     rank follows, so blocking transfers cannot deadlock, and the slots and
//     the bubble fraction are recorded in `xf.pipeline`.
//
//===----------------------------------------------------------------------===//

#include "passes/ArgAttrs.h"
#include "passes/Debug.h"
#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/sharding/PipelineSchedule.h"

#include "compiler/sharding/Sharding.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#define DEBUG_TYPE "xf-pipeline"

namespace shardc {
#define GEN_PASS_DEF_XFPIPELINE
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::xf;

namespace {

constexpr int64_t kNone = -1;

/// A unit of the schedule: the forward or backward of one micro-batch on
/// one chunk.
struct Unit {
  bool backward = false;
  int64_t microBatch = 0;
  int64_t chunk = 0;
  auto key() const { return std::make_tuple(microBatch, chunk, backward); }
  bool operator<(const Unit &o) const { return key() < o.key(); }
  bool operator==(const Unit &o) const { return key() == o.key(); }
};

/// The parameter a state argument belongs to ("param:X", "adam_m:X" -> X).
StringRef paramOfState(StringRef state) {
  for (StringRef prefix : {"param:", "adam_m:", "adam_v:"})
    if (state.starts_with(prefix))
      return state.drop_front(prefix.size());
  return "";
}

/// The schedule of one stage: its units in the order it runs them, as stage
/// `runAs` of a pipeline of `scheduleStages` stages runs them (its warm-up
/// forwards, the micro-batch groups of interleaving); the units' chunks are
/// this pipeline's, c = v * stages + stage. Warm-ups fall with the stage
/// (pipeline::standsFor keeps their order), so every stage's first backward
/// finds its inputs: the order is one the units' dependences allow.
std::vector<Unit> stageOrder(StringRef schedule, int64_t stage, int64_t stages,
                             int64_t chunksPerStage, int64_t microBatches, int64_t runAs,
                             int64_t scheduleStages) {
  std::vector<Unit> order;
  auto F = [&](int64_t j, int64_t v) { order.push_back({false, j, v * stages + stage}); };
  auto B = [&](int64_t j, int64_t v) { order.push_back({true, j, v * stages + stage}); };
  if (schedule == "gpipe") {
    for (int64_t j = 0; j < microBatches; ++j)
      F(j, 0);
    for (int64_t j = 0; j < microBatches; ++j)
      B(j, 0);
    return order;
  }
  if (schedule == "1f1b") {
    int64_t warmup = pipeline::warmupForwards(runAs, scheduleStages, 1, microBatches);
    for (int64_t j = 0; j < warmup; ++j)
      F(j, 0);
    for (int64_t j = warmup; j < microBatches; ++j) {
      F(j, 0);
      B(j - warmup, 0);
    }
    for (int64_t j = microBatches - warmup; j < microBatches; ++j)
      B(j, 0);
    return order;
  }
  // Interleaved 1F1B (Megatron-LM): the k-th forward of a stage is
  // micro-batch (k / (g v)) g + k % g on its chunk (k / g) % v, in groups of
  // g = P micro-batches, P the schedule's stages (fewer micro-batches than
  // P: one partial group of them all, which the planner composes longer
  // steps from); backwards run the chunks in reverse.
  const int64_t v = chunksPerStage, total = microBatches * v, P = scheduleStages;
  const int64_t g = pipeline::interleavedGroup(P, microBatches);
  auto fwd = [&](int64_t k) { F((k / (g * v)) * g + k % g, (k / g) % v); };
  auto bwd = [&](int64_t k) { B((k / (g * v)) * g + k % g, v - 1 - (k / g) % v); };
  int64_t warmup = pipeline::warmupForwards(runAs, P, v, microBatches);
  for (int64_t k = 0; k < warmup; ++k)
    fwd(k);
  for (int64_t k = warmup; k < total; ++k) {
    fwd(k);
    bwd(k - warmup);
  }
  for (int64_t k = total - warmup; k < total; ++k)
    bwd(k);
  return order;
}

struct XfPipelinePass : shardc::impl::XfPipelineBase<XfPipelinePass> {
  using XfPipelineBase::XfPipelineBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run();
};

LogicalResult XfPipelinePass::run() {
  func::FuncOp func = getOperation();
  FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-pipeline");
  if (failed(target))
    return failure();
  if (!*target)
    return success();
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "xf-pipeline: @" << function << " is not a training step of one block";
  auto module = func->getParentOfType<ModuleOp>();
  auto grid = func->getAttrOfType<FlatSymbolRefAttr>(sharding::kGridAttr);
  if (!grid)
    return func.emitError() << "xf-pipeline: @" << function
                            << " is not partitioned (run -xf-partition with a mesh that has "
                               "the pipeline axis '"
                            << axis << "')";
  FailureOr<sharding::Mesh> mesh = sharding::Mesh::fromModule(module, grid.getValue());
  if (failed(mesh))
    return failure();
  int axisIndex = mesh->axisIndex(axis);
  if (axisIndex < 0)
    return func.emitError() << "xf-pipeline: the mesh " << mesh->str() << " has no axis '"
                            << axis << "'";
  const int64_t P = mesh->sizes[axisIndex];
  if (schedule != "gpipe" && schedule != "1f1b" && schedule != "interleaved")
    return func.emitError() << "xf-pipeline: schedule must be gpipe, 1f1b or interleaved, not '"
                            << schedule << "'";
  const int64_t V = virtualStages;
  if (V < 1 || (V > 1) != (schedule == "interleaved"))
    return func.emitError() << "xf-pipeline: the interleaved schedule takes 2 or more virtual "
                               "stages and the others 1; got "
                            << V << " with " << schedule;
  const int64_t C = P * V;
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *ctx = &getContext();

  // Micro-batches: the inputs' xf.micro_batch.
  int64_t microBatches = 1;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto mb = func.getArgAttrOfType<IntegerAttr>(i, XfDialect::kMicroBatchAttrName))
      microBatches = std::max<int64_t>(microBatches, mb.getInt() + 1);
  const int64_t scheduleP = scheduleStages == 0 ? P : scheduleStages;
  if (scheduleP < P)
    return func.emitError() << "xf-pipeline: schedule-stages " << scheduleP
                            << " is shorter than the pipeline's " << P << " stages";
  if (schedule == "interleaved" && microBatches % pipeline::interleavedGroup(scheduleP, microBatches))
    return func.emitError() << "xf-pipeline: the interleaved schedule runs micro-batches in "
                               "groups of the "
                            << scheduleP << " stages; " << microBatches
                            << " micro-batches are neither fewer nor a multiple";

  // Arguments: inputs (every stage), state of a parameter (its layer).
  llvm::DenseMap<Value, int64_t> layerOfArg;
  llvm::DenseSet<Value> inputs;
  std::map<std::string, SmallVector<BlockArgument, 3>> stateOfParam;
  std::set<int64_t> layerSet;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (func.getArgAttr(i, XfDialect::kInputAttrName)) {
      inputs.insert(arg);
      continue;
    }
    StringRef param;
    if (auto st = func.getArgAttrOfType<StringAttr>(i, XfDialect::kStateAttrName))
      param = paramOfState(st.getValue());
    else if (auto p = func.getArgAttrOfType<ParamAttr>(i, XfDialect::kParamAttrName))
      param = p.getName();
    int64_t l = param.empty() ? -1 : layerIndexOf(param);
    layerOfArg[arg] = l;
    if (!param.empty())
      stateOfParam[param.str()].push_back(arg);
    if (l >= 0)
      layerSet.insert(l);
  }
  std::vector<int64_t> layers(layerSet.begin(), layerSet.end());
  if (static_cast<int64_t>(layers.size()) < C)
    return func.emitError() << "xf-pipeline: the model has " << layers.size()
                            << " layers; " << P << " stages x " << V
                            << " virtual stages need at least " << C;

  // Forward, backward and tail ops; original positions.
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseSet<Operation *> backward, tail;
  for (Operation &op : body.without_terminator()) {
    position[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
    bool isTail = isa<SumSquaresOp, ClipGradNormOp, LrScheduleOp, AdamWOp, CountStepOp,
                      LossScaleUpdateOp>(op);
    bool isBackward = isa<CrossEntropyGradOp, LinearCrossEntropyGradOp>(op);
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp()) {
        isTail |= tail.contains(def);
        isBackward |= backward.contains(def);
      }
    if (isTail)
      tail.insert(&op);
    else if (isBackward)
      backward.insert(&op);
  }
  auto isForward = [&](Operation *op) { return !backward.contains(op) && !tail.contains(op); };
  auto forwardValue = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || isForward(def);
  };

  // 1. Chunks: the forward ops' FLOPs per layer (the latest layer of their
  // operands; the embedding before the first layer counts to it).
  llvm::DenseMap<Value, int64_t> layerOf(layerOfArg.begin(), layerOfArg.end());
  std::map<int64_t, double> flops;
  for (Operation *op : ops) {
    if (!isForward(op))
      continue;
    int64_t l = -1;
    for (Value v : op->getOperands())
      l = std::max(l, layerOf.lookup(v));
    for (Value r : op->getResults())
      layerOf[r] = l;
    if (auto rule = dyn_cast<ShardingRuleOpInterface>(op))
      flops[std::max(l, layers.front())] += xf::cachedShardingRule(rule).flops;
  }
  std::vector<int64_t> firstLayer; // per chunk, index into `layers`
  if (!cuts.empty()) {
    SmallVector<StringRef> parts;
    StringRef(cuts).split(parts, ',', -1, false);
    firstLayer.push_back(0);
    for (StringRef p : parts) {
      int64_t l;
      auto it = std::find(layers.begin(), layers.end(), p.trim().getAsInteger(10, l) ? -2 : l);
      if (it == layers.end() || it == layers.begin() ||
          (it - layers.begin()) <= firstLayer.back())
        return func.emitError() << "xf-pipeline: cuts '" << cuts
                                << "' must be increasing layer indices after the first layer ("
                                << layers.front() << ".." << layers.back() << ")";
      firstLayer.push_back(it - layers.begin());
    }
    if (static_cast<int64_t>(firstLayer.size()) != C)
      return func.emitError() << "xf-pipeline: cuts '" << cuts << "' make " << firstLayer.size()
                              << " chunks, but " << P << " stages x " << V
                              << " virtual stages need " << C;
  } else {
    // Contiguous partition minimizing the largest chunk (dynamic program).
    const int64_t n = static_cast<int64_t>(layers.size());
    std::vector<double> prefix(n + 1, 0);
    for (int64_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + flops[layers[i]];
    const double inf = std::numeric_limits<double>::infinity();
    // best[c][i]: the smallest largest chunk of layers [0, i) in c chunks.
    std::vector<std::vector<double>> best(C + 1, std::vector<double>(n + 1, inf));
    std::vector<std::vector<int64_t>> from(C + 1, std::vector<int64_t>(n + 1, 0));
    best[0][0] = 0;
    for (int64_t c = 1; c <= C; ++c)
      for (int64_t i = c; i <= n; ++i)
        for (int64_t k = c - 1; k < i; ++k) {
          double v = std::max(best[c - 1][k], prefix[i] - prefix[k]);
          if (v < best[c][i] * (1 - 1e-12)) {
            best[c][i] = v;
            from[c][i] = k;
          }
        }
    firstLayer.assign(C, 0);
    for (int64_t c = C, i = n; c > 0; --c) {
      firstLayer[c - 1] = from[c][i];
      i = from[c][i];
    }
  }
  std::map<int64_t, int64_t> chunkOfLayer;
  for (int64_t c = 0; c < C; ++c) {
    int64_t end = c + 1 < C ? firstLayer[c + 1] : static_cast<int64_t>(layers.size());
    for (int64_t i = firstLayer[c]; i < end; ++i)
      chunkOfLayer[layers[i]] = c;
  }

  // 2. The chunk of every value (kNone: open; inputs stay open: every stage
  // has them).
  llvm::DenseMap<Value, int64_t> chunk;
  auto chunkOf = [&](Value v) {
    auto it = chunk.find(v);
    return it == chunk.end() ? kNone : it->second;
  };
  auto setOp = [&](Operation *op, int64_t c) {
    for (Value r : op->getResults())
      chunk[r] = c;
  };
  for (auto [arg, l] : layerOfArg)
    if (l >= 0)
      chunk[arg] = chunkOfLayer[l];
  auto opChunk = [&](Operation *op) {
    return op->getNumResults() ? chunkOf(op->getResult(0)) : kNone;
  };
  // The earliest chunk of a value's users (kNone if none has one).
  auto minUserChunk = [&](Value v) {
    int64_t c = kNone;
    for (Operation *user : v.getUsers()) {
      int64_t u = opChunk(user);
      if (u != kNone && (c == kNone || u < c))
        c = u;
    }
    return c;
  };
  auto minUsers = [&](Operation *op) {
    int64_t c = kNone;
    for (Value r : op->getResults()) {
      int64_t u = minUserChunk(r);
      if (u != kNone && (c == kNone || u < c))
        c = u;
    }
    return c;
  };
  // Forward ops: the latest chunk of their operands.
  for (Operation *op : ops) {
    if (!isForward(op))
      continue;
    int64_t c = kNone;
    for (Value v : op->getOperands())
      c = std::max(c, chunkOf(v));
    setOp(op, c);
  }
  // Open forward ops: the earliest chunk of their users.
  for (Operation *op : llvm::reverse(ops))
    if (isForward(op) && opChunk(op) == kNone)
      setOp(op, minUsers(op));
  // Parameters without a layer, and their optimizer state: with their
  // first forward use.
  for (auto &[name, args] : stateOfParam) {
    BlockArgument param;
    for (BlockArgument a : args)
      if (auto st = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), XfDialect::kStateAttrName);
          !st || st.getValue().starts_with("param:"))
        param = a;
    if (!param || chunkOf(param) != kNone)
      continue;
    int64_t c = minUserChunk(param);
    for (BlockArgument a : args)
      chunk[a] = c == kNone ? 0 : c;
  }
  // Parameter-like values (state, and forward ops of them only: casts and
  // gathers of weights) say where a backward op runs only if their
  // parameter has a layer: the tied embedding's table is read by the logit
  // GEMM's backward on the last stage although it lives on the first.
  llvm::DenseSet<Value> paramLike, layered;
  for (auto [arg, l] : layerOfArg) {
    paramLike.insert(arg);
    if (l >= 0)
      layered.insert(arg);
  }
  for (Operation *op : ops) {
    if (!isForward(op))
      continue;
    bool allParams = op->getNumOperands() > 0, anyLayered = false;
    for (Value v : op->getOperands()) {
      allParams &= paramLike.contains(v);
      anyLayered |= layered.contains(v);
    }
    for (Value r : op->getResults()) {
      if (allParams)
        paramLike.insert(r);
      if (!allParams || anyLayered)
        layered.insert(r);
    }
  }
  // Backward and tail ops: the latest chunk of the forward values (and
  // layered parameters) they read, else the earliest of their other
  // operands' (gradients); an optimizer update its parameter's.
  for (Operation *op : ops) {
    if (isForward(op))
      continue;
    if (auto update = dyn_cast<AdamWOp>(op)) {
      setOp(op, chunkOf(update->getOperand(0)));
      continue;
    }
    int64_t f = kNone, g = kNone, h = kNone;
    auto earliest = [](int64_t &m, int64_t c) {
      if (m == kNone || c < m)
        m = c;
    };
    for (Value v : op->getOperands()) {
      int64_t c = chunkOf(v);
      if (c == kNone)
        continue;
      if (!forwardValue(v))
        earliest(g, c);
      else if (!paramLike.contains(v) || layered.contains(v))
        f = std::max(f, c);
      else
        earliest(h, c); // a parameter without a layer: only if nothing else says
    }
    setOp(op, f != kNone ? f : g != kNone ? g : h);
  }
  // What is still open: with its earliest user, else the first chunk.
  for (Operation *op : llvm::reverse(ops))
    if (opChunk(op) == kNone) {
      int64_t c = minUsers(op);
      setOp(op, c == kNone ? 0 : c);
    }
  // A reshard of a forward value that only the backward reads (the layout a
  // gradient op needs: a batch gathered over one data axis of two) runs with
  // its readers. Left with its operand's chunk, a later chunk's backward
  // would wait on it in this chunk's backward unit, which runs after that
  // one (a cycle); on the readers' stage it reads the operand sent there.
  // Chains of reshards move together (latest first).
  llvm::DenseSet<Operation *> movedReshards;
  for (Operation *op : llvm::reverse(ops)) {
    if (!isForward(op) || !isa<shard::ShardDialect>(op->getDialect()) || op->use_empty())
      continue;
    bool forBackward = llvm::all_of(op->getUsers(), [&](Operation *user) {
      return (!isForward(user) && !tail.contains(user)) || movedReshards.contains(user);
    });
    int64_t c = minUsers(op);
    if (forBackward && c != kNone && c > opChunk(op)) {
      setOp(op, c);
      movedReshards.insert(op);
    }
  }
  for (BlockArgument arg : body.getArguments())
    if (!inputs.contains(arg) && chunkOf(arg) == kNone) {
      int64_t c = minUserChunk(arg);
      chunk[arg] = c == kNone ? 0 : c;
    }
  auto stageOfChunk = [&](int64_t c) { return c % P; };

  // A gradient summed from contributions on several stages (the tied
  // embedding: the lookup's on the first, the logit GEMM's on the last, one
  // of each per micro-batch) is summed per stage first, so that one partial
  // sum per stage crosses instead of every contribution: the sum tree
  // (adds whose result only feeds the next add) is rebuilt as one sum per
  // chunk (contributions in their order) and the chunks' sums added on the
  // tree's chunk.
  // The same for the gradient norm's sum of squares (one partial sum per
  // stage instead of one scalar per parameter).
  int64_t reassociated = 0;
  {
    // The set an add of a sum tree belongs to: the backward or the tail.
    auto setOf = [&](Operation *op) -> llvm::DenseSet<Operation *> * {
      if (!isa_and_nonnull<AddOp>(op))
        return nullptr;
      return backward.contains(op) ? &backward : tail.contains(op) ? &tail : nullptr;
    };
    auto inner = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return setOf(def) && v.hasOneUse() && setOf(*v.getUsers().begin()) == setOf(def);
    };
    SmallVector<AddOp> roots;
    for (Operation *op : ops)
      if (setOf(op) && !inner(op->getResult(0)))
        roots.push_back(cast<AddOp>(op));
    for (AddOp root : roots) {
      llvm::DenseSet<Operation *> &set = *setOf(root);
      SmallVector<Value> leaves, work{root.getResult()};
      SmallVector<Operation *> tree;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (v == root.getResult() || inner(v)) {
          Operation *add = v.getDefiningOp();
          tree.push_back(add);
          work.push_back(add->getOperand(1));
          work.push_back(add->getOperand(0));
        } else {
          leaves.push_back(v);
        }
      }
      std::map<int64_t, SmallVector<Value>> byChunk;
      for (Value l : leaves)
        byChunk[chunkOf(l)].push_back(l);
      if (byChunk.size() < 2 || byChunk.count(kNone))
        continue;
      int64_t home = opChunk(root);
      auto later = [&](Value a, Value c) -> Operation * {
        Operation *da = a.getDefiningOp(), *dc = c.getDefiningOp();
        if (!da)
          return dc;
        if (!dc)
          return da;
        return da->isBeforeInBlock(dc) ? dc : da;
      };
      auto addAfter = [&](Value a, Value c, int64_t atChunk) {
        OpBuilder b(ctx);
        if (Operation *at = later(a, c))
          b.setInsertionPointAfter(at);
        else
          b.setInsertionPointToStart(&body);
        auto add = AddOp::create(b, root.getLoc(), a, c);
        set.insert(add);
        chunk[add.getResult()] = atChunk;
        return add.getResult();
      };
      std::map<int64_t, Value> partial;
      for (auto &[c, list] : byChunk) {
        Value sum = list.front();
        for (Value l : ArrayRef<Value>(list).drop_front())
          sum = addAfter(sum, l, c);
        partial[c] = sum;
      }
      Value total = partial.count(home) ? partial[home] : Value();
      for (auto &[c, sum] : partial)
        if (c != home)
          total = total ? addAfter(total, sum, home) : sum;
      root.getResult().replaceAllUsesWith(total);
      for (Operation *op : tree) {
        set.erase(op);
        op->erase();
      }
      ++reassociated;
    }
    if (reassociated) {
      ops.clear();
      position.clear();
      for (Operation &op : body.without_terminator()) {
        position[&op] = static_cast<int64_t>(ops.size());
        ops.push_back(&op);
      }
    }
  }

  // The micro-batch of every non-tail op: its inputs', else its users'.
  llvm::DenseMap<Value, int64_t> mbOf;
  for (BlockArgument arg : body.getArguments())
    if (auto mb = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                     XfDialect::kMicroBatchAttrName))
      mbOf[arg] = mb.getInt();
  llvm::DenseMap<Operation *, int64_t> mbOfOp;
  for (Operation *op : ops) {
    int64_t mb = -1;
    for (Value v : op->getOperands())
      if (auto it = mbOf.find(v); it != mbOf.end())
        mb = std::max(mb, it->second);
    mbOfOp[op] = mb;
    for (Value r : op->getResults())
      mbOf[r] = mb;
  }
  for (Operation *op : llvm::reverse(ops)) {
    if (tail.contains(op) || mbOfOp[op] >= 0)
      continue;
    int64_t mb = -1;
    for (Operation *user : op->getUsers())
      if (user != ret && !tail.contains(user) && mbOfOp.count(user) && mbOfOp[user] >= 0)
        mb = mb < 0 ? mbOfOp[user] : std::min(mb, mbOfOp[user]);
    mbOfOp[op] = std::max<int64_t>(mb, 0);
  }
  // Forward ops replayed in the backward (-xf-recompute) run with it: they
  // come after the first backward op of their micro-batch.
  std::map<int64_t, int64_t> firstBackward;
  for (Operation *op : ops)
    if (backward.contains(op) && !firstBackward.count(mbOfOp[op]))
      firstBackward[mbOfOp[op]] = position[op];
  llvm::DenseMap<Operation *, Unit> unitOf;
  for (Operation *op : ops) {
    if (tail.contains(op))
      continue;
    int64_t mb = mbOfOp[op];
    auto fb = firstBackward.find(mb);
    bool replay = isForward(op) && fb != firstBackward.end() && position[op] > fb->second;
    unitOf[op] = Unit{backward.contains(op) || replay, mb, opChunk(op)};
  }

  // 3. Transfers: once per (value, receiving stage), right after the value.
  OpBuilder b(ctx);
  std::map<std::pair<void *, int64_t>, Value> sent;
  llvm::DenseMap<Operation *, std::pair<bool, Unit>> transferUnit; // tail?, unit
  int64_t transfers = 0;
  std::map<std::pair<int64_t, int64_t>, int64_t> boundaryBytes;
  auto transferTo = [&](Value v, int64_t to, Operation *user) -> Value {
    int64_t from = stageOfChunk(chunkOf(v));
    auto key = std::make_pair(v.getAsOpaquePointer(), to);
    if (auto it = sent.find(key); it != sent.end())
      return it->second;
    if (auto arg = dyn_cast<BlockArgument>(v))
      b.setInsertionPointToStart(&body);
    else
      b.setInsertionPointAfter(v.getDefiningOp());
    auto t = TransferOp::create(b, v.getLoc(), v, from, to, static_cast<int16_t>(axisIndex));
    t->setAttr(XfDialect::kStageAttrName, b.getI64IntegerAttr(from));
    chunk[t.getResult()] = chunkOf(v);
    // In the sender's unit; an argument's with its first receiver.
    Operation *def = v.getDefiningOp();
    Operation *anchor = def ? def : user;
    if (anchor && tail.contains(anchor))
      transferUnit[t] = {true, Unit()};
    else if (anchor && unitOf.count(anchor))
      transferUnit[t] = {false, unitOf[anchor]};
    else
      transferUnit[t] = {true, Unit()};
    ++transfers;
    boundaryBytes[{from, to}] += memory::byteSize(cast<ShapedType>(v.getType()));
    sent[key] = t.getResult();
    return t.getResult();
  };
  for (Operation *op : ops) {
    int64_t to = stageOfChunk(opChunk(op) == kNone ? 0 : opChunk(op));
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (inputs.contains(v) || chunkOf(v) == kNone || stageOfChunk(chunkOf(v)) == to)
        continue;
      use.set(transferTo(v, to, op));
    }
    op->setAttr(XfDialect::kStageAttrName, b.getI64IntegerAttr(to));
  }
  // Results: state on its argument's stage, reports on stage 0.
  llvm::StringMap<BlockArgument> stateArgs;
  for (BlockArgument arg : body.getArguments())
    if (auto s = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), XfDialect::kStateAttrName))
      stateArgs[s.getValue()] = arg;
  for (OpOperand &use : ret->getOpOperands()) {
    Value v = use.get();
    if (inputs.contains(v) || chunkOf(v) == kNone)
      continue;
    int64_t want = 0;
    if (auto s = func.getResultAttrOfType<StringAttr>(use.getOperandNumber(),
                                                      XfDialect::kStateAttrName))
      if (BlockArgument arg = stateArgs.lookup(s.getValue()))
        want = stageOfChunk(chunkOf(arg));
    if (stageOfChunk(chunkOf(v)) != want)
      use.set(transferTo(v, want, nullptr));
  }
  ArgAttrEditor argAttrs(func);
  for (BlockArgument arg : body.getArguments())
    if (!inputs.contains(arg))
      argAttrs.set(arg.getArgNumber(), XfDialect::kStageAttrName,
                   b.getI64IntegerAttr(stageOfChunk(chunkOf(arg))));
  argAttrs.commit();
  numTransfers += transfers;

  // 4. The schedule: unit order per stage, start times from the stage order
  // and the units' data dependences.
  std::map<Unit, SmallVector<Operation *>> unitOps;
  SmallVector<Operation *> tailOps;
  for (Operation &op : body.without_terminator()) {
    if (auto it = transferUnit.find(&op); it != transferUnit.end()) {
      if (it->second.first)
        tailOps.push_back(&op);
      else
        unitOps[it->second.second].push_back(&op);
      continue;
    }
    if (tail.contains(&op))
      tailOps.push_back(&op);
    else
      unitOps[unitOf[&op]].push_back(&op);
  }
  std::vector<std::vector<Unit>> orders;
  std::map<Unit, std::pair<int64_t, size_t>> slotOf; // stage, index in its order
  for (int64_t s = 0; s < P; ++s) {
    std::vector<Unit> order =
        stageOrder(schedule, s, P, V, microBatches, pipeline::standsFor(s, P, scheduleP),
                   scheduleP);
    // A function without a backward (a forward + loss: `--forward-only`,
    // `shardc run`) runs only the forward units.
    if (backward.empty())
      llvm::erase_if(order, [](const Unit &u) { return u.backward; });
    for (size_t k = 0; k < order.size(); ++k)
      slotOf[order[k]] = {s, k};
    orders.push_back(std::move(order));
  }
  for (auto &[unit, list] : unitOps)
    if (!slotOf.count(unit))
      return func.emitError() << "xf-pipeline: internal error: ops of micro-batch "
                              << unit.microBatch << " on chunk " << unit.chunk
                              << " are in no unit of the " << schedule << " schedule";
  // Dependences between units through their ops' operands.
  std::map<Unit, std::set<Unit>> preds;
  auto unitOfOp = [&](Operation *op) -> std::optional<Unit> {
    if (auto it = transferUnit.find(op); it != transferUnit.end())
      return it->second.first ? std::nullopt : std::optional<Unit>(it->second.second);
    if (tail.contains(op) || !unitOf.count(op))
      return std::nullopt;
    return unitOf[op];
  };
  for (auto &[unit, list] : unitOps)
    for (Operation *op : list)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (std::optional<Unit> u = unitOfOp(def); u && !(*u == unit))
            preds[unit].insert(*u);
  for (auto &order : orders)
    for (size_t k = 1; k < order.size(); ++k)
      preds[order[k]].insert(order[k - 1]);
  // Start times (a forward takes one slot, a backward two), Kahn's order.
  std::map<Unit, int64_t> start, finish;
  std::map<Unit, size_t> waiting;
  std::map<Unit, std::vector<Unit>> succs;
  SmallVector<Unit> ready;
  for (auto &[unit, where] : slotOf) {
    waiting[unit] = preds[unit].size();
    for (const Unit &p : preds[unit])
      succs[p].push_back(unit);
    if (preds[unit].empty())
      ready.push_back(unit);
  }
  size_t done = 0;
  while (!ready.empty()) {
    Unit u = ready.pop_back_val();
    int64_t t = 0;
    for (const Unit &p : preds[u])
      t = std::max(t, finish[p]);
    start[u] = t;
    finish[u] = t + (u.backward ? 2 : 1);
    ++done;
    for (const Unit &s : succs[u])
      if (--waiting[s] == 0)
        ready.push_back(s);
  }
  if (done != slotOf.size()) {
    // Name one unit that never became ready and what it waits on.
    auto name = [](const Unit &u) {
      return (u.backward ? "B(" : "F(") + std::to_string(u.microBatch) + ", chunk " +
             std::to_string(u.chunk) + ")";
    };
    std::string stuck;
    for (auto &[unit, n] : waiting)
      if (n > 0) {
        stuck = name(unit) + " waits on";
        for (const Unit &p : preds[unit])
          if (!finish.count(p))
            stuck += " " + name(p);
        break;
      }
    return func.emitError() << "xf-pipeline: the " << schedule
                            << " schedule cannot order this step's micro-batches: " << stuck;
  }
  SmallVector<Unit> global(llvm::make_first_range(slotOf));
  llvm::stable_sort(global, [&](const Unit &a, const Unit &c) {
    return std::make_pair(start[a], slotOf[a].first) < std::make_pair(start[c], slotOf[c].first);
  });
  for (const Unit &u : global)
    for (Operation *op : unitOps[u])
      op->moveBefore(ret);
  for (Operation *op : tailOps)
    op->moveBefore(ret);
  // The order must be one the values allow (a dependence the units missed
  // would show here, not as a hang at run time).
  for (Operation &op : body)
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp(); def && !def->isBeforeInBlock(&op))
        return op.emitError() << "xf-pipeline: internal error: the " << schedule
                              << " order puts this op before its operand's definition";

  // The record: chunks, slots, bubble, bytes per boundary.
  int64_t makespan = 0, busy = 0;
  for (auto &[u, t] : finish) {
    makespan = std::max(makespan, t);
    busy += t - start[u];
  }
  double bubble = makespan ? 1.0 - static_cast<double>(busy) / (static_cast<double>(P) * makespan)
                           : 0.0;
  Builder ab(ctx);
  SmallVector<Attribute> chunkLayers, stageSlots, bytes;
  for (int64_t c = 0; c < C; ++c) {
    int64_t end = c + 1 < C ? firstLayer[c + 1] : static_cast<int64_t>(layers.size());
    chunkLayers.push_back(ab.getDenseI64ArrayAttr({layers[firstLayer[c]], layers[end - 1]}));
  }
  for (int64_t s = 0; s < P; ++s) {
    SmallVector<Attribute> slots;
    for (const Unit &u : orders[s])
      slots.push_back(ab.getDenseI64ArrayAttr(
          {start[u], finish[u] - start[u], u.backward ? 1 : 0, u.microBatch, u.chunk}));
    stageSlots.push_back(ab.getArrayAttr(slots));
  }
  for (auto &[pair, n] : boundaryBytes)
    bytes.push_back(ab.getDenseI64ArrayAttr({pair.first, pair.second, n}));
  NamedAttrList info;
  info.append("axis", ab.getI64IntegerAttr(axisIndex));
  info.append("axis_name", ab.getStringAttr(axis));
  info.append("stages", ab.getI64IntegerAttr(P));
  info.append("schedule_stages", ab.getI64IntegerAttr(scheduleP));
  info.append("virtual_stages", ab.getI64IntegerAttr(V));
  info.append("schedule", ab.getStringAttr(schedule));
  info.append("micro_batches", ab.getI64IntegerAttr(microBatches));
  info.append("chunk_layers", ab.getArrayAttr(chunkLayers));
  info.append("slots", ab.getArrayAttr(stageSlots));
  info.append("makespan", ab.getI64IntegerAttr(makespan));
  info.append("bubble", ab.getF64FloatAttr(bubble));
  info.append("transfers", ab.getI64IntegerAttr(transfers));
  info.append("transfer_bytes", ab.getArrayAttr(bytes));
  func->setAttr(XfDialect::kPipelineAttrName, info.getDictionary(ctx));
  SHARDC_DEBUG(DBGS() << P << " stages x " << V << " chunks, " << microBatches
                      << " micro-batches, " << transfers << " transfers, bubble " << bubble
                      << "\n");
  return success();
}

} // namespace
