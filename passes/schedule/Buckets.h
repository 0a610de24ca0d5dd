//===- Buckets.h - which ZeRO collectives the bucketing passes merge -*- C++ -*-===//
//
// -xf-bucket-reduce-scatters and -xf-bucket-all-gathers merge ZeRO's
// gradient reduce-scatters and whole-step parameter gathers whose blocks are
// contiguous. The step report prices exactly those (and the buckets they
// made) by the bucket, the rest per collective.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SCHEDULE_BUCKETS_H
#define SHARDC_PASSES_SCHEDULE_BUCKETS_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace shardc {

/// A sum reduce-scatter of a gradient read only by the optimizer whose
/// scattered blocks are contiguous (a bucket's merged one included).
bool isBucketableReduceScatter(mlir::shard::ReduceScatterOp rs);

/// A whole-step (xf.gather_once) gather of step arguments (a bucket of them
/// included) whose gathered blocks are contiguous.
bool isBucketableAllGather(mlir::shard::AllGatherOp ag);

} // namespace shardc

#endif // SHARDC_PASSES_SCHEDULE_BUCKETS_H
