//===- Partition.cpp - per-rank local shapes and collectives --------------===//
//
// Walks an annotated function in order and builds its local version in
// place: each xf op is cloned with local types, operands are resharded to
// what the op's decision needs, results from what the op produces to the
// value's stored sharding (see planReshard for the collectives). Reshards of
// a value are cached per target sharding. annotate_for_users annotations
// (ZeRO-3's "gather before use") are gathered once per run of forward ops
// (those a loss is computed from) and once per run of backward ops (the rest,
// recomputation's replays included): a tied embedding's lookup and logit GEMM
// share one gather, the backward gathers again, and a new run gathers again
// instead of keeping the copy alive across the other phase. An annotation
// with xf.gather_once (ZeRO-1/2) is gathered once, at its first use, and the
// gathered value serves the rest of the step. On a step that recomputes
// (xf.regather_for_backward, -xf-recompute), a forward value the backward
// needs gathered (all-gathers only) is gathered again in the backward run
// rather than the forward's gathered copy kept: Megatron-LM's sequence
// parallelism keeps the norm output's sequence shard and all-gathers it
// again for the weight gradient.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Partition.h"

#include "passes/ArgAttrs.h"
#include "passes/FunctionTarget.h"
#include "passes/Passes.h"
#include "passes/sharding/ShardingIR.h"

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <limits>
#include <map>

#define DEBUG_TYPE "xf-partition"

namespace shardc {
#define GEN_PASS_DEF_XFPARTITION
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, const Mesh &mesh) : func_(func), mesh_(mesh), b_(func) {}

  LogicalResult run();

private:
  struct Local {
    Value value;
    TensorSharding sharding;
  };

  LogicalResult verifyAnnotated();
  FailureOr<Type> localType(Type global, const TensorSharding &s, Operation *at);
  /// Emits the collectives from `from` to `to` at the builder's position.
  FailureOr<Value> reshard(Value v, const TensorSharding &from, const TensorSharding &to,
                           Location loc);
  /// `old`'s local value in sharding `to` (made once per target).
  FailureOr<Value> use(Value old, const TensorSharding &to, Location loc);
  LogicalResult partitionOp(Operation *op);
  /// Numbers the runs of forward (feeding a loss) and of backward ops, whose
  /// uses share one gather of an annotated value.
  void findPhases(Block &entry);

  func::FuncOp func_;
  const Mesh &mesh_;
  OpBuilder b_;
  llvm::DenseMap<Value, Local> local_; ///< old canonical value -> stored local value
  std::map<std::pair<void *, std::string>, Value> cache_;
  /// The run (of forward or of backward ops) each op belongs to.
  llvm::DenseMap<Operation *, int64_t> run_;
  /// The run of the op being partitioned.
  int64_t currentRun_ = 0;
  /// The runs of forward ops.
  llvm::DenseSet<int64_t> forwardRuns_;
  /// Gather forward values again for the backward (xf.regather_for_backward).
  bool regather_ = false;
  /// Users-annotation reshards: (annotation, run, target) -> value.
  std::map<std::tuple<void *, int64_t, std::string>, Value> usersCache_;
};

void Partitioner::findPhases(Block &entry) {
  // The forward: the ops the losses are computed from (transitively). Every
  // other op is backward: the gradients, the optimizer, and the forward ops
  // recomputation replays for the backward (they feed gradients only), so a
  // replay shares its run's gathers with the backward ops around it.
  llvm::DenseSet<Operation *> forward;
  for (Operation &op : llvm::reverse(entry)) {
    bool feedsLoss = isa<xf::CrossEntropyOp, xf::LinearCrossEntropyOp>(op) ||
                     llvm::any_of(op.getUsers(), [&](Operation *u) { return forward.contains(u); });
    if (feedsLoss)
      forward.insert(&op);
  }
  // Runs: maximal stretches of one phase in program order (a micro-batch's
  // forward, its backward, the next micro-batch's forward, ...).
  int64_t run = 0;
  bool last = true;
  for (Operation &op : entry) {
    bool fw = forward.contains(&op);
    if (fw != last)
      ++run;
    last = fw;
    run_[&op] = run;
    if (fw)
      forwardRuns_.insert(run);
  }
}

LogicalResult Partitioner::verifyAnnotated() {
  bool ok = true;
  for (BlockArgument arg : func_.getArguments())
    if (isa<RankedTensorType>(arg.getType()) && !resultAnnotation(arg)) {
      func_.emitError() << "argument #" << arg.getArgNumber()
                        << " has no sharding annotation; run -xf-propagate-sharding first";
      ok = false;
    }
  // (xf.partial's axes are checked by the xf verifier, at the annotation.)
  func_.walk([&](Operation *op) {
    if (op == func_.getOperation() ||
        isa<func::ReturnOp, shard::ShardOp, shard::ShardingOp>(op))
      return;
    auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op);
    if (!iface) {
      op->emitError() << "'" << op->getName() << "' cannot be partitioned (no sharding rule)";
      ok = false;
      return;
    }
    if (!readDecision(op, xf::cachedShardingRule(iface).factors.size())) {
      op->emitError() << "op has no sharding decision ('" << kFactorAxesAttr
                      << "'); run -xf-propagate-sharding first";
      ok = false;
      return;
    }
    for (Value r : op->getResults())
      if (!resultAnnotation(r)) {
        op->emitError() << "result #" << cast<OpResult>(r).getResultNumber()
                        << " has no sharding annotation; run -xf-propagate-sharding first";
        ok = false;
        return;
      }
  });
  return success(ok);
}

FailureOr<Type> Partitioner::localType(Type global, const TensorSharding &s, Operation *at) {
  auto type = cast<RankedTensorType>(global);
  std::string why;
  auto shape = s.localShape(type.getShape(), mesh_, &why);
  if (failed(shape))
    return at->emitError() << why;
  return Type(RankedTensorType::get(*shape, type.getElementType()));
}

FailureOr<Value> Partitioner::reshard(Value v, const TensorSharding &from,
                                      const TensorSharding &to, Location loc) {
  for (const CollectiveStep &step : planReshard(from, to)) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    int64_t n = mesh_.size(step.axes);
    switch (step.kind) {
    case CollectiveStep::AllReduce:
      v = shard::AllReduceOp::create(b_, loc, type, mesh_.symbol, step.axes, v,
                                     shard::ReductionKind::Sum);
      continue;
    case CollectiveStep::ReduceScatter:
    case CollectiveStep::AllSlice:
      if (shape[step.dim] % n != 0)
        return emitError(loc) << "cannot split dimension " << step.dim << " of local size "
                              << shape[step.dim] << " over " << mesh_.axesName(step.axes);
      shape[step.dim] /= n;
      break;
    case CollectiveStep::AllGather:
      shape[step.dim] *= n;
      break;
    case CollectiveStep::AllToAll: {
      if (shape[step.dim] % n != 0)
        return emitError(loc) << "cannot split dimension " << step.dim << " of local size "
                              << shape[step.dim] << " over " << mesh_.axesName(step.axes);
      shape[step.dim] /= n;
      shape[step.concatDim] *= n;
      auto out = RankedTensorType::get(shape, type.getElementType());
      v = shard::AllToAllOp::create(b_, loc, out, mesh_.symbol, step.axes, v,
                                    APInt(64, step.dim), APInt(64, step.concatDim));
      continue;
    }
    case CollectiveStep::MakePartial:
      if (!isa<FloatType>(type.getElementType()))
        return emitError(loc) << "cannot make an integer value a pending sum";
      v = xf::ScaleOp::create(b_, loc, v, 1.0 / static_cast<double>(n));
      continue;
    }
    auto out = RankedTensorType::get(shape, type.getElementType());
    APInt axis(64, step.dim);
    if (step.kind == CollectiveStep::ReduceScatter)
      v = shard::ReduceScatterOp::create(b_, loc, out, mesh_.symbol, step.axes, v,
                                         shard::ReductionKind::Sum, axis);
    else if (step.kind == CollectiveStep::AllSlice)
      v = shard::AllSliceOp::create(b_, loc, out, mesh_.symbol, step.axes, v, axis);
    else
      v = shard::AllGatherOp::create(b_, loc, out, mesh_.symbol, step.axes, v, axis);
  }
  return v;
}

FailureOr<Value> Partitioner::use(Value old, const TensorSharding &to, Location loc) {
  // Users-annotations: reshard the annotated value again for this use.
  if (auto ann = old.getDefiningOp<shard::ShardOp>(); ann && ann.getAnnotateForUsers()) {
    Value src = annotatedValue(ann.getSrc());
    const Local &l = local_.at(src);
    TensorSharding mid = annotationSharding(ann);
    // One gather per run, or one for the whole step (xf.gather_once: made at
    // the first use, which dominates the rest of the entry block).
    int64_t run = ann->hasAttr(kGatherOnceAttr) ? std::numeric_limits<int64_t>::min() : currentRun_;
    auto key = std::make_tuple(ann.getOperation(), run, mid.str(mesh_) + " " + to.str(mesh_));
    if (auto it = usersCache_.find(key); it != usersCache_.end())
      return it->second;
    FailureOr<Value> v = reshard(l.value, l.sharding, mid, loc);
    if (failed(v))
      return failure();
    FailureOr<Value> result = reshard(*v, mid, to, loc);
    if (failed(result))
      return failure();
    usersCache_[key] = *result;
    // The step report counts a whole-step gather with the forward, where it
    // is issued, though the backward reads it too.
    if (ann->hasAttr(kGatherOnceAttr))
      for (Value c = *result; c != l.value && c.getDefiningOp();
           c = c.getDefiningOp()->getOperand(0))
        if (isa<shard::AllGatherOp>(c.getDefiningOp()))
          c.getDefiningOp()->setAttr(kGatherOnceAttr, b_.getUnitAttr());
    return result;
  }
  Value c = annotatedValue(old);
  const Local &l = local_.at(c);
  if (l.sharding == to)
    return l.value;
  // Gathered again in a backward run: a forward value moved by all-gathers
  // (and local slices) only.
  std::string target = to.str(mesh_);
  if (regather_ && currentRun_ >= 0 && !forwardRuns_.contains(currentRun_))
    if (Operation *def = c.getDefiningOp();
        def && forwardRuns_.contains(run_.lookup(def)) &&
        llvm::all_of(planReshard(l.sharding, to), [](const CollectiveStep &s) {
          return s.kind == CollectiveStep::AllGather || s.kind == CollectiveStep::AllSlice;
        }))
      target += " run " + std::to_string(currentRun_);
  auto key = std::make_pair(c.getAsOpaquePointer(), target);
  if (auto it = cache_.find(key); it != cache_.end())
    return it->second;
  FailureOr<Value> v = reshard(l.value, l.sharding, to, loc);
  if (succeeded(v))
    cache_[key] = *v;
  return v;
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  const xf::OpShardingRule &rule = xf::cachedShardingRule(cast<xf::ShardingRuleOpInterface>(op));
  OpDecision d = *readDecision(op, rule.factors.size());
  std::string why;
  if (!isValidDecision(rule, d, mesh_, &why))
    return op->emitError() << "invalid sharding decision: " << why;
  b_.setInsertionPoint(op);
  IRMapping mapping;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    FailureOr<Value> v = use(op->getOperand(i), operandSharding(rule, i, d), op->getLoc());
    if (failed(v))
      return failure();
    mapping.map(op->getOperand(i), *v);
  }
  Operation *clone = b_.clone(*op, mapping);
  // Local ops keep their decision only where they need their shard's offset,
  // exchange log-sum-exp statistics or hold a block of a spare factor (the
  // query rows of attention against every key, which its verifier accepts
  // only on a partitioned op); elsewhere it has served its purpose.
  bool needsRankContext = false;
  for (size_t f = 0; f < rule.factors.size(); ++f)
    needsRankContext |= !d.factorAxes[f].empty() &&
                        (rule.factors[f].indexed || rule.factors[f].logSumExp ||
                         rule.factors[f].normalized || rule.factors[f].spare);
  if (!needsRankContext)
    clone->removeAttr(kFactorAxesAttr);
  clone->removeAttr(kLinearPartialAttr);
  clone->removeAttr(kLinearGroupAttr);
  SmallVector<TensorSharding> produced;
  for (unsigned j = 0; j < op->getNumResults(); ++j) {
    produced.push_back(resultSharding(rule, j, d));
    FailureOr<Type> t = localType(op->getResult(j).getType(), produced.back(), op);
    if (failed(t))
      return failure();
    clone->getResult(j).setType(*t);
  }
  // (A mean over split tokens needs nothing here: the local op computes its
  // share of the group's mean itself, see ShardingFactor::normalized.)
  for (unsigned j = 0; j < op->getNumResults(); ++j) {
    Value v = clone->getResult(j);
    TensorSharding stored = annotationSharding(resultAnnotation(op->getResult(j)));
    FailureOr<Value> s = reshard(v, produced[j], stored, op->getLoc());
    if (failed(s))
      return failure();
    local_[op->getResult(j)] = {*s, stored};
  }
  return success();
}

LogicalResult Partitioner::run() {
  if (failed(verifyAnnotated()))
    return failure();
  Block &entry = func_.getBody().front();
  // Arguments: local types in their annotated sharding.
  SmallVector<Type> argTypes;
  SmallVector<std::pair<BlockArgument, Type>> retype;
  for (BlockArgument arg : func_.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType())) {
      argTypes.push_back(arg.getType());
      continue;
    }
    TensorSharding s = annotationSharding(resultAnnotation(arg));
    FailureOr<Type> t = localType(arg.getType(), s, func_);
    if (failed(t))
      return failure();
    argTypes.push_back(*t);
    retype.push_back({arg, *t});
    local_[arg] = {arg, s};
  }
  // Local types first: collectives on arguments are typed from them. (The
  // global ops still reading them are erased below, before anything verifies.)
  for (auto [arg, type] : retype)
    arg.setType(type);
  SmallVector<Operation *> old;
  for (Operation &op : entry)
    old.push_back(&op);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  findPhases(entry);
  regather_ = func_->hasAttr(xf::XfDialect::kRegatherAttrName);
  for (Operation *op : old) {
    if (isa<func::ReturnOp, shard::ShardOp, shard::ShardingOp>(op))
      continue;
    currentRun_ = run_.lookup(op);
    if (failed(partitionOp(op)))
      return failure();
  }
  // Results: state and gradients in their argument's layout, the rest replicated.
  b_.setInsertionPoint(ret);
  currentRun_ = -1; // the results: a phase of their own
  ReturnTargets targets(func_);
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  ArgAttrEditor resultAttrs(func_, /*results=*/true);
  for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
    std::optional<TensorSharding> target = targets.target(k, [&](Value v) {
      auto it = local_.find(v);
      return it == local_.end() ? nullptr : &it->second.sharding;
    });
    if (!target) {
      results.push_back(ret.getOperand(k));
      resultTypes.push_back(ret.getOperand(k).getType());
      continue;
    }
    FailureOr<Value> v = use(ret.getOperand(k), *target, ret.getLoc());
    if (failed(v))
      return failure();
    results.push_back(*v);
    resultTypes.push_back(v->getType());
    resultAttrs.set(k, kShardingAttr, target->splitAttr(func_.getContext()));
  }
  resultAttrs.commit();
  func::ReturnOp::create(b_, ret.getLoc(), results);
  // Erase the global ops (users first), then retype the arguments.
  for (Operation *op : llvm::reverse(old)) {
    op->dropAllUses();
    op->erase();
  }
  ArgAttrEditor argAttrs(func_);
  for (auto [arg, type] : retype)
    argAttrs.set(arg.getArgNumber(), kShardingAttr,
                 local_[arg].sharding.splitAttr(func_.getContext()));
  argAttrs.commit();
  func_.setFunctionType(FunctionType::get(func_.getContext(), argTypes, resultTypes));
  func_->setAttr(kGridAttr, FlatSymbolRefAttr::get(func_.getContext(), mesh_.symbol));
  return success();
}

class PartitionPass : public shardc::impl::XfPartitionBase<PartitionPass> {
public:
  using XfPartitionBase::XfPartitionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-partition");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    FailureOr<Mesh> mesh = Mesh::fromModule(func->getParentOfType<ModuleOp>());
    if (failed(mesh) || failed(partitionFunction(func, *mesh)))
      return signalPassFailure();
  }
};

} // namespace

LogicalResult sharding::partitionFunction(func::FuncOp func, const Mesh &mesh,
                                          bool keepOnFailure) {
  if (func->hasAttr(kGridAttr))
    return func.emitError() << "function is already partitioned";
  if (failed(verifyShardingOps(func, mesh)))
    return failure();
  if (!keepOnFailure) {
    Partitioner p(func, mesh);
    return p.run();
  }
  // Work on a clone so a failure leaves the function as it was.
  func::FuncOp work = func.clone();
  Partitioner p(work, mesh);
  LogicalResult result = p.run();
  if (succeeded(result)) {
    func.getBody().takeBody(work.getBody());
    func.setFunctionType(work.getFunctionType());
    func->setAttrs(work->getAttrs());
  }
  work.erase();
  return result;
}
