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
#include <string>

namespace shardc {

struct StepReportOptions {
  std::string function;     ///< the name the report prints
  std::string hardware = "h100-8x-nvlink-ib"; ///< a shipped description or a .json path
  std::string pipelineAxis; ///< "" unless the strategy has a pp component
  std::string schedule = "1f1b";
  int64_t virtualStages = 1;
  std::string cuts; ///< pipeline cuts ("" = balanced)
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
  int64_t offloadMinBytes = 65536;
};

/// The report: `json` as `shardc explain --json` writes it (keys function,
/// mesh, hardware, values, collectives, bytes_per_axis, communication_bytes,
/// communication_seconds, compute_seconds, splits_not_taken, query_row_splits,
/// step_seconds, memory_bytes and, pipelined, pipeline), `text` as `shardc
/// explain` prints.
struct StepReport {
  llvm::json::Object json;
  std::string text;
};

/// Reports on `func` (in a module with its shard.grid); diagnostics on
/// failure. `func` itself is not changed.
mlir::FailureOr<StepReport> reportStep(mlir::func::FuncOp func, const StepReportOptions &options);

} // namespace shardc

#endif // SHARDC_PASSES_SHARDING_STEPREPORT_H
