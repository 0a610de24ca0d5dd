//===- XfUpstreamSharding.cpp - upstream ShardingInterface for xf ---------===//
//
// One external model of `mlir::shard::ShardingInterface`, attached to every xf
// op (all of them carry a ShardingRuleOpInterface rule), computed per op from
// that rule so the two never disagree:
//
//  - loops: one per factor of the rule (ShardingRule.h), plus one per tensor
//    dimension without a factor (kept whole);
//  - getLoopIteratorTypes: `reduction` for a factor that reaches no result
//    (contractions, reduce_sum's dims, sum_squares; shardc's rule: a split
//    factor missing from a result leaves partial sums), `parallel` otherwise;
//  - getReductionLoopIteratorKinds: `sum` for every reduction loop (shardc's
//    partial results are always pending sums);
//  - getIndexingMaps: each operand/result dimension maps to the loop of its
//    factor. A dimension made of several factors (a reshape that splits or
//    merges dimensions, the query heads of grouped-query attention,
//    [kv_heads, group]) is not an affine projection of the loops; it maps to
//    its major-most factor only, and the minor factors are kept whole: that
//    is exactly shardc's rule ("only the major-most factor of a dimension may
//    be split"), so every xf op is covered, none falls back to replication.
//
// Upstream has no notion of factors that must stay whole, so the model keeps
// them whole itself: getShardingOption drops any split of such a loop before
// upstream's default deduction (propagation then inserts the resharding, and
// partition the all_gather). Kept whole: Replicated factors (normalized
// dimension of layernorm/softmax, attention's sequence and head_dim), the
// minor factors of multi-factor dimensions, and the factors whose split needs
// shardc's own machinery, which upstream partition cannot produce: `indexed`
// ones (embedding and logit vocabulary, iota, dropout, rope positions: the
// local op needs its shard offset via `xf.factor_axes`), `logSumExp` ones
// (vocabulary-parallel cross-entropy statistics), `normalized` ones (a mean
// over split tokens needs the group's count), and parallel factors present in
// some results but not others (layernorm_grad's tokens: dx split, dgamma a
// partial sum; upstream has one iterator type per loop).
//
// partition: the op cloned with its local operands and local result types
// (upstream's partitionTriviallyShardableOperation), then, if a reduction
// loop is split, every result all-reduced (sum) over those grid axes, as
// upstream linalg does: the Megatron MLP's row-parallel matmul ends in one
// shard.all_reduce. Pending sums are never carried further (upstream
// shardings have no partial axes), unlike -xf-propagate-sharding.
//
//===----------------------------------------------------------------------===//

#include "dialects/xf/XfUpstreamSharding.h"
#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallSet.h"

#include <vector>

using namespace mlir;
using namespace shardc::xf;

namespace {

/// The loop nest upstream sees, derived from an op's sharding rule.
struct UpstreamLoops {
  SmallVector<utils::IteratorType> types;
  /// False for loops the model never splits (see the file comment).
  SmallVector<bool> splittable;
  /// Operands first, then results.
  SmallVector<AffineMap> maps;

  bool splittableDim(unsigned tensor, unsigned dim) const {
    AffineMap m = maps[tensor];
    if (dim >= m.getNumResults())
      return false;
    return splittable[cast<AffineDimExpr>(m.getResult(dim)).getPosition()];
  }
};

int64_t rankOf(Type t) {
  auto ranked = dyn_cast<RankedTensorType>(t);
  return ranked ? ranked.getRank() : 0;
}

UpstreamLoops loopsOf(Operation *op) {
  MLIRContext *ctx = op->getContext();
  OpShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  UpstreamLoops l;
  size_t numFactors = rule.factors.size();
  l.types.assign(numFactors, utils::IteratorType::parallel);
  l.splittable.assign(numFactors, true);

  // Factor kinds and flags.
  for (auto [f, factor] : llvm::enumerate(rule.factors))
    if (factor.kind == FactorKind::Replicated || factor.indexed || factor.logSumExp ||
        factor.normalized || factor.spare) // a spare split needs the local op's xf.factor_axes
      l.splittable[f] = false;

  // Reduction loops: in no result. Parallel factors missing from only some
  // results would need a per-result iterator type.
  SmallVector<unsigned> resultsWith(numFactors, 0);
  for (const TensorFactors &t : rule.results) {
    llvm::SmallSet<int, 8> seen;
    for (const DimFactors &d : t)
      for (int f : d)
        if (seen.insert(f).second)
          ++resultsWith[f];
  }
  for (size_t f = 0; f < numFactors; ++f) {
    if (resultsWith[f] == 0 && !rule.results.empty())
      l.types[f] = utils::IteratorType::reduction;
    else if (resultsWith[f] != rule.results.size())
      l.splittable[f] = false;
  }

  // Maps: every dimension to its major-most factor (the minor ones kept
  // whole), or to a loop of its own if it has none.
  auto exprsOf = [&](const TensorFactors *t, int64_t rank) {
    SmallVector<unsigned> loops;
    for (int64_t d = 0; d < rank; ++d) {
      unsigned loop;
      if (t && d < static_cast<int64_t>(t->size()) && !(*t)[d].empty()) {
        const DimFactors &factors = (*t)[d];
        loop = factors.front();
        for (int minor : ArrayRef<int>(factors).drop_front())
          l.splittable[minor] = false;
      } else {
        loop = l.types.size();
        l.types.push_back(utils::IteratorType::parallel);
        l.splittable.push_back(false);
      }
      // A factor twice in one tensor (never in today's rules) is no
      // projection either.
      if (llvm::is_contained(loops, loop))
        l.splittable[loop] = false;
      loops.push_back(loop);
    }
    return loops;
  };
  SmallVector<SmallVector<unsigned>> perTensor;
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    perTensor.push_back(
        exprsOf(i < rule.operands.size() ? &rule.operands[i] : nullptr, rankOf(v.getType())));
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    perTensor.push_back(
        exprsOf(i < rule.results.size() ? &rule.results[i] : nullptr, rankOf(v.getType())));
  for (const SmallVector<unsigned> &loops : perTensor) {
    SmallVector<AffineExpr> exprs;
    for (unsigned loop : loops)
      exprs.push_back(getAffineDimExpr(loop, ctx));
    l.maps.push_back(AffineMap::get(l.types.size(), 0, exprs, ctx));
  }
  return l;
}

/// `sharding` without the splits of dimensions whose loop stays whole.
shard::Sharding withoutUnsplittable(const shard::Sharding &sharding, const UpstreamLoops &l,
                                    unsigned tensor, MLIRContext *ctx) {
  if (!sharding)
    return sharding;
  SmallVector<shard::GridAxesAttr> axes;
  for (auto [d, a] : llvm::enumerate(sharding.getSplitAxes()))
    axes.push_back(l.splittableDim(tensor, d) ? a : shard::GridAxesAttr::get(ctx, {}));
  return shard::Sharding::get(sharding.getGridAttr(), axes, sharding.getStaticHaloSizes(),
                              sharding.getStaticShardedDimsOffsets(),
                              sharding.getDynamicHaloSizes(),
                              sharding.getDynamicShardedDimsOffsets());
}

/// The grid axes of every loop, read off the operand and result shardings
/// partition was given; fails if two tensors disagree on a loop or a loop
/// that must stay whole is split.
FailureOr<shard::ShardingArray> loopAxes(Operation *op, const UpstreamLoops &l,
                                         ArrayRef<shard::Sharding> operandShardings,
                                         ArrayRef<shard::Sharding> resultShardings) {
  SmallVector<std::optional<SmallVector<shard::GridAxis>>> axes(l.types.size());
  std::vector<shard::Sharding> all(operandShardings.begin(), operandShardings.end());
  all.insert(all.end(), resultShardings.begin(), resultShardings.end());
  for (auto [tensor, sharding] : llvm::enumerate(all)) {
    if (!sharding || tensor >= l.maps.size())
      continue;
    AffineMap map = l.maps[tensor];
    ArrayRef<shard::GridAxesAttr> split = sharding.getSplitAxes();
    for (unsigned d = 0; d < map.getNumResults(); ++d) {
      unsigned loop = cast<AffineDimExpr>(map.getResult(d)).getPosition();
      ArrayRef<shard::GridAxis> a =
          d < split.size() ? split[d].asArrayRef() : ArrayRef<shard::GridAxis>();
      if (!a.empty() && !l.splittable[loop])
        return op->emitOpError() << "dimension " << d << " of "
                                 << (tensor < operandShardings.size() ? "operand " : "result ")
                                 << (tensor < operandShardings.size()
                                         ? tensor
                                         : tensor - operandShardings.size())
                                 << " is split, but its sharding-rule factor must stay whole";
      if (!axes[loop])
        axes[loop] = llvm::to_vector(a);
      else if (!llvm::equal(*axes[loop], a))
        return op->emitOpError() << "operand and result shardings disagree on loop " << loop;
    }
  }
  shard::ShardingArray res;
  for (auto &a : axes)
    res.push_back(a ? *a : SmallVector<shard::GridAxis>());
  return res;
}

template <typename Op>
struct XfShardingModel
    : public shard::ShardingInterface::ExternalModel<XfShardingModel<Op>, Op> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return loopsOf(op).types;
  }

  SmallVector<shard::ReductionKind> getReductionLoopIteratorKinds(Operation *op) const {
    SmallVector<shard::ReductionKind> kinds;
    for (utils::IteratorType t : loopsOf(op).types)
      if (t == utils::IteratorType::reduction)
        kinds.push_back(shard::ReductionKind::Sum);
    return kinds;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const { return loopsOf(op).maps; }

  /// Upstream's deduction on the shardings without the splits of loops that
  /// must stay whole: such an operand is then resharded (gathered) for the op.
  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    UpstreamLoops l = loopsOf(op);
    MLIRContext *ctx = op->getContext();
    unsigned numOperands = op->getNumOperands();
    std::vector<shard::Sharding> operands, results;
    for (auto [i, s] : llvm::enumerate(operandShardings))
      operands.push_back(withoutUnsplittable(s, l, i, ctx));
    for (auto [i, s] : llvm::enumerate(resultShardings))
      results.push_back(withoutUnsplittable(s, l, numOperands + i, ctx));
    FailureOr<shard::ShardingOption> option =
        shard::detail::defaultGetShardingOption(op, operands, results);
    if (failed(option) || option->empty)
      return option;
    for (size_t loop = 0; loop < option->shardingArray.size(); ++loop)
      if (loop < l.splittable.size() && !l.splittable[loop])
        option->shardingArray[loop].clear();
    shard::removeTrailingEmptySubArray(option->shardingArray);
    return option;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings, IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable, OpBuilder &builder) const {
    UpstreamLoops l = loopsOf(op);
    FailureOr<shard::ShardingArray> axes =
        loopAxes(op, l, operandShardings, resultShardings);
    if (failed(axes))
      return failure();
    for (OpResult r : op->getResults())
      if (!resultShardings[r.getResultNumber()] && rankOf(r.getType()) > 0)
        return op->emitOpError() << "result " << r.getResultNumber()
                                 << " has no sharding annotation (run sharding-propagation)";
    shard::partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                                resultShardings, partitionMap, symbolTable,
                                                builder);
    SmallVector<shard::GridAxis> reductionAxes = shard::getReductionGridAxes(l.types, *axes);
    if (reductionAxes.empty())
      return success();
    // The local results are partial sums over the reduction axes.
    StringRef grid;
    for (const shard::Sharding &s : llvm::concat<const shard::Sharding>(operandShardings,
                                                                         resultShardings))
      if (s) {
        grid = s.getGrid();
        break;
      }
    for (OpResult r : op->getResults()) {
      Value local = partitionMap.lookup(r);
      Value reduced = shard::AllReduceOp::create(builder, op->getLoc(), local, grid,
                                                 reductionAxes, shard::ReductionKind::Sum);
      partitionMap.map(r, reduced);
    }
    return success();
  }
};

template <typename Op>
void attachModel(MLIRContext *ctx) {
  if constexpr (Op::template hasTrait<ShardingRuleOpInterface::Trait>())
    Op::template attachInterface<XfShardingModel<Op>>(*ctx);
}

template <typename... Ops>
void attachModels(MLIRContext *ctx) {
  (attachModel<Ops>(ctx), ...);
}

} // namespace

void shardc::xf::registerXfUpstreamShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, XfDialect *) {
    attachModels<
#define GET_OP_LIST
#include "dialects/xf/XfOps.cpp.inc"
        >(ctx);
  });
}
