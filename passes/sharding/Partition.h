//===- Partition.h - rewrite a sharded function to local shapes -*- C++ -*-===//
#ifndef SHARDC_PASSES_SHARDING_PARTITION_H
#define SHARDC_PASSES_SHARDING_PARTITION_H

#include "compiler/sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace shardc::sharding {

/// Rewrites annotated `func` (see -xf-partition) in place to per-rank local
/// shapes with collectives. Emits diagnostics and fails on IR that is not
/// fully annotated; the function is unchanged then, unless `keepOnFailure`
/// is false (a caller that drops the function on failure: it is then
/// rewritten where it is, without a working copy).
mlir::LogicalResult partitionFunction(mlir::func::FuncOp func, const Mesh &mesh,
                                      bool keepOnFailure = true);

} // namespace shardc::sharding

#endif // SHARDC_PASSES_SHARDING_PARTITION_H
