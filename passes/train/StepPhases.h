//===- StepPhases.h - forward and backward of a training step ---*- C++ -*-===//
//
// What -xf-recompute and -xf-offload-activations both need to know about a
// synthesized training step (one block, after -xf-autodiff):
//  - the backward ops: a loss gradient (cross_entropy_grad /
//    linear_cross_entropy_grad), the replays -xf-recompute cloned into the
//    backward (`xf.recomputed`) and every op that depends on one; the rest is
//    forward (with micro-batches, each micro-batch's forward);
//  - per forward op, its layer: the index in its parameters' names
//    ("transformer.h.3.attn.q_proj.weight" -> 3); an op without parameters
//    inherits the largest layer of its operands; the embedding, the final
//    norm and the loss belong to none (-1);
//  - per forward op, its micro-batch (its inputs'; -1 where none).
// Works on the training step before sharding and on a partitioned rank-local
// step alike (the arguments keep their xf.param / xf.state / micro-batch
// attributes).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_TRAIN_STEPPHASES_H
#define SHARDC_PASSES_TRAIN_STEPPHASES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace shardc {

struct StepPhases {
  llvm::DenseSet<mlir::Operation *> backward;
  /// Every op's index in the block.
  llvm::DenseMap<mlir::Operation *, unsigned> position;
  /// Forward ops and arguments: layer (-1: none) and micro-batch (-1: none).
  llvm::DenseMap<mlir::Operation *, int64_t> layer, microBatch;

  bool isBackward(mlir::Operation *op) const { return backward.contains(op); }
  /// Whether `v` is read, and read only by backward ops (through in-place
  /// views: a reshape of it read by the backward only).
  bool readOnlyInBackward(mlir::Value v) const;
  /// Whether collective `op` reshards a forward value for the backward
  /// alone (its input made by a forward op, behind in-place views; its
  /// result read only by the backward): -xf-schedule leaves it by its backward reader and
  /// -xf-plan-memory holds its staging from there.
  bool reshardsForBackward(mlir::Operation *op) const;
};

/// Classifies the ops of `func`'s single block.
StepPhases classifyStep(mlir::func::FuncOp func);

/// Only the optimizer reads `op`'s results (AdamW, the gradient norm's sums
/// of squares, single or multi-tensor), through widening casts and the split
/// and views of a bucket of gradients: a gradient reduction.
bool feedsOnlyTheOptimizer(mlir::Operation *op);

} // namespace shardc

#endif // SHARDC_PASSES_TRAIN_STEPPHASES_H
