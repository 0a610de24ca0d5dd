//===- Planner.cpp - shardc plan ------------------------------------------===//

#include "compiler/planner/Planner.h"

#include "compiler/cost/CostModel.h"
#include "compiler/planner/Lookahead.h"
#include "compiler/pipelines/Pipelines.h"
#include "dialects/xf/Params.h"
#include "models/ModelGen.h"
#include "passes/Debug.h"
#include "passes/sharding/StepReport.h"
#include "passes/sharding/Strategies.h"
#include "runtime/program/StepLog.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include "passes/sharding/PipelineSchedule.h"

#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

using namespace mlir;
using namespace shardc;
using namespace shardc::planner;

#define DEBUG_TYPE "plan"

//===----------------------------------------------------------------------===//
// Candidate
//===----------------------------------------------------------------------===//

std::string Candidate::mesh() const {
  std::vector<std::string> axes;
  if (pp > 1)
    axes.push_back("pp=" + std::to_string(pp));
  if (data == "mics" && shard > 1) {
    axes.push_back("dp=" + std::to_string(dp / shard));
    axes.push_back("shard=" + std::to_string(shard));
  } else if (shard > 1) {
    axes.push_back("dp=" + std::to_string(dp / shard));
    axes.push_back("dq=" + std::to_string(shard));
  } else if (dp > 1) {
    axes.push_back("dp=" + std::to_string(dp));
  }
  if (tp > 1)
    axes.push_back("tp=" + std::to_string(tp));
  if (axes.empty())
    axes.push_back("dp=1");
  return llvm::join(axes, ",");
}

std::string Candidate::strategy() const {
  std::vector<std::string> parts;
  if (pp > 1)
    parts.push_back("pp");
  if (data != "mics" && shard > 1)
    parts.push_back(data + "@dp,dq");
  else if (dp > 1 || (pp == 1 && tp == 1))
    parts.push_back(data);
  if (tp > 1)
    parts.push_back("tp");
  if (sp)
    parts.push_back("sp");
  return llvm::join(parts, "+");
}

std::string Candidate::cuts(int64_t layers) const {
  if (pp == 1)
    return "";
  int64_t per = layers / chunks();
  std::vector<std::string> at;
  for (int64_t c = 1; c < chunks(); ++c)
    at.push_back(std::to_string(c * per));
  return llvm::join(at, ",");
}

std::vector<std::string> Candidate::flags(int64_t layers, const std::string &precision) const {
  std::vector<std::string> f = {"--mesh", mesh(), "--strategy", strategy(), "--precision",
                                precision};
  if (microBatches > 1)
    f.insert(f.end(), {"--micro-batches", std::to_string(microBatches)});
  if (pp > 1) {
    f.insert(f.end(), {"--schedule", schedule, "--pipeline-cuts", cuts(layers)});
    if (virtualStages > 1)
      f.insert(f.end(), {"--virtual-stages", std::to_string(virtualStages)});
  }
  if (recompute != "none")
    f.insert(f.end(), {"--recompute", recompute});
  if (regather)
    f.push_back("--regather-for-backward");
  if (offload)
    f.push_back("--offload-activations");
  if (!attentionRows.empty())
    f.insert(f.end(), {"--attention-rows", attentionRows});
  return f;
}

namespace {

std::string label(const Candidate &c) {
  return llvm::formatv("{0} {1} mb={2}{3} recompute={4}", c.mesh(), c.strategy(), c.microBatches,
                       c.pp > 1 ? " " + c.schedule : std::string(), c.memoryPolicy())
      .str();
}

//===----------------------------------------------------------------------===//
// Evaluation: the compiler's own report
//===----------------------------------------------------------------------===//

/// What the extrapolation and the micro-batch composition need beyond the
/// prediction: per pipeline stage its costs (communication, the compute sums
/// the phase shares are taken from), its compute and its workspace
/// (activations and scratch). The prediction's communication figures are
/// the busiest stage's (modelStep, as the report takes them).
struct Raw {
  Prediction p;
  std::vector<StageCost> stages; ///< one per pipeline stage; one unpipelined
  std::vector<double> stageSeconds, stageWorkspace;
  double hostBandwidth = 0;
  int64_t pipelineMicroBatches = 0; ///< 0: not pipelined
};

/// The first error of the evaluation running on this thread goes here
/// (EvaluationDiagnostics); nothing of an evaluation reaches stderr.
thread_local std::string *evaluationError = nullptr;

/// While alive, diagnostics emitted during an evaluation go to that
/// evaluation's error (the search's threads evaluate side by side in one
/// context, so one handler serves them all); others pass on.
class EvaluationDiagnostics {
public:
  explicit EvaluationDiagnostics(MLIRContext *ctx)
      : handler_(ctx, [](Diagnostic &d) -> LogicalResult {
          if (!evaluationError)
            return failure();
          if (evaluationError->empty() && d.getSeverity() == DiagnosticSeverity::Error)
            *evaluationError = d.str();
          return success();
        }) {}

private:
  ScopedDiagnosticHandler handler_;
};

/// Points this thread's evaluation errors at `error` for its lifetime.
class EvaluationErrorScope {
public:
  explicit EvaluationErrorScope(std::string &error) : previous_(evaluationError) {
    evaluationError = &error;
  }
  ~EvaluationErrorScope() { evaluationError = previous_; }

private:
  std::string *previous_;
};

double number(const llvm::json::Object &o, llvm::StringRef key) {
  if (auto v = o.getNumber(key))
    return *v;
  if (auto v = o.getInteger(key))
    return static_cast<double>(*v);
  return 0;
}

/// The prediction's step and communication from the stages' costs and the
/// compute, by the report's own model (modelStep).
void finishStep(Raw &raw) {
  Prediction &p = raw.p;
  ModelledStep m =
      modelStep(raw.stages, p.computeSeconds, raw.hostBandwidth, raw.pipelineMicroBatches);
  p.stepSeconds = m.stepSeconds;
  p.exposedSeconds = m.exposedSeconds;
  p.forwardSeconds = m.forwardShare;
  p.backwardSeconds = m.backwardShare;
  p.offloadSeconds = m.offloadSeconds;
  p.exposedOffloadSeconds = m.exposedOffloadSeconds;
  if (raw.stages.empty())
    return;
  const StageCost &s = raw.stages[m.busiest];
  p.commSeconds = s.commSeconds;
  p.commBytes = s.commBytes;
  p.bytesPerAxis = s.bytesPerAxis;
  p.gradientSeconds = s.gradientSeconds;
  p.forwardGatherSeconds = s.forwardGatherSeconds;
  p.backwardGatherSeconds = s.backwardGatherSeconds;
  p.offloadBytes = s.offloadBytes;
}

Raw fromReport(const llvm::json::Object &r) {
  Raw raw;
  Prediction &p = raw.p;
  p.computeSeconds = number(r, "compute_seconds");
  raw.hostBandwidth = number(r, "host_bandwidth");
  if (const llvm::json::Object *mem = r.getObject("memory_bytes"))
    for (const auto &[k, v] : *mem)
      p.memory[k.str()] = v.getAsNumber().value_or(0);
  if (const llvm::json::Array *stages = r.getArray("stage_costs"))
    for (const llvm::json::Value &s : *stages)
      if (const llvm::json::Object *o = s.getAsObject())
        raw.stages.push_back(stageCostFromJson(*o));
  if (const llvm::json::Object *pipe = r.getObject("pipeline")) {
    p.bubble = number(*pipe, "bubble");
    raw.pipelineMicroBatches = static_cast<int64_t>(number(*pipe, "micro_batches"));
    auto read = [&](llvm::StringRef key, std::vector<double> &out) {
      if (const llvm::json::Array *s = pipe->getArray(key))
        for (const llvm::json::Value &v : *s)
          out.push_back(v.getAsNumber().value_or(0));
    };
    read("compute_seconds_per_stage", raw.stageSeconds);
    read("activation_bytes_per_stage", raw.stageWorkspace);
  }
  finishStep(raw);
  return raw;
}

/// The training step of `model` for the candidate's precision, micro-batches
/// and recomputation (what the mesh and strategy do not change).
FailureOr<OwningOpRef<ModuleOp>> trainStep(ModuleOp model, const Candidate &c,
                                           const Request &request) {
  OwningOpRef<ModuleOp> m(cast<ModuleOp>(model->clone()));
  func::FuncOp forward = xf::getModelFunction(*m, "");
  if (!forward)
    return failure();
  PipelineOptions o;
  o.function = forward.getSymName().str();
  o.precision = request.precision;
  o.microBatches = c.microBatches;
  o.recompute = c.recompute;
  o.regather = c.regather;
  PassManager pm(model.getContext());
  // Figures only, from thousands of compiles: the IR is not verified after
  // each pass (what the planner chooses is compiled, and verified, by
  // `shardc compile`).
  pm.enableVerifier(false);
  buildTrainStepPipeline(pm, o);
  if (failed(pm.run(*m)))
    return failure();
  return m;
}

/// Steps already synthesized, by (model, micro-batches, memory policy), a
/// few at a time (a 1.5B model's step is hundreds of MB); shared by the
/// search's threads, each step held by whoever clones it.
struct StepCache {
  std::mutex mutex;
  std::map<std::tuple<Operation *, int64_t, std::string>, std::shared_ptr<OwningOpRef<ModuleOp>>>
      steps;
};

/// SHARDC_DEBUG=plan's clock and thread numbers (which compiles overlapped,
/// where a thread idled).
const auto processStart = std::chrono::steady_clock::now();
int threadNumber() {
  static std::atomic<int> next{0};
  thread_local int number = next++;
  return number;
}

/// `attentionRows`: one evaluation's choice of attention rows, shared by its
/// compiles: given where set (else the candidate's, else auto), and set from
/// the first compile that made one (xf.attention_rows). `longer`: the
/// pipeline that `c`, its first, two middle and last stages, stands for:
/// each compiled stage ordered as its stage there, the links priced on its
/// mesh. `planMemory` false: time and bytes only (every arena 0).
FailureOr<Raw> evaluateRaw(ModuleOp model, const Candidate &c, const Request &request,
                           int64_t layers, std::string &error, StepCache *cache = nullptr,
                           std::string *attentionRows = nullptr,
                           const Candidate *longer = nullptr, bool planMemory = true) {
  const std::string pricingMesh = longer ? longer->mesh() : "";
  MLIRContext *ctx = model.getContext();
  // The first diagnostic is the reason (EvaluationDiagnostics routes it).
  EvaluationErrorScope errors(error);
  // SHARDC_DEBUG=plan: each compile and its time (where the plan's goes).
  auto started = std::chrono::steady_clock::now();
  auto timed = llvm::make_scope_exit([&] {
    SHARDC_DEBUG(DBGS() << llvm::formatv(
                     "compiled {0} {1} m={2} {3} v={4} {5}{6} over {7} layers{8}: {9:f3} s, "
                     "ended at {10:f3} s on thread {11}\n",
                     c.mesh(), c.strategy(), c.microBatches, c.schedule, c.virtualStages,
                     c.recompute, c.regather ? "+regather" : "", layers,
                     pricingMesh.empty() ? "" : " priced on " + pricingMesh,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                         .count(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - processStart)
                         .count(),
                     threadNumber()));
  });
  OwningOpRef<ModuleOp> m;
  auto key = std::make_tuple(model.getOperation(), c.microBatches,
                             c.recompute + (c.regather ? "+regather" : ""));
  std::shared_ptr<OwningOpRef<ModuleOp>> cached;
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    if (auto it = cache->steps.find(key); it != cache->steps.end())
      cached = it->second;
  }
  if (cached) {
    m = cast<ModuleOp>((**cached)->clone());
  } else {
    FailureOr<OwningOpRef<ModuleOp>> stepped = trainStep(model, c, request);
    if (failed(stepped))
      return failure();
    m = std::move(*stepped);
    if (cache) {
      auto copy = std::make_shared<OwningOpRef<ModuleOp>>(cast<ModuleOp>(m->clone()));
      std::lock_guard<std::mutex> lock(cache->mutex);
      if (!cache->steps.count(key) && cache->steps.size() >= 4)
        cache->steps.clear();
      cache->steps[key] = std::move(copy);
    }
  }
  PipelineOptions o;
  auto step = m->lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    error = "no @train_step was synthesized";
    return failure();
  }
  // `m` is this evaluation's own copy: the step is sharded, and then
  // partitioned by the report, in place.
  func::FuncOp sharded = step;
  o.mesh = c.mesh();
  o.strategy = c.strategy();
  o.hardware = request.hardware;
  o.schedule = c.schedule;
  o.virtualStages = c.virtualStages;
  o.pipelineCuts = c.cuts(layers);
  o.attentionRows = attentionRows && !attentionRows->empty() ? *attentionRows
                    : c.attentionRows.empty()                ? std::string("auto")
                                                             : c.attentionRows;
  {
    PassManager pm(ctx);
    pm.enableVerifier(false);
    buildShardingPipeline(pm, o, sharded.getSymName(), /*partition=*/false);
    if (failed(pm.run(*m)))
      return failure();
  }
  if (attentionRows && attentionRows->empty())
    if (auto chosen = sharded->getAttrOfType<StringAttr>(xf::XfDialect::kAttentionRowsAttrName))
      *attentionRows = chosen.str();
  StepReportOptions ro;
  ro.function = sharded.getSymName().str();
  ro.hardware = request.hardware;
  ro.pipelineAxis = sharding::pipelineAxisName(o.strategy);
  ro.schedule = c.schedule;
  ro.virtualStages = c.virtualStages;
  ro.cuts = o.pipelineCuts;
  ro.scheduleStages = longer ? longer->pp : 0;
  ro.values = false;
  ro.verifyPasses = false;
  ro.offloadActivations = c.offload;
  ro.planMemory = planMemory;
  ro.pricingMesh = pricingMesh;
  ro.consume = true;
  FailureOr<StepReport> report = reportStep(sharded, ro);
  if (failed(report))
    return failure();
  return fromReport(report->json);
}

/// The stages of `a` and `b` put together by `combine`, figure by figure
/// (both reports of the same pipeline: the same stages). A gradient bucket
/// group's bytes and tensor counts combine and its ring latencies are priced
/// anew on them (their number is a step function of the bytes: GPT-2 1.5B
/// on 512 devices, mics+tp, 4 buckets at 3 and at 4 layers, 30 at 48), the
/// communication and gradient times combined without them.
FailureOr<std::vector<StageCost>>
combineStages(const Raw &a, const Raw &b, const std::function<double(double, double)> &combine) {
  if (a.stages.size() != b.stages.size())
    return failure();
  using Buckets = std::map<std::string, GradientBuckets>;
  auto latency = [](const Buckets &buckets) {
    double t = 0;
    for (const auto &[axes, g] : buckets)
      t += g.latency;
    return t;
  };
  // Each group's bytes and count combined, its latency priced on them.
  auto reprice = [&](const Buckets &x, const Buckets &y, Buckets &o) {
    for (const Buckets *from : {&x, &y})
      for (const auto &[axes, g] : *from) {
        if (o.count(axes))
          continue;
        GradientBuckets gx = x.count(axes) ? x.at(axes) : GradientBuckets{};
        GradientBuckets gy = y.count(axes) ? y.at(axes) : GradientBuckets{};
        GradientBuckets &c = o[axes];
        c = g;
        c.input = combine(gx.input, gy.input);
        c.count = std::round(combine(gx.count, gy.count));
        c.latency = c.priced();
      }
  };
  std::vector<StageCost> out;
  for (size_t i = 0; i < a.stages.size(); ++i) {
    const StageCost &x = a.stages[i], &y = b.stages[i];
    StageCost o;
    reprice(x.buckets, y.buckets, o.buckets);
    reprice(x.gatherBuckets, y.gatherBuckets, o.gatherBuckets);
    reprice(x.scatterBuckets, y.scatterBuckets, o.scatterBuckets);
    // Gradient reductions: the all-reduces' and the reduce-scatters' buckets.
    double lx = latency(x.buckets) + latency(x.scatterBuckets),
           ly = latency(y.buckets) + latency(y.scatterBuckets),
           lo = latency(o.buckets) + latency(o.scatterBuckets);
    double gx = latency(x.gatherBuckets), gy = latency(y.gatherBuckets),
           go = latency(o.gatherBuckets);
    o.commSeconds = combine(x.commSeconds - lx - gx, y.commSeconds - ly - gy) + lo + go;
    o.gradientSeconds = combine(x.gradientSeconds - lx, y.gradientSeconds - ly) + lo;
    o.commBytes = combine(x.commBytes, y.commBytes);
    for (const auto *from : {&x, &y})
      for (const auto &[axes, bytes] : from->bytesPerAxis)
        o.bytesPerAxis[axes] = combine(x.bytesPerAxis.count(axes) ? x.bytesPerAxis.at(axes) : 0,
                                       y.bytesPerAxis.count(axes) ? y.bytesPerAxis.at(axes) : 0);
    o.forwardGatherSeconds =
        combine(x.forwardGatherSeconds - gx, y.forwardGatherSeconds - gy) + go;
    o.backwardGatherSeconds = combine(x.backwardGatherSeconds, y.backwardGatherSeconds);
    o.computeSum = combine(x.computeSum, y.computeSum);
    o.backwardSum = combine(x.backwardSum, y.backwardSum);
    o.forwardSum = combine(x.forwardSum, y.forwardSum);
    o.offloadBytes = combine(x.offloadBytes, y.offloadBytes);
    o.microBatchCompute = combine(x.microBatchCompute, y.microBatchCompute);
    o.microBatchUnhidden = combine(x.microBatchUnhidden, y.microBatchUnhidden);
    o.microBatchSends = combine(x.microBatchSends, y.microBatchSends);
    for (const auto *from : {&x, &y})
      for (const auto &[to, send] : from->sendsTo) {
        StageCost::Sends sx = x.sendsTo.count(to) ? x.sendsTo.at(to) : StageCost::Sends{};
        StageCost::Sends sy = y.sendsTo.count(to) ? y.sendsTo.at(to) : StageCost::Sends{};
        StageCost::Sends &c = o.sendsTo[to];
        c.axes = send.axes;
        c.seconds = combine(sx.seconds, sy.seconds);
        c.bytes = combine(sx.bytes, sy.bytes);
      }
    out.push_back(std::move(o));
  }
  return out;
}

/// Stage s of a pipeline of `stages` stages as compiled stage kind: the
/// first, a middle one (1) or the last (the same stage when every stage was
/// compiled).
size_t stageKind(size_t s, size_t stages, size_t compiled) {
  return compiled == stages ? s : s == 0 ? 0 : s + 1 == stages ? compiled - 1 : 1;
}

/// The stages' costs of a pipeline of `stages` stages from one compiled with
/// four (or every stage): each stage its kind's; the first stage also sends
/// each further middle stage what it sends compiled stage 2 (the scalars it
/// broadcasts: the learning rate, the clipping factor), the only send that
/// grows with the pipeline.
std::vector<StageCost> expandStageCosts(const std::vector<StageCost> &compiled, size_t stages) {
  const size_t q = compiled.size();
  std::vector<StageCost> out;
  for (size_t s = 0; s < stages; ++s)
    out.push_back(compiled[stageKind(s, stages, q)]);
  if (q < stages && !out.empty())
    if (auto it = compiled[0].sendsTo.find(2); it != compiled[0].sendsTo.end() && q >= 4) {
      double extra = static_cast<double>(stages - q);
      StageCost &first = out[0];
      first.commSeconds += extra * it->second.seconds;
      first.commBytes += extra * it->second.bytes;
      first.bytesPerAxis[it->second.axes] += extra * it->second.bytes;
    }
  return out;
}

/// The most any stage communicates per step (seconds).
double busiestCommunication(const Raw &r) {
  double most = 0;
  for (const StageCost &s : r.stages)
    most = std::max(most, s.commSeconds);
  return most;
}

/// The bubble a pipeline of p stages has by construction with v virtual
/// stages and m micro-batches, (p - 1)/(v m + p - 1): what -xf-pipeline's
/// slots give for 1F1B and interleaved 1F1B.
double scheduleBubble(int64_t stages, int64_t virtualStages, int64_t microBatches) {
  double p = static_cast<double>(stages);
  return (p - 1) / (static_cast<double>(virtualStages * microBatches) + p - 1);
}

/// The micro-batch counts a composed 1F1B step is compiled with. Not one:
/// a step of one micro-batch has no gradient accumulation, so its figures
/// are off the line the others lie on.
constexpr int64_t kComposeLow = 2, kComposeHigh = 3;

/// A 1F1B step of m micro-batches put together from the same step (same
/// micro-batch, mesh and strategy) compiled with two and with three.
/// Compute, collective bytes and time add per micro-batch (the gradient
/// reductions, the optimizer and the stored arenas once), so every such
/// figure is x(2) + (m - 2)(x(3) - x(2)), exactly as the m-copy step sums
/// them; the bubble is the schedule's, (p - 1)/(m + p - 1) for 1F1B (a
/// forward one slot, a backward two: what -xf-pipeline's slots give); a
/// stage's workspace grows by one micro-batch's kept activations per
/// micro-batch it holds at once, min(m, p - s) for stage s (an
/// approximation: the planner's placement is not exactly additive). Only
/// screens: a finalist is compiled with its m copies.
FailureOr<Raw> composeMicroBatches(const Raw &one, const Raw &two, int64_t m, int64_t stages,
                                   int64_t compiled, int64_t v) {
  const size_t p = static_cast<size_t>(stages), q = static_cast<size_t>(compiled);
  if (one.stageSeconds.size() != q || two.stageSeconds.size() != q ||
      one.stageWorkspace.size() != q || two.stageWorkspace.size() != q ||
      one.stages.size() != q || two.stages.size() != q || (q < p && q < 4))
    return failure();
  const double k = static_cast<double>(m - kComposeLow) / (kComposeHigh - kComposeLow);
  auto lin = [&](double x1, double x2) { return x1 + k * (x2 - x1); };
  Raw out = two;
  Prediction &o = out.p;
  const Prediction &a = one.p, &b = two.p;
  // Per stage; gradients are reduced once per step, whatever m: the same
  // buckets.
  FailureOr<std::vector<StageCost>> stageCosts = combineStages(one, two, lin);
  if (failed(stageCosts))
    return failure();
  auto kindOf = [&](size_t s) { return stageKind(s, p, q); };
  out.stages = expandStageCosts(*stageCosts, p);
  out.stageSeconds.assign(p, 0);
  out.stageWorkspace.assign(p, 0);
  double slowest = 0;
  for (size_t s = 0; s < p; ++s) {
    size_t k = kindOf(s);
    out.stageSeconds[s] = lin(one.stageSeconds[k], two.stageSeconds[k]);
    slowest = std::max(slowest, out.stageSeconds[s]);
  }
  o.bubble = scheduleBubble(stages, v, m);
  out.pipelineMicroBatches = m;
  o.computeSeconds = slowest / (1 - o.bubble);
  // The units (micro-batch chunks) compiled stage k holds at once with mb
  // micro-batches: as the stage of the long pipeline it stands for, whose
  // order it ran (its warm-up forwards and one more, at most all of them).
  auto heldCompiled = [&](size_t k, int64_t mb) {
    auto kk = static_cast<int64_t>(k);
    return pipeline::unitsHeld(q < p ? pipeline::standsFor(kk, compiled, stages) : kk, stages, v,
                               mb);
  };
  // Memory: the arenas stored once (parameters, gradients, optimizer state)
  // and the inputs (every micro-batch's) are affine; the workspace is its
  // largest stage's, each stage's grown by the micro-batches it holds (a
  // middle stage of a longer pipeline than compiled by the first stage's
  // growth per micro-batch: the same layers).
  auto growth = [&](size_t k) -> std::optional<double> {
    int64_t low = heldCompiled(k, kComposeLow);
    int64_t high = heldCompiled(k, kComposeHigh);
    if (high == low)
      return std::nullopt;
    return (two.stageWorkspace[k] - one.stageWorkspace[k]) / static_cast<double>(high - low);
  };
  double workspace = 0;
  for (size_t s = 0; s < p; ++s) {
    size_t k = kindOf(s);
    int64_t heldHigh = heldCompiled(k, kComposeHigh);
    int64_t heldM = pipeline::unitsHeld(static_cast<int64_t>(s), stages, v, m);
    std::optional<double> perMicroBatch = growth(k) ? growth(k) : growth(0);
    double w = two.stageWorkspace[k];
    if (heldM != heldHigh && perMicroBatch)
      w += static_cast<double>(heldM - heldHigh) * *perMicroBatch;
    out.stageWorkspace[s] = w;
    workspace = std::max(workspace, w);
  }
  // The kernels' scratch and the collectives' staging: per call, not per
  // micro-batch held.
  double scratch = 0;
  for (const char *name : {"kernel scratch", "collective staging"})
    scratch += b.memory.count(name) ? b.memory.at(name) : 0;
  double total = 0;
  for (auto &[name, bytes] : o.memory) {
    if (name == "total" || name == "host")
      continue;
    if (name == "activations")
      bytes = std::max(0.0, workspace - scratch);
    else if (name == "kernel scratch" || name == "collective staging")
      bytes = std::min(b.memory.count(name) ? b.memory.at(name) : 0, workspace);
    else
      bytes = std::round(lin(a.memory.count(name) ? a.memory.at(name) : 0, bytes));
    total += bytes;
  }
  o.memory["total"] = total;
  o.exact = false;
  finishStep(out);
  return out;
}

/// A pipeline of `stages` stages from the same one compiled with fewer
/// (`raw`: its first, middle and last stages; every middle stage of a
/// generated transformer's pipeline runs the same ops), for a schedule of
/// v virtual stages and m micro-batches: the stages' costs and compute by
/// kind, the bubble the schedule has by construction, the compute the
/// slowest stage over 1 - bubble. The compiled stages ran the orders of the
/// long pipeline's stages 0, 1, p - 2 and p - 1 (-xf-pipeline
/// schedule-stages), so each holds what that stage holds and the workspace
/// (the largest stage's: its first, or stage 1, which holds the most of the
/// middle ones) is the long pipeline's; the middle stages between 1 and
/// p - 2 are put on the line between theirs by the units they hold.
FailureOr<Raw> expandStages(const Raw &raw, int64_t stages, int64_t v, int64_t m) {
  const size_t p = static_cast<size_t>(stages), q = raw.stages.size();
  if (q < 4 || raw.stageSeconds.size() != q || raw.stageWorkspace.size() != q)
    return failure();
  Raw out = raw;
  out.stages = expandStageCosts(raw.stages, p);
  out.stageSeconds.assign(p, 0);
  out.stageWorkspace.assign(p, 0);
  double slowest = 0;
  using pipeline::unitsHeld;
  const int64_t high = unitsHeld(pipeline::standsFor(1, 4, stages), stages, v, m),
                low = unitsHeld(pipeline::standsFor(2, 4, stages), stages, v, m);
  for (size_t s = 0; s < p; ++s) {
    size_t k = stageKind(s, p, q);
    out.stageSeconds[s] = raw.stageSeconds[k];
    out.stageWorkspace[s] = raw.stageWorkspace[k];
    if (k == 1 && q == 4 && high > low) {
      double t = static_cast<double>(high - unitsHeld(static_cast<int64_t>(s), stages, v, m)) /
                 static_cast<double>(high - low);
      out.stageWorkspace[s] = raw.stageWorkspace[1] + t * (raw.stageWorkspace[2] - raw.stageWorkspace[1]);
    }
    slowest = std::max(slowest, out.stageSeconds[s]);
  }
  out.p.bubble = scheduleBubble(stages, v, m);
  out.p.computeSeconds = slowest / (1 - out.p.bubble);
  out.pipelineMicroBatches = m;
  out.p.exact = false;
  finishStep(out);
  return out;
}

/// The depths (layers per chunk) a candidate is compiled at and extrapolated
/// from: x(n) from x(3) and x(4), every layer adding the same. Not from
/// fewer where the memory counts: with one or two layers per chunk the
/// activation peak can sit in the head — the loss and its gradient, the tied
/// table's gathers — where the layers' activations are not all live (GPT-2
/// 1.5B zero1 plans 1046 MiB of activations at 2 layers, 795 at 3, 852 at
/// 4). A communication floor takes no memory, and its communication and
/// compute add per layer from the first (sums over the layers' ops; the
/// gradient buckets counted on the extrapolated bytes): from 1 and 2.
constexpr int64_t kDepthLow = 3, kFloorDepthLow = 1;

/// The micro-batches a communication floor is compiled with: two, so that a
/// micro-batch's own ops are told apart from the step's once-per-step ones
/// (every pipelined candidate has at least two).
constexpr int64_t kFloorMicroBatches = 2;

/// x(n) from x(low) and x(low + 1).
double affine(double low, double high, double n, double lowDepth) {
  return low + (n - lowDepth) * (high - low);
}

FailureOr<Raw> extrapolate(const Raw &one, const Raw &two, double n, // n layers per chunk
                           double lowDepth) {
  Raw out = one;
  Prediction &p = out.p;
  auto line = [&](double x, double y, double at) { return affine(x, y, at, lowDepth); };
  FailureOr<std::vector<StageCost>> stageCosts =
      combineStages(one, two, [&](double x, double y) { return line(x, y, n); });
  if (failed(stageCosts))
    return failure();
  out.stages = std::move(*stageCosts);
  double total = 0;
  for (auto &[k, v] : two.p.memory) {
    if (k == "total")
      continue;
    // The host arena (offloaded activations) is not device memory.
    bool host = k == "host";
    // Not below the deeper point: the plan's peak at 3 and 4 layers can fall
    // with depth (the head's peak giving way to the stack's), which a line
    // would carry on into negative bytes. An underestimate only costs a full
    // compile of a finalist that then does not fit; an overestimate could
    // screen out a candidate that does.
    double a = one.p.memory.count(k) ? one.p.memory.at(k) : 0;
    p.memory[k] = std::round(std::max(line(a, v, n), v));
    if (!host)
      total += p.memory[k];
  }
  p.memory["total"] = total;
  if (!two.stageSeconds.empty() && two.stageSeconds.size() == one.stageSeconds.size()) {
    double slowest = 0;
    for (size_t s = 0; s < two.stageSeconds.size(); ++s) {
      out.stageSeconds[s] = line(one.stageSeconds[s], two.stageSeconds[s], n);
      slowest = std::max(slowest, out.stageSeconds[s]);
    }
    p.computeSeconds = p.bubble < 1 ? slowest / (1 - p.bubble) : slowest;
  } else {
    p.computeSeconds = line(one.p.computeSeconds, two.p.computeSeconds, n);
  }
  // The step on the extrapolated parts, as the report models it.
  finishStep(out);
  return out;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

std::string gib(double bytes) { return llvm::formatv("{0:F2}", bytes / double(1ull << 30)).str(); }

} // namespace

FailureOr<Prediction> shardc::planner::evaluate(ModuleOp model, const Candidate &candidate,
                                                const Request &request, std::string &error) {
  int64_t layers = 0;
  if (auto dict = model->getAttrOfType<DictionaryAttr>("xf.model"))
    if (auto l = dict.getAs<IntegerAttr>("layers"))
      layers = l.getInt();
  EvaluationDiagnostics diagnostics(model.getContext());
  FailureOr<Raw> raw = evaluateRaw(model, candidate, request, layers, error);
  if (failed(raw))
    return failure();
  raw->p.exact = true;
  return raw->p;
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

FailureOr<Plan> shardc::planner::plan(ModuleOp model,
                                      const Request &request,
                                      const std::function<void(const Evaluated &)> &progress) {
  MLIRContext *ctx = model.getContext();
  Location loc = model.getLoc();
  std::string hwError;
  FailureOr<cost::HardwareDesc> hw = cost::HardwareDesc::byName(request.hardware, hwError);
  if (failed(hw))
    return emitError(loc) << "plan: " << hwError;
  if (request.devices < 1)
    return emitError(loc) << "plan: --devices must be at least 1";
  func::FuncOp forward = xf::getModelFunction(model, "");
  if (!forward)
    return failure();

  Plan plan;
  plan.hardwareName = hw->name;
  plan.memoryLimit = request.memoryBytes > 0 ? request.memoryBytes : hw->memoryBytes;
  plan.hostMemoryLimit = hw->hostMemoryBytes;
  // Device memory within the limit, and offloaded activations within the
  // host's share per device.
  auto fitsMemory = [&](Prediction &p) {
    double host = p.memory.count("host") ? p.memory.at("host") : 0;
    return p.memory["total"] <= plan.memoryLimit &&
           (plan.hostMemoryLimit <= 0 || host <= plan.hostMemoryLimit);
  };
  if (!(plan.memoryLimit > 0))
    return emitError(loc) << "plan: the hardware description gives no memory_bytes; pass --memory";
  const char *peakKey = request.precision == "bf16"   ? "bf16"
                        : request.precision == "fp16" ? "f16"
                                                      : "f32";
  plan.peakFlops = hw->peakFlops.count(peakKey) ? hw->peakFlops.at(peakKey)
                                                : hw->peakFlops.count("f32") ? hw->peakFlops.at("f32")
                                                                             : 0;
  int64_t modelBatch = 0;
  for (const xf::InputArg &in : xf::getInputs(forward))
    if (in.kind == "tokens" && in.type.getRank() == 2) {
      modelBatch = in.type.getDimSize(0);
      plan.seq = in.type.getDimSize(1);
    }
  if (modelBatch < 1)
    return emitError(loc) << "plan: @" << forward.getSymName()
                          << " has no [batch, seq] tokens input";
  plan.globalBatch = request.globalBatch > 0 ? request.globalBatch : modelBatch;
  int64_t hidden = 0;
  if (auto dict = model->getAttrOfType<DictionaryAttr>("xf.model")) {
    if (auto l = dict.getAs<IntegerAttr>("layers"))
      plan.layers = l.getInt();
    if (auto h = dict.getAs<IntegerAttr>("hidden"))
      hidden = h.getInt();
    if (auto n = dict.getAs<StringAttr>("name"))
      plan.model = n.str();
  }
  if (plan.model.empty())
    plan.model = forward.getSymName().str();

  // The model evaluated: generated at 3 and 4 layers per chunk when its
  // xf.model describes it, else the given module in full.
  // A step of m micro-batches runs the model function m times: the function's
  // batch is the micro-batch, global batch / m, so a candidate with m > 1
  // needs the model regenerated at that batch (and so does another global
  // batch); a model that cannot be is planned with one micro-batch, no pipeline.
  std::optional<models::ModelConfig> config = models::configFromModule(model, plan.exactReason);
  if (config) {
    plan.extrapolated = true;
  } else if (plan.globalBatch != modelBatch) {
    return emitError(loc) << "plan: --global-batch " << plan.globalBatch
                          << " differs from the model's batch " << modelBatch
                          << ", and the model cannot be regenerated: " << plan.exactReason;
  }
  for (const xf::ParamArg &p : xf::getParams(forward))
    plan.parameters += static_cast<double>(p.numel());
  plan.flopsPerToken = rt::flopsPerToken(plan.parameters, plan.layers, hidden, plan.seq);

  // The search's threads evaluate side by side in this context: its
  // dialects are loaded before they start, and diagnostics go to the
  // evaluation that made them.
  EvaluationDiagnostics diagnostics(ctx);
  unsigned jobs = request.jobs > 0 ? static_cast<unsigned>(request.jobs)
                                   : std::max(1u, std::thread::hardware_concurrency());
  if (jobs > 1)
    ctx->loadAllAvailableDialects();

  // Generated models by (layers, batch): IR without weights, a few hundred
  // KB each, kept for the whole search (the step cache is keyed by their
  // addresses); shared by the search's threads.
  std::mutex generatedMutex;
  std::map<std::pair<int64_t, int64_t>, OwningOpRef<ModuleOp>> generated;
  StepCache steps;
  auto modelWith = [&](int64_t layers, int64_t batch) -> ModuleOp {
    if (!config)
      return model;
    std::lock_guard<std::mutex> lock(generatedMutex);
    auto &m = generated[{layers, batch}];
    if (!m) {
      models::ModelConfig c = *config;
      c.layers = layers;
      c.batch = batch;
      m = models::buildModel(*ctx, c);
    }
    return *m;
  };
  auto fullModel = [&](const Candidate &c) {
    return modelWith(plan.layers, plan.globalBatch / c.microBatches);
  };
  // A candidate of `chunks` pipeline chunks (one unpipelined), compiled by
  // `at` (a model, its layers) with `compiled` chunks (fewer where a longer
  // pipeline is reported from its first, middle and last stages) at `low`
  // and `low` + 1 layers per chunk (3 and 4; 1 and 2 for a floor) and
  // extrapolated to its layers per chunk; at its own depth where that is no
  // more layers than the two (GPT-2 1.5B on 8 stages: 6 per chunk, not
  // 3 + 4; exact, and two compiles instead of four); a model the planner
  // cannot regenerate as given.
  auto extrapolates = [&](int64_t chunks, int64_t low = kDepthLow) {
    return plan.extrapolated && plan.layers / chunks > 2 * low + 1;
  };
  auto atDepths = [&](int64_t chunks, int64_t compiled, int64_t batch,
                      llvm::function_ref<FailureOr<Raw>(ModuleOp, int64_t)> at,
                      int64_t low = kDepthLow) -> FailureOr<Raw> {
    if (!plan.extrapolated)
      return at(modelWith(plan.layers, batch), plan.layers);
    int64_t perChunk = plan.layers / chunks;
    if (!extrapolates(chunks, low))
      return at(modelWith(perChunk * compiled, batch), perChunk * compiled);
    FailureOr<Raw> shallow = at(modelWith(low * compiled, batch), low * compiled);
    if (failed(shallow))
      return failure();
    FailureOr<Raw> deep = at(modelWith((low + 1) * compiled, batch), (low + 1) * compiled);
    if (failed(deep))
      return failure();
    return extrapolate(*shallow, *deep, static_cast<double>(perChunk), static_cast<double>(low));
  };
  // The stages a pipeline is compiled with to report it: every middle stage
  // of a generated transformer's pipeline runs the same ops, so a pipeline
  // of more than four stages (1F1B or interleaved) is compiled with four,
  // its first, two middle and its last stage, each ordered as its stage in
  // the long pipeline (stages 0, 1, p - 2, p - 1: -xf-pipeline
  // schedule-stages), so each holds at once what that stage holds
  // (expandStages; expandStageCosts: the first stage's broadcast to the
  // further middle ones added); the links keep the candidate's mesh (the
  // report's pricing mesh). Off with --no-stage-reduction.
  auto compiledStages = [&](const Candidate &c) -> int64_t {
    if (!request.reduceStages || !plan.extrapolated || c.recompute != "none" || c.regather ||
        c.offload || c.pp <= 4)
      return c.pp;
    if (c.schedule == "1f1b" || (c.schedule == "interleaved" && c.microBatches % c.pp == 0))
      return 4;
    return c.pp;
  };
  // `c` with its m copies at `layers` (of `m`), reported for its own length
  // from the stages compiledStages gives it.
  auto evaluateStages = [&](ModuleOp m, const Candidate &c, int64_t layers, std::string &error,
                            std::string *rows) -> FailureOr<Raw> {
    int64_t stages = compiledStages(c);
    if (stages == c.pp)
      return evaluateRaw(m, c, request, layers, error, &steps, rows);
    Candidate cc = c;
    cc.pp = stages;
    FailureOr<Raw> r = evaluateRaw(m, cc, request, layers, error, &steps, rows, &c);
    if (failed(r))
      return failure();
    return expandStages(*r, c.pp, c.virtualStages, c.microBatches);
  };
  double tokens = static_cast<double>(plan.globalBatch) * plan.seq;
  auto finish = [&](Prediction &p) {
    p.tokensPerSecond = p.stepSeconds > 0 ? tokens / p.stepSeconds : 0;
    p.mfu = p.stepSeconds > 0 && plan.peakFlops > 0
                ? plan.flopsPerToken * tokens /
                      (p.stepSeconds * request.devices * plan.peakFlops)
                : 0;
  };
  // A candidate evaluated: a pure function of it (the search's threads run
  // it ahead, Lookahead), committed to the plan in the search's order by run.
  struct Outcome {
    Evaluated e;
    bool composed = false; ///< screened from two and three micro-batches
  };
  auto evaluateCandidate = [&](const Candidate &c) -> Outcome {
    Outcome outcome;
    Evaluated &e = outcome.e;
    e.candidate = c;
    int64_t unit = c.chunks();
    int64_t batch = plan.globalBatch / c.microBatches;
    // A 1F1B pipeline of many micro-batches (request.composeFrom, 8 by
    // default: with 4 the m copies are smaller than the two steps' 5; the
    // GPT-2 1.5B plan on 512 devices takes 102 s composing from 8, 114 s
    // from 12): from its steps with two and with three (composeMicroBatches),
    // not with m copies of the layers. Where that puts it near the memory
    // limit (within 40% either way: the composed workspace is approximate),
    // its m copies decide.
    // Interleaved too, where two and three micro-batches are fewer than the
    // stages (one partial group each: -xf-pipeline's interleaved order).
    bool compose = request.composeFrom > 0 && c.microBatches >= request.composeFrom &&
                   c.microBatches > kComposeHigh && c.pp > 1 && !c.offload &&
                   (c.schedule == "1f1b" || (c.schedule == "interleaved" && c.pp > kComposeHigh));
    // The attention rows the first compile chooses, given to the others.
    std::string rows = c.attentionRows;
    auto at = [&](ModuleOp m, int64_t layers) -> FailureOr<Raw> {
      if (!compose)
        return evaluateStages(m, c, layers, e.error, &rows);
      int64_t stages = compiledStages(c);
      Candidate one = c, two = c;
      one.pp = two.pp = stages;
      one.microBatches = kComposeLow;
      two.microBatches = kComposeHigh;
      const Candidate *longer = stages == c.pp ? nullptr : &c;
      FailureOr<Raw> r1 = evaluateRaw(m, one, request, layers, e.error, &steps, &rows, longer);
      if (failed(r1))
        return failure();
      FailureOr<Raw> r2 = evaluateRaw(m, two, request, layers, e.error, &steps, &rows, longer);
      if (failed(r2))
        return failure();
      FailureOr<Raw> composed =
          composeMicroBatches(*r1, *r2, c.microBatches, c.pp, stages, c.virtualStages);
      if (failed(composed) && stages == c.pp) // no per-stage figures: the m copies after all
        return evaluateRaw(m, c, request, layers, e.error, &steps, &rows);
      return composed;
    };
    // At 3 and 4 layers per chunk, extrapolated; or the full model (every
    // stage, or the first, two middle and last with their orders: exact).
    auto depths = [&]() -> FailureOr<Raw> {
      FailureOr<Raw> r = atDepths(unit, compiledStages(c) * c.virtualStages, batch, at);
      if (succeeded(r) && !extrapolates(unit) && !compose)
        r->p.exact = true;
      return r;
    };
    FailureOr<Raw> raw = depths();
    e.candidate.attentionRows = rows;
    if (succeeded(raw) && compose) {
      double total = raw->p.memory["total"];
      if (total > 0.6 * plan.memoryLimit && total < 1.4 * plan.memoryLimit) {
        compose = false;
        raw = depths();
      } else {
        outcome.composed = true;
      }
    }
    if (succeeded(raw)) {
      e.prediction = raw->p;
      finish(e.prediction);
      e.fits = fitsMemory(e.prediction);
    } else if (e.error.empty()) {
      e.error = "the compiler rejected it";
    }
    return outcome;
  };
  std::optional<Lookahead> ahead;
  ahead.emplace(/*window=*/jobs + 1);
  // An interleaved candidate's 1F1B sibling: the same mesh, strategy,
  // micro-batches and memory policy (boundByFewer below).
  auto siblingOf = [](const Candidate &c) {
    Candidate one = c;
    one.schedule = "1f1b";
    one.virtualStages = 1;
    return one;
  };
  // What a pipelined candidate is bounded by: the same mesh, strategy and
  // memory policy.
  auto policyKey = [](const Candidate &c) {
    return c.mesh() + " " + c.strategy() + " " + c.memoryPolicy();
  };
  auto candidateKey = [](const Candidate &c) {
    return "candidate " + label(c) + " v=" + std::to_string(c.virtualStages) +
           (c.attentionRows.empty() ? "" : " attention-rows=" + c.attentionRows);
  };
  // What the search has committed, for the threads' Worth (under its
  // lock): the (2 x top)-th best step and the floors.
  struct Committed {
    double incumbent = std::numeric_limits<double>::infinity();
    /// (mesh, strategy, micro-batch size) -> floor, its stages
    std::map<std::tuple<std::string, std::string, int64_t>,
             std::pair<double, std::vector<FloorStage>>>
        floors;
    /// The pipelined candidates evaluated, by mesh, strategy and memory
    /// policy (policyKey), then schedule and micro-batches: what bounds
    /// those at more micro-batches and the interleaved (boundByFewer).
    std::map<std::string, std::map<std::pair<std::string, int64_t>, Prediction>> pipelined;
    /// The labels of the 1F1B candidates the search has decided (evaluated
    /// or bounded out).
    std::set<std::string> decided;
  };
  std::mutex committedMutex;
  Committed committed;
  // The (2 x top)-th best step committed: what bounds pipelines out.
  auto incumbent = [&]() {
    std::vector<double> steps;
    for (const Evaluated &e : plan.evaluated)
      if (e.fits)
        steps.push_back(e.prediction.stepSeconds);
    size_t k = static_cast<size_t>(2 * std::max<int64_t>(1, request.top));
    if (steps.size() < k)
      return std::numeric_limits<double>::infinity();
    std::nth_element(steps.begin(), steps.begin() + (k - 1), steps.end());
    return steps[k - 1];
  };
  auto run = [&](const Candidate &c) -> Evaluated & {
    std::string key = candidateKey(c);
    Outcome o = std::any_cast<Outcome>(
        ahead->need(key, [&] { return std::any(evaluateCandidate(c)); }));
    plan.composed += o.composed;
    plan.evaluated.push_back(std::move(o.e));
    {
      std::lock_guard<std::mutex> lock(committedMutex);
      committed.incumbent = incumbent();
      const Evaluated &e = plan.evaluated.back();
      if (c.pp > 1 && e.error.empty())
        committed.pipelined[policyKey(c)][{c.schedule, c.microBatches}] = e.prediction;
      if (c.pp > 1 && c.schedule == "1f1b")
        committed.decided.insert(label(c));
    }
    if (progress)
      progress(plan.evaluated.back());
    return plan.evaluated.back();
  };

  // A bound for pipelines: no rank computes less than its share of the
  // model's FLOPs (6N + 6LhT per token) at the achievable rate, and a pipeline
  // idles for its bubble, (p-1)/(v*m+p-1) by the schedules' construction (what
  // -xf-pipeline's slots give for 1F1B and interleaved 1F1B); 0.95 of it, for
  // the FLOP count's approximations (the position table counted as a GEMM).
  // A candidate whose bound exceeds the (2 x top)-th best screened step so
  // far cannot make the ranking and is not evaluated.
  double idealCompute = plan.peakFlops > 0
                            ? plan.flopsPerToken * tokens /
                                  (request.devices * plan.peakFlops * hw->achievableFraction)
                            : 0;
  auto bubbleOf = [](const Candidate &c) {
    return scheduleBubble(c.pp, c.virtualStages, c.microBatches);
  };
  auto lowerBound = [&](const Candidate &c) { return 0.95 * idealCompute / (1 - bubbleOf(c)); };
  // And a communication floor, from the compiler: a step is at least its
  // communication (what the backward and forward cannot hide is exposed,
  // and they are part of the compute), and a pipeline of m micro-batches
  // communicates at least what the same pipeline does with one micro-batch
  // of the same size: the gradient reductions are the same (once per step),
  // the tensor-parallel collectives and the stage transfers are m calls of
  // that one's (each at least its time on the cost model's rings), an
  // interleaved schedule crosses more stage boundaries, recomputation
  // replays collectives. So each (mesh, strategy, micro-batch size) is
  // compiled once with one micro-batch, 1F1B, nothing recomputed — one copy
  // of the layers where the candidates hold m — and its communication time,
  // at 0.99, bounds every schedule, count and memory policy of it. Computed
  // only where the other bounds leave a candidate that could be skipped.
  // A stage's tensor-parallel collectives, sends and scalar reductions can
  // hide behind nothing, and m micro-batches run at least the one's, so 0.99
  // of the most any stage of the one-micro-batch step communicates beyond
  // its gradient reductions and parameter gathers bounds the exposed
  // communication too: a step is at least the compute bound plus that.
  // The same compile bounds the compute: each stage's forward and backward
  // ops run once per micro-batch (m times in the candidate, the same ops on
  // the same micro-batch size; recomputation only adds), the rest (the
  // optimizer) once per step, and a pipeline computes its slowest stage
  // over 1 - bubble: 0.99 of that, where the FLOP bound above knows nothing
  // of the compute a layout repeats (attention whole on every tp rank where
  // its heads do not divide).
  std::map<std::tuple<std::string, std::string, int64_t>, double> &floors = plan.floorSeconds;
  // The step a floor is compiled as (for `c`'s layout and micro-batch size):
  // two micro-batches, so that what one micro-batch runs (the second's own
  // ops: StageCost::microBatchCompute, microBatchUnhidden) is told apart
  // from what the step runs once.
  auto floorCandidate = [](const Candidate &c) {
    Candidate one = c;
    one.microBatches = kFloorMicroBatches;
    one.schedule = "1f1b";
    one.virtualStages = 1;
    one.recompute = "none";
    one.regather = false;
    one.offload = false;
    return one;
  };
  // Its report, every stage's costs: a pure function (run ahead too).
  auto compileFloor = [&](const Candidate &one, int64_t batch) -> FailureOr<Raw> {
    std::string error;
    // Compiled with its first, a middle and its last stage: the most a stage
    // communicates is one of theirs.
    int64_t stages = compiledStages(one);
    Candidate cc = one;
    cc.pp = stages;
    std::string rows;
    FailureOr<Raw> raw = atDepths(
        one.chunks(), cc.chunks(), batch,
        [&](ModuleOp m, int64_t layers) {
          return evaluateRaw(m, cc, request, layers, error, &steps, &rows,
                             stages == one.pp ? nullptr : &one, /*planMemory=*/false);
        },
        kFloorDepthLow);
    if (succeeded(raw) && stages != one.pp)
      raw->stages = expandStageCosts(raw->stages, static_cast<size_t>(one.pp));
    return raw;
  };
  auto floorKey = [&](const Candidate &c) {
    Candidate one = floorCandidate(c);
    return llvm::formatv("floor {0} {1} batch={2}", one.mesh(), one.strategy(),
                         plan.globalBatch / c.microBatches)
        .str();
  };
  auto communicationFloor = [&](const Candidate &c) -> double {
    Candidate one = floorCandidate(c);
    int64_t batch = plan.globalBatch / c.microBatches;
    auto key = std::make_tuple(one.mesh(), one.strategy(), batch);
    if (auto it = floors.find(key); it != floors.end())
      return it->second;
    FailureOr<Raw> raw = std::any_cast<FailureOr<Raw>>(
        ahead->need(floorKey(c), [&] { return std::any(compileFloor(one, batch)); }));
    double floor = succeeded(raw) ? 0.99 * busiestCommunication(*raw) : 0.0;
    double exposed = 0;
    std::vector<FloorStage> &stages = plan.floorStages[key];
    if (succeeded(raw))
      for (const StageCost &st : raw->stages) {
        // Per stage: m micro-batches run m copies of one's own ops and the
        // rest (the optimizer, the gradient reductions, scalar reports, the
        // tied table's transfers) at least once.
        const double m = kFloorMicroBatches;
        FloorStage f;
        double unhidden = std::max(0.0, st.commSeconds - st.gradientSeconds -
                                            st.forwardGatherSeconds - st.backwardGatherSeconds);
        f.perMicroBatch = st.microBatchCompute;
        f.once = std::max(0.0, st.computeSum - m * f.perMicroBatch);
        f.unhiddenPerMicroBatch = st.microBatchUnhidden;
        f.sendsPerMicroBatch = st.microBatchSends;
        f.unhidden = std::max(0.0, unhidden - m * f.unhiddenPerMicroBatch);
        f.gradient = st.gradientSeconds;
        exposed = std::max(exposed, 0.99 * unhidden);
        stages.push_back(f);
      }
    ++plan.floors;
    plan.floorExposed[key] = exposed;
    floors[key] = floor;
    {
      std::lock_guard<std::mutex> lock(committedMutex);
      committed.floors[key] = {floor, stages};
    }
    return floor;
  };
  // Every bound of a pipelined candidate of m >= 2 micro-batches from its
  // floor: the floor's communication, and, per stage s, from what the floor
  // runs per micro-batch and once: the compute bound C (the FLOP bound, or
  // 0.99 of the slowest stage's m x per-micro-batch + once, over
  // 1 - bubble), the unhidable communication U_s = m x per-micro-batch +
  // once (tensor-parallel collectives and sends per micro-batch, scalar
  // reports and the tied table's transfers once; recomputation regathers;
  // an interleaved schedule of v chunks per stage has every stage send one
  // micro-batch's activations forward and its gradients back v - 1 times
  // more than 1F1B does, the first stage's and the last's per-micro-batch
  // sends together) and the gradient reductions G_s
  // (once per step), which stage s hides behind at most (1 + s)/m of the
  // compute (modelStep's window, a share of the backward). A step is at
  // least C + exposed_s on every stage, so at least
  // max(C + 0.99 U_s, C (1 - min(1, (1 + s)/m)) + 0.99 (U_s + G_s)); U_s is
  // at least the floor's own unhidable communication (JSON exposed_seconds).
  auto boundByFloor = [&](const Candidate &c, double bound, double floor,
                          const std::vector<FloorStage> &stages) {
    if (c.microBatches < kFloorMicroBatches)
      return bound;
    const double m = static_cast<double>(c.microBatches);
    double slowest = 0;
    for (const FloorStage &f : stages)
      slowest = std::max(slowest, m * f.perMicroBatch + f.once);
    double computeBound = std::max(lowerBound(c), 0.99 * slowest / (1 - bubbleOf(c)));
    double most = std::max(bound, floor);
    double crossing =
        stages.empty() ? 0.0 : stages.front().sendsPerMicroBatch + stages.back().sendsPerMicroBatch;
    for (size_t s = 0; s < stages.size(); ++s) {
      double unhidden = m * (stages[s].unhiddenPerMicroBatch +
                             static_cast<double>(c.virtualStages - 1) * crossing) +
                        stages[s].unhidden;
      double window = std::min(1.0, static_cast<double>(s + 1) / m);
      most = std::max({most, computeBound + 0.99 * unhidden,
                       computeBound * (1 - window) + 0.99 * (unhidden + stages[s].gradient)});
    }
    return most;
  };
  // ... once its floor is compiled (here, if not yet).
  auto floorBound = [&](const Candidate &c, double bound) {
    return boundByFloor(c, bound, communicationFloor(c),
                        plan.floorStages[std::make_tuple(c.mesh(), c.strategy(),
                                                          plan.globalBatch / c.microBatches)]);
  };
  // A pipeline against the same one evaluated with fewer micro-batches
  // (the same mesh, strategy, memory policy and global batch): splitting
  // the global batch into more micro-batches moves the same bytes in more,
  // smaller collectives (no less time on the cost model's rings), leaves a
  // stage's compute as it was but for the bubble, and so hides no more
  // communication behind the backward (its share of a shorter pipelined
  // compute): step(m') >= exposed(m) + compute(m) (1 - bubble(m)) / (1 -
  // bubble(m')), taken at 0.99 (`check_compose.py` checks it). And an
  // interleaved pipeline against its 1F1B sibling, at its micro-batches or
  // fewer, the same way: each stage runs the same layers (v chunks of
  // L/(v p) for one of L/p: the same ops, the same compute but for the
  // bubble), moves every byte the sibling moves (the same collectives, the
  // gradient reductions once per step), crosses the stage boundaries v
  // times per micro-batch and hides no more communication behind a shorter
  // pipelined compute (`check_plan.py` checks it on every evaluated pair).
  // The most of these bounds from what the search has committed (under its
  // lock).
  auto boundByFewer = [&](const Candidate &c) {
    double bound = 0;
    auto it = committed.pipelined.find(policyKey(c));
    if (it == committed.pipelined.end())
      return bound;
    for (const auto &[at, fewer] : it->second) {
      const auto &[schedule, m] = at;
      if (m <= c.microBatches && fewer.bubble < 1 &&
          (schedule == c.schedule || schedule == "1f1b"))
        bound = std::max(bound, 0.99 * (fewer.exposedSeconds + fewer.computeSeconds *
                                                                   (1 - fewer.bubble) /
                                                                   (1 - bubbleOf(c))));
    }
    return bound;
  };
  // What the search will ask for next, computed ahead by the other threads.
  // A pipelined candidate (its layout's fewest micro-batches, nothing
  // recomputed) is skipped when its bounds, from what the search has
  // committed so far, already rule it out: the incumbent only falls and its
  // floor is the search's, so the search would bound it out too.
  auto worthIt = [&](const Candidate &c) {
    return [&, c] {
      std::lock_guard<std::mutex> lock(committedMutex);
      double bound = lowerBound(c);
      if (auto it = committed.floors.find(
              std::make_tuple(c.mesh(), c.strategy(), plan.globalBatch / c.microBatches));
          it != committed.floors.end()) {
        const auto &[floor, stages] = it->second;
        bound = boundByFloor(c, bound, floor, stages);
      }
      // An interleaved one waits for its 1F1B sibling (the search runs that
      // first), which mostly bounds it out.
      if (c.schedule == "interleaved" && !committed.decided.count(label(siblingOf(c))))
        return false;
      bound = std::max(bound, boundByFewer(c));
      return bound <= committed.incumbent;
    };
  };
  auto expectCandidate = [&](const Candidate &c) {
    ahead->expect(candidateKey(c), [&, c] { return std::any(evaluateCandidate(c)); },
                  c.pp > 1 ? Lookahead::Worth(worthIt(c)) : Lookahead::Worth());
  };
  auto expectFloor = [&](const Candidate &c) {
    Candidate one = floorCandidate(c);
    int64_t batch = plan.globalBatch / c.microBatches;
    ahead->expect(floorKey(c), [&, one, batch] { return std::any(compileFloor(one, batch)); });
  };
  if (jobs > 1)
    ahead->start(jobs - 1);

  // Enumeration. Pruning by dominance on the cost model (documented in
  // docs/planning.md): every memory policy only adds to the step (gathers,
  // compute, host-link traffic), so one is tried only where every lighter
  // one ran out of memory; without a pipeline, more
  // micro-batches add no compute and no fewer bytes, so only the fewest that
  // fit are kept. The ladder, by what it costs: nothing; gathering again
  // for the backward what the forward all-gathered (with tp only: one more
  // all-gather per such use, Megatron-LM's sequence parallelism; every
  // recomputing rung does it too); selective
  // recomputation (cheap ops replayed); offload of every kept activation
  // (copies hidden behind the compute while the host link keeps up); full
  // recomputation (one more forward); full recomputation with its layer
  // inputs offloaded.
  int64_t maxTp = request.maxTp > 0 ? request.maxTp : std::max<int64_t>(1, hw->devicesPerNode);
  struct Policy {
    const char *recompute;
    bool offload;
    bool regather;
  };
  static const Policy kPolicies[] = {{"none", false, false},     {"none", false, true},
                                     {"selective", false, false}, {"none", true, false},
                                     {"full", false, false},      {"full", true, false}};
  constexpr size_t kNumPolicies = std::size(kPolicies);
  // Regathering changes nothing without a tensor-parallel axis to gather over.
  auto applies = [](const Policy &policy, const Candidate &c) { return !policy.regather || c.tp > 1; };
  auto withPolicy = [](Candidate c, const Policy &policy) {
    c.recompute = policy.recompute;
    c.offload = policy.offload;
    c.regather = policy.regather;
    return c;
  };
  // Layouts (mesh, strategy, schedule) and their micro-batch counts, without
  // and with a pipeline.
  std::vector<std::pair<Candidate, std::vector<int64_t>>> unpipelined, pipelines;
  for (int64_t pp : divisors(request.devices)) {
    if (pp > 1 && (!config || plan.layers < 1 || plan.layers % pp != 0))
      continue;
    for (int64_t tp : divisors(request.devices / pp)) {
      if (tp > maxTp)
        continue;
      int64_t dp = request.devices / pp / tp;
      if (plan.globalBatch % dp != 0)
        continue;
      // With a pipeline, ZeRO-2/3 reduce-scatter (and ZeRO-3 gathers) every
      // micro-batch's gradients (parameters) instead of once per step (the
      // seeds' warning; DeepSpeed refuses the combination): dp and zero1 only.
      std::vector<std::string> datas =
          dp == 1   ? std::vector<std::string>{"dp"}
          : pp == 1 ? std::vector<std::string>{"dp", "zero1", "zero2", "zero3"}
                    : std::vector<std::string>{"dp", "zero1"};
      // MiCS (seed 004): ZeRO-3 inside a partition group of the node's
      // devices (after tp), replicated across groups; only where there are
      // several groups (on one node it is ZeRO-3).
      int64_t micsShard = std::max<int64_t>(1, hw->devicesPerNode / tp);
      // The data ranks span several nodes, in groups of a node's devices.
      bool acrossNodes = hw->devicesPerNode % tp == 0 && micsShard > 1 && dp % micsShard == 0 &&
                         dp / micsShard > 1;
      if (pp == 1 && acrossNodes)
        datas.push_back("mics");
      std::vector<std::pair<std::string, int64_t>> schedules = {{"1f1b", 1}};
      if (pp > 1 && plan.layers % (2 * pp) == 0)
        schedules.push_back({"interleaved", 2});
      for (const std::string &data : datas)
        for (bool sp : tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false})
          for (auto [schedule, v] : schedules) {
            Candidate base;
            base.pp = pp;
            base.dp = dp;
            base.tp = tp;
            base.data = data;
            // ZeRO across nodes over the data axis factored, the node's
            // share (after tp) as its own axis: each factor splits the
            // state on its own dim (GPT-2 1.5B's [1600, 1600] weights divide
            // by neither 128 nor 256, but by 64 x 4 rows x columns), and
            // the reductions run inside the node first, so between nodes
            // they move 1/dq of the gradient (planReshard's order).
            bool factored = data != "dp" && data != "mics" && acrossNodes;
            base.shard = data == "mics" || factored ? micsShard : 0;
            base.sp = sp;
            base.schedule = schedule;
            base.virtualStages = v;
            std::vector<int64_t> mbs;
            for (int64_t m = pp > 1 ? pp : 1; m <= plan.globalBatch / dp && (config || m == 1);
                 m *= 2)
              if (plan.globalBatch % (m * dp) == 0 && (v == 1 || m % pp == 0))
                mbs.push_back(m);
            // A step's IR holds every micro-batch's copy of the layers, so
            // pipelines are tried at pp and 2 pp micro-batches (Megatron-LM's
            // usual range; more only shrinks the bubble further).
            if (pp > 1 && mbs.size() > 2)
              mbs.resize(2);
            if (mbs.empty())
              continue;
            // The pipelines are evaluated after every unpipelined
            // candidate, best bound first (below).
            (pp > 1 ? pipelines : unpipelined).push_back({base, mbs});
          }
    }
  }
  // Without a pipeline: per policy the fewest micro-batches that fit; a
  // heavier policy only below the count a lighter one needed. Expected: each
  // layout's lightest.
  for (const auto &[base, mbs] : unpipelined) {
    Candidate c = base;
    c.microBatches = mbs.front();
    expectCandidate(c);
  }
  for (const auto &[base, mbs] : unpipelined) {
    size_t limit = mbs.size();
    for (size_t r = 0; r < kNumPolicies && limit > 0; ++r) {
      if (!applies(kPolicies[r], base))
        continue;
      size_t found = limit;
      for (size_t i = 0; i < limit; ++i) {
        Candidate c = withPolicy(base, kPolicies[r]);
        c.microBatches = mbs[i];
        Evaluated &e = run(c);
        if (e.fits || !e.error.empty()) {
          found = i;
          break;
        }
      }
      plan.skipped += static_cast<int64_t>(limit - std::min(limit, found + 1));
      limit = found;
    }
  }
  // The pipelines, best bound first: each layout's bound at its fewest
  // micro-batches with nothing recomputed (the compute bound, its
  // communication floors), so that the ranking's (2 x top)-th step, which
  // bounds the rest out, is found early. The order changes only the work:
  // every bound is a lower bound.
  std::vector<std::pair<double, size_t>> order;
  ahead->passed();
  if (!plan.evaluated.empty())
    for (const auto &[base, mbs] : pipelines) {
      Candidate c = base;
      c.microBatches = mbs.front();
      expectFloor(c);
    }
  for (size_t i = 0; i < pipelines.size(); ++i) {
    Candidate c = pipelines[i].first;
    c.microBatches = pipelines[i].second.front();
    double bound = lowerBound(c);
    if (!plan.evaluated.empty())
      bound = floorBound(c, bound);
    order.push_back({bound, i});
  }
  // An interleaved layout right after its 1F1B sibling (the enumeration
  // makes one for each), which bounds it (siblingBound): ordered by the
  // sibling's bound.
  auto layoutKey = [](const Candidate &c) { return c.mesh() + " " + c.strategy(); };
  std::map<std::string, double> oneF1BBound;
  for (auto [bound, i] : order)
    if (pipelines[i].first.schedule == "1f1b")
      oneF1BBound[layoutKey(pipelines[i].first)] = bound;
  auto groupOf = [&](const std::pair<double, size_t> &entry) {
    const Candidate &c = pipelines[entry.second].first;
    auto it = oneF1BBound.find(layoutKey(c));
    bool interleaved = c.schedule == "interleaved" && it != oneF1BBound.end();
    return std::make_pair(interleaved ? it->second : entry.first, interleaved);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto &a, const auto &b) { return groupOf(a) < groupOf(b); });
  // Expected: each layout at its fewest micro-batches with nothing
  // recomputed (its floor is known), then the floors of its further counts
  // (another micro-batch size each), which the search takes before it
  // decides whether to evaluate them. The further counts themselves are
  // bounded by the fewest, so a thread that computed them beside it would
  // mostly waste the work; the search computes those while the threads take
  // the next layouts.
  ahead->passed();
  for (auto [first, i] : order) {
    Candidate c = pipelines[i].first;
    c.microBatches = pipelines[i].second.front();
    expectCandidate(c);
    for (int64_t m : llvm::ArrayRef<int64_t>(pipelines[i].second).drop_front()) {
      c.microBatches = m;
      expectFloor(c);
    }
  }
  for (auto [first, i] : order) {
    const Candidate &base = pipelines[i].first;
    const std::vector<int64_t> &mbs = pipelines[i].second;
    // The bubble shrinks with more micro-batches: every count, unless
    // a bound says the candidate cannot make the ranking: the
    // compute bound, the same candidate at fewer micro-batches or its
    // 1F1B sibling (boundByFewer), its floor.
    for (int64_t m : mbs)
      for (size_t r = 0; r < kNumPolicies; ++r) {
        if (!applies(kPolicies[r], base))
          continue;
        Candidate c = withPolicy(base, kPolicies[r]);
        c.microBatches = m;
        double bound = lowerBound(c);
        {
          std::lock_guard<std::mutex> lock(committedMutex);
          bound = std::max(bound, boundByFewer(c));
        }
        if (bound <= incumbent() && std::isfinite(incumbent()))
          bound = floorBound(c, bound);
        if (bound > incumbent()) {
          ++plan.bounded;
          if (c.schedule == "1f1b") {
            std::lock_guard<std::mutex> lock(committedMutex);
            committed.decided.insert(label(c));
          }
          break;
        }
        Evaluated &e = run(c);
        if (e.fits || !e.error.empty()) {
          for (size_t heavier = r + 1; heavier < kNumPolicies; ++heavier)
            plan.skipped += applies(kPolicies[heavier], base);
          break;
        }
      }
  }
  if (plan.evaluated.empty()) {
    ahead.reset();
    return emitError(loc) << "plan: no candidate for " << request.devices
                          << " devices and a global batch of " << plan.globalBatch
                          << ": the data-parallel size times the micro-batches (at least the "
                             "pipeline stages) must divide it";
  }
  auto byTime = [&](size_t a, size_t b) {
    const Prediction &pa = plan.evaluated[a].prediction, &pb = plan.evaluated[b].prediction;
    if (pa.stepSeconds != pb.stepSeconds)
      return pa.stepSeconds < pb.stepSeconds;
    return pa.memory.at("total") < pb.memory.at("total");
  };
  // Finalists: by extrapolated step time among those whose extrapolated
  // memory is within kMargin of the limit (the full compile decides).
  constexpr double kMargin = 1.5;
  std::vector<size_t> screened;
  for (size_t i = 0; i < plan.evaluated.size(); ++i) {
    const Evaluated &e = plan.evaluated[i];
    if (e.error.empty() && (e.fits || (!e.prediction.exact &&
                                       e.prediction.memory.at("total") <= kMargin * plan.memoryLimit)))
      screened.push_back(i);
  }
  std::stable_sort(screened.begin(), screened.end(), byTime);
  // The finalists, compiled in full; expected: as many of the next as the
  // ranking lacks.
  ahead->passed();
  using Full = std::pair<FailureOr<Raw>, std::string>;
  // In full: every layer and micro-batch; a pipeline of more than four
  // stages with its first, two middle and last (compiledStages: each holds
  // what its stage of the long pipeline holds), the others as the first
  // middle one.
  auto compileFull = [&](const Candidate &c) {
    Full full{failure(), ""};
    int64_t layers = plan.layers / c.pp * compiledStages(c);
    full.first = evaluateStages(modelWith(layers, plan.globalBatch / c.microBatches), c, layers,
                                full.second, nullptr);
    return full;
  };
  auto fullKey = [&](const Candidate &c) { return "full " + candidateKey(c); };
  for (size_t k = 0; k < screened.size(); ++k) {
    if (static_cast<int64_t>(plan.ranking.size()) >= request.top)
      break;
    for (size_t j = k, wanted = request.top - plan.ranking.size(); j < screened.size() && wanted;
         ++j)
      if (const Candidate &c = plan.evaluated[screened[j]].candidate;
          !plan.evaluated[screened[j]].prediction.exact) {
        // Its size: the layer copies a full compile holds.
        double copies = static_cast<double>(plan.layers / c.chunks() *
                                            compiledStages(c) * c.virtualStages * c.microBatches);
        ahead->expect(fullKey(c), [&, c] { return std::any(compileFull(c)); }, {}, copies);
        --wanted;
      }
    size_t i = screened[k];
    Evaluated &e = plan.evaluated[i];
    if (!e.prediction.exact) {
      const Candidate c = e.candidate;
      Full full = std::any_cast<Full>(
          ahead->need(fullKey(c), [&] { return std::any(compileFull(c)); }));
      FailureOr<Raw> &raw = full.first;
      std::string &error = full.second;
      if (failed(raw)) {
        // Rejected in full (the extrapolation compiled): not ranked, the
        // reason kept with it.
        e.error = "compiles at 3 and 4 layers per chunk but not in full: " + error;
        e.fits = false;
        continue;
      }
      e.screened = e.prediction;
      e.prediction = raw->p;
      e.prediction.exact = true;
      finish(e.prediction);
      bool wasFit = e.fits;
      e.fits = fitsMemory(e.prediction);
      if (!e.fits) {
        plan.overMemoryWhenExact += wasFit;
        continue;
      }
    } else if (!e.fits) {
      continue;
    }
    plan.ranking.push_back(i);
  }
  Lookahead::Stats stats = ahead->stats();
  SHARDC_DEBUG(DBGS() << jobs << " threads: " << stats.ahead << " evaluations computed ahead, "
                      << stats.used << " of them used\n");
  ahead.reset(); // what the threads still compute is not needed
  std::stable_sort(plan.ranking.begin(), plan.ranking.end(), byTime);
  return plan;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

namespace {

/// Bytes per link kind (the link each axis group runs on, as the cost model
/// picks it).
std::map<std::string, double> bytesPerLink(const Candidate &c, const Prediction &p,
                                           const cost::HardwareDesc &hw) {
  std::map<std::string, double> out;
  std::string error;
  auto mesh = sharding::Mesh::parse(c.mesh(), error);
  if (failed(mesh))
    return out;
  cost::CostModel model(*mesh, hw);
  for (auto &[axesName, bytes] : p.bytesPerAxis) {
    sharding::AxisList axes;
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(axesName).split(names, ',');
    bool ok = true;
    for (llvm::StringRef n : names) {
      int a = mesh->axisIndex(n.str());
      if (a < 0)
        ok = false;
      else
        axes.push_back(static_cast<sharding::Axis>(a));
    }
    out[ok ? model.linkFor(axes).name : "?"] += bytes;
  }
  return out;
}

std::string linkText(const std::map<std::string, double> &links) {
  if (links.empty())
    return "-";
  std::vector<std::string> parts;
  for (auto &[name, bytes] : links)
    parts.push_back(llvm::formatv("{0} {1:F2}", name, bytes / 1e9).str());
  return llvm::join(parts, ", ");
}

} // namespace

std::string shardc::planner::formatPlan(const Plan &plan, const Request &request) {
  std::string out;
  llvm::raw_string_ostream os(out);
  std::string hwError;
  FailureOr<cost::HardwareDesc> hw = cost::HardwareDesc::byName(request.hardware, hwError);
  int64_t rejected = 0, tooBig = 0, fit = 0;
  for (const Evaluated &e : plan.evaluated) {
    rejected += !e.error.empty();
    tooBig += e.error.empty() && !e.fits;
    fit += e.fits;
  }
  os << llvm::formatv("plan for {0}: {1} layers, {2:F3}e9 parameters, global batch {3} x {4} "
                      "tokens, {5}\n",
                      plan.model, plan.layers, plan.parameters / 1e9, plan.globalBatch, plan.seq,
                      request.precision);
  os << llvm::formatv("on {0} devices: {1}; memory per device {2} GiB\n", request.devices,
                      plan.hardwareName, gib(plan.memoryLimit));
  os << llvm::formatv("evaluated {0} candidates ({1}{7}): {2} fit, {3} over memory, {4} rejected "
                      "by the compiler; {5} dominated and {6} bounded out, not evaluated{8}\n",
                      plan.evaluated.size(),
                      plan.extrapolated ? "compiled at 3 and 4 layers per pipeline chunk and "
                                          "extrapolated"
                                        : "each compiled in full: " + plan.exactReason,
                      fit, tooBig, rejected, plan.skipped, plan.bounded,
                      plan.composed ? llvm::formatv("; {0} 1F1B pipelines composed from their "
                                                    "steps with 2 and 3 micro-batches",
                                                    plan.composed)
                                          .str()
                                    : std::string(),
                      plan.floors ? llvm::formatv(" ({0} pipelines compiled with one micro-batch "
                                                  "for their communication floor)",
                                                  plan.floors)
                                        .str()
                                  : std::string());
  if (plan.ranking.empty()) {
    double least = 0;
    std::string which;
    for (const Evaluated &e : plan.evaluated)
      if (e.error.empty() && (which.empty() || e.prediction.memory.at("total") < least)) {
        least = e.prediction.memory.at("total");
        which = label(e.candidate);
      }
    os << "\nno candidate fits in memory";
    if (!which.empty())
      os << llvm::formatv("; the smallest is {0} at {1} GiB per device", which, gib(least));
    os << "\n";
    return out;
  }
  os << llvm::formatv("\n {0,-3} {1,-18} {2,-16} {3,4} {4,-14} {5,-10} {6,10} {7,11} {8,6} "
                      "{9,9} {10,7}  {11}\n",
                      "#", "mesh", "strategy", "mb", "schedule", "recompute", "step (ms)",
                      "tokens/s", "MFU", "mem (GiB)", "bubble", "GB per device per link");
  size_t shown = std::min<size_t>(plan.ranking.size(), static_cast<size_t>(request.top));
  for (size_t r = 0; r < shown; ++r) {
    const Evaluated &e = plan.evaluated[plan.ranking[r]];
    const Candidate &c = e.candidate;
    const Prediction &p = e.prediction;
    std::string sched =
        c.pp > 1 ? c.schedule + (c.virtualStages > 1 ? " v=" + std::to_string(c.virtualStages) : "")
                 : "-";
    os << llvm::formatv(" {0,-3} {1,-18} {2,-16} {3,4} {4,-14} {5,-10} {6,10:F2} {7,11:F0} "
                        "{8,5:F1}% {9,9} {10,7:F3}  {11}\n",
                        r + 1, c.mesh(), c.strategy(), c.microBatches, sched, c.memoryPolicy(),
                        p.stepSeconds * 1e3, p.tokensPerSecond, p.mfu * 100,
                        gib(p.memory.at("total")), p.bubble,
                        succeeded(hw) ? linkText(bytesPerLink(c, p, *hw)) : "");
  }
  // Why the best wins: its breakdown against the runner-up and against the
  // fastest candidates memory ruled out.
  const Evaluated &best = plan.evaluated[plan.ranking.front()];
  const Prediction &bp = best.prediction;
  os << llvm::formatv("\n#1: compute {0:F2} ms{1} + exposed communication {2:F2} ms = {3:F2} ms "
                      "per step (communication {4:F2} ms, {5:F2} GB per device; gradient "
                      "reductions {6:F2} ms overlap {10}the backward's {7:F2} ms); {8} GiB per "
                      "device of {9}\n",
                      bp.computeSeconds * 1e3,
                      best.candidate.pp > 1
                          ? llvm::formatv(" (slowest stage over 1 - bubble {0:F3})", bp.bubble).str()
                          : std::string(),
                      bp.exposedSeconds * 1e3, bp.stepSeconds * 1e3, bp.commSeconds * 1e3,
                      bp.commBytes / 1e9, bp.gradientSeconds * 1e3, bp.backwardSeconds * 1e3,
                      gib(bp.memory.at("total")), gib(plan.memoryLimit),
                      best.candidate.pp > 1 ? "(1 + s)/m (stage s, m micro-batches) of " : "");
  if (plan.ranking.size() > 1) {
    const Prediction &sp = plan.evaluated[plan.ranking[1]].prediction;
    auto signed2 = [](double x) { return llvm::formatv("{0}{1:F2}", x >= 0 ? "+" : "", x).str(); };
    os << llvm::formatv("  #2 against #1: compute {0} ms, exposed communication {1} ms, memory "
                        "{2} GiB\n",
                        signed2((sp.computeSeconds - bp.computeSeconds) * 1e3),
                        signed2((sp.exposedSeconds - bp.exposedSeconds) * 1e3),
                        signed2((sp.memory.at("total") - bp.memory.at("total")) / double(1ull << 30)));
  }
  std::vector<const Evaluated *> faster;
  for (const Evaluated &e : plan.evaluated)
    if (e.error.empty() && !e.fits && e.prediction.stepSeconds < bp.stepSeconds)
      faster.push_back(&e);
  std::sort(faster.begin(), faster.end(), [](const Evaluated *a, const Evaluated *b) {
    return a->prediction.stepSeconds < b->prediction.stepSeconds;
  });
  for (size_t i = 0; i < faster.size() && i < 3; ++i)
    os << llvm::formatv("  faster but over memory: {0}: {1:F2} ms, {2} GiB per device\n",
                        label(faster[i]->candidate), faster[i]->prediction.stepSeconds * 1e3,
                        gib(faster[i]->prediction.memory.at("total")));
  os << "  compile it: shardc compile <model> "
     << llvm::join(best.candidate.flags(plan.layers, request.precision), " ")
     << " -o step (or --plan FILE from `shardc plan --json`)";
  if (best.candidate.microBatches > 1)
    os << llvm::formatv("; the model's batch is the micro-batch: regenerate it with --batch {0}",
                        plan.globalBatch / best.candidate.microBatches);
  os << "\n";
  double memoryError = 0, bytesError = 0;
  int64_t refined = 0;
  for (size_t i : plan.ranking)
    if (const auto &screen = plan.evaluated[i].screened) {
      const Prediction &p = plan.evaluated[i].prediction;
      memoryError = std::max(memoryError, std::abs(screen->memory.at("total") -
                                                   p.memory.at("total")) /
                                              p.memory.at("total"));
      bytesError = std::max(bytesError, std::abs(screen->commBytes - p.commBytes));
      ++refined;
    }
  if (refined)
    os << llvm::formatv("  the rows are the full model compiled; the extrapolation that chose "
                        "them was off by at most {0:F1}% in memory and {1:F0} bytes in "
                        "communication{2}\n",
                        memoryError * 100, bytesError,
                        plan.overMemoryWhenExact
                            ? llvm::formatv("; {0} finalists did not fit when compiled in full",
                                            plan.overMemoryWhenExact)
                                  .str()
                            : std::string());
  return out;
}

llvm::json::Value shardc::planner::planJson(const Plan &plan, const Request &request) {
  auto predictionJson = [](const Prediction &p) {
    llvm::json::Object axes, mem;
    for (auto &[k, v] : p.bytesPerAxis)
      axes[k] = v;
    for (auto &[k, v] : p.memory)
      mem[k] = v;
    return llvm::json::Object{{"step_seconds", p.stepSeconds},
                              {"compute_seconds", p.computeSeconds},
                              {"communication_seconds", p.commSeconds},
                              {"exposed_communication_seconds", p.exposedSeconds},
                              {"communication_bytes", p.commBytes},
                              {"offload_bytes", p.offloadBytes},
                              {"exposed_offload_seconds", p.exposedOffloadSeconds},
                              {"bytes_per_axis", std::move(axes)},
                              {"memory_bytes", std::move(mem)},
                              {"bubble", p.bubble},
                              {"tokens_per_second", p.tokensPerSecond},
                              {"mfu", p.mfu},
                              {"exact", p.exact}};
  };
  auto candidateJson = [&](const Evaluated &e) {
    const Candidate &c = e.candidate;
    llvm::json::Array flags;
    for (const std::string &f : c.flags(plan.layers, request.precision))
      flags.push_back(f);
    llvm::json::Object o{{"mesh", c.mesh()},
                         {"strategy", c.strategy()},
                         {"micro_batches", c.microBatches},
                         {"micro_batch_size", plan.globalBatch / c.microBatches},
                         {"schedule", c.pp > 1 ? c.schedule : "-"},
                         {"virtual_stages", c.virtualStages},
                         {"pipeline_cuts", c.cuts(plan.layers)},
                         {"recompute", c.recompute},
                         {"regather_for_backward", c.recompute != "none" || c.regather},
                         {"offload_activations", c.offload},
                         {"attention_rows", c.attentionRows.empty() ? "auto" : c.attentionRows},
                         {"flags", std::move(flags)},
                         {"fits", e.fits}};
    if (!e.error.empty())
      o["error"] = e.error;
    else
      o["prediction"] = predictionJson(e.prediction);
    if (e.screened)
      o["extrapolated"] = predictionJson(*e.screened);
    return o;
  };
  llvm::json::Array ranked, all;
  for (size_t i : plan.ranking)
    ranked.push_back(candidateJson(plan.evaluated[i]));
  for (const Evaluated &e : plan.evaluated)
    all.push_back(candidateJson(e));
  llvm::json::Array floorsJson;
  for (const auto &[key, seconds] : plan.floorSeconds) {
    llvm::json::Array compute, communication;
    if (auto it = plan.floorStages.find(key); it != plan.floorStages.end())
      for (const FloorStage &f : it->second) {
        compute.push_back(llvm::json::Array{f.perMicroBatch, f.once});
        communication.push_back(llvm::json::Array{f.unhiddenPerMicroBatch, f.unhidden,
                                                  f.gradient, f.sendsPerMicroBatch});
      }
    floorsJson.push_back(llvm::json::Object{
        {"mesh", std::get<0>(key)},
        {"strategy", std::get<1>(key)},
        {"micro_batch_size", std::get<2>(key)},
        {"seconds", seconds},
        {"exposed_seconds", plan.floorExposed.count(key) ? plan.floorExposed.at(key) : 0.0},
        {"stage_compute_seconds", std::move(compute)},
        {"stage_communication_seconds", std::move(communication)}});
  }
  return llvm::json::Object{{"model", plan.model},
                            {"layers", plan.layers},
                            {"parameters", plan.parameters},
                            {"global_batch", plan.globalBatch},
                            {"seq", plan.seq},
                            {"precision", request.precision},
                            {"devices", request.devices},
                            {"hardware", plan.hardwareName},
                            {"memory_limit_bytes", plan.memoryLimit},
                            {"host_memory_limit_bytes", plan.hostMemoryLimit},
                            {"peak_flops", plan.peakFlops},
                            {"flops_per_token", plan.flopsPerToken},
                            {"extrapolated", plan.extrapolated},
                            {"dominated_not_evaluated", plan.skipped},
                            {"bounded_not_evaluated", plan.bounded},
                            {"communication_floors", plan.floors},
                            {"floors", std::move(floorsJson)},
                            {"composed_pipelines", plan.composed},
                            {"over_memory_when_compiled_in_full", plan.overMemoryWhenExact},
                            {"ranked", std::move(ranked)},
                            {"evaluated", std::move(all)}};
}
