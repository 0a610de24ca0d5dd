//===- Planner.h - choose mesh, strategy, micro-batches, recomputation -*- C++ -*-===//
//
// `shardc plan`: given a model, a number of devices, a hardware description
// and a memory size, enumerate the ways to train it — mesh factorizations over
// pp x dp x tp, the data-parallel stage (DDP, ZeRO-1/2/3), sequence
// parallelism, micro-batches, the pipeline schedule and recomputation — and
// rank them by modelled step time among those that fit in memory.
//
// Every number is the compiler's own: a candidate is evaluated by building
// its training step, sharding it with the candidate's strategy and running
// the report `shardc explain` prints (reportStep: the compiled step's memory
// plan, the collectives the partitioned step emits priced by the cost model,
// compute, the pipeline's bubble). There is no second formula.
//
// To keep that affordable on 48-layer models and 512 devices, a model that
// `shardc gen` wrote (its xf.model describes it) is evaluated at three and four
// layers per pipeline chunk and extrapolated linearly in the layer count:
// every layer of a generated transformer is the same, so collective bytes and
// compute are affine in the number of layers per chunk (the embedding and the
// head are the constant), and so is each memory arena once the layer stack
// holds the peak (with one or two layers the head can; hence three and four).
// That screens; the finalists (the top candidates by the extrapolation) are
// then compiled in full, and what is printed and ranked is the full model's
// report: collective bytes and compute extrapolate exactly, but the memory
// plan's peak does not always (the schedule can find a better order for a
// longer stack), so a finalist the full compile puts over memory is dropped
// and the next one compiled. A model without a usable xf.model, or with at
// most four layers per chunk, is evaluated in full throughout. A 1F1B
// pipeline of many micro-batches (Request::composeFrom) is screened from its
// steps with two and three micro-batches instead of its m copies: compute,
// bytes and collective time add per micro-batch, so they are exact; a
// stage's workspace grows per micro-batch it holds, an approximation the
// memory-limit band and the finalists' full compiles guard.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_PLANNER_PLANNER_H
#define SHARDC_COMPILER_PLANNER_PLANNER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace shardc::planner {

/// What to plan for.
struct Request {
  int64_t devices = 8;
  std::string hardware = "h100-8x-nvlink-ib"; ///< shipped name or .json path
  double memoryBytes = 0;  ///< per device; 0: the hardware's memory_bytes
  int64_t globalBatch = 0; ///< sequences per step; 0: the model's batch
  std::string precision = "bf16";
  int64_t top = 5;      ///< candidates printed
  int64_t maxTp = 0;    ///< largest tensor-parallel group; 0: devices per node
  /// 1F1B pipelines of at least this many micro-batches are screened from
  /// their steps with two and three (composed), not with their m copies
  /// compiled; 0: never. The finalists are compiled in full either way.
  int64_t composeFrom = 8;
  /// Pipelines of more than four stages are screened from the same pipeline
  /// compiled with four (its first, two middle and its last stage), the
  /// links priced on the candidate's mesh; false: every stage compiled. The
  /// finalists are compiled in full either way.
  bool reduceStages = true;
  /// Threads the search evaluates on (0: one per core). The plan is the
  /// same for every count: the other threads compute what the search is
  /// expected to ask for next, and the search decides as it would alone.
  int64_t jobs = 0;
};

/// One way to run the step.
struct Candidate {
  int64_t pp = 1, dp = 1, tp = 1;
  std::string data = "dp"; ///< dp | zero1 | zero2 | zero3 | mics (when dp > 1)
  /// MiCS: the partition group (parameters sharded over `shard` ranks inside
  /// a node, replicated over dp / shard groups); the mesh has dp and shard.
  /// ZeRO across nodes: the data axis factored, dp / shard across nodes and
  /// `shard` inside one (mesh dp=R,dq=S, strategy zero1@dp,dq).
  int64_t shard = 0;
  bool sp = false;         ///< Megatron sequence parallelism (tp > 1)
  int64_t microBatches = 1;
  std::string schedule = "1f1b"; ///< 1f1b | interleaved (pp > 1)
  int64_t virtualStages = 1;
  std::string recompute = "none"; ///< none | selective | full
  bool offload = false; ///< --offload-activations (kept activations in host memory)
  /// --regather-for-backward without recomputation: what the forward
  /// all-gathered (sequence parallelism's norm outputs, query-row attention's
  /// keys and values) is gathered again for the backward, not kept
  /// (implied by selective and full recomputation).
  bool regather = false;
  /// --attention-rows where the heads do not divide tp: "" (auto: the
  /// propagation compares attention split by its query rows with attention
  /// whole, deciding the step twice) or the choice an evaluation's first
  /// compile made ("split" or "whole"), which its further compiles (other
  /// depths and micro-batch counts, the full compile of a finalist) and the
  /// candidate's flags take.
  std::string attentionRows;

  std::string mesh() const;     ///< "pp=2,dp=2,tp=2" (axes of size 1 left out)
  std::string strategy() const; ///< "pp+zero1+tp+sp"
  /// Layer indices where pipeline chunks 1.. start (even chunks); "" for pp = 1.
  std::string cuts(int64_t layers) const;
  /// "none", "selective", "full", with "+regather" when regathering without
  /// recomputation and "+offload" when offloading.
  std::string memoryPolicy() const {
    return recompute + (regather ? "+regather" : "") + (offload ? "+offload" : "");
  }
  /// The `shardc compile`/`explain` flags that build this candidate.
  std::vector<std::string> flags(int64_t layers, const std::string &precision) const;
  /// Layers per extrapolation unit: one per pipeline chunk.
  int64_t chunks() const { return pp * virtualStages; }
};

/// What the compiler's report says about a candidate (extrapolated or exact).
struct Prediction {
  double stepSeconds = 0, computeSeconds = 0, commSeconds = 0;
  double exposedSeconds = 0;  ///< communication on the critical path
  double gradientSeconds = 0, backwardSeconds = 0; ///< the overlap's two sides
  double forwardSeconds = 0, forwardGatherSeconds = 0, backwardGatherSeconds = 0;
  double commBytes = 0;
  /// Activation offload: bytes copied out (and back) per step, seconds each
  /// way on the host link, and what of it the forward/backward cannot hide.
  double offloadBytes = 0, offloadSeconds = 0, exposedOffloadSeconds = 0;
  std::map<std::string, double> bytesPerAxis;
  /// Arenas (parameters, gradients, optimizer state, inputs, activations),
  /// "total" (device memory) and "host" (offloaded activations), bytes per device.
  std::map<std::string, double> memory;
  double bubble = 0;
  double tokensPerSecond = 0, mfu = 0;
  bool exact = false; ///< evaluated on the full model
};

struct Evaluated {
  Candidate candidate;
  Prediction prediction; ///< exact for the ranked candidates
  bool fits = false;
  std::string error; ///< the compiler rejected it (first diagnostic)
  /// The extrapolated prediction that put it among the finalists (then
  /// `prediction` is the full model's).
  std::optional<Prediction> screened;
};

/// One stage of a communication floor's step (Plan::floorStages), seconds.
struct FloorStage {
  double perMicroBatch = 0, once = 0; ///< compute per micro-batch, once per step
  /// Communication nothing hides, per micro-batch and once per step; the
  /// gradient reductions (once per step).
  double unhiddenPerMicroBatch = 0, unhidden = 0, gradient = 0;
  /// Of the unhidable communication per micro-batch, the sends (the
  /// boundary crossings: v times as many under an interleaved schedule).
  double sendsPerMicroBatch = 0;
};

struct Plan {
  std::string model;        ///< xf.model name or the function name
  int64_t layers = 0, globalBatch = 0, seq = 0;
  double parameters = 0, flopsPerToken = 0;
  double memoryLimit = 0, peakFlops = 0;
  /// Host memory per device for offloaded activations (0: not limited).
  double hostMemoryLimit = 0;
  std::string hardwareName;
  bool extrapolated = false; ///< evaluated on 3 and 4 layers per chunk
  std::string exactReason;   ///< why not (when !extrapolated)
  std::vector<Evaluated> evaluated; ///< every candidate evaluated, in order
  /// Indices of the candidates printed, fastest first: every one compiled in
  /// full (exact) and fitting.
  std::vector<size_t> ranking;
  int64_t skipped = 0; ///< dominated: not evaluated (see the design notes)
  int64_t bounded = 0; ///< pipelines whose lower bound cannot make the ranking
  int64_t overMemoryWhenExact = 0; ///< finalists the full compile pushed over memory
  /// 1F1B pipelines screened from their steps with two and three micro-batches.
  int64_t composed = 0;
  /// Pipelines compiled with two micro-batches for the communication floor
  /// that bounds their schedules, counts and policies.
  int64_t floors = 0;
  /// Those floors: (mesh, strategy, micro-batch size) -> seconds (0.99 of
  /// the two-micro-batch step's communication).
  std::map<std::tuple<std::string, std::string, int64_t>, double> floorSeconds;
  /// And 0.99 of the most any stage of that step communicates that nothing
  /// can hide (neither gradient reductions nor parameter gathers): a floor
  /// on the exposed communication of every candidate it applies to.
  std::map<std::tuple<std::string, std::string, int64_t>, double> floorExposed;
  /// And per stage of that step: its compute per micro-batch (the second
  /// micro-batch's own ops) and once per step (the rest: the optimizer, the
  /// gradient accumulation), so m micro-batches of that size compute at
  /// least m x the first + the second on each stage; the same for what it
  /// communicates that nothing can hide; and its gradient reductions (once
  /// per step whatever m, hidden only behind the backward of the last
  /// (1 + s)/m micro-batches).
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<FloorStage>> floorStages;
};

/// Plans; diagnostics (through the module's context) and failure when the
/// request cannot be planned (no candidate is valid, bad hardware file).
/// `progress`, if given, is told each candidate as it is evaluated.
mlir::FailureOr<Plan> plan(mlir::ModuleOp model, const Request &request,
                           const std::function<void(const Evaluated &)> &progress = {});

/// Evaluates one candidate on `model` exactly (the full model).
mlir::FailureOr<Prediction> evaluate(mlir::ModuleOp model, const Candidate &candidate,
                                     const Request &request, std::string &error);

/// The table `shardc plan` prints and its JSON (`--json`).
std::string formatPlan(const Plan &plan, const Request &request);
llvm::json::Value planJson(const Plan &plan, const Request &request);

} // namespace shardc::planner

#endif // SHARDC_COMPILER_PLANNER_PLANNER_H
