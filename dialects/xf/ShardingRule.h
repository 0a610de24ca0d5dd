//===- ShardingRule.h - per-op sharding rules as factors ---------*- C++ -*-===//
//
// How an op may be split over a device mesh, stated as factors in the manner
// of an einsum (and of Shardy's OpShardingRule): every tensor dimension of
// every operand and result is made of factors; a factor split over some mesh
// axes splits every dimension it appears in. Each xf op returns its rule from
// ShardingRuleOpInterface::getShardingRule() (XfShardingRules.cpp); the
// propagation and partition passes know no op.
//
// What happens to a result when a factor it does not contain is split: for
// Parallel and Reduction factors the local result is a partial sum over the
// factor's mesh axes (a pending reduction), except across a logSumExp factor,
// which the op combines itself (see below). Replicated factors are never split.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_DIALECTS_XF_SHARDINGRULE_H
#define SHARDC_DIALECTS_XF_SHARDINGRULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace shardc::xf {

enum class FactorKind : uint8_t {
  /// Appears in the results (batch, sequence, heads, output features) or is an
  /// operand-only factor whose split makes the results partial sums.
  Parallel,
  /// Summed away (a contraction): in operands only; results lacking it are
  /// partial sums when it is split.
  Reduction,
  /// Must not be split (the normalized dimension of layernorm or softmax, the
  /// sequence of causal attention, the head dimension).
  Replicated,
};

struct ShardingFactor {
  int64_t size = 1;
  FactorKind kind = FactorKind::Parallel;
  /// The op is a mean over this factor (tokens, counting only unmasked
  /// targets). Split, the local op computes its share of the group's mean —
  /// its sum over the count of the whole group, one count exchanged per rank —
  /// so the results are partial sums whose total is exactly the unsharded
  /// mean, however unevenly targets are masked (`xf.factor_axes` names the
  /// group).
  bool normalized = false;
  /// Ids index into this factor (the rows of an embedding table or of a logit
  /// weight), or the op's values depend on the global index along it (iota,
  /// dropout's counter-based mask). Split, the local op needs its shard's
  /// offset, which it reads from the `xf.factor_axes` attribute the
  /// partitioner sets and the rank's mesh coordinates.
  bool indexed = false;
  /// A log-sum-exp over this factor (softmax cross-entropy over the
  /// vocabulary). Split, the local op exchanges per-row statistics (max, sum of
  /// exponentials, target logit) with the ranks that share its other factors:
  /// b·s scalars, never the rows. Results lacking the factor are then exact,
  /// not partial, unless listed in OpShardingRule::lseSumResults.
  bool logSumExp = false;
  /// The op's work along this factor grows linearly with the index (the
  /// query rows of causal attention: row i attends i + 1 keys). Split over n
  /// contiguous shards, the last does (2n - 1) / n^2 of the work, not 1 / n;
  /// the cost model prices the slowest shard.
  bool triangular = false;
  /// Propagation also tries this factor over mesh axes no neighbour proposes
  /// (the query rows of attention: a split the op can take by itself, where
  /// a split of the heads cannot apply because they do not divide the axis;
  /// slicing a replicated operand is free). The cost model decides.
  bool spare = false;
};

/// The factors of one tensor dimension, major to minor (a reshape merges or
/// splits dimensions: `4x32x64 -> 4x32x4x16` maps dim 2 of the operand to the
/// factors {heads, head_dim}). Only the major-most factor of a dimension may be
/// split; a dimension with no factor must stay replicated.
using DimFactors = llvm::SmallVector<int, 2>;
/// The factors of every dimension of one tensor (empty for a 0-d tensor).
using TensorFactors = llvm::SmallVector<DimFactors, 4>;

struct OpShardingRule {
  llvm::SmallVector<ShardingFactor, 8> factors;
  /// One entry per operand and per result, in order.
  llvm::SmallVector<TensorFactors, 4> operands;
  llvm::SmallVector<TensorFactors, 4> results;
  /// Groups of operands the op is jointly linear in: when every operand of one
  /// group carries the same pending partial sum and no other operand carries
  /// one, every result carries it too (the sum stays pending). add: {{0, 1}};
  /// matmul: {{0}, {1}}; reshape: {{0}}. Ops not linear have none.
  llvm::SmallVector<llvm::SmallVector<int, 2>, 2> linearGroups;
  /// Results that are plain sums over a split logSumExp factor (the dx of the
  /// fused logit GEMM + cross-entropy backward) and so stay partial over it.
  llvm::SmallVector<int, 1> lseSumResults;
  /// Scalars per row the op exchanges when its logSumExp factor is split (the
  /// loss: max, sum of exponentials, target logit; its backward: the first
  /// two). For the report's accounting.
  int lseStatisticsPerRow = 0;
  /// FLOPs of the whole (unsharded) op, for the cost model.
  double flops = 0;

  /// Adds a factor and returns its index.
  int addFactor(int64_t size, FactorKind kind = FactorKind::Parallel) {
    ShardingFactor f;
    f.size = size;
    f.kind = kind;
    factors.push_back(f);
    return static_cast<int>(factors.size()) - 1;
  }
  /// Shorthand for a tensor whose every dim is one factor.
  static TensorFactors dims(llvm::ArrayRef<int> factorPerDim) {
    TensorFactors t;
    for (int f : factorPerDim)
      t.push_back(f < 0 ? DimFactors{} : DimFactors{f});
    return t;
  }
};

} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_SHARDINGRULE_H
