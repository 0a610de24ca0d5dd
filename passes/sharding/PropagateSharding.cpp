//===- PropagateSharding.cpp - cost-based sharding propagation ------------===//
//
// Assigns every value of a function a sharding from a few annotations. Each
// xf op is a node whose decision is the mesh axes of every factor of its rule
// (ShardingRuleOpInterface); values connect nodes.
//
//  1. Agreement: a node whose known operands and results name one set of axes
//     for every factor, without conflict, is decided, and its unknown
//     operands and results take the projections. Repeat until nothing moves.
//     A pending sum an op cannot absorb says nothing about its factors (it is
//     reduced at that use, into whatever the op decides), so consumers
//     downstream decide first: the row-parallel GEMM's partial result becomes
//     an all-reduce where the residual stream is replicated and a
//     reduce-scatter where it is split on sequence.
//  2. Conflict: when nothing agrees, the first undecided node (in program
//     order) is decided by the cost model over the candidate axes its
//     tensors propose (collective time to bring every known tensor to the
//     candidate, plus compute time, plus memory when over budget), then
//     back to 1.
//  3. Values: each value's stored sharding is chosen among what its producer
//     makes and what its users need, minimizing the resharding cost.
//
//===----------------------------------------------------------------------===//

#include "passes/Debug.h"
#include "passes/FunctionTarget.h"
#include "passes/Passes.h"

#include "compiler/cost/CostModel.h"
#include "passes/sharding/ShardingIR.h"
#include "passes/sharding/Strategies.h"

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <cstdlib>
#include <functional>

#define DEBUG_TYPE "xf-propagate-sharding"

namespace shardc {
#define GEN_PASS_DEF_XFPROPAGATESHARDING
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;
using xf::OpShardingRule;

namespace {

using Proposal = SmallVector<std::optional<AxisList>, 8>;

/// Node indices to look at again, smallest (first in program order) first,
/// each at most once: a set's order, on a heap with a membership bit.
class NodeQueue {
public:
  void resize(size_t n) { queued_.assign(n, false); }
  void insert(int i) {
    if (queued_[i])
      return;
    queued_[i] = true;
    heap_.push_back(i);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<int>());
  }
  bool empty() const { return heap_.empty(); }
  int front() const { return heap_.front(); }
  int pop() {
    int i = heap_.front();
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<int>());
    heap_.pop_back();
    queued_[i] = false;
    return i;
  }

private:
  std::vector<int> heap_;
  std::vector<bool> queued_;
};

struct Node {
  Operation *op;
  const OpShardingRule &rule; ///< the context's (xf::cachedShardingRule)
  std::optional<OpDecision> decision;
};

class Propagator {
public:
  Propagator(func::FuncOp func, const Mesh &mesh, const cost::CostModel &cost, double budget,
             StrategyTraits traits, bool spareSplits = true)
      : func_(func), mesh_(mesh), cost_(cost), budget_(budget), traits_(traits),
        spareSplits_(spareSplits), returnTargets_(func) {}

  /// Decides every op's and value's sharding (decide) and writes them as
  /// annotations (writeAnnotations). decide() changes no IR, so several
  /// propagators may decide on one function and one of them write.
  LogicalResult run() {
    if (failed(decide()))
      return failure();
    writeAnnotations();
    return success();
  }
  LogicalResult decide();
  void writeAnnotations();
  /// After decide(): the modelled seconds of the decided function, every op's
  /// compute (its slowest shard) plus every reshard once (what the producers
  /// turn their results into, what the users need of the stored values).
  double modelledSeconds() const;
  /// Whether some op split a spare factor (then a run without them may be
  /// cheaper overall: their splits are chosen op by op; else the two runs
  /// would decide alike).
  bool splitSpareFactors() const {
    return llvm::any_of(nodes_, [](const Node &n) {
      if (!n.decision)
        return false;
      for (size_t f = 0; f < n.rule.factors.size() && f < n.decision->factorAxes.size(); ++f)
        if (n.rule.factors[f].spare && !n.decision->factorAxes[f].empty())
          return true;
      return false;
    });
  }

private:
  /// The value a use reads: result annotations are the annotated value.
  static Value canonical(Value v) { return annotatedValue(v); }
  const TensorSharding *known(Value v) const {
    auto it = sharding_.find(canonical(v));
    return it == sharding_.end() ? nullptr : &it->second;
  }
  bool setIfUnknown(Value v, const TensorSharding &s) {
    v = canonical(v);
    if (sharding_.count(v) || !isa<RankedTensorType>(v.getType()))
      return false;
    sharding_[v] = s;
    touch(v);
    // Results that follow this argument (its next-step state) learn where
    // they go.
    if (auto arg = dyn_cast<BlockArgument>(v))
      for (unsigned k : followers_.lookup(arg))
        if (auto t = returnTarget(k))
          hint(returnOperand(k), *t);
    return true;
  }
  Value returnOperand(unsigned k) {
    return func_.getBody().front().getTerminator()->getOperand(k);
  }
  /// An annotated value, or a cast of one (mixed precision reads bf16 copies
  /// of annotated fp32 weights: moving the copy moves the weight).
  bool isAnnotated(Value v) const {
    v = canonical(v);
    while (auto cast = v.getDefiningOp<xf::CastOp>())
      v = canonical(cast.getX());
    return fixed_.count(v) != 0;
  }
  /// Marks the nodes next to `v` for another look.
  void touch(Value v) {
    auto mark = [&](Operation *op) {
      auto it = nodeIndex_.find(op);
      if (it == nodeIndex_.end() || nodes_[it->second].decision)
        return;
      dirty_.insert(it->second);
      dirtyWithHints_.insert(it->second);
      informed_.insert(it->second);
    };
    if (Operation *def = v.getDefiningOp())
      mark(def);
    for (Operation *user : v.getUsers()) {
      mark(user);
      if (auto ann = dyn_cast<shard::ShardOp>(user))
        if (!ann.getAnnotateForUsers())
          for (Operation *u : ann.getResult().getUsers())
            mark(u);
    }
  }
  /// What a decided consumer needs of a value whose producer is undecided: a
  /// hint, not a sharding, so the producer still decides from its own inputs
  /// first (a pending sum stays pending through the adds that follow it).
  bool hint(Value v, const TensorSharding &s) {
    v = canonical(v);
    if (isa<BlockArgument>(v))
      return setIfUnknown(v, s);
    if (sharding_.count(v) || hints_.count(v) || !isa<RankedTensorType>(v.getType()))
      return false;
    hints_[v] = s;
    touch(v);
    return true;
  }
  const TensorSharding *knownOrHint(Value v) const {
    if (const TensorSharding *s = known(v))
      return s;
    auto it = hints_.find(canonical(v));
    return it == hints_.end() ? nullptr : &it->second;
  }
  /// The values `v` flows into unmoved: its casts (with `adds`, its adds
  /// too) of the same shape, then theirs, following the first one whose
  /// layout is not known yet (a gradient's widening cast, the sum the
  /// optimizer reads).
  SmallVector<Value, 4> flowsInto(Value v, bool adds) const {
    SmallVector<Value, 4> out;
    while (v) {
      Value next;
      for (Operation *user : v.getUsers()) {
        if (!(isa<xf::CastOp>(user) || (adds && isa<xf::AddOp>(user))) ||
            user->getNumResults() != 1 ||
            cast<ShapedType>(user->getResult(0).getType()).getShape() !=
                cast<ShapedType>(v.getType()).getShape())
          continue;
        out.push_back(user->getResult(0));
        if (!next && !knownOrHint(user->getResult(0)))
          next = user->getResult(0);
      }
      v = next;
    }
    return out;
  }

  LogicalResult collectAnnotations();
  /// Tries to decide `n` from agreeing tensors; true if decided.
  bool decideByAgreement(Node &n, bool useHints);
  /// Decides `n` by cost among the candidates its tensors propose.
  void decideByCost(Node &n);
  /// For an unknown result: the shardings its undecided users' other, known
  /// operands imply for it (the position lookup added to a batch-split token
  /// lookup learns the batch split from its sibling).
  /// `pending`: a sibling summed with this value by a linear user (an add)
  /// keeps its pending sum in the proposal (the sum is reduced once after
  /// the add), so a proposal prices what the user will actually need.
  SmallVector<TensorSharding, 2> siblingProposals(Value result, bool pending = false) const;
  void applyDecision(Node &n, const OpDecision &d);
  /// The pending sum `n` can pass through, if its partial operands allow.
  bool linearPassThrough(const Node &n, OpDecision &d) const;
  /// `guesses[j]`: for a result nothing is known or hinted about, the pending
  /// sums its linear users add it to (siblingProposals with `pending`); the
  /// cheapest is priced.
  /// `keptBytes`: the bytes per device the candidate keeps (its operands and
  /// results), which break ties between equally timed candidates.
  double decisionCost(const Node &n, const OpDecision &d,
                      ArrayRef<SmallVector<TensorSharding, 2>> guesses = {},
                      double *keptBytes = nullptr) const;
  double reshardCost(const TensorSharding &from, const TensorSharding &to, Type type) const;
  /// The slowest shard's share of an op's work under `d`: 1/n per factor split
  /// n ways, (2n-1)/n^2 for a triangular one (causal attention's query rows:
  /// the last block sees the most keys).
  double slowestShare(const OpShardingRule &rule, const OpDecision &d) const {
    double share = 1;
    for (size_t f = 0; f < d.factorAxes.size(); ++f) {
      double parts = static_cast<double>(mesh_.size(d.factorAxes[f]));
      share *= f < rule.factors.size() && rule.factors[f].triangular
                   ? (2 * parts - 1) / (parts * parts)
                   : 1 / parts;
    }
    return share;
  }
  bool propagateReturn();
  /// A linear op with an operand whose producer is still undecided waits when
  /// a pending sum may pass through it: some known operand of the group
  /// carries one, or the op has no factors (a scalar add would otherwise
  /// agree at once). `strict`: it always waits (agreement from users' needs
  /// alone, or a cost decision, never outruns a producer).
  bool waitsForProducer(const Node &n, bool strict) const {
    // Summing before reducing, a linear op whose result is annotated split
    // (a gradient in the optimizer's layout) waits for its producers: the
    // sum they may carry passes through it, reduced once after.
    if (traits_.sumBeforeReduce)
      for (Value r : n.op->getResults())
        if (const TensorSharding *s = known(r);
            s && fixed_.contains(canonical(r)) && !s->usedAxes().empty())
          strict = true;
    for (const auto &group : n.rule.linearGroups) {
      bool unknown = false, pending = false;
      for (int i : group) {
        Value v = n.op->getOperand(i);
        const TensorSharding *s = known(v);
        unknown |= !s && !isa<BlockArgument>(canonical(v));
        pending |= s && !s->partial.empty();
      }
      if (unknown && (pending || n.rule.factors.empty() || strict))
        return true;
    }
    return false;
  }
  /// After every node is decided: a reshape or cast whose users all need its
  /// result split further than it makes it (a slice of what it makes) takes
  /// that split itself when bringing its operand there costs less than what
  /// it costs now.
  void refineLayoutOps();
  /// The distinct shardings the decided nodes reading `v` (but `except`)
  /// need of it; `complete` is cleared if some reader is not a decided node.
  SmallVector<TensorSharding, 2> readerNeeds(Value v, Operation *except, bool &complete) const;
  void chooseValueShardings();
  std::optional<TensorSharding> returnTarget(unsigned index) const;

  func::FuncOp func_;
  const Mesh &mesh_;
  const cost::CostModel &cost_;
  double budget_;
  StrategyTraits traits_;
  bool memoryTight_ = false;
  /// Offer spare factors (attention's query rows) splits nobody proposes.
  bool spareSplits_ = true;
  const char *phase_ = "";
  bool trace_ = debug::enabled(DEBUG_TYPE);
  ReturnTargets returnTargets_;
  llvm::DenseMap<Value, SmallVector<unsigned, 1>> followers_;
  std::vector<Node> nodes_;
  llvm::DenseMap<Operation *, int> nodeIndex_;
  /// Nodes to look at again (program order): for agreement, for agreement
  /// with users' needs, and undecided nodes something is known about.
  NodeQueue dirty_, dirtyWithHints_, informed_;
  llvm::DenseMap<Value, TensorSharding> sharding_;
  llvm::DenseMap<Value, TensorSharding> hints_;
  /// What decided users need of each value (reshards made once).
  llvm::DenseMap<Value, SmallVector<TensorSharding, 2>> paid_;
  llvm::DenseSet<Value> fixed_;
};

LogicalResult Propagator::collectAnnotations() {
  llvm::DenseMap<Value, shard::ShardOp> first;
  bool ok = true;
  func_.walk([&](shard::ShardOp ann) {
    auto type = cast<RankedTensorType>(ann.getResult().getType());
    auto def = ann.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!def) {
      ann.emitError() << "the sharding of an annotation must come from a shard.sharding op";
      ok = false;
      return;
    }
    if (def.getGrid() != mesh_.symbol) {
      ann.emitError() << "annotation refers to grid @" << def.getGrid() << ", not @"
                      << mesh_.symbol;
      ok = false;
      return;
    }
    auto axes = def.getSplitAxes().getAxes();
    if (static_cast<int64_t>(axes.size()) > std::max<int64_t>(type.getRank(), 1)) {
      ann.emitError() << "annotation has " << axes.size() << " split entries for a tensor of rank "
                      << type.getRank();
      ok = false;
      return;
    }
    TensorSharding s = annotationSharding(ann);
    for (Axis a : s.usedAxes())
      if (a < 0 || a >= mesh_.rank()) {
        ann.emitError() << "unknown mesh axis " << a << " (the mesh " << mesh_.str() << " has "
                        << mesh_.rank() << " axes)";
        ok = false;
        return;
      }
    AxisList used = s.usedAxes();
    for (size_t i = 1; i < used.size(); ++i)
      if (used[i] == used[i - 1]) {
        ann.emitError() << "mesh axis '" << mesh_.names[used[i]] << "' is used twice in "
                        << s.str(mesh_);
        ok = false;
        return;
      }
    std::string why;
    if (failed(s.localShape(type.getShape(), mesh_, &why))) {
      ann.emitError() << why;
      ok = false;
      return;
    }
    if (ann.getAnnotateForUsers()) {
      sharding_[ann.getResult()] = s;
      fixed_.insert(ann.getResult());
      return;
    }
    Value v = canonical(ann.getSrc());
    auto [it, inserted] = first.try_emplace(v, ann);
    if (!inserted && annotationSharding(it->second) != s) {
      InFlightDiagnostic diag = ann.emitError()
                                << "conflicting sharding annotations: " << s.str(mesh_)
                                << " here, " << annotationSharding(it->second).str(mesh_)
                                << " on the same value";
      diag.attachNote(it->second.getLoc()) << "the other annotation is here";
      ok = false;
      return;
    }
    sharding_[v] = s;
    fixed_.insert(v);
  });
  return success(ok);
}

bool Propagator::linearPassThrough(const Node &n, OpDecision &d) const {
  // A pending sum passes through ops that are linear in all their float
  // operands jointly (add, reshape, casts, scale, reductions): it then costs
  // one reduction later instead of one per operand. Through a GEMM or a
  // backward op with other inputs it would force the other inputs whole.
  auto isFloat = [](Value v) {
    return isa<FloatType>(getElementTypeOrSelf(v.getType()));
  };
  // Reduced in the precision it was computed in: the sum stops at a widening
  // cast (low-precision-reductions) — unless the widened value is added to
  // another pending (or not yet known) sum: a tied weight's two gradient
  // contributions or a gradient accumulated over micro-batches still sum
  // first and reduce once.
  if (auto cast = dyn_cast<xf::CastOp>(n.op); cast && traits_.reduceBeforeWidening) {
    auto from = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getX().getType()));
    auto to = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getType()));
    bool summedFurther = false;
    for (OpOperand &use : cast.getResult().getUses())
      if (auto add = dyn_cast<xf::AddOp>(use.getOwner())) {
        const TensorSharding *other = known(add->getOperand(1 - use.getOperandNumber()));
        summedFurther |= !other || !other->partial.empty();
      }
    if (from && to && to.getWidth() > from.getWidth() && !summedFurther)
      return false;
  }
  for (size_t g = 0; g < n.rule.linearGroups.size(); ++g) {
    const auto &group = n.rule.linearGroups[g];
    std::optional<AxisList> partial;
    bool ok = true;
    for (unsigned i = 0; i < n.op->getNumOperands() && ok; ++i) {
      Value v = n.op->getOperand(i);
      const TensorSharding *s = known(v);
      if (!llvm::is_contained(group, static_cast<int>(i))) {
        ok = !isFloat(v);
        continue;
      }
      if (!s || (s->partial.empty() && group.size() == 1))
        ok = false;
      else if (!s->partial.empty()) {
        if (partial && *partial != s->partial)
          ok = false;
        partial = s->partial;
      }
    }
    // Scalars without the sum join it locally (x/n on each rank; exact when n
    // is a power of two), so a chain of sums of squares ends in one
    // all-reduce. Larger tensors would carry the sum into every later use.
    if (ok && partial) {
      int64_t parts = mesh_.size(*partial);
      for (int i : group) {
        Value v = n.op->getOperand(i);
        bool scalar = cast<RankedTensorType>(v.getType()).getRank() == 0;
        if (known(v)->partial.empty() && (!scalar || (parts & (parts - 1)) != 0))
          ok = false;
      }
    }
    if (ok && partial) {
      d.linearPartial = *partial;
      d.linearGroup = static_cast<int>(g);
      return true;
    }
  }
  return false;
}

bool Propagator::decideByAgreement(Node &n, bool useHints) {
  const OpShardingRule &rule = n.rule;
  if (waitsForProducer(n, /*strict=*/useHints))
    return false;
  Proposal proposal(rule.factors.size());
  OpDecision d;
  bool passes = linearPassThrough(n, d);
  auto merge = [&](const xf::TensorFactors &tf, const TensorSharding &s) {
    Proposal p(rule.factors.size());
    if (!proposeFactors(rule, tf, s.withoutPartial(), mesh_, p))
      return true; // not expressible: resharded at this op, says nothing
    for (size_t f = 0; f < p.size(); ++f) {
      if (!p[f])
        continue;
      if (proposal[f] && *proposal[f] != *p[f])
        return false;
      proposal[f] = p[f];
    }
    return true;
  };
  for (unsigned i = 0; i < n.op->getNumOperands(); ++i) {
    const TensorSharding *s = known(n.op->getOperand(i));
    if (!s || i >= rule.operands.size())
      continue;
    bool absorbed = passes && llvm::is_contained(rule.linearGroups[d.linearGroup],
                                                 static_cast<int>(i));
    if (!s->partial.empty() && !absorbed)
      continue;
    if (!merge(rule.operands[i], *s))
      return false;
  }
  for (unsigned j = 0; j < n.op->getNumResults(); ++j) {
    Value r = n.op->getResult(j);
    const TensorSharding *s = useHints ? knownOrHint(r) : known(r);
    // A cast moves nothing: the layout a widening cast of the result is
    // known to have (a bf16 weight gradient widened for its optimizer,
    // annotated like the optimizer state) speaks for the result, so a GEMM
    // whose operands agree on computing it whole goes to the cost phase,
    // which can compute the shard instead.
    if (!s)
      for (Value made : flowsInto(r, /*adds=*/false))
        if ((s = useHints ? knownOrHint(made) : known(made)))
          break;
    if (!s || !s->partial.empty())
      continue;
    // A sum passing through into a result its users split over the summed
    // axes: sum the partial values here and reduce-scatter once after
    // (ZeRO-1's accumulated gradient, a tied weight's two contributions),
    // rather than reduce-scatter every operand to compute on the split.
    if (passes && traits_.sumBeforeReduce &&
        llvm::any_of(s->usedAxes(), [&](Axis a) { return llvm::is_contained(d.linearPartial, a); }))
      continue;
    if (!merge(rule.results[j], *s))
      return false;
  }
  for (auto &p : proposal)
    if (!p)
      return false;
  for (auto &p : proposal)
    d.factorAxes.push_back(*p);
  if (!isValidDecision(rule, d, mesh_))
    return false;
  // A spare factor (attention's query rows) left whole while a mesh axis is
  // free: whether the op splits it by itself is the cost phase's choice.
  auto used = [&](Axis a) {
    return llvm::any_of(d.factorAxes, [&](const AxisList &l) { return llvm::is_contained(l, a); });
  };
  for (size_t f = 0; f < rule.factors.size(); ++f)
    if (spareSplits_ && rule.factors[f].spare && d.factorAxes[f].empty())
      for (Axis a = 0; a < mesh_.rank(); ++a)
        if (a != traits_.pipelineAxis && mesh_.size(AxisList{a}) > 1 && !used(a))
          return false;
  applyDecision(n, d);
  return true;
}

double Propagator::reshardCost(const TensorSharding &from, const TensorSharding &to,
                               Type type) const {
  if (from == to)
    return 0;
  return cost_.reshardTime(from, to, tensorBytes(type));
}

/// Annotations are intent: a candidate that moves an annotated value across
/// ranks (a gather or reduction, not a local slice) ranks after every
/// candidate that does not, whatever the time (as user shardings outrank
/// propagated ones in Shardy).
constexpr double kMovesAnnotatedValue = 1e3;

static bool communicates(const TensorSharding &from, const TensorSharding &to) {
  for (const CollectiveStep &step : planReshard(from, to))
    if (step.kind != CollectiveStep::AllSlice && step.kind != CollectiveStep::MakePartial)
      return true;
  return false;
}

double Propagator::decisionCost(const Node &n, const OpDecision &d,
                                ArrayRef<SmallVector<TensorSharding, 2>> guesses,
                                double *keptBytes) const {
  double total = 0;
  for (unsigned i = 0; i < n.op->getNumOperands() && i < n.rule.operands.size(); ++i)
    if (const TensorSharding *s = known(n.op->getOperand(i))) {
      TensorSharding need = operandSharding(n.rule, i, d);
      // A reshard a decided user already needs is made once (xf-partition
      // caches it per target): this user gets it for free.
      if (auto it = paid_.find(canonical(n.op->getOperand(i)));
          it != paid_.end() && llvm::is_contained(it->second, need))
        continue;
      total += reshardCost(*s, need, n.op->getOperand(i).getType());
      if (isAnnotated(n.op->getOperand(i)) && communicates(*s, need))
        total += kMovesAnnotatedValue;
    }
  double localResultBytes = 0;
  for (unsigned j = 0; j < n.op->getNumResults(); ++j) {
    TensorSharding produced = resultSharding(n.rule, j, d);
    Type type = n.op->getResult(j).getType();
    if (const TensorSharding *s = knownOrHint(n.op->getResult(j)))
      total += reshardCost(produced, *s, type);
    else if (j < guesses.size() && !guesses[j].empty()) {
      // Unknown result: price the cheapest of what its siblings imply (a
      // full-vocabulary partial sum added to a vocabulary-parallel one costs
      // its reduce-scatter; produced vocabulary-parallel, nothing).
      double cheapest = std::numeric_limits<double>::infinity();
      for (const TensorSharding &g : guesses[j])
        cheapest = std::min(cheapest, reshardCost(produced, g, type));
      total += cheapest;
    }
    localResultBytes += tensorBytes(type) / mesh_.size(produced.withoutPartial().usedAxes());
  }
  // Bytes kept per device break ties (a row-parallel weight stays split).
  double localBytes = localResultBytes;
  for (unsigned i = 0; i < n.op->getNumOperands() && i < n.rule.operands.size(); ++i)
    localBytes += tensorBytes(n.op->getOperand(i).getType()) /
                  mesh_.size(operandSharding(n.rule, i, d).withoutPartial().usedAxes());
  total += localBytes * 1e-18;
  if (keptBytes)
    *keptBytes = localBytes;
  total += cost_.computeTime(n.rule.flops * slowestShare(n.rule, d), cost::pricingType(n.op));
  // Over budget, a byte kept per device costs as much as moving it.
  if (memoryTight_ && !cost_.hardware().links.empty())
    total += localResultBytes / cost_.hardware().links.front().bandwidth;
  return total;
}

void Propagator::decideByCost(Node &n) {
  const OpShardingRule &rule = n.rule;
  // Candidate axes per factor: what the known tensors propose, and none.
  SmallVector<SmallVector<AxisList, 3>, 8> options(rule.factors.size());
  for (auto &o : options)
    o.push_back({});
  auto collect = [&](const xf::TensorFactors &tf, const TensorSharding &s) {
    // Per dim: a split the rule cannot take on one dim (tp over heads that
    // do not divide) still lets the other dims propose (the batch on dp).
    Proposal p(rule.factors.size());
    if (!proposeFactors(rule, tf, s.withoutPartial(), mesh_, p, /*perDim=*/true))
      return;
    // A factor split over several axes (a ZeRO-sharded weight, [tp, dp])
    // also proposes its coarser prefixes ([tp]): another user may already
    // pay for that layout, and the other factors may want the axes left over
    // (the batch on dp).
    for (size_t f = 0; f < p.size(); ++f)
      if (p[f])
        for (size_t len = 1; len <= p[f]->size(); ++len) {
          AxisList prefix(p[f]->begin(), p[f]->begin() + len);
          if (!llvm::is_contained(options[f], prefix))
            options[f].push_back(prefix);
        }
  };
  for (unsigned i = 0; i < n.op->getNumOperands() && i < rule.operands.size(); ++i)
    if (const TensorSharding *s = known(n.op->getOperand(i)))
      collect(rule.operands[i], *s);
  SmallVector<SmallVector<TensorSharding, 2>, 2> guesses(n.op->getNumResults());
  for (unsigned j = 0; j < n.op->getNumResults(); ++j)
    if (const TensorSharding *s = knownOrHint(n.op->getResult(j)))
      collect(rule.results[j], *s);
    else {
      // Casts and adds of the same shape move nothing: where the value they
      // make is known (a gradient widened for, or summed into what, its
      // optimizer reads, annotated like the optimizer state), that layout
      // is a candidate for the result itself, priced as its reshard, so a
      // weight gradient is computed as the shard its update needs rather
      // than whole and sliced after, or partial and all-reduced.
      for (Value made : flowsInto(n.op->getResult(j), /*adds=*/true))
        if (const TensorSharding *s = knownOrHint(made)) {
          collect(rule.results[j], *s);
          if (!llvm::is_contained(guesses[j], *s))
            guesses[j].push_back(*s);
        }
      for (const TensorSharding &s : siblingProposals(n.op->getResult(j), /*pending=*/true)) {
        collect(rule.results[j], s);
        // Priced only where a linear user sums the result with a pending
        // sum: a sibling's own split may be its optimizer layout (a ZeRO
        // bias), not what the user will read.
        if (!s.partial.empty())
          guesses[j].push_back(s);
      }
    }

  // Over the memory budget, splitting a result is worth considering even
  // where no neighbour proposes it (sharded activations); so is a spare
  // factor (attention's query rows), always.
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    if (rule.factors[f].kind != xf::FactorKind::Parallel ||
        !(memoryTight_ || (spareSplits_ && rule.factors[f].spare)))
      continue;
    for (Axis a = 0; a < mesh_.rank(); ++a)
      if (a != traits_.pipelineAxis && !llvm::is_contained(options[f], AxisList{a}))
        options[f].push_back(AxisList{a});
  }

  OpDecision base;
  linearPassThrough(n, base);
  std::optional<OpDecision> best;
  double bestCost = 0, bestBytes = 0;
  // Enumerate combinations (bounded: factors with one option do not multiply).
  SmallVector<size_t, 8> index(options.size(), 0);
  for (int visited = 0; visited < 4096; ++visited) {
    OpDecision d = base;
    for (size_t f = 0; f < options.size(); ++f)
      d.factorAxes.push_back(options[f][index[f]]);
    if (isValidDecision(rule, d, mesh_)) {
      double bytes = 0;
      double c = decisionCost(n, d, guesses, &bytes);
      SHARDC_DEBUG({
        DBGS() << "  candidate [";
        for (size_t f = 0; f < d.factorAxes.size(); ++f)
          llvm::errs() << (f ? ", " : "") << mesh_.axesName(d.factorAxes[f]);
        llvm::errs() << "] cost " << c << "\n";
      });
      // Equal times (within rounding): the candidate keeping fewer bytes
      // per device (a lookup on the rank's share of the batch rather than
      // on all of it).
      if (!best || c < bestCost * (1 - 1e-9) ||
          (c <= bestCost * (1 + 1e-9) && bytes < bestBytes * (1 - 1e-9))) {
        best = d;
        bestCost = c;
        bestBytes = bytes;
      }
    }
    size_t f = 0;
    while (f < index.size() && ++index[f] == options[f].size())
      index[f++] = 0;
    if (f == index.size())
      break;
  }
  if (!best) {
    best = OpDecision{};
    best->factorAxes.resize(rule.factors.size());
  }
  applyDecision(n, *best);
}

SmallVector<TensorSharding, 2> Propagator::siblingProposals(Value result, bool pending) const {
  SmallVector<TensorSharding, 2> out;
  for (OpOperand &use : result.getUses()) {
    auto it = nodeIndex_.find(use.getOwner());
    if (it == nodeIndex_.end() || nodes_[it->second].decision)
      continue;
    const Node &user = nodes_[it->second];
    // A cast moves nothing: its result's siblings speak for the value (a
    // bf16 branch widened into the f32 residual add learns the stream's
    // split, so a row-parallel GEMM's sum is reduce-scattered in bf16 before
    // the bias add and the cast instead of all-reduced and sliced after).
    if (auto cast = dyn_cast<xf::CastOp>(user.op)) {
      for (const TensorSharding &s : siblingProposals(cast.getResult(), pending))
        if (!llvm::is_contained(out, s))
          out.push_back(s);
      continue;
    }
    const OpShardingRule &rule = user.rule;
    Proposal p(rule.factors.size());
    for (unsigned i = 0; i < user.op->getNumOperands(); ++i) {
      const TensorSharding *s = known(user.op->getOperand(i));
      if (i == use.getOperandNumber() || !s)
        continue;
      Proposal q(rule.factors.size());
      if (!proposeFactors(rule, rule.operands[i], s->withoutPartial(), mesh_, q))
        continue;
      for (size_t f = 0; f < q.size(); ++f)
        if (q[f] && !p[f])
          p[f] = q[f];
    }
    const xf::TensorFactors &mine = rule.operands[use.getOperandNumber()];
    TensorSharding s = TensorSharding::replicated(mine.size());
    bool any = false;
    for (size_t d = 0; d < mine.size(); ++d)
      if (!mine[d].empty() && p[mine[d].front()]) {
        s.dims[d] = *p[mine[d].front()];
        any = true;
      }
    if (any && pending)
      for (const auto &group : rule.linearGroups) {
        if (!llvm::is_contained(group, static_cast<int>(use.getOperandNumber())))
          continue;
        for (int i : group)
          if (const TensorSharding *o = known(user.op->getOperand(i));
              i != static_cast<int>(use.getOperandNumber()) && o && !o->partial.empty() &&
              s.partial.empty())
            s.partial = o->partial;
      }
    if (any && !llvm::is_contained(out, s))
      out.push_back(s);
  }
  return out;
}

void Propagator::applyDecision(Node &n, const OpDecision &d) {
  n.decision = d;
  for (unsigned i = 0; i < n.op->getNumOperands(); ++i) {
    auto &paid = paid_[canonical(n.op->getOperand(i))];
    TensorSharding need = operandSharding(n.rule, i, d);
    if (!llvm::is_contained(paid, need))
      paid.push_back(need);
  }
  // SHARDC_DEBUG=xf-propagate-sharding: every decision, in order, with its tier.
  if (trace_) {
    DBGS() << phase_ << ": " << n.op->getName() << " at "
                 << n.op->getLoc() << " factors [";
    for (size_t f = 0; f < d.factorAxes.size(); ++f)
      llvm::errs() << (f ? ", " : "") << mesh_.axesName(d.factorAxes[f]);
    llvm::errs() << "]\n";
  }
  for (unsigned i = 0; i < n.op->getNumOperands() && i < n.rule.operands.size(); ++i)
    hint(n.op->getOperand(i), operandSharding(n.rule, i, d));
  for (unsigned j = 0; j < n.op->getNumResults(); ++j)
    setIfUnknown(n.op->getResult(j), resultSharding(n.rule, j, d));
}

std::optional<TensorSharding> Propagator::returnTarget(unsigned index) const {
  return returnTargets_.target(index, [&](Value v) { return known(v); });
}

bool Propagator::propagateReturn() {
  auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
  bool changed = false;
  for (unsigned k = 0; k < ret.getNumOperands(); ++k)
    if (!known(ret.getOperand(k)))
      if (auto t = returnTarget(k))
        changed |= hint(ret.getOperand(k), *t);
  return changed;
}

SmallVector<TensorSharding, 2> Propagator::readerNeeds(Value v, Operation *except,
                                                       bool &complete) const {
  SmallVector<TensorSharding, 2> needs;
  for (OpOperand &use : v.getUses()) {
    if (use.getOwner() == except)
      continue;
    auto user = nodeIndex_.find(use.getOwner());
    if (user == nodeIndex_.end() || !nodes_[user->second].decision ||
        use.getOperandNumber() >= nodes_[user->second].rule.operands.size()) {
      complete = false;
      continue;
    }
    const Node &u = nodes_[user->second];
    TensorSharding need = operandSharding(u.rule, use.getOperandNumber(), *u.decision);
    if (!llvm::is_contained(needs, need))
      needs.push_back(need);
  }
  return needs;
}

void Propagator::refineLayoutOps() {
  // Attention split by its query rows reads q (and, in the backward, the
  // output gradient) as row blocks of all heads, while the column-parallel
  // projection makes them split by columns. The reshape into heads cannot
  // keep a column split the heads do not divide, so it was decided whole: a
  // gather of the projection, then a free slice of the rows. Split on rows
  // instead, the reshape's operand moves by an all-to-all ((t-1)/t of a
  // shard, not of the whole). Consumers first, so a chain of layout ops
  // passes the split back.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node &n = *it;
    if (!isa<xf::ReshapeOp, xf::CastOp>(n.op) || !n.decision || n.op->getNumOperands() != 1 ||
        n.op->getNumResults() != 1 || !n.decision->linearPartial.empty())
      continue;
    Value result = n.op->getResult(0);
    if (fixed_.count(canonical(result)) || canonical(result) != result)
      continue;
    // Every reader is a decided node, and all need the same sharding.
    bool complete = true;
    SmallVector<TensorSharding, 2> wanted = readerNeeds(result, nullptr, complete);
    if (!complete || wanted.size() != 1 || !wanted.front().partial.empty())
      continue;
    const TensorSharding *want = &wanted.front();
    TensorSharding made = resultSharding(n.rule, 0, *n.decision);
    if (*want == made || !made.partial.empty() || communicates(made, *want))
      continue;
    Proposal proposal(n.rule.factors.size());
    if (!proposeFactors(n.rule, n.rule.results[0], *want, mesh_, proposal))
      continue;
    OpDecision d;
    for (auto &p : proposal)
      d.factorAxes.push_back(p ? *p : AxisList{});
    if (!isValidDecision(n.rule, d, mesh_) || resultSharding(n.rule, 0, d) != *want)
      continue;
    // What moving the operand costs, before and after: every distinct need
    // of its readers once, from what it holds.
    Value operand = n.op->getOperand(0);
    const TensorSharding *held = known(operand);
    if (!held)
      continue;
    SmallVector<TensorSharding, 2> others = readerNeeds(operand, n.op, complete);
    auto costWith = [&](const TensorSharding &mine) {
      double total = 0;
      for (const TensorSharding &s : others)
        total += reshardCost(*held, s, operand.getType());
      if (!llvm::is_contained(others, mine))
        total += reshardCost(*held, mine, operand.getType());
      return total;
    };
    double before = costWith(operandSharding(n.rule, 0, *n.decision)) +
                    reshardCost(made, *want, result.getType());
    double after = costWith(operandSharding(n.rule, 0, d));
    if (!(after < before * (1 - 1e-9)))
      continue;
    phase_ = "refinement";
    sharding_[canonical(result)] = *want;
    applyDecision(n, d);
  }
}

void Propagator::chooseValueShardings() {
  // What each value's users need (distinct targets: a reshard is made once).
  llvm::DenseMap<Value, SmallVector<TensorSharding, 2>> needs;
  needs.reserve(sharding_.size());
  auto need = [&](Value v, const TensorSharding &s) {
    v = canonical(v);
    auto &list = needs[v];
    if (!llvm::is_contained(list, s))
      list.push_back(s);
  };
  llvm::DenseMap<Value, TensorSharding> produced;
  produced.reserve(sharding_.size());
  for (Node &n : nodes_) {
    for (unsigned i = 0; i < n.op->getNumOperands(); ++i) {
      auto ann = n.op->getOperand(i).getDefiningOp<shard::ShardOp>();
      if (!ann || !ann.getAnnotateForUsers())
        need(n.op->getOperand(i), operandSharding(n.rule, i, *n.decision));
    }
    for (unsigned j = 0; j < n.op->getNumResults(); ++j)
      produced[n.op->getResult(j)] = resultSharding(n.rule, j, *n.decision);
  }
  func_.walk([&](shard::ShardOp ann) {
    if (ann.getAnnotateForUsers())
      need(ann.getSrc(), annotationSharding(ann));
  });
  auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
  for (unsigned k = 0; k < ret.getNumOperands(); ++k)
    if (auto t = returnTarget(k))
      need(ret.getOperand(k), *t);

  auto choose = [&](Value v, std::optional<TensorSharding> made) {
    if (fixed_.count(v))
      return;
    static const SmallVector<TensorSharding, 2> kNone;
    auto it = needs.find(v);
    const SmallVector<TensorSharding, 2> &readers = it == needs.end() ? kNone : it->second;
    SmallVector<TensorSharding, 4> options;
    if (made)
      options.push_back(*made);
    for (const TensorSharding &s : readers)
      if (!llvm::is_contained(options, s))
        options.push_back(s);
    if (options.empty()) {
      if (!sharding_.count(v))
        sharding_[v] = TensorSharding::replicated(cast<RankedTensorType>(v.getType()).getRank());
      return;
    }
    if (options.size() == 1) { // the producer's and every reader's
      sharding_[v] = std::move(options.front());
      return;
    }
    double bestCost = 0;
    std::optional<TensorSharding> best;
    for (const TensorSharding &s : options) {
      if (made && !s.partial.empty() && s.partial != made->partial)
        continue;
      double c = made ? reshardCost(*made, s, v.getType()) : 0;
      for (const TensorSharding &r : readers)
        c += reshardCost(s, r, v.getType());
      if (!best || c < bestCost * (1 - 1e-9)) {
        best = s;
        bestCost = c;
      }
    }
    sharding_[v] = *best;
  };
  for (BlockArgument arg : func_.getArguments())
    if (isa<RankedTensorType>(arg.getType()))
      choose(arg, std::nullopt);
  for (Node &n : nodes_)
    for (Value r : n.op->getResults())
      choose(r, produced[r]);
}

void Propagator::writeAnnotations() {
  for (Node &n : nodes_)
    writeDecision(n.op, *n.decision);
  SmallVector<Annotation> annotations;
  for (BlockArgument arg : func_.getArguments())
    if (isa<RankedTensorType>(arg.getType()) && !resultAnnotation(arg))
      annotations.push_back({arg, sharding_[arg], false});
  for (Node &n : nodes_)
    for (Value r : n.op->getResults())
      if (!resultAnnotation(r))
        annotations.push_back({r, sharding_[r], false});
  materializeAnnotations(func_, mesh_, annotations);
}

LogicalResult Propagator::decide() {
  if (failed(collectAnnotations()))
    return failure();
  // Reserved: the nodes are made once (their decisions are filled in place).
  size_t ops = 0;
  func_.walk([&](Operation *) { ++ops; });
  nodes_.reserve(ops);
  // The value maps, sized once (their buckets are large: rehashing moves them).
  size_t values = func_.getNumArguments();
  func_.walk([&](Operation *op) { values += op->getNumResults(); });
  sharding_.reserve(values);
  paid_.reserve(values);
  bool ok = true;
  func_.walk([&](Operation *op) {
    if (op == func_.getOperation() || isa<func::ReturnOp, shard::ShardOp, shard::ShardingOp>(op))
      return;
    auto iface = dyn_cast<xf::ShardingRuleOpInterface>(op);
    if (!iface) {
      op->emitError() << "'" << op->getName() << "' has no sharding rule; shardc can shard xf "
                      << "ops only";
      ok = false;
      return;
    }
    const OpShardingRule &rule = xf::cachedShardingRule(iface);
    if (rule.operands.size() != op->getNumOperands() ||
        rule.results.size() != op->getNumResults()) {
      op->emitError() << "sharding rule describes " << rule.operands.size() << " operands and "
                      << rule.results.size() << " results, the op has "
                      << op->getNumOperands() << " and " << op->getNumResults();
      ok = false;
      return;
    }
    nodes_.push_back({op, rule, std::nullopt});
  });
  if (!ok)
    return failure();

  // A rough footprint: every value replicated over what the annotations split.
  double footprint = 0;
  for (Node &n : nodes_)
    for (Value r : n.op->getResults())
      footprint += tensorBytes(r.getType());
  footprint /= std::max<int64_t>(1, mesh_.numRanks());
  memoryTight_ = budget_ > 0 && footprint > budget_;

  for (NodeQueue *q : {&dirty_, &dirtyWithHints_, &informed_})
    q->resize(nodes_.size());
  nodeIndex_.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodeIndex_[nodes_[i].op] = static_cast<int>(i);
    dirty_.insert(static_cast<int>(i));
    dirtyWithHints_.insert(static_cast<int>(i));
  }
  for (unsigned k = 0; k < func_.getNumResults(); ++k)
    if (int arg = returnTargets_.argumentOf(k); arg >= 0)
      followers_[func_.getArgument(arg)].push_back(k);
  for (const auto &[v, s] : sharding_)
    touch(v);
  propagateReturn();
  size_t cursor = 0;
  while (true) {
    // 1. Forward agreement from known shardings, to a fixpoint (nodes are
    // looked at again, in program order, when a neighbouring value changes).
    while (!dirty_.empty()) {
      int i = dirty_.pop();
      phase_ = "agreement";
      if (!nodes_[i].decision)
        decideByAgreement(nodes_[i], /*useHints=*/false);
    }
    // 2. The first node that agrees once its users' needs count.
    bool hinted = false;
    while (!dirtyWithHints_.empty() && !hinted) {
      int i = dirtyWithHints_.pop();
      phase_ = "users' needs";
      hinted = !nodes_[i].decision && decideByAgreement(nodes_[i], /*useHints=*/true);
    }
    if (hinted)
      continue;
    // 3. By cost: the first undecided node that something is known about
    // (a node that knows nothing would only pick "replicated" and impose it
    // on its neighbours), else the first undecided node.
    while (cursor < nodes_.size() && nodes_[cursor].decision)
      ++cursor;
    if (cursor == nodes_.size())
      break;
    Node *next = &nodes_[cursor];
    while (!informed_.empty()) {
      int i = informed_.front();
      if (nodes_[i].decision) {
        informed_.pop();
        continue;
      }
      next = &nodes_[i];
      break;
    }
    SHARDC_DEBUG(DBGS() << "deciding by cost: " << *next->op << "\n");
    phase_ = "cost";
    decideByCost(*next);
  }
  refineLayoutOps();
  chooseValueShardings();
  return success();
}

double Propagator::modelledSeconds() const {
  double total = 0;
  llvm::DenseMap<Value, SmallVector<TensorSharding, 2>> made;
  made.reserve(sharding_.size());
  auto reshard = [&](Value v, const TensorSharding &from, const TensorSharding &to) {
    if (from == to)
      return; // moves nothing
    auto &list = made[v];
    if (llvm::is_contained(list, to))
      return;
    list.push_back(to);
    total += reshardCost(from, to, v.getType());
  };
  for (const Node &n : nodes_) {
    if (!n.decision)
      continue;
    const OpDecision &d = *n.decision;
    total += cost_.computeTime(n.rule.flops * slowestShare(n.rule, d), cost::pricingType(n.op));
    for (unsigned i = 0; i < n.op->getNumOperands() && i < n.rule.operands.size(); ++i)
      if (const TensorSharding *s = known(n.op->getOperand(i)))
        reshard(canonical(n.op->getOperand(i)), *s, operandSharding(n.rule, i, d));
    for (unsigned j = 0; j < n.op->getNumResults(); ++j)
      if (const TensorSharding *s = known(n.op->getResult(j)))
        total += reshardCost(resultSharding(n.rule, j, d), *s, n.op->getResult(j).getType());
  }
  return total;
}

class PropagateSharding
    : public shardc::impl::XfPropagateShardingBase<PropagateSharding> {
public:
  using XfPropagateShardingBase::XfPropagateShardingBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(func, function, "xf-propagate-sharding");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    // The mesh is the module's grid (-xf-grid made it).
    FailureOr<Mesh> mesh = Mesh::fromModule(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    if (failed(verifyShardingOps(func, *mesh)))
      return signalPassFailure();
    FailureOr<cost::HardwareDesc> hw = loadHardware(func, hardware);
    if (failed(hw))
      return signalPassFailure();
    SmallVector<Annotation> preset;
    StrategyTraits traits;
    if (failed(strategyAnnotations(func, *mesh, strategy, preset, &traits)))
      return signalPassFailure();
    materializeAnnotations(func, *mesh, preset);
    // For the report: state the strategy meant to split and could not.
    if (const StrategyTraits::ReplicatedState &r = traits.replicatedState; r.tensors > 0) {
      Builder b(func.getContext());
      func->setAttr(xf::XfDialect::kStateNotSplitAttrName,
                    b.getDictionaryAttr({b.getNamedAttr("tensors", b.getI64IntegerAttr(r.tensors)),
                                         b.getNamedAttr("elements", b.getI64IntegerAttr(r.elements)),
                                         b.getNamedAttr("example", b.getStringAttr(r.example)),
                                         b.getNamedAttr("axes", b.getStringAttr(r.axes))}));
    }
    traits.reduceBeforeWidening = lowPrecisionReductions;
    cost::CostModel cost(*mesh, *hw);
    double budget = memoryBudget > 0 ? memoryBudget.getValue() : hw->memoryBytes;
    // Spare splits (attention's query rows over an axis its heads do not
    // divide) are taken op by op, so the function is propagated with and
    // without them and the cheaper whole is kept (the modelled seconds of
    // every op's compute and every reshard).
    if (attentionRows != "auto" && attentionRows != "split" && attentionRows != "whole") {
      func.emitError() << "xf-propagate-sharding: attention-rows must be auto, split or whole, "
                          "got '"
                       << attentionRows << "'";
      return signalPassFailure();
    }
    if (attentionRows != "auto") {
      Propagator propagator(func, *mesh, cost, budget, traits, attentionRows == "split");
      if (failed(propagator.run()))
        return signalPassFailure();
      return;
    }
    // Both decide on the same function (deciding changes no IR); the
    // cheaper one writes its annotations.
    Propagator propagator(func, *mesh, cost, budget, traits);
    if (failed(propagator.decide()))
      return signalPassFailure();
    if (!propagator.splitSpareFactors()) {
      propagator.writeAnnotations();
      return;
    }
    Propagator plain(func, *mesh, cost, budget, traits, /*spareSplits=*/false);
    if (failed(plain.decide()))
      return signalPassFailure();
    double with = propagator.modelledSeconds(), withoutSeconds = plain.modelledSeconds();
    SHARDC_DEBUG(DBGS() << "with spare splits " << with << " s, without " << withoutSeconds
                        << " s\n");
    bool whole = withoutSeconds <= with;
    (whole ? plain : propagator).writeAnnotations();
    func->setAttr(xf::XfDialect::kAttentionRowsAttrName,
                  StringAttr::get(func.getContext(), whole ? "whole" : "split"));
  }
};

} // namespace
