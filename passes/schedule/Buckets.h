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

/// Ranks in a collective's group: the larger tensor's dim `d` over the
/// smaller's (0 if the smaller's is empty).
inline int64_t ranksAlong(mlir::RankedTensorType whole, mlir::RankedTensorType block,
                          int64_t d) {
  return block.getDimSize(d) > 0 ? whole.getDimSize(d) / block.getDimSize(d) : 0;
}

/// Whether the ranks' blocks of `t` split along dim `d` are contiguous in
/// row-major order: no dim of size above one before it.
inline bool contiguousBlocks(mlir::RankedTensorType t, int64_t d) {
  for (int64_t i = 0; i < d; ++i)
    if (t.getDimSize(i) != 1)
      return false;
  return true;
}

/// Bytes of a ranked tensor value.
inline int64_t tensorValueBytes(mlir::Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

/// A sum reduce-scatter of a gradient read only by the optimizer whose
/// scattered blocks are contiguous (a bucket's merged one included).
bool isBucketableReduceScatter(mlir::shard::ReduceScatterOp rs);

/// A whole-step (xf.gather_once) gather of step arguments (a bucket of them
/// included) whose gathered blocks are contiguous.
bool isBucketableAllGather(mlir::shard::AllGatherOp ag);

} // namespace shardc

#endif // SHARDC_PASSES_SCHEDULE_BUCKETS_H
