//===- PlanMemory.cpp - static per-rank arenas ----------------------------===//
//
// Liveness over the straight-line step: every value is live from its defining
// op to its last user (returned values to the end). Workspace values are
// placed first-fit in a free list that is given back at each value's last
// use, so the workspace high-water mark is the planned activation peak.
// State, gradients and inputs get their own contiguous arenas; offloaded
// activations (xf.offload results) the host arena, by liveness too.
//
//===----------------------------------------------------------------------===//

#include "passes/ArgAttrs.h"
#include "passes/Debug.h"
#include "passes/Passes.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/train/StepPhases.h"

#include "compiler/abi/CallEncoding.h"
#include "compiler/sharding/Sharding.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/Error.h"
#include "runtime/abi/OpTable.h"
#include "runtime/abi/StateNames.h"
#include "runtime/program/CallDecoder.h"
#include "runtime/program/KernelScratch.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <functional>
#include <map>

#define DEBUG_TYPE "xf-plan-memory"

namespace shardc {
#define GEN_PASS_DEF_XFPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::memory;

namespace {

/// First-fit allocation in a free list that grows at the top.
class FreeList {
public:
  int64_t allocate(int64_t bytes) {
    bytes = alignUp(std::max<int64_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes)
        continue;
      int64_t offset = it->first, size = it->second;
      free_.erase(it);
      if (size > bytes)
        free_[offset + bytes] = size - bytes;
      return offset;
    }
    // Grow: reuse a free block that ends at the top.
    int64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + bytes;
    return offset;
  }

  void release(int64_t offset, int64_t bytes) {
    bytes = alignUp(std::max<int64_t>(bytes, 1));
    auto [it, inserted] = free_.emplace(offset, bytes);
    (void)inserted;
    if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  int64_t top() const { return top_; }

private:
  std::map<int64_t, int64_t> free_; ///< offset -> size
  int64_t top_ = 0;
};

/// The arenas' tops per pipeline stage: the ranks of different stages hold
/// different values, so each stage's values are placed from the same base
/// and an arena's size is its largest stage's. Values of every stage (the
/// inputs) are placed above all stages' tops.
struct StagedTops {
  explicit StagedTops(int64_t stages) {
    for (auto &t : tops)
      t.assign(static_cast<size_t>(std::max<int64_t>(stages, 1)), 0);
    bare = tops[0];
    unstaged = tops[0];
  }
  int64_t numStages() const { return static_cast<int64_t>(tops[0].size()); }
  /// Per stage: its workspace and its bytes over all arenas.
  void record(func::FuncOp f) const {
    if (numStages() < 2)
      return;
    SmallVector<int64_t> bytes(numStages(), 0);
    for (int a = 0; a < NumArenas; ++a)
      for (int64_t s = 0; s < numStages() && onDevice(a); ++s)
        bytes[s] += tops[a][s];
    Builder b(f.getContext());
    f->setAttr(kStageWorkspaceAttr, b.getDenseI64ArrayAttr(tops[Workspace]));
    f->setAttr(kStageBytesAttr, b.getDenseI64ArrayAttr(bytes));
  }
  int64_t bump(Arena a, int64_t stage, int64_t bytes) {
    bytes = alignUp(std::max<int64_t>(bytes, 1));
    std::vector<int64_t> &t = tops[a];
    if (stage < 0) {
      int64_t offset = size(a);
      std::fill(t.begin(), t.end(), offset + bytes);
      return offset;
    }
    int64_t offset = t[stage];
    t[stage] += bytes;
    return offset;
  }
  int64_t size(Arena a) const { return *std::max_element(tops[a].begin(), tops[a].end()); }
  /// The workspace's peak without the kernels' scratch and the collectives'
  /// staging, and without the staging alone.
  int64_t activations() const { return *std::max_element(bare.begin(), bare.end()); }
  int64_t withoutStaging() const { return *std::max_element(unstaged.begin(), unstaged.end()); }
  std::vector<int64_t> tops[NumArenas];
  /// Per stage: the workspace top of the same placement without scratch
  /// and staging, and without staging.
  std::vector<int64_t> bare, unstaged;
};

/// The name that ties an argument of the eval function to the step's: its
/// xf.state, or its data input and micro-batch.
std::string boundaryKey(func::FuncOp func, unsigned i) {
  if (auto state = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
    return "state:" + state.str();
  std::string key = "input:";
  if (auto in = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kInputAttrName))
    key += in.str();
  if (auto mb = func.getArgAttrOfType<IntegerAttr>(i, xf::XfDialect::kMicroBatchAttrName))
    key += ":" + std::to_string(mb.getInt());
  return key;
}

/// Which arena a step argument lives in.
Arena argumentArena(func::FuncOp func, unsigned i) {
  if (auto state = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
    return abi::isParameterState(state.getValue()) ? Params : Optimizer;
  if (func.getArgAttr(i, xf::XfDialect::kParamAttrName))
    return Params;
  return Inputs;
}

struct XfPlanMemoryPass : shardc::impl::XfPlanMemoryBase<XfPlanMemoryPass> {
  using XfPlanMemoryBase::XfPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError() << "xf-plan-memory: no function @" << function;
      return signalPassFailure();
    }
    // The mesh the step's calls are decoded on (their scratch bytes).
    sized_.clear();
    mesh_.names.clear();
    mesh_.sizes.clear();
    if (auto grid = func->getAttrOfType<FlatSymbolRefAttr>(sharding::kGridAttr)) {
      FailureOr<sharding::Mesh> m = sharding::Mesh::fromModule(module, grid.getValue());
      if (failed(m)) {
        func.emitError() << "xf-plan-memory: cannot resolve the grid @" << grid.getValue();
        return signalPassFailure();
      }
      mesh_ = *m;
    }
    int64_t stages = 1;
    if (auto pipeline = func->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName))
      if (auto n = pipeline.getAs<IntegerAttr>("stages"))
        stages = n.getInt();
    StagedTops top(stages);
    llvm::StringMap<std::pair<Arena, int64_t>> boundary;
    if (failed(plan(func, top, boundary, /*shared=*/false)))
      return signalPassFailure();
    if (evalFunction.empty())
      return;
    auto eval = module.lookupSymbol<func::FuncOp>(evalFunction);
    if (!eval) {
      module.emitError() << "xf-plan-memory: no function @" << evalFunction;
      return signalPassFailure();
    }
    // The eval function reads the step's parameters and inputs where the
    // step keeps them; the two never run at once, so they share the
    // workspace (its size is the larger need).
    if (failed(plan(eval, top, boundary, /*shared=*/true)))
      return signalPassFailure();
    Builder b(&getContext());
    SmallVector<int64_t> arenaBytes;
    int64_t total = 0;
    for (int a = 0; a < NumArenas; ++a) {
      arenaBytes.push_back(top.size(static_cast<Arena>(a)));
      total += onDevice(a) ? arenaBytes.back() : 0;
    }
    for (func::FuncOp f : {func, eval}) {
      f->setAttr(kArenaBytesAttr, b.getDenseI64ArrayAttr(arenaBytes));
      f->setAttr(kPlannedBytesAttr, b.getI64IntegerAttr(total));
      f->setAttr(kActivationBytesAttr, b.getI64IntegerAttr(top.activations()));
      f->setAttr(kUnstagedBytesAttr, b.getI64IntegerAttr(top.withoutStaging()));
      top.record(f);
    }
  }

  /// `size` of `op`'s call as the runtime will decode it (on a
  /// communicator of `commAxes` for a collective).
  /// `kind` names the size taken (scratch, or staging with its flags): a
  /// call's encoding is a function of its op's name, attributes, operand
  /// and result types (and the pass's mesh), so a size is computed once per
  /// distinct such op (a pipelined step repeats its layers per micro-batch).
  FailureOr<int64_t>
  sizeOfCall(Operation *op, int kind, ArrayRef<int16_t> commAxes,
             llvm::function_ref<int64_t(const rt::DecodedCall &, const rt::Program &)> size) {
    std::vector<const void *> key{reinterpret_cast<const void *>(static_cast<intptr_t>(kind)),
                                  op->getName().getAsOpaquePointer(),
                                  op->getAttrDictionary().getAsOpaquePointer()};
    for (Type t : op->getOperandTypes())
      key.push_back(t.getAsOpaquePointer());
    key.push_back(nullptr);
    for (Type t : op->getResultTypes())
      key.push_back(t.getAsOpaquePointer());
    if (auto it = sized_.find(key); it != sized_.end())
      return it->second;
    FailureOr<int64_t> bytes = sizeOfCallUncached(op, commAxes, size);
    if (succeeded(bytes))
      sized_[std::move(key)] = *bytes;
    return bytes;
  }
  FailureOr<int64_t>
  sizeOfCallUncached(Operation *op, ArrayRef<int16_t> commAxes,
                     llvm::function_ref<int64_t(const rt::DecodedCall &, const rt::Program &)> size) {
    FailureOr<rt::Call> call = abi::encodeCall(op, &mesh_, "xf-plan-memory");
    if (failed(call))
      return failure();
    rt::Program program;
    program.opTable = abi::opTableFingerprint();
    program.mesh = static_cast<const abi::Mesh &>(mesh_);
    if (!commAxes.empty()) {
      program.comms.push_back({rt::Axes(commAxes.begin(), commAxes.end())});
      call->comm = 0;
    }
    program.calls.push_back(std::move(*call));
    try {
      std::unique_ptr<rt::DecodedCall> d =
          rt::decodeCall(program, 0, std::vector<int64_t>(mesh_.sizes.size(), 0));
      return size(*d, program);
    } catch (const rt::Error &e) {
      return op->emitError() << "xf-plan-memory: " << e.what();
    }
  }

  /// The scratch bytes of `op`'s kernel (runtime/program/KernelScratch.h),
  /// sized by the function the backends size their use by. 0 for ops that
  /// need none.
  FailureOr<int64_t> scratchBytes(Operation *op, const abi::OpSpec *spec) {
    if (!spec || spec->collective || !rt::mayNeedScratch(spec->code))
      return int64_t(0);
    return sizeOfCall(op, /*kind=*/0, {}, [](const rt::DecodedCall &d, const rt::Program &p) {
      return rt::callScratchBytes(d, p.mesh);
    });
  }

  /// The staging bytes of collective `op` (KernelScratch.h
  /// collectiveStaging) on its group; `overlaps`: its planned input and
  /// output overlap (other than an all-reduce in place). 0 for none.
  FailureOr<int64_t> stagingBytes(Operation *op, bool overlaps, bool inPlace) {
    auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    if (!axes)
      return int64_t(0);
    int kind = 1 + (overlaps ? 1 : 0) + (inPlace ? 2 : 0);
    return sizeOfCall(op, kind, axes.asArrayRef(),
                      [&](const rt::DecodedCall &d, const rt::Program &p) {
      return rt::scratch::collectiveStaging(d, p.mesh.size(p.comms[0].axes), overlaps, inPlace)
          .total;
    });
  }

  sharding::Mesh mesh_;
  /// Sizes already computed (sizeOfCall), for this run's mesh.
  std::map<std::vector<const void *>, int64_t> sized_;

  /// Plans `func` into the arenas whose current sizes are `top`. With
  /// `shared`, arguments take the places `boundary` recorded for the step's
  /// arguments of the same name and the workspace restarts at 0; else the
  /// arguments' places are recorded there.
  LogicalResult plan(func::FuncOp func, StagedTops &top,
                     llvm::StringMap<std::pair<Arena, int64_t>> &boundary, bool shared) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return func.emitError("xf-plan-memory: the step must be one block of straight-line code");
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    auto staticType = [](Value v) -> ShapedType {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return t && t.hasStaticShape() ? t : ShapedType();
    };

    // Liveness: the index of each value's last user; returned values live to
    // the end.
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t n = 0;
    for (Operation &op : body)
      index[&op] = n++;
    llvm::DenseMap<Value, int64_t> lastUse;
    for (Operation &op : body)
      for (Value v : op.getOperands())
        lastUse[v] = std::max(lastUse.lookup(v), index[&op]);
    for (Value v : ret.getOperands())
      lastUse[v] = n;

    // The gradients the optimizer reads, and the state results by name.
    llvm::DenseSet<Value> gradients;
    func.walk([&](xf::AdamWOp op) { gradients.insert(op.getGrad()); });
    func.walk([&](xf::MultiAdamWOp op) { gradients.insert(op.getGrads().begin(), op.getGrads().end()); });
    // A value whose one reader is a view (reshape) giving a gradient is
    // placed in the grads arena itself and the gradient is its view: the
    // producer (an xf.split of a packed weight's gradient) writes the
    // gradient in place, with no copy between the shapes.
    auto viewedAsGradient = [&](Value v) {
      if (!v.hasOneUse())
        return false;
      Operation *user = *v.getUsers().begin();
      const abi::OpSpec *s = abi::findOp(user->getName().getStringRef());
      return s && s->viewInPlace && user->getNumOperands() == 1 && user->getNumResults() == 1 &&
             gradients.contains(user->getResult(0)) &&
             xf::stageOf(v) == xf::stageOf(user->getResult(0));
    };
    llvm::StringMap<BlockArgument> stateArgs;
    for (BlockArgument arg : body.getArguments())
      if (auto s = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     xf::XfDialect::kStateAttrName))
        stateArgs[s.getValue()] = arg;
    llvm::DenseMap<Value, BlockArgument> stateResultOf;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (auto s = func.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
        if (BlockArgument arg = stateArgs.lookup(s.getValue()); arg && !stateResultOf.count(v))
          stateResultOf[v] = arg;

    Builder b(func.getContext());
    // In a pipelined step (-xf-pipeline) every value but the inputs belongs
    // to one stage; values of different stages never share a rank.
    const int64_t stages = top.numStages();
    auto stageOfChecked = [&](Value v, Location loc) -> FailureOr<int64_t> {
      int64_t s = xf::stageOf(v);
      if (s >= stages || (stages > 1 && s < 0 && !isa<BlockArgument>(v)))
        return emitError(loc) << "xf-plan-memory: a value of a step with " << stages
                              << " pipeline stage(s) is on stage " << s;
      return s;
    };
    llvm::DenseMap<Value, std::pair<Arena, int64_t>> place;

    ArgAttrEditor argAttrs(func);
    for (BlockArgument arg : body.getArguments()) {
      ShapedType t = staticType(arg);
      if (!t)
        return func.emitError() << "xf-plan-memory: argument #" << arg.getArgNumber()
                                << " has type " << arg.getType()
                                << "; memory planning needs statically shaped tensors";
      std::string key = boundaryKey(func, arg.getArgNumber());
      if (shared) {
        auto it = boundary.find(key);
        if (it == boundary.end())
          return func.emitError() << "xf-plan-memory: argument #" << arg.getArgNumber() << " ("
                                  << key << ") has no counterpart in the planned step";
        place[arg] = it->second;
      } else {
        Arena a = argumentArena(func, arg.getArgNumber());
        FailureOr<int64_t> stage = stageOfChecked(arg, func.getLoc());
        if (failed(stage))
          return failure();
        place[arg] = {a, top.bump(a, *stage, byteSize(t))};
        boundary[key] = place[arg];
      }
      if (placements)
        argAttrs.set(arg.getArgNumber(), kBufferAttr,
                     b.getDenseI64ArrayAttr({place[arg].first, place[arg].second}));
    }
    argAttrs.commit();

    // Views: a reshape (the op table's viewInPlace) placed over an operand
    // that lives on shares its buffer. The values sharing a buffer are one
    // group, owned by its first value: the buffer is given back when the
    // group's last member dies, and handed to a result only then.
    llvm::DenseMap<Value, Value> ownerOf;   // a view -> the value owning its buffer
    llvm::DenseMap<Value, int64_t> lastOfGroup; // owner -> the last use of any member
    auto owner = [&](Value v) {
      auto it = ownerOf.find(v);
      return it == ownerOf.end() ? v : it->second;
    };
    auto bufferLastUse = [&](Value v) {
      auto it = lastOfGroup.find(owner(v));
      return std::max(lastUse.lookup(v), it == lastOfGroup.end() ? int64_t(0) : it->second);
    };

    // The collectives' staging (KernelScratch.h collectiveStaging): held in
    // the workspace from the input's producer (the earliest its start can
    // be issued) to the output's first reader (the latest its wait can be),
    // so -rt-schedule-collectives, which moves starts up and waits down only
    // past ops touching none of the collective's bytes (the staging is part
    // of them), keeps the freedom it has without the staging; given back
    // early where an op writes the input's bytes after the collective (its
    // wait cannot pass that op anyway). An input without producer (an
    // argument) is staged from the collective's own place. Reshapes placed
    // in place are no calls: the window looks through them.
    struct Staging {
      Operation *op = nullptr;
      int64_t bytes = 0, stage = 0, from = 0, to = 0, padded = 0;
      /// The ops it is held over once placed: [start, last], closed.
      int64_t start = -1, last = -1;
      bool open = false;
    };
    std::vector<Staging> stagings;
    auto isView = [](Operation *op) {
      const abi::OpSpec *s = abi::findOp(op->getName().getStringRef());
      return s && s->viewInPlace && op->getNumOperands() == 1 && op->getNumResults() == 1;
    };
    // The index of the first op reading `v` other than through views.
    std::function<int64_t(Value)> firstReader = [&](Value v) {
      int64_t first = n;
      for (Operation *user : v.getUsers())
        if (user->getBlock() == &body)
          first = std::min(first, isView(user) ? firstReader(user->getResult(0)) : index[user]);
      return first;
    };
    // The op before which a collective's wait must be.
    auto windowEnd = [&](Operation &op) {
      return op.getResult(0).use_empty() ? index[&op] + 1
                                         : std::max(firstReader(op.getResult(0)), index[&op] + 1);
    };
    // The op that writes a collective's input (behind views), or the
    // collective itself for an argument and for a backward collective of a
    // forward value (-xf-schedule leaves it by its backward reader: held
    // from the forward, its staging would cross the activation peak).
    StepPhases phases = classifyStep(func);
    auto windowStart = [&](Operation &op) {
      Value v = op.getOperand(0);
      while (Operation *def = v.getDefiningOp()) {
        if (def->getBlock() != &body)
          break;
        if (!isView(def))
          return phases.reshardsForBackward(&op) ? index[&op] : index[def];
        v = def->getOperand(0);
      }
      return index[&op];
    };
    llvm::DenseMap<Operation *, size_t> stagingOf;
    std::multimap<int64_t, size_t> stagingFrom, stagingTo;
    // Staged collectives already placed whose input's bytes (workspace
    // [begin, end) of `stage`) no later op has written yet.
    struct Watch {
      size_t staging;
      int64_t stage, begin, end;
    };
    std::vector<Watch> watches;
    for (Operation &op : body) {
      const abi::OpSpec *spec = abi::findOp(op.getName().getStringRef());
      if (!spec || !spec->collective || op.getNumOperands() < 1 || op.getNumResults() < 1)
        continue;
      FailureOr<int64_t> bytes = stagingBytes(&op, false, false);
      if (failed(bytes))
        return failure();
      if (*bytes <= 0)
        continue;
      Staging st;
      st.op = &op;
      st.bytes = *bytes;
      st.stage = std::max<int64_t>(xf::stageOf(op.getResult(0)), 0);
      st.from = windowStart(op);
      st.to = windowEnd(op);
      stagingOf[&op] = stagings.size();
      stagingFrom.emplace(st.from, stagings.size());
      stagingTo.emplace(st.to, stagings.size());
      stagings.push_back(st);
    }
    // Scratch regions start 256-byte aligned (the GPU's copies and kernels
    // lay out their regions at 256-byte offsets).
    constexpr int64_t kScratchAlign = 256;
    auto alignedIn = [&](int64_t block) {
      return (block + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    };
    // A staging is held from op `t` on (placed after the walk); holding it
    // again with more bytes keeps its start.
    auto openStaging = [&](Staging &st, int64_t t) {
      st.padded = alignUp(st.bytes + kScratchAlign - kAlignment);
      if (!st.open && st.start < 0)
        st.start = t;
      st.open = true;
    };
    // ... and given back after op `t` (its last).
    auto closeStaging = [&](Staging &st, int64_t t) {
      if (st.open)
        st.last = t;
      st.open = false;
    };

    // Two phases. The walk places the values (first fit, each buffer given
    // back at its last use); the workspace's top after it is the
    // activations' own peak. The transient blocks — a kernel's scratch
    // (during its op) and a collective's staging (over its window) — are
    // placed after it, each at the lowest offset free of every value and
    // earlier transient that overlaps it in time, so they fill the gaps the
    // values leave and never push a value up: the scratch first (the top
    // with it alone is the unstaged peak), then the staging.
    std::vector<FreeList> workspaces(static_cast<size_t>(stages));
    // Each value block of the workspace: its bytes and the ops [from, to]
    // (closed; the last op if never given back) it is held over.
    struct Held {
      int64_t offset, bytes, from, to;
      bool activation = false; ///< made by the forward, not a weight
      Value value = {};        ///< the value placed (for the debug trace)
    };
    std::vector<std::vector<Held>> held(static_cast<size_t>(stages));
    std::vector<llvm::DenseMap<int64_t, size_t>> heldAt(static_cast<size_t>(stages));
    auto placeValue = [&](int64_t stage, int64_t bytes, int64_t t, Value v, bool activation) {
      int64_t offset = workspaces[stage].allocate(bytes);
      heldAt[stage][offset] = held[stage].size();
      held[stage].push_back({offset, alignUp(std::max<int64_t>(bytes, 1)), t, n, activation, v});
      return offset;
    };
    // A weight as the step reads it: arguments moved by layout ops and
    // collectives only (ZeRO's gathers, the bf16 copies cast from masters).
    auto isWeight = [](Value v) {
      return xf::isArgumentLayout(v, [](Operation *def) {
        return isa<xf::ReshapeOp, xf::ConcatOp, xf::SplitOp, xf::CastOp, xf::TransposeOp,
                   shard::AllGatherOp, shard::AllSliceOp>(def);
      });
    };
    auto releaseValue = [&](int64_t stage, int64_t offset, int64_t bytes, int64_t t) {
      workspaces[stage].release(offset, bytes);
      if (auto it = heldAt[stage].find(offset); it != heldAt[stage].end()) {
        held[stage][it->second].to = t;
        heldAt[stage].erase(it);
      }
    };
    // The kernels' scratch: held during its op.
    struct Scratch {
      Operation *op;
      int64_t stage, bytes, padded, at;
    };
    std::vector<Scratch> scratches;
    // Offloaded activations (xf.offload results): the host arena, by
    // liveness as the workspace.
    std::vector<FreeList> hostLists(static_cast<size_t>(stages));
    // Debug trace (SHARDC_DEBUG=xf-plan-memory): the bytes live at once in
    // the bare placement against its top (their difference is the
    // first-fit placement's fragmentation) and what is live at the most.
    const bool tracing = debug::enabled(DEBUG_TYPE);
    int64_t liveBytes = 0, liveMax = 0, liveMaxAt = -1;
    llvm::DenseSet<Value> live;
    std::vector<Value> liveAtMax;
    for (Operation &op : body) {
      if (&op == ret.getOperation())
        break;
      int64_t t = index[&op];
      // A staging whose window ends here: its wait precedes this op.
      for (auto [it, end] = stagingTo.equal_range(t); it != end; ++it)
        closeStaging(stagings[it->second], t - 1);
      int64_t opStage = 0;
      if (op.getNumResults() > 0) {
        FailureOr<int64_t> s = stageOfChecked(op.getResult(0), op.getLoc());
        if (failed(s))
          return failure();
        opStage = std::max<int64_t>(*s, 0);
      }
      // The op table (runtime/abi/OpTable.h) says which operands a result
      // may overwrite: the kernel reads each element before it writes it.
      // An operand occurring at several places qualifies only if every one
      // of them does.
      const abi::OpSpec *spec = abi::findOp(op.getName().getStringRef());
      auto mayOverwrite = [&](Value v, unsigned result) {
        if (!spec)
          return false;
        bool any = false;
        for (auto [i, operand] : llvm::enumerate(op.getOperands()))
          if (operand == v) {
            if (!abi::mayShareBuffer(spec->code, i, result, op.getNumOperands(),
                                     op.getNumResults()))
              return false;
            any = true;
          }
        return any;
      };
      auto sameBytes = [&](Value v, Value r) {
        auto a = cast<ShapedType>(v.getType()), c = cast<ShapedType>(r.getType());
        return a.getElementType() == c.getElementType() && byteSize(a) == byteSize(c);
      };
      // Workspace operands whose buffer a result took over: not given back.
      llvm::SmallDenseSet<Value, 4> handedOver;
      SmallVector<Attribute> buffers;
      for (Value r : op.getResults()) {
        ShapedType type = staticType(r);
        if (!type)
          return op.emitError() << "xf-plan-memory: result type " << r.getType()
                                << " is not a statically shaped tensor";
        int64_t bytes = byteSize(type);
        unsigned ri = cast<OpResult>(r).getResultNumber();
        std::pair<Arena, int64_t> p;
        BlockArgument arg = stateResultOf.lookup(r);
        bool inPlace = false;
        if (arg && byteSize(cast<ShapedType>(arg.getType())) == bytes) {
          // The argument's buffer is free once nothing reads the old value
          // after this op, or this op reads it where its kernel may write
          // the result over it (AdamW updates in place).
          // (Views of the argument read its buffer until their last use.)
          int64_t argLast = bufferLastUse(arg);
          inPlace = argLast < t || (argLast == t && mayOverwrite(arg, ri));
        }
        // Else a workspace operand that dies here (with every value sharing
        // its buffer, none of them read by this op under another name), of
        // the result's type.
        auto soleReader = [&](Value v) {
          return llvm::none_of(op.getOperands(),
                               [&](Value w) { return w != v && owner(w) == owner(v); });
        };
        Value donor;
        if (!inPlace && !gradients.contains(r))
          for (Value v : op.getOperands()) {
            auto it = place.find(v);
            if (it != place.end() && it->second.first == Workspace && bufferLastUse(v) == t &&
                sameBytes(v, r) && !handedOver.contains(v) && mayOverwrite(v, ri) &&
                soleReader(v)) {
              donor = v;
              break;
            }
          }
        // Else, for a view op, the operand's buffer even though the operand
        // lives on: nothing writes a group's buffer while a member lives.
        Value viewed;
        // A function argument's buffer (its arena) qualifies too: nothing
        // writes it before its last reader, views included (the in-place
        // state update above waits for them). So does a gradient's, placed
        // for it in the grads arena (viewedAsGradient).
        if (!inPlace && !donor && spec && spec->viewInPlace && op.getNumOperands() == 1) {
          Value v = op.getOperand(0);
          auto it = place.find(v);
          bool arena = it != place.end() &&
                       (gradients.contains(r) ? it->second.first == Grads
                                              : it->second.first == Workspace ||
                                                    isa<BlockArgument>(v));
          if (arena && sameBytes(v, r) && std::max<int64_t>(xf::stageOf(v), 0) == opStage)
            viewed = v;
        }
        if (inPlace) {
          p = place[arg];
        } else if (donor) {
          p = place[donor];
          // The donor's whole group dies here, so the result owns the
          // buffer alone from now on.
          handedOver.insert(donor);
          ++inPlaceResults;
          if (tracing && live.erase(donor))
            live.insert(r);
        } else if (viewed) {
          p = place[viewed];
          Value o = owner(viewed);
          ownerOf[r] = o;
          lastOfGroup[o] = std::max({bufferLastUse(viewed), lastUse.lookup(r), t});
          ++inPlaceResults;
        } else if (gradients.contains(r) || viewedAsGradient(r)) {
          p = {Grads, top.bump(Grads, xf::stageOf(r), bytes)};
        } else if (isa<xf::OffloadOp>(op)) {
          p = {Host, hostLists[opStage].allocate(bytes)};
        } else {
          p = {Workspace,
               placeValue(opStage, bytes, t, r, !phases.isBackward(&op) && !isWeight(r))};
          if (tracing) {
            liveBytes += alignUp(bytes);
            live.insert(r);
          }
        }
        place[r] = p;
        if (placements)
          buffers.push_back(b.getDenseI64ArrayAttr({p.first, p.second}));
      }
      if (placements)
        op.setAttr(kBuffersAttr, b.getArrayAttr(buffers));
      // The kernel's scratch: workspace bytes beside its operands and
      // results while it runs (placed after the walk). 256-byte aligned, as
      // the GPU kernels' own workspace (cudaMalloc) was: their regions are
      // laid out at 256-byte offsets from it.
      FailureOr<int64_t> scratch = scratchBytes(&op, spec);
      if (failed(scratch))
        return failure();
      if (*scratch > 0) {
        scratches.push_back(
            {&op, opStage, *scratch, alignUp(*scratch + kScratchAlign - kAlignment), t});
        scratchCalls += 1;
      }
      // A collective whose planned input overlaps its output (other than an
      // all-reduce in place) also stages a copy of the input: its staging is
      // placed again, from here.
      if (spec && spec->collective && op.getNumOperands() >= 1 && op.getNumResults() >= 1) {
        auto in = place.find(op.getOperand(0));
        auto out = place.find(op.getResult(0));
        if (in != place.end() && out != place.end() && in->second.first == out->second.first) {
          int64_t inBytes = byteSize(cast<ShapedType>(op.getOperand(0).getType()));
          int64_t outBytes = byteSize(cast<ShapedType>(op.getResult(0).getType()));
          int64_t a = in->second.second, c = out->second.second;
          bool samePlace = a == c;
          bool overlaps = a < c + outBytes && c < a + inBytes;
          FailureOr<int64_t> bytes =
              overlaps ? stagingBytes(&op, true, samePlace) : FailureOr<int64_t>(int64_t(0));
          if (failed(bytes))
            return failure();
          auto known = stagingOf.find(&op);
          int64_t before = known == stagingOf.end() ? 0 : stagings[known->second].bytes;
          if (*bytes > before) {
            if (known == stagingOf.end()) {
              Staging st;
              st.op = &op;
              st.stage = opStage;
              st.to = windowEnd(op);
              known = stagingOf.try_emplace(&op, stagings.size()).first;
              stagingTo.emplace(st.to, stagings.size());
              stagings.push_back(st);
            }
            Staging &st = stagings[known->second];
            st.bytes = *bytes;
            openStaging(st, t);
          }
        }
      }
      // Stagings whose window opens here (before this op's dying values are
      // given back: an argument staged from its collective is still read).
      for (auto [it, end] = stagingFrom.equal_range(t); it != end; ++it)
        if (!stagings[it->second].open && stagings[it->second].from == t)
          openStaging(stagings[it->second], t);
      // A staged collective's wait cannot pass an op writing the bytes its
      // input had: its staging goes back after the first such op (written
      // here: a result not placed as a view; a kernel's scratch, placed
      // later, is not looked at, so the staging may be held longer than
      // -rt-schedule-collectives can use it, never shorter).
      if (!watches.empty()) {
        SmallVector<std::pair<int64_t, int64_t>, 4> written;
        for (auto [ri, r] : llvm::enumerate(op.getResults())) {
          auto it = place.find(r);
          if (it != place.end() && it->second.first == Workspace && !ownerOf.count(r))
            written.push_back({it->second.second,
                               it->second.second + byteSize(cast<ShapedType>(r.getType()))});
        }
        for (auto w = watches.begin(); w != watches.end();) {
          Staging &st = stagings[w->staging];
          bool hit = !st.open || (w->stage == opStage &&
                                      llvm::any_of(written, [&](auto r) {
                                        return r.first < w->end && w->begin < r.second;
                                      }));
          if (hit) {
            closeStaging(st, t);
            w = watches.erase(w);
          } else {
            ++w;
          }
        }
      }
      if (auto known = stagingOf.find(&op); known != stagingOf.end()) {
        auto in = place.find(op.getOperand(0));
        if (in != place.end() && in->second.first == Workspace)
          watches.push_back({known->second, opStage, in->second.second,
                             in->second.second +
                                 byteSize(cast<ShapedType>(op.getOperand(0).getType()))});
      }
      // Give back the workspace of values that die here (after the results
      // were placed: a result overlaps an operand only where it took over
      // the operand's buffer above); a buffer shared by views goes back once,
      // with its group's last member.
      if (tracing && liveBytes > liveMax) {
        liveMax = liveBytes;
        liveMaxAt = t;
        liveAtMax.assign(live.begin(), live.end());
      }
      llvm::SmallDenseSet<Value, 8> dying;
      for (Value v : op.getOperands())
        if (lastUse.lookup(v) == t && !handedOver.contains(v) && bufferLastUse(v) <= t)
          dying.insert(owner(v));
      for (Value r : op.getResults())
        if (r.use_empty() && bufferLastUse(r) <= t)
          dying.insert(owner(r));
      for (Value v : dying) {
        auto it = place.find(v);
        if (it == place.end())
          continue;
        size_t s = static_cast<size_t>(std::max<int64_t>(xf::stageOf(v), 0));
        if (it->second.first == Workspace) {
          releaseValue(s, it->second.second, byteSize(cast<ShapedType>(v.getType())), t);
          if (tracing && live.erase(v))
            liveBytes -= alignUp(byteSize(cast<ShapedType>(v.getType())));
        }
        else if (it->second.first == Host)
          hostLists[s].release(it->second.second, byteSize(cast<ShapedType>(v.getType())));
      }
    }
    for (Staging &st : stagings) {
      closeStaging(st, n - 1);
      stagedCalls += st.padded > 0 ? 1 : 0;
    }

    // The transient blocks, stage by stage.
    for (int64_t s = 0; s < stages; ++s) {
      std::vector<Held> &values = held[static_cast<size_t>(s)];
      std::vector<Held> placed;
      int64_t valuesTop = workspaces[s].top(), topNow = valuesTop;
      // The lowest offset where `bytes` are free of every value and placed
      // transient held during any of the ops [from, to].
      auto lowestFree = [&](int64_t bytes, int64_t from, int64_t to) {
        SmallVector<std::pair<int64_t, int64_t>, 32> taken;
        for (const std::vector<Held> *list : {&values, &placed})
          for (const Held &h : *list)
            if (h.from <= to && from <= h.to)
              taken.push_back({h.offset, h.offset + h.bytes});
        llvm::sort(taken);
        int64_t offset = 0;
        for (auto [begin, end] : taken) {
          if (begin >= offset + bytes)
            break;
          offset = std::max(offset, end);
        }
        placed.push_back({offset, bytes, from, to});
        topNow = std::max(topNow, offset + bytes);
        return offset;
      };
      // (Placed whether or not the places are written: the tops are theirs.)
      for (const Scratch &sc : scratches)
        if (sc.stage == s) {
          int64_t at = alignedIn(lowestFree(sc.padded, sc.at, sc.at));
          if (placements)
            sc.op->setAttr(kScratchAttr, b.getDenseI64ArrayAttr({at, sc.bytes}));
        }
      int64_t withScratch = topNow;
      for (const Staging &st : stagings)
        if (st.stage == s && st.padded > 0 && st.start >= 0 && st.last >= st.start) {
          int64_t at = alignedIn(lowestFree(st.padded, st.start, st.last));
          if (placements)
            st.op->setAttr(kScratchAttr, b.getDenseI64ArrayAttr({at, st.bytes}));
        }
      top.tops[Workspace][s] = std::max(top.tops[Workspace][s], topNow);
      top.bare[s] = std::max(top.bare[s], valuesTop);
      top.unstaged[s] = std::max(top.unstaged[s], withScratch);
      top.tops[Host][s] = std::max(top.tops[Host][s], hostLists[s].top());
    }

    SmallVector<int64_t> arenaBytes;
    int64_t total = 0;
    for (int a = 0; a < NumArenas; ++a) {
      arenaBytes.push_back(top.size(static_cast<Arena>(a)));
      total += onDevice(a) ? arenaBytes.back() : 0;
    }
    func->setAttr(kArenaBytesAttr, b.getDenseI64ArrayAttr(arenaBytes));
    func->setAttr(kPlannedBytesAttr, b.getI64IntegerAttr(total));
    func->setAttr(kActivationBytesAttr, b.getI64IntegerAttr(top.activations()));
    func->setAttr(kUnstagedBytesAttr, b.getI64IntegerAttr(top.withoutStaging()));
    // The forward's stored activations: held across the first backward op
    // (or the first op made for the backward alone: a re-gather for the
    // first weight gradient).
    int64_t firstBackward = n;
    for (Operation &op : body)
      if (phases.isBackward(&op) ||
          (op.getNumResults() > 0 && llvm::all_of(op.getResults(), [&](Value r) {
             return phases.readOnlyInBackward(r);
           })))
        firstBackward = std::min(firstBackward, index[&op]);
    if (stages == 1 && firstBackward < n) {
      int64_t stored = 0;
      for (const Held &h : held[0])
        if (h.activation && h.from < firstBackward && h.to >= firstBackward) {
          stored += h.bytes;
          SHARDC_DEBUG({
            Operation *def = h.value.getDefiningOp();
            DBGS() << "  stored for the backward: " << h.bytes << " " << h.value.getType() << " "
                   << (def ? def->getName().getStringRef() : "arg") << " #" << h.from << " "
                   << (def ? def->getLoc() : h.value.getLoc()) << "\n";
          });
        }
      func->setAttr(kStoredActivationBytesAttr, b.getI64IntegerAttr(stored));
    }
    top.record(func);
    SHARDC_DEBUG({
      DBGS() << "@" << func.getSymName() << ": activations placed in " << top.activations()
             << " bytes; at most " << liveMax << " live at once (op #" << liveMaxAt
             << ", all stages), live there by size:\n";
      llvm::sort(liveAtMax, [](Value a, Value c) {
        return byteSize(cast<ShapedType>(a.getType())) > byteSize(cast<ShapedType>(c.getType()));
      });
      for (Value v : liveAtMax) {
        Operation *def = v.getDefiningOp();
        llvm::raw_ostream &os = DBGS();
        os << "  " << byteSize(cast<ShapedType>(v.getType())) << " " << v.getType() << " "
           << (def ? def->getName().getStringRef() : "arg") << " #" << (def ? index[def] : -1)
           << " last #" << bufferLastUse(v) << " " << (def ? def->getLoc() : v.getLoc())
           << " ->";
        for (Operation *user : v.getUsers())
          os << " " << user->getName().getStringRef() << " #" << index[user];
        os << "\n";
      }
      for (const Staging &st : stagings)
        if (st.padded > 0)
          DBGS() << "  staging " << st.bytes << " for " << st.op->getName().getStringRef() << " #"
                 << index[st.op] << " held over #" << st.start << "..#" << st.last << " at "
                 << st.op->getAttrOfType<DenseI64ArrayAttr>(kScratchAttr)[0] << "\n";
      DBGS() << "planned bytes per rank:";
      for (int a = 0; a < NumArenas; ++a)
        DBGS() << " " << kArenaNames[a] << "=" << arenaBytes[a];
      DBGS() << " total=" << total << "\n";
    });
    return success();
  }
};

} // namespace
