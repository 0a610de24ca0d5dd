//===- Pipeline.cpp - the sharding pipeline -------------------------------===//

#include "passes/sharding/Pipeline.h"

#include "passes/Passes.h"

void shardc::addShardingPipeline(mlir::OpPassManager &pm, const ShardingPipelineOptions &o) {
  XfPropagateShardingOptions propagate;
  propagate.function = o.function;
  propagate.mesh = o.mesh;
  propagate.strategy = o.strategy;
  propagate.hardware = o.hardware;
  propagate.memoryBudget = o.memoryBudget;
  pm.addPass(createXfPropagateSharding(propagate));
  if (!o.partition)
    return;
  XfPartitionOptions partition;
  partition.function = o.function;
  pm.addPass(createXfPartition(partition));
}
