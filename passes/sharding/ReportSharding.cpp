//===- ReportSharding.cpp - value shardings and collective accounting -----===//
//
// The view users ask for when a sharding surprises them: every value's
// sharding, and what the partitioned step communicates. Bytes are per device
// per step as a ring moves them (an all-reduce 2(n-1)/n of its tensor,
// all-gather and reduce-scatter (n-1)/n of the full tensor); times come from
// the cost model. Vocabulary-parallel cross-entropy exchanges per-token
// statistics inside its op (max, sum of exponentials, and in the forward the
// target logit), and a mean over split tokens its count: counted as
// all-reduces of those scalars.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"

#include "compiler/cost/CostModel.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/lowering/AttrJson.h"
#include "passes/schedule/Buckets.h"
#include "passes/sharding/Partition.h"
#include "passes/sharding/ShardingIR.h"
#include "passes/sharding/StepReport.h"
#include "passes/sharding/Strategies.h"
#include "passes/train/StepPhases.h"

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace shardc {
#define GEN_PASS_DEF_XFREPORTSHARDING
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;

namespace {

struct CollectiveRow {
  std::string kind, axes;
  int64_t count = 0;
  double bytes = 0; ///< per device per step
  double seconds = 0;
  /// Elements per device: the input of an all-reduce or reduce-scatter, the
  /// gathered output of an all-gather (the full tensor each rank ends with).
  double elements = 0;
};

std::string valueName(Value v, AsmState &state) {
  std::string s;
  llvm::raw_string_ostream os(s);
  v.printAsOperand(os, state);
  return s;
}

} // namespace

double GradientBuckets::priced() const {
  return (bucketBytes > 0 ? std::ceil(input / bucketBytes) : count) * perBucket;
}

ModelledStep shardc::modelStep(ArrayRef<StageCost> stages, double computeSeconds,
                               double hostBandwidth, int64_t pipelineMicroBatches) {
  ModelledStep best;
  for (auto [s, stage] : llvm::enumerate(stages)) {
    ModelledStep m;
    m.busiest = s;
    m.backwardShare =
        stage.computeSum > 0 ? computeSeconds * stage.backwardSum / stage.computeSum : 0.0;
    m.forwardShare =
        stage.computeSum > 0 ? computeSeconds * stage.forwardSum / stage.computeSum : 0.0;
    double gradientWindow = m.backwardShare;
    if (pipelineMicroBatches > 0)
      gradientWindow *= std::min(1.0, static_cast<double>(s + 1) /
                                          static_cast<double>(pipelineMicroBatches));
    m.exposedSeconds =
        std::max(0.0, stage.commSeconds -
                          std::min(stage.forwardGatherSeconds, m.forwardShare) -
                          std::min(stage.backwardGatherSeconds, m.backwardShare) -
                          std::min(stage.gradientSeconds,
                                   std::max(0.0, gradientWindow -
                                                     std::min(stage.backwardGatherSeconds,
                                                              m.backwardShare))));
    // Activation offload: the copies out run during the forward, the
    // copies back during the backward, on the host link (the copy engine,
    // beside the compute and the network); what exceeds its phase is exposed.
    if (stage.offloadBytes > 0 && hostBandwidth > 0) {
      m.offloadSeconds = stage.offloadBytes / hostBandwidth;
      m.exposedOffloadSeconds = std::max(0.0, m.offloadSeconds - m.forwardShare) +
                                std::max(0.0, m.offloadSeconds - m.backwardShare);
    }
    m.stepSeconds = computeSeconds + m.exposedSeconds + m.exposedOffloadSeconds;
    if (s == 0 || m.stepSeconds > best.stepSeconds)
      best = m;
  }
  if (stages.empty())
    best.stepSeconds = computeSeconds;
  return best;
}

llvm::json::Object shardc::stageCostJson(const StageCost &stage) {
  auto bucketsJson = [](const std::map<std::string, GradientBuckets> &groups) {
    llvm::json::Object out;
    for (const auto &[k, b] : groups)
      out[k] = llvm::json::Object{{"input_bytes", b.input},
                                  {"count", b.count},
                                  {"bucket_bytes", b.bucketBytes},
                                  {"latency_per_bucket_seconds", b.perBucket},
                                  {"latency_seconds", b.latency}};
    return out;
  };
  llvm::json::Object axes, sends;
  for (const auto &[k, v] : stage.bytesPerAxis)
    axes[k] = v;
  for (const auto &[to, send] : stage.sendsTo)
    sends[std::to_string(to)] = llvm::json::Object{
        {"seconds", send.seconds}, {"bytes", send.bytes}, {"axes", send.axes}};
  return llvm::json::Object{{"communication_seconds", stage.commSeconds},
                            {"communication_bytes", stage.commBytes},
                            {"bytes_per_axis", std::move(axes)},
                            {"gradient_reduction_seconds", stage.gradientSeconds},
                            {"forward_parameter_gather_seconds", stage.forwardGatherSeconds},
                            {"backward_parameter_gather_seconds", stage.backwardGatherSeconds},
                            {"compute_seconds_sum", stage.computeSum},
                            {"backward_compute_seconds_sum", stage.backwardSum},
                            {"forward_compute_seconds_sum", stage.forwardSum},
                            {"offload_bytes", stage.offloadBytes},
                            {"micro_batch_compute_seconds", stage.microBatchCompute},
                            {"micro_batch_unhidden_seconds", stage.microBatchUnhidden},
                            {"micro_batch_send_seconds", stage.microBatchSends},
                            {"gradient_buckets", bucketsJson(stage.buckets)},
                            {"gather_buckets", bucketsJson(stage.gatherBuckets)},
                            {"scatter_buckets", bucketsJson(stage.scatterBuckets)},
                            {"sends", std::move(sends)}};
}

StageCost shardc::stageCostFromJson(const llvm::json::Object &o) {
  auto number = [](const llvm::json::Object &obj, StringRef key) {
    return obj.getNumber(key).value_or(0.0);
  };
  StageCost s;
  s.commSeconds = number(o, "communication_seconds");
  s.commBytes = number(o, "communication_bytes");
  s.gradientSeconds = number(o, "gradient_reduction_seconds");
  s.forwardGatherSeconds = number(o, "forward_parameter_gather_seconds");
  s.backwardGatherSeconds = number(o, "backward_parameter_gather_seconds");
  s.computeSum = number(o, "compute_seconds_sum");
  s.backwardSum = number(o, "backward_compute_seconds_sum");
  s.forwardSum = number(o, "forward_compute_seconds_sum");
  s.offloadBytes = number(o, "offload_bytes");
  s.microBatchCompute = number(o, "micro_batch_compute_seconds");
  s.microBatchUnhidden = number(o, "micro_batch_unhidden_seconds");
  s.microBatchSends = number(o, "micro_batch_send_seconds");
  if (const llvm::json::Object *axes = o.getObject("bytes_per_axis"))
    for (const auto &[k, v] : *axes)
      s.bytesPerAxis[k.str()] = v.getAsNumber().value_or(0);
  auto readBuckets = [&](StringRef key, std::map<std::string, GradientBuckets> &out) {
    if (const llvm::json::Object *buckets = o.getObject(key))
      for (const auto &[k, v] : *buckets)
        if (const llvm::json::Object *b = v.getAsObject()) {
          GradientBuckets &g = out[k.str()];
          g.input = number(*b, "input_bytes");
          g.count = number(*b, "count");
          g.bucketBytes = number(*b, "bucket_bytes");
          g.perBucket = number(*b, "latency_per_bucket_seconds");
          g.latency = number(*b, "latency_seconds");
        }
  };
  readBuckets("gradient_buckets", s.buckets);
  readBuckets("gather_buckets", s.gatherBuckets);
  readBuckets("scatter_buckets", s.scatterBuckets);
  if (const llvm::json::Object *sends = o.getObject("sends"))
    for (const auto &[k, v] : *sends)
      if (const llvm::json::Object *send = v.getAsObject()) {
        int64_t to = 0;
        if (StringRef(k).getAsInteger(10, to))
          continue;
        StageCost::Sends &t = s.sendsTo[to];
        t.seconds = number(*send, "seconds");
        t.bytes = number(*send, "bytes");
        t.axes = send->getString("axes").value_or("").str();
      }
  return s;
}

FailureOr<StepReport> shardc::reportStep(func::FuncOp func, const StepReportOptions &options) {
  auto module = func->getParentOfType<ModuleOp>();
  FailureOr<Mesh> mesh = Mesh::fromModule(module);
  if (failed(mesh) || failed(verifyShardingOps(func, *mesh)))
    return failure();
  FailureOr<cost::HardwareDesc> hw = loadHardware(func, options.hardware);
  if (failed(hw))
    return failure();
  // Links from the pricing mesh where one is given (the same axes and
  // sizes but for the pipeline axis).
  Mesh pricing = *mesh;
  if (!options.pricingMesh.empty()) {
    std::string error;
    FailureOr<Mesh> m = Mesh::parse(options.pricingMesh, error);
    bool same = succeeded(m) && m->rank() == mesh->rank();
    for (size_t a = 0; same && a < mesh->names.size(); ++a)
      same = m->names[a] == mesh->names[a] &&
             (m->sizes[a] == mesh->sizes[a] || m->names[a] == options.pipelineAxis);
    if (!same)
      return func.emitError() << "xf-report-sharding: pricing mesh '" << options.pricingMesh
                              << "' does not match " << mesh->str()
                              << " but for the pipeline axis" << (error.empty() ? "" : ": ")
                              << error;
    pricing = *m;
  }
  cost::CostModel cost(pricing, *hw);

  // Every value's sharding (from the annotations).
  llvm::json::Array values;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "sharding report for @" << options.function << " on mesh " << mesh->str() << " ("
     << hw->name << ")\n\nvalues:\n";
  // One numbering of the function's values (printing a value alone would
  // number the whole function again each time); only when they are listed.
  std::optional<AsmState> asmState;
  if (options.values)
    asmState.emplace(func);
  auto describe = [&](Value v, StringRef what) {
    shard::ShardOp ann = resultAnnotation(v);
    if (!ann)
      return;
    TensorSharding s = annotationSharding(ann);
    std::string name = valueName(ann.getResult(), *asmState);
    os << llvm::formatv("  {0,-12} {1,-28} {2}  {3}\n", name, what, s.str(*mesh),
                        v.getType());
    values.push_back(llvm::json::Object{{"value", name},
                                        {"op", what.str()},
                                        {"sharding", s.str(*mesh)}});
  };
  for (BlockArgument arg : func.getArguments()) {
    if (!options.values)
      break;
    std::string what = "argument";
    if (auto p = func.getArgAttrOfType<xf::ParamAttr>(arg.getArgNumber(),
                                                      xf::XfDialect::kParamAttrName))
      what = p.getName().str();
    else if (auto st = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         xf::XfDialect::kStateAttrName))
      what = st.str();
    describe(arg, what);
  }
  if (options.values)
    func.walk([&](Operation *op) {
      if (isa<xf::XfDialect>(op->getDialect()))
        for (Value r : op->getResults())
          describe(r, op->getName().getStringRef());
    });

  // Splits an op could not keep: an operand split on a dim whose (major)
  // factor the split does not divide (heads that do not divide tp). The
  // operand is resharded before the op; this says why.
  std::string notTakenText;
  llvm::raw_string_ostream notTaken(notTakenText);
  llvm::json::Array notTakenJson;
  func.walk([&](xf::ShardingRuleOpInterface ruled) {
    Operation *op = ruled.getOperation();
    const xf::OpShardingRule &rule = xf::cachedShardingRule(ruled);
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      auto ann = operand.getDefiningOp<shard::ShardOp>();
      if (!ann || i >= rule.operands.size())
        continue;
      TensorSharding s = annotationSharding(ann);
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        continue;
      for (size_t d = 0; d < s.dims.size() && d < rule.operands[i].size(); ++d) {
        const AxisList &axes = s.dims[d];
        if (axes.empty() || rule.operands[i][d].empty())
          continue;
        int64_t factor = rule.factors[rule.operands[i][d].front()].size;
        int64_t parts = mesh->size(axes);
        if (factor % parts == 0)
          continue;
        std::string where;
        llvm::raw_string_ostream w(where);
        w << op->getLoc();
        notTaken << llvm::formatv(
            "  {0} {1}: operand #{2} dim {3} ({4}) split over {5} ({6}): its factor of size "
            "{7} does not divide into {6}; resharded before the op\n",
            op->getName(), where, i, d, type.getDimSize(d), mesh->axesName(axes), parts,
            factor);
        notTakenJson.push_back(llvm::json::Object{{"op", op->getName().getStringRef()},
                                                  {"loc", where},
                                                  {"operand", static_cast<int64_t>(i)},
                                                  {"dim", static_cast<int64_t>(d)},
                                                  {"axes", mesh->axesName(axes)},
                                                  {"parts", parts},
                                                  {"factor_size", factor}});
      }
    }
  });

  // ZeRO/MiCS state the strategy could not split over some of its axes (no
  // dim divisible): replicated over them, as DP stores it.
  llvm::json::Object stateNotSplit;
  if (auto r = func->getAttrOfType<DictionaryAttr>(xf::XfDialect::kStateNotSplitAttrName)) {
    auto integer = [&](StringRef k) {
      auto a = r.getAs<IntegerAttr>(k);
      return a ? a.getInt() : 0;
    };
    auto text = [&](StringRef k) {
      auto a = r.getAs<StringAttr>(k);
      return a ? a.getValue().str() : std::string();
    };
    // The remedy where an axis has factors to give (a prime one has none).
    bool factorable = false;
    std::string axesText = text("axes");
    SmallVector<StringRef> names;
    StringRef(axesText).split(names, ',');
    for (StringRef name : names) {
      int a = mesh->axisIndex(name.trim().str());
      int64_t n = a >= 0 ? mesh->size(AxisList{static_cast<Axis>(a)}) : 0;
      for (int64_t f = 2; f * f <= n && !factorable; ++f)
        factorable = n % f == 0;
    }
    notTaken << llvm::formatv(
        "  optimizer state of {0} parameters ({1} elements; first {2}): no dim divides over "
        "{3}, so it is replicated there as under DP{4}\n",
        integer("tensors"), integer("elements"), text("example"), text("axes"),
        factorable ? "; a mesh with that axis factored (as dp=64,dq=4 with zero1@dp,dq) "
                     "splits each factor on its own dim"
                   : "");
    stateNotSplit = llvm::json::Object{{"tensors", integer("tensors")},
                                       {"elements", integer("elements")},
                                       {"example", text("example")},
                                       {"axes", text("axes")}};
  }

  // Ops split by a spare factor (attention by its query rows, over an axis
  // its heads do not divide), per op name and axes.
  std::map<std::string, int64_t> spareSplits;
  func.walk([&](xf::ShardingRuleOpInterface ruled) {
    Operation *op = ruled.getOperation();
    const xf::OpShardingRule &rule = xf::cachedShardingRule(ruled);
    std::optional<OpDecision> d = readDecision(op, rule.factors.size());
    if (!d)
      return;
    for (size_t f = 0; f < rule.factors.size() && f < d->factorAxes.size(); ++f)
      if (rule.factors[f].spare && !d->factorAxes[f].empty())
        ++spareSplits[(op->getName().getStringRef() + " over " +
                       mesh->axesName(d->factorAxes[f]))
                          .str()];
  });

  // Partition a copy and account for what it communicates.
  // (A module of its own: the grids and this function, nothing a pass on a
  // sibling function may be changing.)
  OwningOpRef<ModuleOp> copy = ModuleOp::create(module.getLoc());
  for (auto grid : module.getOps<shard::GridOp>())
    copy->push_back(grid.clone());
  func::FuncOp work = func;
  if (options.consume)
    func->remove();
  else
    work = func.clone();
  copy->push_back(work);
  if (failed(partitionFunction(work, *mesh, /*keepOnFailure=*/!options.consume)))
    return failure();
  // Then what `shardc compile` runs on the partitioned step: the pipeline
  // stages, the one optimizer call, the GEMM epilogues.
  PassManager stages(copy->getContext());
  stages.enableVerifier(options.verifyPasses);
  if (!options.pipelineAxis.empty()) {
    XfPipelineOptions pipeline;
    pipeline.function = options.function;
    pipeline.axis = options.pipelineAxis;
    pipeline.schedule = options.schedule;
    pipeline.virtualStages = options.virtualStages;
    pipeline.cuts = options.cuts;
    pipeline.scheduleStages = options.scheduleStages;
    stages.nest<func::FuncOp>().addPass(createXfPipeline(pipeline));
  }
  addRankLocalFusions(stages.nest<func::FuncOp>(), options.function, options.bucketBytes);
  if (failed(stages.run(*copy)))
    return failure();
  // Per pipeline stage: a device runs its stage's collectives (an
  // unpipelined step is one stage, key -1). Ops with no stage in a
  // pipelined step (scalar reductions over every rank) count on each.
  const bool pipelined = work->hasAttr(xf::XfDialect::kPipelineAttrName);
  auto stageKey = [&](Operation *op) -> int64_t {
    if (!pipelined)
      return -1;
    auto s = op->getAttrOfType<IntegerAttr>(xf::XfDialect::kStageAttrName);
    return s ? s.getInt() : -1;
  };
  // One collective over `axes` whose input is `inBytes` per device.
  // Gradient reductions (all-reduces and ZeRO's reduce-scatters whose
  // results feed only the optimizer) can run while the rest of the backward
  // computes (-rt-schedule-collectives starts them early), so they are kept
  // apart for the overlap. The all-reduces are what -rt-bucket-all-reduces
  // merges: their bandwidth time is counted here, their ring latencies once
  // per bucket below.
  struct GradientGroup {
    AxisList axes;
    double input = 0; ///< bytes
    int64_t count = 0;
  };
  struct StageAccount {
    std::map<std::pair<std::string, std::string>, CollectiveRow> rows;
    std::map<std::string, double> bytesPerAxis;
    std::map<std::string, GradientGroup> gradientInput; // by axes
    /// Whole-step parameter gathers (ZeRO-1/2) by axes: gathered bytes and
    /// count, their ring latencies paid once per bucket
    /// (-xf-bucket-all-gathers).
    std::map<std::string, GradientGroup> gatherInput;
    /// ZeRO's gradient reduce-scatters by axes (input bytes and count), the
    /// same way (-xf-bucket-reduce-scatters).
    std::map<std::string, GradientGroup> scatterInput;
    double gradientSeconds = 0, computeSum = 0, backwardSum = 0, forwardSum = 0;
    double forwardGathers = 0, backwardGathers = 0, offloadBytes = 0;
    double microBatchCompute = 0, microBatchUnhidden = 0, microBatchSends = 0;
    std::map<int64_t, StageCost::Sends> sendsTo;

    CollectiveRow &row(const std::string &kind, const std::string &axes) {
      CollectiveRow &r = rows[{kind, axes}];
      r.kind = kind;
      r.axes = axes;
      return r;
    }
    /// Adds `o` (what every stage runs) to this stage.
    void add(const StageAccount &o) {
      for (const auto &[key, r] : o.rows) {
        CollectiveRow &mine = row(r.kind, r.axes);
        mine.count += r.count;
        mine.bytes += r.bytes;
        mine.seconds += r.seconds;
        mine.elements += r.elements;
      }
      for (const auto &[axes, b] : o.bytesPerAxis)
        bytesPerAxis[axes] += b;
      for (auto [mineMap, theirs] : {std::pair{&gradientInput, &o.gradientInput},
                                     std::pair{&gatherInput, &o.gatherInput},
                                     std::pair{&scatterInput, &o.scatterInput}})
        for (const auto &[axes, g] : *theirs) {
          GradientGroup &mine = (*mineMap)[axes];
          mine.axes = g.axes;
          mine.input += g.input;
          mine.count += g.count;
        }
      gradientSeconds += o.gradientSeconds;
      computeSum += o.computeSum;
      backwardSum += o.backwardSum;
      forwardSum += o.forwardSum;
      forwardGathers += o.forwardGathers;
      backwardGathers += o.backwardGathers;
      offloadBytes += o.offloadBytes;
      microBatchCompute += o.microBatchCompute;
      microBatchUnhidden += o.microBatchUnhidden;
      microBatchSends += o.microBatchSends;
      for (const auto &[to, send] : o.sendsTo) {
        StageCost::Sends &mine = sendsTo[to];
        mine.axes = send.axes;
        mine.seconds += send.seconds;
        mine.bytes += send.bytes;
      }
    }
  };
  std::map<int64_t, StageAccount> accounts;
  // The ops of the last micro-batch alone: they read (through their
  // operands) its inputs and no other micro-batch's. Two bits per value:
  // reads the last micro-batch's inputs, reads another's.
  int64_t lastMicroBatch = -1;
  for (unsigned i = 0; i < work.getNumArguments(); ++i)
    if (auto mb = work.getArgAttrOfType<IntegerAttr>(i, xf::XfDialect::kMicroBatchAttrName))
      lastMicroBatch = std::max<int64_t>(lastMicroBatch, mb.getInt());
  llvm::DenseMap<Value, uint8_t> readsInputs;
  if (lastMicroBatch > 0)
    for (unsigned i = 0; i < work.getNumArguments(); ++i)
      if (auto mb = work.getArgAttrOfType<IntegerAttr>(i, xf::XfDialect::kMicroBatchAttrName))
        readsInputs[work.getArgument(i)] = mb.getInt() == lastMicroBatch ? 1 : 2;
  auto inputsRead = [&](Operation *op) {
    uint8_t bits = 0;
    for (Value v : op->getOperands())
      if (auto it = readsInputs.find(v); it != readsInputs.end())
        bits |= it->second;
    return bits;
  };
  auto lastMicroBatchOnly = [&](Operation *op) { return inputsRead(op) == 1; };
  if (lastMicroBatch > 0)
    work.walk([&](Operation *op) {
      if (uint8_t bits = inputsRead(op))
        for (Value r : op->getResults())
          readsInputs[r] = bits;
    });
  auto account = [&](Operation *op, CollectiveStep::Kind kind, ArrayRef<Axis> axes,
                     double inBytes, double elements, bool gradient = false) {
    StageAccount &acc = accounts[stageKey(op)];
    CollectiveStep step;
    step.kind = kind;
    step.axes.assign(axes.begin(), axes.end());
    step.before = TensorSharding::replicated(0);
    double bytes = cost.stepBytes(step, inBytes);
    std::string axesName = mesh->axesName(axes);
    CollectiveRow &row = acc.row(kindName(kind).str(), axesName);
    row.count += 1;
    row.bytes += bytes;
    double seconds = cost.stepTime(step, inBytes);
    // (ZeRO's gradient reduce-scatters likewise: -xf-bucket-reduce-scatters.)
    if (gradient &&
        (kind == CollectiveStep::AllReduce ||
         (kind == CollectiveStep::ReduceScatter &&
          isBucketableReduceScatter(cast<shard::ReduceScatterOp>(op)))) &&
        mesh->size(step.axes) > 1) {
      seconds = bytes / cost.linkFor(step.axes).bandwidth;
      GradientGroup &group = (kind == CollectiveStep::AllReduce ? acc.gradientInput
                                                                : acc.scatterInput)[axesName];
      group.axes = step.axes;
      group.input += inBytes;
      group.count += 1;
    }
    if (gradient)
      acc.gradientSeconds += seconds;
    else if (lastMicroBatchOnly(op))
      acc.microBatchUnhidden += seconds;
    row.seconds += seconds;
    row.elements += elements;
    acc.bytesPerAxis[axesName] += bytes;
  };
  // Backward compute (what gradient reductions can hide behind): ops after
  // the loss gradient, the optimizer excluded.
  llvm::DenseSet<Operation *> backward;
  double computeSeconds = 0, computeSum = 0;
  // FLOPs of the whole step and of its replays (-xf-recompute's clones).
  double computeFlops = 0, recomputeFlops = 0, recomputeSum = 0;
  // Parameter gathers (ZeRO-3/FSDP, MiCS: an all-gather of a state argument)
  // do not depend on the computation: -xf-schedule issues them a layer ahead,
  // so they overlap the phase whose ops use them.
  std::vector<std::pair<Operation *, double>> parameterGathers;
  auto elems = [](Type t) {
    return static_cast<double>(cast<RankedTensorType>(t).getNumElements());
  };
  // A pipelined copy: compute per stage, point-to-point bytes per boundary.
  std::map<int64_t, double> stageSeconds;
  work.walk([&](Operation *op) {
    if (auto t = dyn_cast<xf::TransferOp>(op)) {
      // A send: its bytes once over the link of the pipeline axis, on the
      // sending stage.
      AxisList axes(t.getGridAxes().begin(), t.getGridAxes().end());
      std::string name = "send/recv " + std::to_string(t.getFrom()) + "->" +
                         std::to_string(t.getTo());
      StageAccount &acc = accounts[stageKey(op)];
      CollectiveRow &row = acc.row(name, mesh->axesName(axes));
      double bytes = tensorBytes(t.getInput().getType());
      const cost::Link &link = cost.linkFor(axes);
      row.count += 1;
      row.bytes += bytes;
      row.seconds += link.latency + bytes / link.bandwidth;
      row.elements += elems(t.getInput().getType());
      acc.bytesPerAxis[row.axes] += bytes;
      if (lastMicroBatchOnly(op)) {
        acc.microBatchUnhidden += link.latency + bytes / link.bandwidth;
        acc.microBatchSends += link.latency + bytes / link.bandwidth;
      }
      StageCost::Sends &send = acc.sendsTo[t.getTo()];
      send.axes = row.axes;
      send.seconds += link.latency + bytes / link.bandwidth;
      send.bytes += bytes;
      return;
    }
    if (auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op))
      if (auto stage = op->getAttrOfType<IntegerAttr>(xf::XfDialect::kStageAttrName)) {
        stageSeconds[stage.getInt()] +=
            cost.computeTime(xf::cachedShardingRule(iface).flops, cost::pricingType(op));
      }
  });
  work.walk([&](Operation *op) {
    // Collectives and transfers carry backward membership through.
    if (isa<xf::TransferOp>(op) || isa<shard::ShardDialect>(op->getDialect()))
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return v.getDefiningOp() && backward.contains(v.getDefiningOp());
          }))
        backward.insert(op);
    if (isa<xf::TransferOp>(op))
      return;
    if (auto ar = dyn_cast<shard::AllReduceOp>(op))
      account(op, CollectiveStep::AllReduce, ar.getGridAxes(),
              tensorBytes(ar.getInput().getType()), elems(ar.getInput().getType()),
              feedsOnlyTheOptimizer(op));
    else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op))
      account(op, CollectiveStep::ReduceScatter, rs.getGridAxes(),
              tensorBytes(rs.getInput().getType()), elems(rs.getInput().getType()),
              feedsOnlyTheOptimizer(op));
    else if (auto a2a = dyn_cast<shard::AllToAllOp>(op))
      account(op, CollectiveStep::AllToAll, a2a.getGridAxes(),
              tensorBytes(a2a.getInput().getType()), elems(a2a.getInput().getType()));
    else if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
      // A gather of step arguments (a bucket of them: reshaped, side by side).
      bool parameter = xf::isArgumentLayout(ag.getInput(), [](Operation *def) {
        return isa<xf::ReshapeOp, xf::ConcatOp, xf::CastOp>(def);
      });
      CollectiveStep step;
      step.kind = CollectiveStep::AllGather;
      step.axes.assign(ag.getGridAxes().begin(), ag.getGridAxes().end());
      step.before = TensorSharding::replicated(0);
      double inBytes = tensorBytes(ag.getInput().getType());
      // A whole-step gather of parameters (ZeRO-1/2) is what
      // -xf-bucket-all-gathers merges: its bandwidth time here, its ring
      // latencies once per bucket below.
      if (isBucketableAllGather(ag) && mesh->size(step.axes) > 1) {
        StageAccount &acc = accounts[stageKey(op)];
        double bytes = cost.stepBytes(step, inBytes);
        double seconds = bytes / cost.linkFor(step.axes).bandwidth;
        std::string axesName = mesh->axesName(step.axes);
        CollectiveRow &row = acc.row(kindName(CollectiveStep::AllGather).str(), axesName);
        row.count += 1;
        row.bytes += bytes;
        row.seconds += seconds;
        row.elements += elems(ag.getResult().getType());
        acc.bytesPerAxis[axesName] += bytes;
        GradientGroup &group = acc.gatherInput[axesName];
        group.axes = step.axes;
        group.input += tensorBytes(ag.getResult().getType());
        group.count += 1;
        parameterGathers.push_back({op, seconds});
        return;
      }
      if (parameter)
        parameterGathers.push_back({op, cost.stepTime(step, inBytes)});
      account(op, CollectiveStep::AllGather, ag.getGridAxes(), inBytes,
              elems(ag.getResult().getType()));
    }
    else if (auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op)) {
      const xf::OpShardingRule &rule = xf::cachedShardingRule(iface);
      auto d = readDecision(op, rule.factors.size());
      double seconds = cost.computeTime(rule.flops, cost::pricingType(op));
      StageAccount &acc = accounts[stageKey(op)];
      computeSeconds += seconds;
      computeSum += seconds;
      acc.computeSum += seconds;
      computeFlops += rule.flops;
      if (lastMicroBatchOnly(op))
        acc.microBatchCompute += seconds;
      if (op->hasAttr(xf::XfDialect::kRecomputedAttrName)) {
        recomputeFlops += rule.flops;
        recomputeSum += seconds;
      }
      bool isBackward = isa<xf::CrossEntropyGradOp, xf::LinearCrossEntropyGradOp>(op) ||
                        llvm::any_of(op->getOperands(), [&](Value v) {
                          return v.getDefiningOp() && backward.contains(v.getDefiningOp());
                        });
      bool optimizer =
          isa<xf::AdamWOp, xf::MultiAdamWOp, xf::SumSquaresOp, xf::MultiSumSquaresOp>(op);
      if (isBackward && !optimizer) {
        backward.insert(op);
        acc.backwardSum += seconds;
      } else if (!optimizer) {
        acc.forwardSum += seconds;
      }
      if (!d)
        return;
      // What the op exchanges itself: a mean over split tokens one count
      // per rank; a split log-sum-exp its per-row statistics.
      AxisList tokenAxes;
      double rows = 1;
      for (size_t f = 0; f < rule.factors.size(); ++f)
        if (rule.factors[f].normalized) {
          tokenAxes.append(d->factorAxes[f].begin(), d->factorAxes[f].end());
          rows *= rule.factors[f].size;
        }
      if (!tokenAxes.empty())
        account(op, CollectiveStep::AllReduce, tokenAxes, 4, 1);
      for (size_t f = 0; f < rule.factors.size(); ++f)
        if (rule.factors[f].logSumExp && !d->factorAxes[f].empty()) {
          double scalars = rows * rule.lseStatisticsPerRow;
          account(op, CollectiveStep::AllReduce, d->factorAxes[f], scalars * 4, scalars);
        }
    }
  });
  for (auto [gather, seconds] : parameterGathers) {
    // A whole-step gather (ZeRO-1/2, xf.gather_once) is issued for the
    // forward; a per-run one for the phase whose ops read it.
    bool forBackward = !gather->hasAttr(kGatherOnceAttr) &&
                       llvm::any_of(gather->getUsers(), [&](Operation *user) {
                         return backward.contains(user) ||
                                llvm::any_of(user->getUsers(),
                                             [&](Operation *u) { return backward.contains(u); });
                       });
    StageAccount &acc = accounts[stageKey(gather)];
    (forBackward ? acc.backwardGathers : acc.forwardGathers) += seconds;
  }

  // Memory per device: the compiled step's own plan. The partitioned copy
  // goes through what `shardc compile` runs next (-xf-schedule, then
  // -xf-plan-memory), so these are the arenas a compiled step allocates:
  // activations are the planned workspace, not a second estimate.
  // Without `planMemory` (the planner's communication floors, which read
  // time and bytes only) every arena is reported as 0.
  std::vector<int64_t> arenaBytes(memory::NumArenas, 0);
  if (options.planMemory) {
    PassManager planner(copy->getContext());
    planner.enableVerifier(options.verifyPasses);
    XfScheduleOptions scheduleOptions;
    scheduleOptions.function = options.function;
    planner.nest<func::FuncOp>().addPass(createXfSchedule(scheduleOptions));
    if (options.offloadActivations) {
      XfOffloadActivationsOptions offload;
      offload.function = options.function;
      offload.minBytes = options.offloadMinBytes;
      planner.nest<func::FuncOp>().addPass(createXfOffloadActivations(offload));
    }
    XfPlanMemoryOptions planOptions;
    planOptions.function = options.function;
    planOptions.placements = false; // the sizes are the report's; nothing lowers this copy
    planner.addPass(createXfPlanMemory(planOptions));
    if (failed(planner.run(*copy)))
      return failure();
    auto planned = work->getAttrOfType<DenseI64ArrayAttr>(memory::kArenaBytesAttr);
    if (!planned || planned.size() != memory::NumArenas) {
      work.emitError("xf-report-sharding: the memory plan wrote no arena sizes");
      return failure();
    }
    arenaBytes.assign(planned.asArrayRef().begin(), planned.asArrayRef().end());
  }
  // The bytes each rank copies out (and back) per step, on its stage.
  work.walk([&](xf::OffloadOp op) {
    accounts[pipelined ? xf::stageOf(op.getResult()) : -1].offloadBytes +=
        static_cast<double>(memory::byteSize(cast<ShapedType>(op.getType())));
  });

  // The stages' costs: each stage's own account and what every stage runs;
  // its gradient all-reduces' ring latencies once per bucket of its own
  // gradients (each stage's ranks bucket theirs).
  std::vector<StageAccount> stageAccounts;
  if (pipelined) {
    int64_t stages = work->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName)
                         .getAs<IntegerAttr>("stages")
                         .getInt();
    for (int64_t s = 0; s < stages; ++s) {
      StageAccount acc = accounts.count(s) ? accounts[s] : StageAccount{};
      if (accounts.count(-1))
        acc.add(accounts[-1]);
      stageAccounts.push_back(std::move(acc));
    }
  } else {
    stageAccounts.push_back(accounts[-1]);
  }
  std::vector<StageCost> stageCosts;
  for (StageAccount &acc : stageAccounts) {
    StageCost sc;
    // Each group's ring latencies (`hops` link latencies per bucket; an
    // all-reduce's as stepTime prices them, a tree's across nodes where
    // less) once per bucket, onto its row and the phase that can hide them.
    auto price = [&](std::map<std::string, GradientGroup> &groups, CollectiveStep::Kind kind,
                     double hops, std::map<std::string, GradientBuckets> &out, double &phase) {
      for (auto &[axesName, group] : groups) {
        GradientBuckets &b = out[axesName];
        b.input = group.input;
        b.count = static_cast<double>(group.count);
        b.bucketBytes = static_cast<double>(options.bucketBytes);
        b.perBucket = kind == CollectiveStep::AllReduce
                          ? cost.allReduceOverhead(group.axes, b.bucketBytes > 0
                                                                   ? b.bucketBytes
                                                                   : b.input / std::max(b.count, 1.0))
                          : hops * static_cast<double>(mesh->size(group.axes) - 1) *
                                cost.linkFor(group.axes).latency;
        b.latency = b.priced();
        acc.row(kindName(kind).str(), axesName).seconds += b.latency;
        phase += b.latency;
      }
    };
    price(acc.gradientInput, CollectiveStep::AllReduce, 2, sc.buckets, acc.gradientSeconds);
    price(acc.scatterInput, CollectiveStep::ReduceScatter, 1, sc.scatterBuckets,
          acc.gradientSeconds);
    price(acc.gatherInput, CollectiveStep::AllGather, 1, sc.gatherBuckets, acc.forwardGathers);
    for (auto &[key, row] : acc.rows) {
      sc.commSeconds += row.seconds;
      sc.commBytes += row.bytes;
    }
    sc.bytesPerAxis = acc.bytesPerAxis;
    sc.gradientSeconds = acc.gradientSeconds;
    sc.forwardGatherSeconds = acc.forwardGathers;
    sc.backwardGatherSeconds = acc.backwardGathers;
    sc.computeSum = acc.computeSum;
    sc.backwardSum = acc.backwardSum;
    sc.forwardSum = acc.forwardSum;
    sc.offloadBytes = acc.offloadBytes;
    sc.microBatchCompute = acc.microBatchCompute;
    sc.microBatchUnhidden = acc.microBatchUnhidden;
    sc.microBatchSends = acc.microBatchSends;
    sc.sendsTo = acc.sendsTo;
    stageCosts.push_back(std::move(sc));
  }

  // The rest of the text after the collectives (which are the busiest
  // stage's, known once the pipeline's compute is).
  std::string laterText;
  llvm::raw_string_ostream later(laterText);
  // The workspace: the activations' own peak, what the kernels' scratch (the
  // fused loss's logit chunks, ...) adds to it, and what the collectives'
  // staging adds to that.
  const int64_t workspace = arenaBytes[memory::Workspace];
  int64_t activations = workspace, unstaged = workspace;
  if (auto a = work->getAttrOfType<IntegerAttr>(memory::kActivationBytesAttr))
    activations = std::min(a.getInt(), workspace);
  if (auto u = work->getAttrOfType<IntegerAttr>(memory::kUnstagedBytesAttr))
    unstaged = std::clamp<int64_t>(u.getInt(), activations, workspace);
  const std::pair<const char *, int64_t> memoryRows[] = {
      {"parameters", arenaBytes[memory::Params]},
      {"gradients", arenaBytes[memory::Grads]},
      {"optimizer state", arenaBytes[memory::Optimizer]},
      {"inputs", arenaBytes[memory::Inputs]},
      {"activations", activations},
      {"kernel scratch", unstaged - activations},
      {"collective staging", workspace - unstaged}};
  llvm::json::Object memory;
  int64_t total = 0;
  later << "\nmemory per device (the compiled step's plan):\n";
  for (auto [name, bytes] : memoryRows) {
    later << llvm::formatv("  {0,-16} {1,14}\n", name, bytes);
    memory[name] = bytes;
    total += bytes;
  }
  memory["total"] = total;
  later << llvm::formatv("  {0,-16} {1,14}\n", "total", total);
  // Of the activations, what the forward stores for the backward (what the
  // activation formulas of Megatron-LM count); the rest of the peak is the
  // backward's working set.
  std::optional<int64_t> storedActivations;
  if (auto st = work->getAttrOfType<IntegerAttr>(memory::kStoredActivationBytesAttr)) {
    storedActivations = st.getInt();
    later << llvm::formatv("  of the activations, {0} stored by the forward for the backward "
                           "(the rest of the peak is the backward's working set)\n",
                           *storedActivations);
  }
  // Offloaded activations live in host memory, outside the device's total.
  memory["host"] = arenaBytes[memory::Host];
  if (options.offloadActivations)
    later << llvm::formatv("  {0,-16} {1,14}  (offloaded activations, host memory)\n", "host",
                           arenaBytes[memory::Host]);
  if (!notTakenText.empty())
    later << "\nsplits not taken:\n" << notTakenText;
  llvm::json::Object spareJson;
  if (!spareSplits.empty()) {
    later << "\nsplit by query rows (each shard attends its rows to every key):\n";
    for (const auto &[what, n] : spareSplits) {
      later << llvm::formatv("  {0}: {1} ops\n", what, n);
      spareJson[what] = n;
    }
  }
  llvm::json::Object pipelineJson;
  if (auto pipeline = work->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName)) {
    // Per stage (a row), the units in their time slots: F<j> the forward
    // and B<j> the backward of micro-batch j (a backward takes two slots;
    // interleaved chunks add ".<chunk>"), '.' an idle slot.
    auto slots = pipeline.getAs<ArrayAttr>("slots");
    int64_t makespan = pipeline.getAs<IntegerAttr>("makespan").getInt();
    int64_t virtualStagesUsed = pipeline.getAs<IntegerAttr>("virtual_stages").getInt();
    double bubble = pipeline.getAs<FloatAttr>("bubble").getValueAsDouble();
    int64_t stages = pipeline.getAs<IntegerAttr>("stages").getInt();
    int64_t mbs = pipeline.getAs<IntegerAttr>("micro_batches").getInt();
    later << llvm::formatv("\npipeline: {0} stages over axis '{1}', schedule {2}, {3} "
                           "micro-batches",
                           stages, pipeline.getAs<StringAttr>("axis_name").getValue(),
                           pipeline.getAs<StringAttr>("schedule").getValue(), mbs);
    if (virtualStagesUsed > 1)
      later << ", " << virtualStagesUsed << " virtual stages";
    later << "\n  layers per chunk:";
    for (auto [c, range] : llvm::enumerate(pipeline.getAs<ArrayAttr>("chunk_layers"))) {
      auto r = cast<DenseI64ArrayAttr>(range);
      later << llvm::formatv(" [{0}] {1}-{2}", c, r[0], r[1]);
    }
    later << "\n";
    int width = virtualStagesUsed > 1 ? 6 : 4;
    for (auto [s, row] : llvm::enumerate(slots)) {
      std::vector<std::string> cells(makespan, std::string("."));
      for (Attribute a : cast<ArrayAttr>(row)) {
        auto u = cast<DenseI64ArrayAttr>(a); // start, duration, backward, mb, chunk
        std::string label = (u[2] ? "B" : "F") + std::to_string(u[3]);
        if (virtualStagesUsed > 1)
          label += "." + std::to_string(u[4]);
        for (int64_t t = u[0]; t < u[0] + u[1] && t < makespan; ++t)
          cells[t] = label;
      }
      later << llvm::formatv("  stage {0,-2}|", s);
      for (const std::string &c : cells)
        later << c << std::string(std::max<size_t>(1, width - c.size()), ' ');
      later << "\n";
    }
    double formula = static_cast<double>(stages - 1) /
                     static_cast<double>(virtualStagesUsed * mbs + stages - 1);
    later << llvm::formatv("  bubble {0:F4} of the step (formula (p-1)/(v*m+p-1) = {1:F4})\n",
                           bubble, formula);
    llvm::json::Array boundary, perStage;
    later << "  bytes sent per step across stage boundaries:\n";
    for (Attribute a : pipeline.getAs<ArrayAttr>("transfer_bytes")) {
      auto b = cast<DenseI64ArrayAttr>(a);
      later << llvm::formatv("    {0} -> {1}  {2}\n", b[0], b[1], b[2]);
      boundary.push_back(llvm::json::Object{{"from", b[0]}, {"to", b[1]}, {"bytes", b[2]}});
    }
    llvm::json::Array stageMemory, stageWorkspace;
    if (auto bytesAttr = work->getAttrOfType<DenseI64ArrayAttr>(memory::kStageBytesAttr)) {
      auto ws = work->getAttrOfType<DenseI64ArrayAttr>(memory::kStageWorkspaceAttr);
      later << "  memory per stage (all arenas / activations):";
      for (int64_t s = 0; s < bytesAttr.size(); ++s) {
        later << llvm::formatv(" [{0}] {1} / {2}", s, bytesAttr[s], ws ? ws[s] : 0);
        stageMemory.push_back(bytesAttr[s]);
        stageWorkspace.push_back(ws ? ws[s] : 0);
      }
      later << "\n";
    }
    double slowest = 0;
    later << "  compute per stage (ms):";
    for (auto &[s, secs] : stageSeconds) {
      later << llvm::formatv(" [{0}] {1:F3}", s, secs * 1e3);
      perStage.push_back(secs);
      slowest = std::max(slowest, secs);
    }
    later << "\n  communication per stage (ms, bytes per device):";
    for (auto [s, sc] : llvm::enumerate(stageCosts))
      later << llvm::formatv(" [{0}] {1:F3} {2}", s, sc.commSeconds * 1e3,
                             static_cast<int64_t>(sc.commBytes));
    later << "\n";
    // A stage computes its share; the bubble idles it for that fraction.
    computeSeconds = bubble < 1 ? slowest / (1 - bubble) : slowest;
    pipelineJson = llvm::json::Object{{"stages", stages},
                                      {"schedule", pipeline.getAs<StringAttr>("schedule").str()},
                                      {"micro_batches", mbs},
                                      {"virtual_stages", virtualStagesUsed},
                                      {"bubble", bubble},
                                      {"bubble_formula", formula},
                                      {"makespan_slots", makespan},
                                      {"transfer_bytes", std::move(boundary)},
                                      {"compute_seconds_per_stage", std::move(perStage)},
                                      {"memory_bytes_per_stage", std::move(stageMemory)},
                                      {"activation_bytes_per_stage", std::move(stageWorkspace)},
                                      {"slots", attrJson(slots)}};
  }
  // The step: each stage's communication against its phases' shares of the
  // compute; the busiest stage bounds it.
  int64_t pipelineMicroBatches = 0;
  if (auto pipeline = work->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName))
    pipelineMicroBatches = pipeline.getAs<IntegerAttr>("micro_batches").getInt();
  ModelledStep modelled =
      modelStep(stageCosts, computeSeconds, hw->hostBandwidth, pipelineMicroBatches);
  const StageCost &busiest = stageCosts[modelled.busiest];
  const StageAccount &busiestAccount = stageAccounts[modelled.busiest];
  double commSeconds = busiest.commSeconds, commBytes = busiest.commBytes;
  if (pipelined)
    os << llvm::formatv("\ncollectives per step of stage {0}, the busiest (bytes per device, "
                        "ring):\n",
                        modelled.busiest);
  else
    os << "\ncollectives per step (bytes per device, ring):\n";
  os << llvm::formatv("  {0,-16} {1,-10} {2,6} {3,16} {4,12}\n", "kind", "axes", "count",
                      "bytes", "time (ms)");
  llvm::json::Array collectives;
  for (auto &[key, row] : busiestAccount.rows) {
    os << llvm::formatv("  {0,-16} {1,-10} {2,6} {3,16} {4,12:F3}\n", row.kind, row.axes,
                        row.count, static_cast<int64_t>(row.bytes), row.seconds * 1e3);
    collectives.push_back(llvm::json::Object{{"kind", row.kind},
                                             {"axes", row.axes},
                                             {"count", row.count},
                                             {"bytes", row.bytes},
                                             {"elements", row.elements},
                                             {"seconds", row.seconds}});
  }
  llvm::json::Object perAxis;
  os << "\nbytes per mesh axis:\n";
  for (auto &[axes, bytes] : busiest.bytesPerAxis) {
    os << llvm::formatv("  {0,-10} {1}\n", axes, static_cast<int64_t>(bytes));
    perAxis[axes] = bytes;
  }
  os << laterText;
  if (recomputeFlops > 0)
    os << llvm::formatv("\nrecomputation: {0:E3} FLOP replayed per step, {1:F1}% of the step's "
                        "{2:E3} ({3:F3} ms of the modelled compute)\n",
                        recomputeFlops, 100.0 * recomputeFlops / computeFlops, computeFlops,
                        computeSum > 0 ? computeSeconds * recomputeSum / computeSum * 1e3 : 0.0);
  if (busiest.offloadBytes > 0) {
    if (hw->hostBandwidth > 0)
      os << llvm::formatv("\nactivation offload: {0} bytes out and back per step over the host "
                          "link ({1:F1} GB/s): {2:F3} ms each way, exposed {3:F3} ms\n",
                          static_cast<int64_t>(busiest.offloadBytes), hw->hostBandwidth / 1e9,
                          modelled.offloadSeconds * 1e3, modelled.exposedOffloadSeconds * 1e3);
    else
      os << llvm::formatv("\nactivation offload: {0} bytes out and back per step (not priced: "
                          "the hardware file gives no host_bandwidth)\n",
                          static_cast<int64_t>(busiest.offloadBytes));
  }
  os << llvm::formatv("\nmodelled step: compute {0:F3} ms + exposed communication {1:F3} ms "
                      "{10}= {2:F3} ms (communication {3:F3} ms; the gradient reductions' {4:F3} "
                      "ms and parameter gathers' {5:F3} ms overlap the backward's {6:F3} ms, "
                      "parameter gathers' {7:F3} ms the forward's {8:F3} ms{9})\n",
                      computeSeconds * 1e3, modelled.exposedSeconds * 1e3,
                      modelled.stepSeconds * 1e3, commSeconds * 1e3,
                      busiest.gradientSeconds * 1e3, busiest.backwardGatherSeconds * 1e3,
                      modelled.backwardShare * 1e3, busiest.forwardGatherSeconds * 1e3,
                      modelled.forwardShare * 1e3,
                      pipelineJson.empty()
                          ? ""
                          : llvm::formatv("; compute: slowest stage over 1 - bubble; "
                                          "communication: stage {0}'s",
                                          modelled.busiest)
                                .str(),
                      modelled.exposedOffloadSeconds > 0
                          ? llvm::formatv("+ exposed offload {0:F3} ms ",
                                          modelled.exposedOffloadSeconds * 1e3)
                                .str()
                          : std::string());

  llvm::json::Array stageCostsJson;
  for (const StageCost &sc : stageCosts)
    stageCostsJson.push_back(stageCostJson(sc));
  llvm::json::Object root{{"function", options.function},
                          {"mesh", mesh->str()},
                          {"hardware", hw->name},
                          {"host_bandwidth", hw->hostBandwidth},
                          {"values", std::move(values)},
                          {"collectives", std::move(collectives)},
                          {"bytes_per_axis", std::move(perAxis)},
                          {"communication_bytes", commBytes},
                          {"communication_seconds", commSeconds},
                          {"compute_seconds", computeSeconds},
                          {"splits_not_taken", std::move(notTakenJson)},
                          {"state_not_split", std::move(stateNotSplit)},
                          {"query_row_splits", std::move(spareJson)},
                          {"gradient_reduction_seconds", busiest.gradientSeconds},
                          {"backward_compute_seconds", modelled.backwardShare},
                          {"forward_compute_seconds", modelled.forwardShare},
                          // The sums the shares are taken from (every op's
                          // time, the backward's, the forward's; for a
                          // pipeline the busiest stage's, before the bubble).
                          {"compute_seconds_sum", busiest.computeSum},
                          {"backward_compute_seconds_sum", busiest.backwardSum},
                          {"forward_compute_seconds_sum", busiest.forwardSum},
                          {"forward_parameter_gather_seconds", busiest.forwardGatherSeconds},
                          {"backward_parameter_gather_seconds", busiest.backwardGatherSeconds},
                          {"exposed_communication_seconds", modelled.exposedSeconds},
                          {"compute_flops", computeFlops},
                          {"recompute_flops", recomputeFlops},
                          {"offload_bytes", busiest.offloadBytes},
                          {"offload_seconds", modelled.offloadSeconds},
                          {"exposed_offload_seconds", modelled.exposedOffloadSeconds},
                          {"step_seconds", modelled.stepSeconds},
                          {"stage_costs", std::move(stageCostsJson)},
                          {"busiest_stage", static_cast<int64_t>(modelled.busiest)},
                          {"memory_bytes", std::move(memory)}};
  if (!pipelineJson.empty())
    root["pipeline"] = std::move(pipelineJson);
  if (storedActivations)
    root["stored_activation_bytes"] = *storedActivations;
  StepReport report;
  report.json = std::move(root);
  report.text = std::move(text);
  return report;
}

namespace {

class ReportSharding : public shardc::impl::XfReportShardingBase<ReportSharding> {
public:
  using XfReportShardingBase::XfReportShardingBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-report-sharding");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    StepReportOptions options;
    options.function = function.getValue();
    options.hardware = hardware.getValue();
    options.pipelineAxis = pipelineAxis.getValue();
    options.schedule = schedule.getValue();
    options.virtualStages = virtualStages.getValue();
    options.cuts = cuts.getValue();
    options.scheduleStages = scheduleStages.getValue();
    options.bucketBytes = bucketBytes.getValue();
    options.offloadActivations = offloadActivations.getValue();
    options.offloadMinBytes = offloadMinBytes.getValue();
    FailureOr<StepReport> report = reportStep(func, options);
    if (failed(report))
      return signalPassFailure();
    std::string out;
    if (json) {
      llvm::raw_string_ostream js(out);
      js << llvm::formatv("{0:2}", llvm::json::Value(std::move(report->json))) << "\n";
    } else {
      out = report->text;
    }
    std::string err;
    auto file = openOutputFile(output, &err);
    if (!file) {
      func.emitError() << "cannot write the report: " << err;
      return signalPassFailure();
    }
    file->os() << out;
    file->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace
