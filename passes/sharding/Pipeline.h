//===- Pipeline.h - the sharding pipeline -----------------------*- C++ -*-===//
#ifndef SHARDC_PASSES_SHARDING_PIPELINE_H
#define SHARDC_PASSES_SHARDING_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <string>

namespace shardc {

struct ShardingPipelineOptions {
  std::string function = "train_step";
  std::string mesh;     ///< "dp=2,tp=2"
  std::string strategy; ///< "zero1+tp"
  std::string hardware = "h100-8x-nvlink-ib";
  double memoryBudget = 0; ///< bytes per device (0: the hardware's memory)
  bool partition = true; ///< stop after propagation when false
};

/// Propagation (mesh, preset, cost) then partitioning, as the data flows.
void addShardingPipeline(mlir::OpPassManager &pm, const ShardingPipelineOptions &options);

} // namespace shardc

#endif // SHARDC_PASSES_SHARDING_PIPELINE_H
