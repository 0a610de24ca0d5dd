//===- Strategies.cpp - parallelism presets as annotations ----------------===//

#include "passes/sharding/Strategies.h"

#include "passes/sharding/ShardingIR.h"

#include "dialects/xf/Einsum.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/abi/StateNames.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;
using namespace shardc;
using namespace shardc::sharding;
using namespace shardc::xf;

namespace {

struct Spec {
  AxisList data;      ///< batch axes (dp, and both mics axes)
  AxisList zeroAxes;  ///< axes the ZeRO stage splits state over
  int zero = 0;       ///< 0, 1, 2, 3
  int tp = -1;
  bool sp = false;
  bool mics = false;
  int pp = -1; ///< the pipeline axis (-xf-pipeline cuts the step along it)
};

/// Looks through casts (mixed precision) to the value a use really reads.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getX();
  return v;
}

/// Looks through casts, reshapes and dropout to the op producing a value.
Operation *producer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<CastOp, ReshapeOp, DropoutOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    return def;
  }
  return nullptr;
}

/// The low-precision weight copies among the step's arguments (state
/// `param_bf16:<name>`, -xf-adamw), each mapped to its fp32 master (the
/// argument with `#xf.param<name = <name>>`).
llvm::DenseMap<Value, BlockArgument> copyMasters(func::FuncOp func) {
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument arg : func.getArguments())
    if (auto p = func.getArgAttrOfType<ParamAttr>(arg.getArgNumber(), XfDialect::kParamAttrName))
      params[p.getName()] = arg;
  llvm::DenseMap<Value, BlockArgument> out;
  for (BlockArgument arg : func.getArguments())
    if (auto st = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), XfDialect::kStateAttrName))
      if (StringRef master = abi::lowPrecisionCopyOf(st.getValue()); !master.empty())
        if (BlockArgument m = params.lookup(master))
          out[arg] = m;
  return out;
}

/// The tensor-parallel (Megatron) sharding of a parameter, or nullopt when
/// the parameter stays whole. `rows` also classifies row-parallel weights.
class TensorParallel {
public:
  /// `masterOf`: a GEMM reading a low-precision weight copy classifies the
  /// weight itself: the split is recorded for the fp32 master, which the
  /// preset then gives the copy.
  TensorParallel(func::FuncOp func, Axis tp, const Mesh &mesh,
                 const llvm::DenseMap<Value, BlockArgument> &masterOf)
      : mesh_(mesh), tp_(tp), masterOf_(masterOf) {
    func.walk([&](Operation *op) {
      if (auto mm = dyn_cast<MatmulOp>(op))
        classifyMatmul(mm);
      else if (auto lce = dyn_cast<LinearCrossEntropyOp>(op))
        split(throughCasts(lce.getWeight()), lce.getVocabMajor() ? 0 : 1, /*column=*/true);
      else if (auto emb = dyn_cast<EmbeddingOp>(op))
        if (auto ids = dyn_cast<BlockArgument>(emb.getIds()))
          if (func.getArgAttr(ids.getArgNumber(), XfDialect::kInputAttrName))
            split(throughCasts(emb.getTable()), 0, /*column=*/true);
    });
  }

  /// Column and vocabulary splits only (what a tp preset annotates).
  std::optional<TensorSharding> column(Value param) const { return lookup(columns_, param); }
  /// Every split, row-parallel weights included.
  std::optional<TensorSharding> any(Value param) const {
    if (auto s = lookup(columns_, param))
      return s;
    return lookup(rows_, param);
  }
  /// A row-parallel weight read after an attention whose heads (or kv heads)
  /// do not divide the tp axis: its GEMM runs with the weight whole (the
  /// attention whole, or split by its query rows), though its optimizer
  /// state and gradient keep the row split.
  bool computedWhole(Value param) const {
    if (auto it = masterOf_.find(param); it != masterOf_.end())
      param = it->second;
    return computedWhole_.contains(param);
  }

private:
  static std::optional<TensorSharding> lookup(const llvm::DenseMap<Value, TensorSharding> &m,
                                              Value v) {
    auto it = m.find(v);
    if (it == m.end())
      return std::nullopt;
    return it->second;
  }

  void split(Value param, int64_t dim, bool column) {
    if (auto it = masterOf_.find(param); it != masterOf_.end())
      param = it->second;
    auto arg = dyn_cast<BlockArgument>(param);
    auto type = dyn_cast<RankedTensorType>(param.getType());
    if (!arg || !type || dim >= type.getRank())
      return;
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto attr = func ? func.getArgAttrOfType<ParamAttr>(arg.getArgNumber(),
                                                        XfDialect::kParamAttrName)
                     : ParamAttr();
    if (!attr)
      return;
    int64_t n = mesh_.sizes[tp_], size = type.getDimSize(dim);
    if (size % n != 0) {
      if (indivisible_.empty())
        indivisible_ = llvm::formatv("parameter '{0}': dimension {1} of size {2} is not "
                                     "divisible by mesh axis {3} ({4}); pad it to {5}",
                                     attr.getName(), dim, size, mesh_.names[tp_], n,
                                     (size + n - 1) / n * n)
                           .str();
      return;
    }
    TensorSharding s = TensorSharding::replicated(type.getRank());
    s.dims[dim].push_back(tp_);
    (column ? columns_ : rows_).try_emplace(param, s);
  }

  /// The parameters a GEMM operand is made of: the one behind its casts, or
  /// those -xf-fuse-qkv concatenated (a reshape of a concat of reshapes;
  /// each piece keeps the rank and the split dimension of the whole).
  static SmallVector<Value, 3> weightPieces(Value v) {
    auto throughLayouts = [](Value u) {
      while (isa_and_nonnull<ReshapeOp, CastOp>(u.getDefiningOp()))
        u = u.getDefiningOp()->getOperand(0);
      return u;
    };
    auto concat = throughLayouts(v).getDefiningOp<ConcatOp>();
    if (!concat)
      return {throughCasts(v)};
    SmallVector<Value, 3> pieces;
    for (Value piece : concat.getXs())
      pieces.push_back(throughLayouts(piece));
    return pieces;
  }

  void classifyMatmul(MatmulOp mm) {
    std::string error;
    auto eq = Einsum::parse(mm.getEquation(), error);
    if (!eq)
      return;
    Operation *lhs = producer(mm.getLhs());
    SmallVector<Value, 3> w = weightPieces(mm.getRhs());
    const std::string &wLetters = eq->rhs;
    bool column = lhs && isa<LayerNormOp, RmsNormOp>(lhs);
    bool row = lhs && isa<AttentionOp, PackedAttentionOp, GeluOp, SwigluOp>(lhs);
    for (size_t d = 0; d < wLetters.size(); ++d) {
      bool inOutput = eq->out.find(wLetters[d]) != std::string::npos;
      if ((column && inOutput) || (row && !inOutput)) {
        for (Value piece : w)
          split(piece, static_cast<int64_t>(d), column);
        if (row && !headsDivide(lhs))
          for (Value piece : w) {
            auto it = masterOf_.find(piece);
            computedWhole_.insert(it == masterOf_.end() ? piece : Value(it->second));
          }
        // A column-parallel GEMM's bias is split with its output features,
        // so its gradient (a sum over tokens of the local slice) and its
        // optimizer state stay split too.
        if (column && !eq->out.empty() && eq->out.back() == wLetters[d])
          for (Operation *user : mm->getUsers())
            if (auto add = dyn_cast<BiasAddOp>(user); add && add.getX() == mm.getResult())
              for (Value piece : weightPieces(add.getBias()))
                split(piece, 0, /*column=*/true);
        return;
      }
    }
  }

  /// Whether attention's heads and kv heads (dim 2 of q and k, [batch, seq,
  /// heads, head_dim]) divide the tp axis; true for any other producer.
  bool headsDivide(Operation *op) const {
    auto attention = dyn_cast<AttentionOp>(op);
    if (!attention)
      return true;
    int64_t n = mesh_.sizes[tp_];
    for (Value v : {attention.getQ(), attention.getK()}) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || type.getRank() != 4 || type.getDimSize(2) % n != 0)
        return false;
    }
    return true;
  }

  const Mesh &mesh_;
  Axis tp_;
  llvm::DenseMap<Value, TensorSharding> columns_, rows_;
  llvm::DenseSet<Value> computedWhole_;
  const llvm::DenseMap<Value, BlockArgument> &masterOf_; ///< weight copy -> fp32 master

public:
  /// The first parameter tensor parallelism could not split, if any.
  std::string indivisible_;
};

LogicalResult parseSpec(func::FuncOp func, const Mesh &mesh, StringRef strategy, Spec &spec) {
  SmallVector<StringRef> parts;
  if (!strategy.trim().empty())
    strategy.split(parts, '+', -1, /*KeepEmpty=*/true);
  for (StringRef p : parts)
    if (p.trim().empty() || p.trim().starts_with("@"))
      return func.emitError() << "strategy '" << strategy
                              << "' has an empty component (expected components joined by '+', "
                                 "as in dp+tp or zero1@dp+tp)";
  auto axisNamed = [&](StringRef name, StringRef component) -> FailureOr<Axis> {
    int a = mesh.axisIndex(name);
    if (a < 0)
      return func.emitError() << "strategy '" << component << "' needs a mesh axis named '"
                              << name << "', but the mesh is " << mesh.str();
    return static_cast<Axis>(a);
  };
  // tp first: the default data axes are the ones tp does not use.
  struct Part {
    StringRef name;
    SmallVector<StringRef> axes;
  };
  SmallVector<Part> comps;
  for (StringRef p : parts) {
    auto [name, axes] = p.trim().split('@');
    Part part{name.trim(), {}};
    if (!axes.empty())
      axes.split(part.axes, ',');
    comps.push_back(part);
  }
  for (Part &p : comps) {
    if (p.name != "tp" && p.name != "sp")
      continue;
    auto a = axisNamed(p.axes.empty() ? "tp" : p.axes.front().trim(), p.name);
    if (failed(a))
      return failure();
    spec.tp = *a;
    spec.sp |= p.name == "sp";
  }
  // pp: no annotation; the pipeline pass cuts the partitioned step along
  // the axis, which no data split may use.
  for (Part &p : comps) {
    if (p.name != "pp")
      continue;
    if (p.axes.size() > 1)
      return func.emitError() << "strategy 'pp' takes one axis, as in pp@stage";
    auto a = axisNamed(p.axes.empty() ? "pp" : p.axes.front().trim(), p.name);
    if (failed(a))
      return failure();
    if (*a == spec.tp)
      return func.emitError() << "strategy 'pp' and 'tp' cannot share the mesh axis '"
                              << mesh.names[*a] << "'";
    spec.pp = *a;
  }
  AxisList free;
  for (int a = 0; a < mesh.rank(); ++a)
    if (a != spec.tp && a != spec.pp)
      free.push_back(a);
  for (Part &p : comps) {
    StringRef n = p.name;
    if (n == "tp" || n == "sp" || n == "pp")
      continue;
    if (n != "dp" && n != "zero1" && n != "zero2" && n != "zero3" && n != "fsdp" && n != "mics")
      return func.emitError() << "unknown strategy component '" << n
                              << "' (expected dp, zero1, zero2, zero3, fsdp, tp, sp, mics or "
                                 "pp)";
    AxisList axes;
    for (StringRef name : p.axes) {
      auto a = axisNamed(name.trim(), n);
      if (failed(a))
        return failure();
      if (*a == spec.pp)
        return func.emitError() << "strategy '" << n << "' cannot use the pipeline axis '"
                                << name.trim() << "'";
      axes.push_back(*a);
    }
    if (n == "mics") {
      if (axes.empty()) {
        if (free.size() < 2)
          return func.emitError() << "strategy 'mics' needs two data axes (replica, partition) "
                                     "besides tp, but the mesh is "
                                  << mesh.str();
        axes = {free[0], free[1]};
      }
      if (axes.size() != 2)
        return func.emitError() << "strategy 'mics' takes two axes: replica,partition";
      spec.mics = true;
      spec.data = axes;
      spec.zeroAxes = {axes[1]};
      continue;
    }
    if (axes.empty()) {
      int dp = mesh.axisIndex("dp");
      if (dp >= 0 && dp != spec.tp && dp != spec.pp)
        axes.push_back(dp);
      else if (!free.empty())
        axes.push_back(free.front());
      else
        return func.emitError() << "strategy '" << n << "' needs a data-parallel mesh axis "
                                << "besides tp, but the mesh is " << mesh.str();
    }
    spec.data = axes;
    int stage = n == "dp" ? 0 : n == "zero1" ? 1 : n == "zero2" ? 2 : 3;
    spec.zero = std::max(spec.zero, stage);
    if (stage > 0)
      spec.zeroAxes = axes;
  }
  if (spec.sp && spec.tp < 0)
    return func.emitError() << "strategy 'sp' needs a tp axis";
  return success();
}

/// Appends `axes` to the first dim of `s` that stays divisible (several axes:
/// each on a dim of its own first, where the dims allow); where no dim
/// takes them all, each axis in turn to the first dim that still divides
/// (a [1600, 1600] state over dp=64 x dq=4: rows over dp, columns over dq,
/// where one axis of 256 divides neither). An axis no dim takes leaves the
/// tensor replicated over it (`unsplit` lists those axes).
TensorSharding splitFurther(TensorSharding s, ArrayRef<int64_t> shape, const AxisList &axes,
                            const Mesh &mesh, AxisList *unsplit = nullptr) {
  if (axes.empty())
    return s;
  // Each axis in turn on the first dim it still divides; `ownDim`: only dims
  // no earlier axis took. The axes no dim takes are returned.
  auto placeEach = [&](TensorSharding &t, bool ownDim) {
    SmallVector<bool> used(shape.size(), false);
    AxisList left;
    for (Axis a : axes) {
      bool placed = false;
      for (size_t d = 0; d < shape.size() && !placed; ++d)
        if (!(ownDim && used[d]) &&
            shape[d] % (mesh.size(t.dims[d]) * mesh.size(AxisList{a})) == 0) {
          t.dims[d].push_back(a);
          used[d] = placed = true;
        }
      if (!placed)
        left.push_back(a);
    }
    return left;
  };
  // Several axes (a data axis given as factors): one dim each where the
  // tensor has enough dims that divide, so that each collective over the
  // state runs over one axis (reductions inside the node first, gathers
  // between nodes on the smallest pieces: two rings, not one over all).
  if (axes.size() > 1) {
    TensorSharding t = s;
    if (placeEach(t, /*ownDim=*/true).empty())
      return t;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t parts = mesh.size(s.dims[d]) * mesh.size(axes);
    if (shape[d] % parts == 0) {
      s.dims[d].append(axes.begin(), axes.end());
      return s;
    }
  }
  AxisList left = placeEach(s, /*ownDim=*/false);
  if (unsplit)
    unsplit->append(left.begin(), left.end());
  return s;
}

/// Replaces each stored low-precision copy (state `param_bf16:<name>`) by a
/// cast of its fp32 master placed right before the copy's first reader, and
/// drops the copy's argument and the optimizer's write of it. `copyOf` then
/// maps each master to its cast. Returns the casts.
llvm::DenseSet<Operation *> makeCopiesFromMasters(func::FuncOp func,
                                                  llvm::DenseMap<Value, BlockArgument> &masterOf,
                                                  llvm::DenseMap<Value, Value> &copyOf) {
  llvm::DenseSet<Operation *> made;
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::BitVector deadArgs(func.getNumArguments()), deadResults(func.getNumResults());
  for (auto [copyValue, master] : masterOf) {
    auto copy = cast<BlockArgument>(copyValue);
    auto st = func.getArgAttrOfType<StringAttr>(copy.getArgNumber(), XfDialect::kStateAttrName);
    Operation *first = nullptr;
    for (Operation *user : copy.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && top != ret && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    if (!first || !st)
      continue;
    OpBuilder b(first);
    Operation *cast_ = CastOp::create(b, copy.getLoc(), copy.getType(), master);
    copy.replaceUsesWithIf(cast_->getResult(0),
                           [&](OpOperand &use) { return use.getOwner() != ret; });
    made.insert(cast_);
    copyOf[master] = cast_->getResult(0);
    deadArgs.set(copy.getArgNumber());
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      if (func.getResultAttr(r, XfDialect::kStateAttrName) == st)
        deadResults.set(r);
  }
  if (made.empty())
    return made;
  masterOf.clear(); // its keys, the copy arguments, are erased below
  SmallVector<Operation *> writes;
  for (unsigned r : deadResults.set_bits())
    if (Operation *def = ret.getOperand(r).getDefiningOp())
      writes.push_back(def);
  for (int r = static_cast<int>(func.getNumResults()) - 1; r >= 0; --r)
    if (deadResults.test(r))
      ret->eraseOperand(r);
  (void)func.eraseResults(deadResults);
  (void)func.eraseArguments(deadArgs);
  for (Operation *w : writes)
    if (w->use_empty() && isa<CastOp>(w))
      w->erase();
  return made;
}

} // namespace

LogicalResult sharding::strategyAnnotations(func::FuncOp func, const Mesh &mesh,
                                            StringRef strategy,
                                            SmallVectorImpl<Annotation> &annotations,
                                            StrategyTraits *traits) {
  Spec spec;
  if (strategy.trim().empty())
    return success();
  if (failed(parseSpec(func, mesh, strategy, spec)))
    return failure();
  bool severalMicroBatches = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto mb = func.getArgAttrOfType<IntegerAttr>(i, XfDialect::kMicroBatchAttrName))
      severalMicroBatches |= mb.getInt() > 0;
  if (traits) {
    // ZeRO-2/3, FSDP and MiCS reduce each micro-batch's gradient as it is
    // made; with one micro-batch there is nothing to accumulate, and a
    // parameter's contributions (the tied embedding's lookup and logit GEMM)
    // are summed before its one reduction whatever the stage.
    traits->sumBeforeReduce = (spec.zero <= 1 && !spec.mics) || !severalMicroBatches;
    traits->pipelineAxis = spec.pp;
  }
  llvm::DenseMap<Value, BlockArgument> masterOf = copyMasters(func);
  std::optional<TensorParallel> tp;
  if (spec.tp >= 0) {
    tp.emplace(func, spec.tp, mesh, masterOf);
    if (!tp->indivisible_.empty())
      return func.emitError() << "tensor parallelism: " << tp->indivisible_;
  }
  bool storeSplit = spec.zero >= 3 || spec.mics;
  // ZeRO-1/2: what the step reads is stored split like the optimizer state
  // too, and gathered once per step where the forward first reads it (a
  // state argument's gather, which -xf-schedule issues ahead of its layer so
  // it overlaps the forward) and kept through the backward: the bytes and the
  // peak of gathering it after the update, off the critical path. Not under a
  // pipeline, where a gathered tied table would cross stages.
  bool gatherOnce = !storeSplit && spec.zero >= 1 && spec.pp < 0;

  // Parameters by name (for the moments), and the tensor-parallel layout.
  llvm::StringMap<TensorSharding> stateLayout; // param name -> optimizer layout
  auto tpOf = [&](Value v, bool all) -> TensorSharding {
    auto type = cast<RankedTensorType>(v.getType());
    if (tp)
      if (auto s = all ? tp->any(v) : tp->column(v))
        return *s;
    return TensorSharding::replicated(type.getRank());
  };

  // Low-precision weight copies (-xf-adamw): the step's GEMMs read the copy,
  // the fp32 master is read only by its update. With a ZeRO stage the master
  // then lives split like its moments (2N + 14N/d for ZeRO-2, as in Megatron's
  // distributed optimizer) and the copy takes the layout the master had:
  // replicated (gathered in bf16 after the update), tp-split, or stored split
  // and gathered in bf16 before use (ZeRO-3).
  llvm::DenseMap<Value, Value> copyOf; // master -> its copy
  for (auto [copy, master] : masterOf)
    copyOf[master] = copy;
  // ZeRO-1/2 gather the copy once per step anyway: it is then made from the
  // master's shard right before its gather instead of stored (the same
  // rounding of the same values), so that a rank holds 2N (the gathered
  // copies, in the workspace) + 14N/d, Transformer Math's ZeRO-2 figure, not
  // 2N/d more for a stored shard of the copy beside the gathered whole.
  llvm::DenseSet<Operation *> madeCopies;
  if (gatherOnce && !copyOf.empty())
    madeCopies = makeCopiesFromMasters(func, masterOf, copyOf);
  bool zeroMaster = spec.zero >= 1 || spec.mics;
  // Weights tensor parallelism splits (column- and row-parallel): names
  // whose optimizer state and gradient are annotated with that split, even
  // where propagation computes with the weight whole.
  llvm::StringSet<> tpState;
  // Plain tp (with or without dp, one micro-batch, no pipeline): the bf16
  // copy of a row-parallel weight computed whole (attention's projection
  // where the heads do not divide tp) is stored with the row split like its
  // master and gathered before each use, once per run of forward ops and
  // once per run of backward ops (ZeRO-3's gather over the tp axis), so a
  // rank stores 2 bytes/t of it, not 2: Transformer Math's 16N/t. Each
  // gather is issued a layer ahead (-xf-schedule). With several micro-batches
  // (each a forward and a backward run) or sequence parallelism (which
  // annotates the rows split, computed by propagation) the copy is stored as
  // its users need it, written whole by a gather after the update.
  bool copySplitGatheredPerUse =
      tp && !storeSplit && !gatherOnce && !spec.sp && spec.pp < 0 && !severalMicroBatches;

  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    unsigned i = arg.getArgNumber();
    if (func.getArgAttr(i, XfDialect::kInputAttrName)) {
      TensorSharding s = TensorSharding::replicated(type.getRank());
      if (!spec.data.empty() && type.getRank() > 0) {
        if (type.getDimSize(0) % mesh.size(spec.data) != 0)
          return func.emitError() << "batch size " << type.getDimSize(0) << " of input #" << i
                                  << " is not divisible by the data-parallel axes "
                                  << mesh.axesName(spec.data) << " (" << mesh.size(spec.data)
                                  << "); pad the batch to "
                                  << (type.getDimSize(0) + mesh.size(spec.data) - 1) /
                                         mesh.size(spec.data) * mesh.size(spec.data);
        s.dims[0] = spec.data;
      }
      annotations.push_back({arg, s, false});
      continue;
    }
    auto param = func.getArgAttrOfType<ParamAttr>(i, XfDialect::kParamAttrName);
    if (!param)
      continue;
    TensorSharding full = tpOf(arg, /*all=*/true);
    AxisList unsplit;
    TensorSharding state = splitFurther(full, type.getShape(), spec.zeroAxes, mesh, &unsplit);
    if (!unsplit.empty() && (spec.zero >= 1 || spec.mics) && traits) {
      StrategyTraits::ReplicatedState &r = traits->replicatedState;
      if (r.tensors++ == 0) {
        llvm::raw_string_ostream os(r.example);
        os << "'" << param.getName() << "' " << type;
        r.axes = mesh.axesName(unsplit);
      }
      r.elements += type.getNumElements();
    }
    stateLayout[param.getName()] = state;
    bool splitState = tp && tp->any(arg);
    if (splitState)
      tpState.insert(param.getName());
    // How a tensor the step's ops read is stored: the master, or its copy.
    auto annotateRead = [&](Value read) {
      if (storeSplit || gatherOnce) {
        annotations.push_back({read, state, false});
        annotations.push_back({read, full, /*forUsers=*/true, gatherOnce});
      } else if (auto split = !tp ? std::nullopt : spec.sp ? tp->any(arg) : tp->column(arg)) {
        // Plain tp annotates the column (and vocabulary) splits only: the
        // row-parallel weights and the f/g all-reduces follow by propagation.
        // With sequence parallelism the rows are annotated too, so the weight
        // stays split where gathering the sequence would tie on bytes.
        annotations.push_back({read, *split, false});
      } else if (!tp) {
        annotations.push_back({read, full, false});
      }
    };
    auto copy = copyOf.find(arg);
    if (copy == copyOf.end()) {
      annotateRead(arg);
      continue;
    }
    if (copySplitGatheredPerUse && tp->computedWhole(arg)) {
      annotations.push_back({copy->second, state, false});
      annotations.push_back(
          {copy->second, TensorSharding::replicated(type.getRank()), /*forUsers=*/true});
    } else {
      annotateRead(copy->second);
    }
    // The master: split like the moments when only its update reads it; a
    // master the forward still reads in f32 (the tied embedding's lookup)
    // keeps the layout its readers need.
    bool onlyUpdated = llvm::all_of(
        arg.getUsers(), [&](Operation *u) { return isa<AdamWOp>(u) || madeCopies.contains(u); });
    if ((zeroMaster || splitState) && onlyUpdated)
      annotations.push_back({arg, state, false});
    else
      annotateRead(arg);
  }
  // Optimizer moments and gradients: split like the ZeRO stage; and a
  // tp-split weight's like its tp layout even where propagation then
  // computes with the weight whole (attention's projections when the heads
  // do not divide tp): its gradient is made as that shard (propagation
  // weighs the annotated layout against computing it whole), the update
  // runs on the shard and the new weight is gathered, so its fp32 master
  // and moments cost 12 bytes/t per weight, not 12.
  bool zeroState = spec.zero >= 1 || spec.mics;
  auto splitsState = [&](StringRef name) { return zeroState || tpState.contains(name); };
  if (zeroState || !tpState.empty()) {
    for (BlockArgument arg : func.getArguments()) {
      auto st = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), XfDialect::kStateAttrName);
      if (!st)
        continue;
      auto [kind, name] = st.getValue().split(':');
      if (kind != "adam_m" && kind != "adam_v")
        continue;
      auto it = stateLayout.find(name);
      if (it != stateLayout.end() && splitsState(name))
        annotations.push_back({arg, it->second, false});
    }
    func.walk([&](AdamWOp adam) {
      auto paramArg = dyn_cast<BlockArgument>(adam.getParam());
      if (!paramArg)
        return;
      auto param = func.getArgAttrOfType<ParamAttr>(paramArg.getArgNumber(),
                                                    XfDialect::kParamAttrName);
      if (!param || !splitsState(param.getName()))
        return;
      // Every ZeRO stage needs only its shard of the gradient: a
      // reduce-scatter (ZeRO-1 of the summed gradient, ZeRO-2/3 of each
      // contribution), never an all-reduce followed by a slice.
      annotations.push_back({adam.getGrad(), stateLayout[param.getName()], false});
    });
  }
  // Sequence parallel: the residual stream (every norm input) split on sequence.
  if (spec.sp) {
    func.walk([&](Operation *op) {
      if (!isa<LayerNormOp, RmsNormOp>(op))
        return;
      Value x = op->getOperand(0);
      auto type = cast<RankedTensorType>(x.getType());
      if (type.getRank() < 3)
        return;
      TensorSharding s = TensorSharding::replicated(type.getRank());
      if (type.getDimSize(0) % mesh.size(spec.data) == 0)
        s.dims[0] = spec.data;
      if (type.getDimSize(1) % mesh.sizes[spec.tp] == 0)
        s.dims[1] = {static_cast<Axis>(spec.tp)};
      annotations.push_back({x, s, false});
    });
  }
  return success();
}

namespace {
/// The function's `shard.sharding` ops by split axes, made once and reused.
class ShardingOps {
public:
  ShardingOps(func::FuncOp func, const Mesh &mesh) : func_(func), mesh_(mesh) {
    Block &entry = func.getBody().front();
    for (auto op : llvm::make_early_inc_range(entry.getOps<shard::ShardingOp>()))
      if (op.getGrid() == mesh.symbol && op->getNumOperands() == 0 &&
          op.getStaticHaloSizes().empty() && op.getStaticShardedDimsOffsets().empty() &&
          ops_.try_emplace(op.getSplitAxes(), op.getResult()).second)
        op->moveBefore(&entry, entry.begin()); // to dominate every annotation
  }
  Value get(const TensorSharding &s) {
    shard::GridAxesArrayAttr split = s.splitAttr(func_.getContext());
    auto [it, inserted] = ops_.try_emplace(split, Value());
    if (inserted) {
      OpBuilder b(func_.getContext());
      b.setInsertionPointToStart(&func_.getBody().front());
      it->second =
          shard::ShardingOp::create(b, func_.getLoc(), mesh_.symbol, split.getAxes()).getResult();
    }
    return it->second;
  }

private:
  func::FuncOp func_;
  const Mesh &mesh_;
  llvm::DenseMap<Attribute, Value> ops_;
};
} // namespace

void sharding::materializeAnnotations(func::FuncOp func, const Mesh &mesh,
                                      ArrayRef<Annotation> annotations) {
  ShardingOps shardingOps(func, mesh);
  // Result annotations first, so a value's users-annotation wraps its annotated form.
  for (bool users : {false, true}) {
    for (const Annotation &a : annotations) {
      if (a.forUsers != users)
        continue;
      Value v = a.value;
      shard::ShardOp annotated = resultAnnotation(v);
      if (users && annotated)
        v = annotated.getResult(); // users see the annotated form
      else if (!users && annotated)
        continue; // a value keeps its first annotation (presets may repeat one)
      Value sh = shardingOps.get(a.sharding);
      OpBuilder b(func.getContext());
      // Sharding ops sit at the function entry, so they dominate every value.
      if (isa<BlockArgument>(v))
        b.setInsertionPointAfter(sh.getDefiningOp());
      else
        b.setInsertionPointAfter(v.getDefiningOp());
      auto ann = shard::ShardOp::create(b, v.getLoc(), v, sh, users);
      if (!a.sharding.partial.empty())
        ann->setAttr(kPartialAttr, b.getDenseI16ArrayAttr(a.sharding.partial));
      if (users && a.gatherOnce)
        ann->setAttr(kGatherOnceAttr, b.getUnitAttr());
      v.replaceUsesWithIf(ann.getResult(), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        if (user == ann.getOperation())
          return false;
        if (isa<shard::ShardOp>(user))
          return false; // other annotations keep reading the value itself
        if (users && isa<AdamWOp>(user) && use.getOperandNumber() == 0)
          return false; // the optimizer updates the stored shard
        return true;
      });
    }
  }
}

std::string shardc::sharding::pipelineAxisName(StringRef strategy) {
  SmallVector<StringRef> parts;
  strategy.split(parts, '+', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    auto [name, axes] = p.trim().split('@');
    if (name.trim() == "pp")
      return axes.trim().empty() ? "pp" : axes.trim().str();
  }
  return "";
}

int64_t shardc::sharding::headSplitDivisor(StringRef meshSpec, StringRef strategy) {
  std::string error;
  FailureOr<Mesh> mesh = Mesh::parse(meshSpec, error);
  if (meshSpec.empty() || failed(mesh))
    return 1;
  auto sizeOf = [&](StringRef name) -> int64_t {
    for (size_t a = 0; a < mesh->names.size(); ++a)
      if (mesh->names[a] == name)
        return mesh->sizes[a];
    return 1;
  };
  SmallVector<StringRef> parts;
  strategy.split(parts, '+', -1, /*KeepEmpty=*/false);
  if (parts.empty()) {
    int64_t all = 1;
    for (int64_t n : mesh->sizes)
      all = std::lcm(all, n);
    return all;
  }
  for (StringRef p : parts) {
    auto [name, axes] = p.trim().split('@');
    if (name.trim() == "tp" || name.trim() == "sp") {
      SmallVector<StringRef> names;
      axes.split(names, ',', -1, /*KeepEmpty=*/false);
      return sizeOf(names.empty() ? "tp" : names.front().trim());
    }
  }
  return 1;
}
