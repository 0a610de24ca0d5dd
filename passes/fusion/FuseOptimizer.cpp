//===- FuseOptimizer.cpp - one multi-tensor optimizer call ----------------===//
//
// -xf-adamw writes the optimizer one parameter at a time: a sum of squares
// per gradient chained by scalar adds (and, once partitioned, scalar
// all-reduces and the partitioner's rescalings between them), one AdamW per
// parameter and one cast per bf16 weight copy. On GPT-2 124M that is ~735
// kernel calls of a ~1,470-call step. On the partitioned step this pass
// regroups them into one xf.multi_sum_squares per (stage, reduction axes),
// one scalar all-reduce per set of axes, and one xf.multi_adamw per set of
// step scalars and stage, which writes the weight copies too.
//
// The norm's tree is rewritten by linearity. Every op in it (add, scale,
// sum all-reduce, transfer) is linear, so the root is a sum over the leaves
// of c_leaf * sum_{ranks of axes S_leaf} leaf. Walking down from the root,
// a leaf collects the multiset of all-reduce axes above it and the product
// of the scales; an axis reduced twice was summed over an already-replicated
// value, a factor of its size (the partitioner's 1/n rescaling before such a
// reduction then cancels to 1). Leaves with the same (stage, axes,
// coefficient) are summed by one op before their one reduction.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <map>
#include <tuple>

namespace shardc {
#define GEN_PASS_DEF_XFFUSEOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::xf;

namespace {

bool isF32Scalar(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 0 && t.getElementType().isF32();
}

void copyStage(Operation *to, int64_t stage) {
  if (stage >= 0)
    to->setAttr(XfDialect::kStageAttrName, Builder(to->getContext()).getI64IntegerAttr(stage));
}

class FuseOptimizer : public shardc::impl::XfFuseOptimizerBase<FuseOptimizer> {
public:
  using XfFuseOptimizerBase::XfFuseOptimizerBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(f, function, "-xf-fuse-optimizer");
    if (failed(target))
      return signalPassFailure();
    if (!*target || !f.getBody().hasOneBlock())
      return;
    SmallVector<ClipGradNormOp> clips(f.getOps<ClipGradNormOp>());
    for (ClipGradNormOp clip : clips)
      if (failed(fuseNorm(f, clip)))
        return signalPassFailure();
    if (failed(fuseUpdates(f)))
      return signalPassFailure();
    readNarrowGradients(f);
  }

private:
  LogicalResult fuseNorm(func::FuncOp f, ClipGradNormOp clip);
  LogicalResult fuseUpdates(func::FuncOp f);
  void readNarrowGradients(func::FuncOp f);
};

//===----------------------------------------------------------------------===//
// The gradient norm
//===----------------------------------------------------------------------===//

/// A leaf of the norm's sum and the linear map above it.
struct Term {
  Value value;              ///< the leaf
  Value gradient;           ///< its operand if the leaf is an xf.sum_squares
  int64_t stage;            ///< the leaf's pipeline stage (-1: none)
  SmallVector<int16_t> axes; ///< summed over these mesh axes (sorted)
  double coef;
};

LogicalResult FuseOptimizer::fuseNorm(func::FuncOp f, ClipGradNormOp clip) {
  Value root = clip.getSumsq();
  Operation *rootOp = root.getDefiningOp();
  if (!rootOp || !isa<AddOp, ScaleOp, shard::AllReduceOp, TransferOp>(rootOp))
    return success(); // nothing to regroup
  // Mesh axis sizes, for axes reduced twice.
  SmallVector<int64_t> axisSize;
  StringRef gridName;
  if (auto gridRef = f->getAttrOfType<FlatSymbolRefAttr>(XfDialect::kGridAttrName))
    if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(f, gridRef)) {
      axisSize.assign(grid.getShape().begin(), grid.getShape().end());
      gridName = gridRef.getValue();
    }

  // Walk down from the root. Any other op (or a value that is not an f32
  // scalar) is a leaf kept as it is.
  SmallVector<Term> terms;
  llvm::SetVector<Operation *> tree;
  shard::AllReduceOp reduceTemplate;
  TransferOp transferTemplate;
  struct Item {
    Value v;
    std::map<int16_t, int> counts;
    double coef;
  };
  SmallVector<Item> work{{root, {}, 1.0}};
  while (!work.empty()) {
    Item item = work.pop_back_val();
    Operation *op = item.v.getDefiningOp();
    auto reduce = dyn_cast_or_null<shard::AllReduceOp>(op);
    bool sumReduce = reduce && reduce.getReduction() == shard::ReductionKind::Sum &&
                     !gridName.empty() && reduce.getGrid() == gridName &&
                     llvm::all_of(reduce.getGridAxes(), [&](int16_t a) {
                       return a >= 0 && static_cast<size_t>(a) < axisSize.size();
                     });
    if (op && isF32Scalar(item.v) && isa<AddOp>(op)) {
      tree.insert(op);
      work.push_back({op->getOperand(0), item.counts, item.coef});
      work.push_back({op->getOperand(1), item.counts, item.coef});
    } else if (auto scale = dyn_cast_or_null<ScaleOp>(op); scale && isF32Scalar(item.v)) {
      tree.insert(op);
      work.push_back({scale.getX(), item.counts,
                      item.coef * scale.getFactor().convertToDouble()});
    } else if (sumReduce && isF32Scalar(item.v)) {
      tree.insert(op);
      reduceTemplate = reduce;
      for (int16_t a : reduce.getGridAxes())
        ++item.counts[a];
      work.push_back({reduce.getInput(), item.counts, item.coef});
    } else if (auto transfer = dyn_cast_or_null<TransferOp>(op);
               transfer && isF32Scalar(item.v)) {
      tree.insert(op);
      transferTemplate = transfer;
      work.push_back({transfer.getInput(), item.counts, item.coef});
    } else {
      Term t;
      t.value = item.v;
      if (auto ss = dyn_cast_or_null<SumSquaresOp>(op))
        t.gradient = ss.getX();
      t.stage = stageOf(item.v);
      t.coef = item.coef;
      for (auto [axis, count] : item.counts) {
        t.axes.push_back(axis);
        for (int k = 1; k < count; ++k)
          t.coef *= static_cast<double>(axisSize[axis]);
      }
      if (std::abs(t.coef - 1.0) < 1e-12)
        t.coef = 1.0;
      terms.push_back(std::move(t));
    }
  }
  if (llvm::count_if(terms, [](const Term &t) { return bool(t.gradient); }) < 2)
    return success();

  // Group by (stage, axes, coefficient), in the leaves' program order.
  using Key = std::tuple<int64_t, SmallVector<int16_t>, double>;
  std::vector<std::pair<Key, SmallVector<const Term *>>> groups;
  SmallVector<const Term *> ordered;
  for (const Term &t : terms)
    ordered.push_back(&t);
  llvm::stable_sort(ordered, [](const Term *a, const Term *b) {
    Operation *x = a->value.getDefiningOp(), *y = b->value.getDefiningOp();
    return x && y ? x->isBeforeInBlock(y) : !x && y; // block arguments first
  });
  for (const Term *t : ordered) {
    Key key{t->stage, t->axes, t->coef};
    auto it = llvm::find_if(groups, [&](const auto &g) { return g.first == key; });
    if (it == groups.end())
      groups.push_back({key, {t}});
    else
      it->second.push_back(t);
  }

  OpBuilder b(clip);
  Location loc = clip.getLoc();
  const int64_t rootStage = stageOf(root);
  auto add = [&](Value x, Value y, int64_t stage) -> Value {
    if (!x)
      return y;
    auto sum = AddOp::create(b, loc, x, y);
    copyStage(sum, stage);
    return sum;
  };
  // Per group: its sum on its stage, scaled, moved to the root's stage.
  std::vector<std::pair<SmallVector<int16_t>, Value>> atRoot;
  for (auto &[key, members] : groups) {
    auto &[stage, axes, coef] = key;
    SmallVector<Value> gradients;
    Value sum;
    const bool one = llvm::count_if(members, [](const Term *t) { return bool(t->gradient); }) == 1;
    for (const Term *t : members)
      if (t->gradient && !one)
        gradients.push_back(t->gradient);
      else
        sum = add(sum, t->value, stage); // a lone gradient keeps its xf.sum_squares
    if (!gradients.empty()) {
      auto multi = MultiSumSquaresOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                             gradients);
      copyStage(multi, stage);
      sum = add(sum, multi, stage);
    }
    if (coef != 1.0) {
      auto scaled = ScaleOp::create(b, loc, sum, coef);
      copyStage(scaled, stage);
      sum = scaled;
    }
    if (stage != rootStage) {
      if (!transferTemplate || stage < 0 || rootStage < 0)
        return clip.emitError("-xf-fuse-optimizer: a gradient norm term on stage ")
               << stage << " reaches the norm on stage " << rootStage << " without a transfer";
      auto moved = cast<TransferOp>(b.clone(*transferTemplate));
      moved->setOperand(0, sum);
      moved.setFrom(stage);
      moved.setTo(rootStage);
      copyStage(moved, stage);
      sum = moved;
    }
    auto it = llvm::find_if(atRoot, [&](const auto &e) { return e.first == axes; });
    if (it == atRoot.end())
      atRoot.push_back({axes, sum});
    else
      it->second = add(it->second, sum, rootStage);
  }
  // One reduction per set of axes, then the total.
  Value total;
  for (auto &[axes, sum] : atRoot) {
    Value v = sum;
    if (!axes.empty()) {
      if (!reduceTemplate)
        return clip.emitError("-xf-fuse-optimizer: a gradient norm term is summed over mesh "
                              "axes without an all-reduce");
      auto reduce = cast<shard::AllReduceOp>(b.clone(*reduceTemplate));
      reduce->setOperand(0, v);
      reduce.setGridAxes(axes);
      copyStage(reduce, rootStage);
      v = reduce.getResult();
    }
    total = add(total, v, rootStage);
  }
  clip->setOperand(0, total);

  // The old tree and sums, where nothing else reads them.
  SmallVector<Operation *> dead(tree.begin(), tree.end());
  for (const Term &t : terms)
    if (t.gradient && !llvm::is_contained(dead, t.value.getDefiningOp()))
      dead.push_back(t.value.getDefiningOp());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : dead)
      if (op && op->use_empty()) {
        op->erase();
        op = nullptr;
        erased = true;
      }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Gradients read in the type they were reduced in
//===----------------------------------------------------------------------===//

/// A gradient reduced in bf16/f16 (--low-precision-reductions) reaches the
/// optimizer through a widening xf.cast, which stores an f32 copy of every
/// gradient shard (4 bytes per element where 2 would do). Where the cast's
/// only readers are the fused optimizer calls (xf.multi_adamw as a gradient,
/// xf.multi_sum_squares), they read the narrow gradient directly and widen it
/// as they load it: the same values (widening is exact), no f32 buffer.
void FuseOptimizer::readNarrowGradients(func::FuncOp f) {
  SmallVector<CastOp> widenings;
  for (MultiAdamWOp op : f.getOps<MultiAdamWOp>())
    for (Value g : op.getGrads())
      if (auto c = g.getDefiningOp<CastOp>()) {
        auto from = cast<RankedTensorType>(c.getX().getType());
        auto to = cast<RankedTensorType>(c.getType());
        if (from.getElementType().getIntOrFloatBitWidth() >=
                to.getElementType().getIntOrFloatBitWidth() ||
            !isa<FloatType>(from.getElementType()) || llvm::is_contained(widenings, c))
          continue;
        bool optimizerOnly = llvm::all_of(c->getUses(), [](OpOperand &use) {
          Operation *user = use.getOwner();
          if (isa<MultiSumSquaresOp>(user))
            return true;
          auto adam = dyn_cast<MultiAdamWOp>(user);
          return adam && adam.getGrads().getBeginOperandIndex() <= use.getOperandNumber() &&
                 use.getOperandNumber() <
                     adam.getGrads().getBeginOperandIndex() + adam.getGrads().size();
        });
        if (optimizerOnly)
          widenings.push_back(c);
      }
  for (CastOp c : widenings) {
    c.getResult().replaceAllUsesWith(c.getX());
    c->erase();
  }
}

//===----------------------------------------------------------------------===//
// The updates
//===----------------------------------------------------------------------===//

LogicalResult FuseOptimizer::fuseUpdates(func::FuncOp f) {
  // Updates that can share a call: the same step scalars, hyperparameters
  // and stage; weight decay is per tensor (0 or the group's value).
  using Key = std::tuple<void *, void *, void *, void *, double, double, double, int64_t>;
  std::vector<std::pair<Key, SmallVector<AdamWOp>>> groups;
  std::map<Key, double> decayOf;
  SmallVector<AdamWOp> zeroDecay;
  auto keyOf = [](AdamWOp op) {
    return Key{op.getLr().getAsOpaquePointer(), op.getGradScale().getAsOpaquePointer(),
               op.getStep().getAsOpaquePointer(),
               op.getSkip() ? op.getSkip().getAsOpaquePointer() : nullptr,
               op.getBeta1().convertToDouble(), op.getBeta2().convertToDouble(),
               op.getEpsilon().convertToDouble(), stageOf(op.getNewParam())};
  };
  auto groupOf = [&](const Key &key) -> SmallVector<AdamWOp> & {
    auto it = llvm::find_if(groups, [&](const auto &g) { return g.first == key; });
    if (it != groups.end())
      return it->second;
    groups.push_back({key, {}});
    return groups.back().second;
  };
  // One nonzero decay per group: an update with another is left alone.
  for (AdamWOp op : f.getOps<AdamWOp>()) {
    double wd = op.getWeightDecay().convertToDouble();
    Key key = keyOf(op);
    if (wd != 0.0) {
      auto [it, inserted] = decayOf.insert({key, wd});
      if (!inserted && it->second != wd)
        continue;
    }
    groupOf(key).push_back(op);
  }

  for (auto &[key, ops] : groups) {
    double wd = decayOf.count(key) ? decayOf[key] : 0.0;
    // The copies: a cast of a new master to bf16/f16.
    SmallVector<CastOp> casts(ops.size());
    bool anyCast = false;
    for (auto [k, op] : llvm::enumerate(ops))
      for (Operation *user : op.getNewParam().getUsers())
        if (auto c = dyn_cast<CastOp>(user)) {
          Type e = cast<RankedTensorType>(c.getType()).getElementType();
          if (e.isBF16() || e.isF16()) {
            casts[k] = c;
            anyCast = true;
            break;
          }
        }
    if (ops.size() < 2 && !anyCast)
      continue;

    AdamWOp first = ops.front(), last = ops.back();
    SmallVector<Value> params, grads, ms, vs;
    SmallVector<Type> types, copyTypes;
    SmallVector<int64_t> decay, copies;
    for (auto [k, op] : llvm::enumerate(ops)) {
      params.push_back(op.getParam());
      grads.push_back(op.getGrad());
      ms.push_back(op.getM());
      vs.push_back(op.getV());
      types.push_back(op.getParam().getType());
      decay.push_back(op.getWeightDecay().convertToDouble() != 0.0 ? 1 : 0);
      if (casts[k]) {
        copies.push_back(static_cast<int64_t>(k));
        copyTypes.push_back(casts[k].getType());
      }
    }
    // Ops between the first and the last update that read an update's
    // result (directly or through another such op) move after the call;
    // unless a later update reads one of them.
    llvm::DenseSet<Operation *> members, folded;
    for (AdamWOp op : ops)
      members.insert(op);
    for (CastOp c : casts)
      if (c)
        folded.insert(c);
    llvm::DenseSet<Value> produced;
    for (AdamWOp op : ops)
      produced.insert(op->result_begin(), op->result_end());
    for (CastOp c : casts)
      if (c)
        produced.insert(c.getResult());
    SmallVector<Operation *> sink;
    for (Operation *op = first->getNextNode(); op && op != last.getOperation();
         op = op->getNextNode()) {
      if (members.contains(op) || folded.contains(op))
        continue;
      if (llvm::any_of(op->getOperands(), [&](Value v) { return produced.contains(v); })) {
        sink.push_back(op);
        produced.insert(op->result_begin(), op->result_end());
      }
    }
    if (llvm::any_of(ops, [&](AdamWOp op) {
          return llvm::any_of(op->getOperands(), [&](Value v) { return produced.contains(v); });
        }))
      continue; // an update reads another's result: leave the group as it is

    OpBuilder b(f.getContext());
    b.setInsertionPointAfter(last);
    auto multi = MultiAdamWOp::create(
        b, last.getLoc(), types, types, types, copyTypes, params, grads, ms, vs, first.getLr(),
        first.getGradScale(), first.getStep(), first.getSkip(), first.getBeta1Attr(),
        first.getBeta2Attr(), first.getEpsilonAttr(), b.getF64FloatAttr(wd),
        b.getDenseI64ArrayAttr(decay), b.getDenseI64ArrayAttr(copies));
    copyStage(multi, std::get<7>(key));
    Operation *after = multi;
    for (Operation *op : sink) {
      op->moveAfter(after);
      after = op;
    }
    for (auto [k, op] : llvm::enumerate(ops)) {
      op.getNewParam().replaceAllUsesWith(multi.getNewParams()[k]);
      op.getNewM().replaceAllUsesWith(multi.getNewM()[k]);
      op.getNewV().replaceAllUsesWith(multi.getNewV()[k]);
    }
    for (auto [j, k] : llvm::enumerate(copies)) {
      casts[k].getResult().replaceAllUsesWith(multi.getNewCopies()[j]);
      casts[k].erase();
    }
    for (AdamWOp op : ops)
      op.erase();
  }
  return success();
}

} // namespace
