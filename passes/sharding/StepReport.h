//===- StepReport.h - what a sharded training step costs --------*- C++ -*-===//
//
// The accounting behind `shardc explain`, `-xf-report-sharding` and
// `shardc plan`: a sharded (annotated, not yet partitioned) step is
// partitioned on a copy, put through what `shardc compile` runs next (the
// pipeline stages, the rank-local fusions, -xf-schedule, -xf-plan-memory) and
// priced by the one cost model: collectives per kind and axes (ring bytes per
// device, time on the hardware's links), compute, the pipeline's bubble, and
// the compiled step's own memory plan per arena (and per stage).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_STEPREPORT_H
#define SHARDC_PASSES_SHARDING_STEPREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardc {

struct StepReportOptions {
  std::string function;     ///< the name the report prints
  std::string hardware = "h100-8x-nvlink-ib"; ///< a shipped description or a .json path
  std::string pipelineAxis; ///< "" unless the strategy has a pp component
  std::string schedule = "1f1b";
  int64_t virtualStages = 1;
  std::string cuts; ///< pipeline cuts ("" = balanced)
  /// Order each stage as the stage it stands for in a pipeline this long
  /// (-xf-pipeline schedule-stages; 0: the mesh's): the planner compiles a
  /// long pipeline's first, two middle and last stages, each holding what
  /// that stage holds in the long pipeline.
  int64_t scheduleStages = 0;
  /// Gradient all-reduce buckets (-rt-bucket-all-reduces; 0: none): their
  /// ring latencies are paid once per bucket.
  int64_t bucketBytes = 25 * 1024 * 1024;
  bool values = true; ///< list every value's sharding (the planner does not need them)
  /// Verify the IR after each pass the report runs (the planner, which only
  /// reads figures from thousands of compiled copies, turns it off).
  bool verifyPasses = true;
  /// Plan memory with -xf-offload-activations (the offloaded activations in
  /// the host arena, reported apart from the device's memory).
  bool offloadActivations = false;
  /// Schedule and plan the memory (-xf-schedule, -xf-plan-memory); without
  /// it every arena is reported as 0 (the planner's communication floors
  /// read time and bytes only).
  bool planMemory = true;
  int64_t offloadMinBytes = 65536;
  /// The mesh whose links price the collectives and sends ("": the step's
  /// own). The planner reports a pipeline of many stages from the same one
  /// compiled with four (the first, two middle and the last stage): that
  /// step's mesh has a shorter pipeline axis, which may span fewer nodes.
  /// The same axes, and sizes but for the pipeline axis.
  std::string pricingMesh;
  /// Partition the function itself rather than a copy of it: it is moved
  /// out of its module into the report's own and gone when the report
  /// returns (the planner, which reads figures and drops the step, saves
  /// copying a step of up to thousands of layer copies).
  bool consume = false;
};

/// The gradient all-reduces of one set of mesh axes, as -rt-bucket-all-reduces
/// merges them: their ring latencies are paid once per bucket, and the number
/// of buckets is a step function of the bytes (not affine in them), so a
/// figure put together from several reports (the planner's extrapolation over
/// the layers) prices its own total again.
struct GradientBuckets {
  double input = 0;       ///< bytes per device
  double count = 0;       ///< tensors
  double bucketBytes = 0; ///< 0: one bucket per tensor
  double perBucket = 0;   ///< seconds of ring latency per bucket
  double latency = 0;     ///< seconds, as priced
  /// The latency of `input` bytes in `count` tensors.
  double priced() const;
};

/// What one pipeline stage communicates and computes per step, per device
/// (every rank of a stage runs the same ops); an unpipelined step is one
/// stage. Collectives with no stage (a pipelined step's scalar reductions
/// over every rank) count on every stage.
struct StageCost {
  double commSeconds = 0; ///< every collective and send, bucket latencies included
  double commBytes = 0;
  std::map<std::string, double> bytesPerAxis;
  /// The part of commSeconds the backward can hide: gradient reductions.
  double gradientSeconds = 0;
  /// Parameter gathers (ZeRO-3/FSDP, MiCS), by the phase that reads them.
  double forwardGatherSeconds = 0, backwardGatherSeconds = 0;
  /// Every op's compute time, the backward's, the forward's (before the
  /// pipeline's bubble): the phase shares are taken in these proportions.
  double computeSum = 0, backwardSum = 0, forwardSum = 0;
  double offloadBytes = 0; ///< activations copied out (and back) per step
  /// What the step's last micro-batch alone runs (its own forward and
  /// backward: ops that read its inputs and no other micro-batch's; 0 with
  /// one micro-batch): compute, and communication nothing hides (not a
  /// gradient reduction nor a parameter gather). A step of m micro-batches
  /// of that size runs m copies of these and the rest once.
  double microBatchCompute = 0, microBatchUnhidden = 0;
  /// Of that communication, its sends (the pipeline's boundary crossings,
  /// which an interleaved schedule makes v times per micro-batch).
  double microBatchSends = 0;
  std::map<std::string, GradientBuckets> buckets; ///< by axes
  /// Whole-step parameter gathers (ZeRO-1/2, -xf-bucket-all-gathers): their
  /// ring latencies once per bucket of gathered bytes, by axes (part of
  /// commSeconds and forwardGatherSeconds).
  std::map<std::string, GradientBuckets> gatherBuckets;
  /// ZeRO's gradient reduce-scatters (-xf-bucket-reduce-scatters), the same
  /// way (part of commSeconds and gradientSeconds).
  std::map<std::string, GradientBuckets> scatterBuckets;
  /// A pipeline stage's sends (part of commSeconds), by receiving stage.
  struct Sends {
    double seconds = 0, bytes = 0;
    std::string axes;
  };
  std::map<int64_t, Sends> sendsTo;
};

/// The modelled step from its stages' costs and the (pipelined: slowest
/// stage over 1 - bubble) compute time: each stage hides its parameter
/// gathers behind its phase's share of the compute and its gradient
/// reductions and backward gathers behind the backward's share; what is
/// left is exposed, and so is offload traffic beyond each phase on the host
/// link. The step is the busiest stage's (the first of equals). In a
/// pipeline of m micro-batches a stage's gradients are complete only after
/// its last micro-batch's backward, so its reductions hide behind that
/// backward and the drain after it (the s stages before it each running one
/// more): (1 + s)/m of its backward share, at most all of it.
struct ModelledStep {
  size_t busiest = 0;
  double forwardShare = 0, backwardShare = 0;
  double exposedSeconds = 0, offloadSeconds = 0, exposedOffloadSeconds = 0;
  double stepSeconds = 0;
};
ModelledStep modelStep(llvm::ArrayRef<StageCost> stages, double computeSeconds,
                       double hostBandwidth, int64_t pipelineMicroBatches = 0);

/// A stage's costs as the report's JSON writes them (`stage_costs`) and reads
/// them back (the planner).
llvm::json::Object stageCostJson(const StageCost &stage);
StageCost stageCostFromJson(const llvm::json::Object &o);

/// The report: `json` as `shardc explain --json` writes it (keys function,
/// mesh, hardware, values, collectives, bytes_per_axis, communication_bytes,
/// communication_seconds, compute_seconds, splits_not_taken, query_row_splits,
/// step_seconds, memory_bytes, stage_costs, busiest_stage and, pipelined,
/// pipeline), `text` as `shardc explain` prints. A pipelined step's
/// communication figures are its busiest stage's: a device runs one stage's
/// collectives, not the whole pipeline's.
struct StepReport {
  llvm::json::Object json;
  std::string text;
};

/// Reports on `func` (in a module with its shard.grid); diagnostics on
/// failure. `func` itself is not changed.
mlir::FailureOr<StepReport> reportStep(mlir::func::FuncOp func, const StepReportOptions &options);

} // namespace shardc

#endif // SHARDC_PASSES_SHARDING_STEPREPORT_H
