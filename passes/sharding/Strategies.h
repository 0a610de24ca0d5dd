//===- Strategies.h - parallelism presets as annotations --------*- C++ -*-===//
//
// A strategy is only a set of sharding annotations; propagation does the rest.
//   dp          inputs split on batch over the data axis
//   zero1       + optimizer state and fp32 masters split over it, the summed
//               gradient reduce-scattered; the parameters the step reads are
//               stored split between steps and gathered once per step at
//               their first use in the forward (overlapping it, Megatron-LM's
//               --overlap-param-gather), kept through the backward (with
//               a pp component: whole, gathered after the update)
//   zero2       + each micro-batch's gradient reduce-scattered as it is made
//   zero3/fsdp  + parameters gathered again for the backward (once per run
//               of forward or backward ops), not kept between the phases
//   tp          Megatron: weights read from a norm output split on their output
//               features (column parallel), token embeddings and the logit
//               weight split on the vocabulary; row-parallel weights, head-split
//               attention and the f/g all-reduces follow by propagation
//   sp          tp + the residual stream (every norm input) split on sequence
//   mics        parameters stored split over the partition axis (intra-node),
//               replicated over the replica axis (inter-node), batch over both
//   pp          pipeline stages along the axis (no annotation: -xf-pipeline
//               cuts the partitioned step into stages)
// Components join with '+' ("zero1+tp"); each may name its axes with '@'
// ("zero3@fsdp", "tp@model", "mics@node,gpu"). Defaults: tp and sp use "tp";
// the data axis is "dp" if the mesh has one, else the first axis not used by
// tp; mics uses the first two axes not used by tp (replica, partition).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_STRATEGIES_H
#define SHARDC_PASSES_SHARDING_STRATEGIES_H

#include "compiler/sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace shardc::sharding {

/// One annotation a strategy makes: `value` has `sharding` (or, with
/// `forUsers`, its users except the optimizer see it: gathered once per run
/// of forward or backward ops, or with `gatherOnce` once for the whole step).
struct Annotation {
  mlir::Value value;
  TensorSharding sharding;
  bool forUsers = false;
  bool gatherOnce = false;
};

/// What a strategy asks of propagation beyond its annotations.
struct StrategyTraits {
  /// Gradients are summed over all their contributions (tied uses, micro-
  /// batches) before the one reduction the optimizer's layout needs: DP's
  /// all-reduce, ZeRO-1's reduce-scatter. False for ZeRO-2/3, FSDP and MiCS,
  /// which reduce-scatter each micro-batch's contribution as it is made and
  /// keep only their gradient shard (more traffic with micro-batches, less
  /// memory).
  bool sumBeforeReduce = true;
  /// The pipeline axis (the `pp` component), which no tensor is split over;
  /// -1 without one.
  Axis pipelineAxis = -1;
  /// A widening cast (bf16/f16 -> f32) does not carry a pending sum: the sum
  /// is reduced in the narrow type before it (option
  /// low-precision-reductions; set by the pass, not by a preset).
  bool reduceBeforeWidening = false;
  /// Parameters whose ZeRO/MiCS state no dim can split over some of the
  /// state axes (every dim's size indivisible by the axis): their state is
  /// replicated over those axes. Recorded on the function (xf.state_not_split) for the report.
  struct ReplicatedState {
    int64_t tensors = 0;
    int64_t elements = 0; ///< of the parameters concerned
    std::string example;  ///< the first one's name and shape
    std::string axes;     ///< the axes not split over, by name
  } replicatedState;
};

/// The mesh axis name of the strategy's `pp` component ("pp", or the name
/// after '@'); empty if it has none. Read by the pipeline builder, which
/// adds -xf-pipeline after partitioning.
std::string pipelineAxisName(llvm::StringRef strategy);

/// What must divide the attention heads for them to split over the mesh
/// `mesh` ("dp=2,tp=4") under `strategy`: a preset's tp/sp axis size (1
/// without one); for the cost-based search (no preset) the least common
/// multiple of every axis size, since it may split the heads over any axis.
/// 1 for an empty or unparsable mesh.
int64_t headSplitDivisor(llvm::StringRef mesh, llvm::StringRef strategy);

/// Computes the annotations of `strategy` on `func` (no IR change). Errors
/// (unknown component, missing axis) are emitted at the function.
mlir::LogicalResult strategyAnnotations(mlir::func::FuncOp func, const Mesh &mesh,
                                        llvm::StringRef strategy,
                                        llvm::SmallVectorImpl<Annotation> &annotations,
                                        StrategyTraits *traits = nullptr);

/// Inserts annotations as shard.shard ops; their shard.sharding ops sit at
/// the function entry, one per distinct sharding.
void materializeAnnotations(mlir::func::FuncOp func, const Mesh &mesh,
                            llvm::ArrayRef<Annotation> annotations);

} // namespace shardc::sharding

#endif // SHARDC_PASSES_SHARDING_STRATEGIES_H
