//===- Executor.cpp - reference executor for xf functions -----------------===//

#include "compiler/executor/Executor.h"

#include "compiler/abi/CallEncoding.h"
#include "compiler/executor/MeshSimulation.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/RowMath.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;
namespace xf = shardc::xf;

FailureOr<DType> shardc::exec::dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(32))
    return DType::I32;
  return failure();
}

FailureOr<std::pair<DType, std::vector<int64_t>>> shardc::exec::tensorSpec(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return failure();
  FailureOr<DType> dt = dtypeOf(t.getElementType());
  if (failed(dt))
    return failure();
  return std::make_pair(*dt, std::vector<int64_t>(t.getShape().begin(), t.getShape().end()));
}

//===----------------------------------------------------------------------===//
// Conversion between storage and compute types
//===----------------------------------------------------------------------===//

namespace {

using cpu::computeDType;

/// A HostTensor's bytes in compute type C (runtime/cpu/ComputeType.h).
template <class C> void toCompute(const HostTensor &t, C *out) {
  cpu::toCompute(t.bytes.data(), t.dtype, t.numel(), out);
}

/// Stores compute-type values into a float tensor, rounding to its dtype.
template <class C> void fromCompute(const C *in, HostTensor &t) {
  cpu::fromCompute(in, t.numel(), t.dtype, t.bytes.data());
}

/// A read-only view of a float tensor in compute type C; copies only when the
/// storage type differs (bf16/f16, or mixed f32/f64).
template <class C> class In {
public:
  explicit In(const HostTensor &t) {
    if (t.dtype == computeDType<C>()) {
      ptr_ = t.data<C>();
    } else {
      tmp_.resize(t.numel());
      toCompute(t, tmp_.data());
      ptr_ = tmp_.data();
    }
  }
  const C *get() const { return ptr_; }

private:
  const C *ptr_;
  std::vector<C> tmp_;
};

/// A result tensor written in compute type C and rounded to its dtype by take().
template <class C> class Out {
public:
  Out(DType dtype, std::vector<int64_t> shape) : t_(dtype, std::move(shape)) {
    if (dtype != computeDType<C>())
      tmp_.resize(t_.numel());
  }
  C *get() { return tmp_.empty() ? t_.data<C>() : tmp_.data(); }
  HostTensor take() {
    if (!tmp_.empty())
      fromCompute(tmp_.data(), t_);
    return std::move(t_);
  }

private:
  HostTensor t_;
  std::vector<C> tmp_;
};

/// The (dtype, shape) of an op's result; verified IR guarantees it exists.
std::pair<DType, std::vector<int64_t>> resultSpec(Operation *op, unsigned i = 0) {
  return *tensorSpec(op->getResult(i).getType());
}

int64_t lastDim(const HostTensor &t) { return t.shape.empty() ? 1 : t.shape.back(); }

} // namespace

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

namespace {

using Results = std::vector<HostTensor>;

/// One result, moved (a braced list would copy the bytes).
Results one(HostTensor &&t) {
  Results r;
  r.push_back(std::move(t));
  return r;
}

} // namespace

double shardc::exec::scalarValue(const HostTensor &t) {
  if (t.numel() != 1)
    throw rt::Error("expected a single value, got a tensor of shape " + rt::shape_str(t.shape));
  return cpu::scalarValue(t.bytes.data(), t.dtype);
}

namespace {

/// The element type that decides the compute type of an op: its first float
/// operand, or its result for ops without one.
Type computeElementType(Operation *op) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && isa<FloatType>(t.getElementType()))
      return t.getElementType();
  return cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
}

} // namespace

//===----------------------------------------------------------------------===//
// Cross-entropy, whole or vocabulary-parallel
//===----------------------------------------------------------------------===//

namespace {

bool isCrossEntropy(Operation *op) {
  return isa<xf::CrossEntropyOp, xf::CrossEntropyGradOp, xf::LinearCrossEntropyOp,
             xf::LinearCrossEntropyGradOp>(op);
}

/// (operand, dim) of a cross-entropy op that holds the vocabulary.
std::pair<unsigned, unsigned> vocabDimOf(Operation *op) {
  auto last = [&](unsigned i) {
    return std::pair<unsigned, unsigned>(
        i, cast<ShapedType>(op->getOperand(i).getType()).getRank() - 1);
  };
  return llvm::TypeSwitch<Operation *, std::pair<unsigned, unsigned>>(op)
      .Case([&](xf::CrossEntropyOp) { return last(0); })
      .Case([&](xf::CrossEntropyGradOp) { return last(1); })
      .Case([&](xf::LinearCrossEntropyOp lce) {
        return std::pair<unsigned, unsigned>(1, lce.getVocabMajor() ? 0 : 1);
      })
      .Case([&](xf::LinearCrossEntropyGradOp lce) {
        return std::pair<unsigned, unsigned>(2, lce.getVocabMajor() ? 0 : 1);
      });
}

/// One rank's operands of a cross-entropy op, in compute type C.
template <class C> struct LossOperands {
  double dloss = 0.0;
  std::optional<In<C>> logits, x, w, mask;
  const int32_t *targets = nullptr;
  int64_t rows = 0, hidden = 0;
};

/// Per-row statistics of a vocabulary block (see cpu::cross_entropy_block_stats).
struct RowStats {
  std::vector<double> max, sumExp, target;
};

/// Runs a cross-entropy op on every rank: in[r] are rank r's operands,
/// blocks[r] its vocabulary block and groups[r] its vocabulary group (ranks
/// in group order). Each rank computes the statistics of its block, each
/// group combines them in group order, and each rank finishes with the
/// combined statistics — a whole vocabulary is a group of one. The backward
/// of a whole vocabulary needs no statistics: its kernel computes them per
/// row.
///
/// tokenGroups[r] are the ranks whose tokens share rank r's mean (the token
/// dims split over data-parallel axes). Each computes its share of the mean
/// over the whole group: its sum over the group's counted rows, not its own
/// mean, so the shares add up to the unsharded mean however unevenly targets
/// are masked (one count per rank is exchanged).
template <class C>
std::vector<Results> runCrossEntropy(Operation *op,
                                     llvm::ArrayRef<SmallVector<const HostTensor *>> in,
                                     llvm::ArrayRef<OpPlacement::Dim> blocks,
                                     llvm::ArrayRef<std::vector<int64_t>> groups,
                                     llvm::ArrayRef<std::vector<int64_t>> tokenGroups) {
  bool grad = isa<xf::CrossEntropyGradOp, xf::LinearCrossEntropyGradOp>(op);
  bool linear = isa<xf::LinearCrossEntropyOp, xf::LinearCrossEntropyGradOp>(op);
  bool vocabMajor = false;
  int64_t ignore = 0;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](xf::CrossEntropyOp o) { ignore = o.getIgnoreIndex(); })
      .Case([&](xf::CrossEntropyGradOp o) { ignore = o.getIgnoreIndex(); })
      .Case([&](xf::LinearCrossEntropyOp o) {
        ignore = o.getIgnoreIndex();
        vocabMajor = o.getVocabMajor();
      })
      .Case([&](xf::LinearCrossEntropyGradOp o) {
        ignore = o.getIgnoreIndex();
        vocabMajor = o.getVocabMajor();
      });
  size_t n = in.size();
  auto rowsOf = [](const HostTensor &t) {
    int64_t cols = lastDim(t);
    return cols ? t.numel() / cols : 0;
  };
  std::vector<LossOperands<C>> ops(n);
  for (size_t r = 0; r < n; ++r) {
    LossOperands<C> &o = ops[r];
    llvm::ArrayRef<const HostTensor *> v = in[r];
    size_t i = 0;
    if (grad)
      o.dloss = scalarValue(*v[i++]);
    o.rows = rowsOf(*v[i]);
    if (linear) {
      o.hidden = lastDim(*v[i]);
      o.x.emplace(*v[i++]);
      o.w.emplace(*v[i++]);
    } else {
      o.logits.emplace(*v[i++]);
    }
    o.targets = v[i++]->data<int32_t>();
    if (v.size() > i)
      o.mask.emplace(*v[i]);
  }
  auto maskOf = [&](size_t r) { return ops[r].mask ? ops[r].mask->get() : nullptr; };

  // 1. Statistics of each rank's block.
  bool split = llvm::any_of(groups, [](const std::vector<int64_t> &g) { return g.size() > 1; });
  bool needStats = !grad || split;
  std::vector<RowStats> stats(needStats ? n : 0);
  for (size_t r = 0; r < stats.size(); ++r) {
    LossOperands<C> &o = ops[r];
    const OpPlacement::Dim &b = blocks[r];
    RowStats &s = stats[r];
    for (auto *v : {&s.max, &s.sumExp, &s.target})
      v->resize(o.rows);
    if (linear)
      cpu::linear_cross_entropy_block_stats<C>(
          o.x->get(), o.w->get(), vocabMajor, o.targets, maskOf(r), o.rows, o.hidden, b.global,
          b.offset, b.local, ignore, s.max.data(), s.sumExp.data(), s.target.data());
    else
      cpu::cross_entropy_block_stats<C>(o.logits->get(), o.targets, maskOf(r), o.rows, b.global,
                                        b.offset, b.local, ignore, s.max.data(),
                                        s.sumExp.data(), s.target.data());
  }

  // 2. The exchange: each group combines its members' statistics in group
  //    order; the members share the result.
  std::vector<RowStats> combined(stats.size());
  std::vector<int64_t> combinedOf(n, -1);
  for (size_t r = 0; r < stats.size(); ++r) {
    if (combinedOf[r] >= 0)
      continue;
    std::vector<const double *> mx, se, tg;
    for (int64_t m : groups[r]) {
      if (ops[m].rows != ops[r].rows)
        throw rt::Error("the ranks of a vocabulary group hold different numbers of tokens");
      mx.push_back(stats[m].max.data());
      se.push_back(stats[m].sumExp.data());
      tg.push_back(stats[m].target.data());
      combinedOf[m] = static_cast<int64_t>(r);
    }
    RowStats &c = combined[r];
    for (auto *v : {&c.max, &c.sumExp, &c.target})
      v->resize(ops[r].rows);
    cpu::cross_entropy_combine_stats(static_cast<int64_t>(mx.size()), mx.data(), se.data(),
                                     tg.data(), ops[r].rows, c.max.data(), c.sumExp.data(),
                                     c.target.data());
  }

  // 3. Each rank's share of its token group's mean: count / group count
  //    (the local kernels divide by the local count).
  std::vector<int64_t> counted(n, 0);
  for (size_t r = 0; r < n; ++r)
    for (int64_t row = 0; row < ops[r].rows; ++row)
      counted[r] += cpu::isCounted(ops[r].targets, maskOf(r), row, ignore) ? 1 : 0;
  std::vector<double> share(n, 1.0);
  for (size_t r = 0; r < n; ++r) {
    if (tokenGroups[r].size() <= 1)
      continue;
    int64_t total = 0;
    for (int64_t m : tokenGroups[r])
      total += counted[m];
    share[r] = total > 0 ? static_cast<double>(counted[r]) / static_cast<double>(total) : 0.0;
    ops[r].dloss *= share[r]; // the backward is linear in dloss
  }

  // 4. The loss, or each rank's block of the gradients.
  std::vector<Results> out(n);
  for (size_t r = 0; r < n; ++r) {
    LossOperands<C> &o = ops[r];
    const OpPlacement::Dim &b = blocks[r];
    const RowStats *c = needStats ? &combined[combinedOf[r]] : nullptr;
    auto outOf = [&](unsigned i) {
      auto [dtype, shape] = resultSpec(op, i);
      return Out<C>(dtype, shape);
    };
    if (!grad) {
      double loss = cpu::cross_entropy_from_stats<C>(c->max.data(), c->sumExp.data(),
                                                     c->target.data(), o.targets, maskOf(r),
                                                     o.rows, ignore, nullptr);
      Out<C> res = outOf(0);
      res.get()[0] = static_cast<C>(loss * share[r]);
      out[r] = one(res.take());
      continue;
    }
    const double *mx = c ? c->max.data() : nullptr, *se = c ? c->sumExp.data() : nullptr;
    if (linear) {
      Out<C> dx = outOf(0), dw = outOf(1);
      cpu::linear_cross_entropy_block_backward<C>(o.dloss, o.x->get(), o.w->get(), vocabMajor,
                                                  o.targets, maskOf(r), mx, se, dx.get(),
                                                  dw.get(), o.rows, o.hidden, b.global,
                                                  b.offset, b.local, ignore);
      out[r].push_back(dx.take());
      out[r].push_back(dw.take());
    } else {
      Out<C> dl = outOf(0);
      cpu::cross_entropy_block_backward<C>(o.dloss, o.logits->get(), o.targets, maskOf(r), mx,
                                           se, dl.get(), o.rows, b.global, b.offset, b.local,
                                           ignore);
      out[r] = one(dl.take());
    }
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

Executor::Executor(func::FuncOp func, RunOptions options) : func_(func), options_(options) {
  // Resolved quietly here, so that numRanks() is known before run(); run()
  // reports a grid that cannot be resolved.
  if (!func.isExternal()) {
    FailureOr<std::optional<MeshSimulation>> mesh = MeshSimulation::forFunction(func, false);
    if (succeeded(mesh) && *mesh)
      mesh_ = std::make_shared<const MeshSimulation>(std::move(**mesh));
  }
  ranks_.resize(mesh_ ? mesh_->numRanks() : 1);
  if (auto pipeline = func->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName))
    if (auto axis = pipeline.getAs<IntegerAttr>("axis"); axis && mesh_ &&
                                                           axis.getInt() < mesh_->mesh().rank())
      pipelineAxis_ = static_cast<int>(axis.getInt());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    ranks_[r].rank = static_cast<int>(r);
    if (pipelineAxis_ >= 0)
      ranks_[r].stage = mesh_->mesh().coords(static_cast<int64_t>(r))[pipelineAxis_];
  }
}

/// The stage of a pipelined function's op (-1: every stage).
static int64_t stageOfOp(Operation *op) {
  auto stage = op->getAttrOfType<IntegerAttr>(xf::XfDialect::kStageAttrName);
  return stage ? stage.getInt() : -1;
}

bool Executor::runsOn(Operation *op, const RankEnv &env) const {
  int64_t stage = stageOfOp(op);
  return pipelineAxis_ < 0 || stage < 0 || stage == env.stage;
}

const Executor::RankEnv &Executor::onStage(const RankEnv &env, int64_t stage) const {
  if (pipelineAxis_ < 0 || stage < 0 || stage == env.stage)
    return env;
  std::vector<int64_t> coords = mesh_->mesh().coords(env.rank);
  coords[pipelineAxis_] = stage;
  return ranks_[mesh_->mesh().linearRank(coords)];
}

LogicalResult Executor::execTransfer(Operation *op) {
  auto t = cast<xf::TransferOp>(op);
  if (pipelineAxis_ < 0)
    return op->emitError("reference executor: xf.transfer outside a pipelined function (one "
                         "with xf.pipeline)");
  for (RankEnv &env : ranks_) {
    if (env.stage != t.getTo())
      continue;
    SmallVector<const HostTensor *, 1> in;
    if (failed(operandsOf(op, onStage(env, t.getFrom()), in)))
      return failure();
    env.values[t.getResult()] = *in.front();
  }
  return success();
}

LogicalResult Executor::operandsOf(Operation *op, const RankEnv &env,
                                   SmallVectorImpl<const HostTensor *> &in) {
  for (Value v : op->getOperands()) {
    auto it = env.values.find(v);
    if (it == env.values.end())
      return op->emitError("reference executor: operand has no value (is the IR in SSA "
                           "dominance order?)");
    in.push_back(&it->second);
  }
  return success();
}

rt::KernelRunner *Executor::kernelFor(Operation *op, int rank) {
  auto key = std::make_pair(op, rank);
  auto it = kernels_.find(key);
  if (it != kernels_.end())
    return it->second.runner.get();
  // The op as the runtime's call (the encoding lowering uses), decoded for
  // this rank's coordinates by the runtime's own decoder.
  FailureOr<rt::Call> call =
      abi::encodeCall(op, mesh_ ? &mesh_->mesh() : nullptr, "reference executor");
  if (failed(call))
    return nullptr;
  OpKernel k;
  k.program = std::make_unique<rt::Program>();
  k.program->opTable = abi::opTableFingerprint();
  if (mesh_)
    k.program->mesh = mesh_->mesh();
  k.program->calls.push_back(std::move(*call));
  try {
    k.runner = std::make_unique<rt::KernelRunner>(*k.program, rank, nullptr);
  } catch (const rt::Error &e) {
    op->emitError() << "reference executor: " << e.what();
    return nullptr;
  }
  return kernels_.emplace(key, std::move(k)).first->second.runner.get();
}

LogicalResult Executor::execLocal(Operation *op, RankEnv &env) {
  SmallVector<const HostTensor *> in;
  if (failed(operandsOf(op, env, in)))
    return failure();
  // One dispatcher: every local op runs through the runtime's kernel runner
  // (runtime/program/KernelRunner.h), the CPU backend of compiled steps.
  rt::KernelRunner *runner = kernelFor(op, env.rank);
  if (!runner)
    return failure();
  try {
    Results results;
    SmallVector<void *, rt::kMaxCallBuffers> buffers;
    for (const HostTensor *t : in)
      buffers.push_back(const_cast<uint8_t *>(t->bytes.data()));
    for (Value r : op->getResults()) {
      auto [dtype, shape] = resultSpec(op, cast<OpResult>(r).getResultNumber());
      results.emplace_back(dtype, shape);
    }
    for (HostTensor &t : results)
      buffers.push_back(t.bytes.data());
    runner->kernel(0, buffers.data(), {options_.seed, options_.step, options_.training});
    for (auto [value, result] : llvm::zip_equal(op->getResults(), results))
      env.values[value] = std::move(result);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::execCollective(Operation *op) {
  if (!mesh_)
    return op->emitError() << "reference executor: '" << op->getName()
                           << "' needs a partitioned function (one with '"
                           << sharding::kGridAttr << "')";
  std::vector<const HostTensor *> in;
  for (RankEnv &env : ranks_) {
    SmallVector<const HostTensor *, 1> operands;
    if (failed(operandsOf(op, onStage(env, stageOfOp(op)), operands)))
      return failure();
    in.push_back(operands.front());
  }
  try {
    std::vector<HostTensor> out;
    mesh_->runCollective(op, in, out);
    for (auto [env, value] : llvm::zip_equal(ranks_, out))
      if (runsOn(op, env))
        env.values[op->getResult(0)] = std::move(value);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::execCrossEntropy(Operation *op) {
  std::vector<SmallVector<const HostTensor *>> in(ranks_.size());
  for (auto [env, operands] : llvm::zip_equal(ranks_, in))
    if (failed(operandsOf(op, onStage(env, stageOfOp(op)), operands)))
      return failure();
  try {
    auto [operand, dim] = vocabDimOf(op);
    // The mesh axes of the op's normalized (token) factors.
    sharding::AxisList tokenAxes;
    if (auto attr = op->getAttrOfType<ArrayAttr>(sharding::kFactorAxesAttr)) {
      xf::OpShardingRule rule = cast<xf::ShardingRuleOpInterface>(op).getShardingRule();
      for (size_t f = 0; f < rule.factors.size() && f < attr.size(); ++f)
        if (auto axes = dyn_cast<DenseI16ArrayAttr>(attr[f]); axes && rule.factors[f].normalized)
          tokenAxes.append(axes.asArrayRef().begin(), axes.asArrayRef().end());
    }
    std::vector<OpPlacement::Dim> blocks;
    std::vector<std::vector<int64_t>> groups, tokenGroups;
    for (const RankEnv &env : ranks_) {
      OpPlacement place(op, mesh_ ? &mesh_->mesh() : nullptr, env.rank);
      blocks.push_back(place.operandDim(operand, dim));
      groups.push_back(mesh_ ? mesh_->mesh().group(blocks.back().axes, env.rank)
                             : std::vector<int64_t>{env.rank});
      tokenGroups.push_back(mesh_ && !tokenAxes.empty() ? mesh_->mesh().group(tokenAxes, env.rank)
                                                        : std::vector<int64_t>{env.rank});
    }
    std::vector<Results> results =
        computeElementType(op).isF64()
            ? runCrossEntropy<double>(op, in, blocks, groups, tokenGroups)
            : runCrossEntropy<float>(op, in, blocks, groups, tokenGroups);
    for (auto [env, res] : llvm::zip_equal(ranks_, results))
      if (runsOn(op, env))
        for (auto [value, result] : llvm::zip_equal(op->getResults(), res))
          env.values[value] = std::move(result);
  } catch (const rt::Error &e) {
    return op->emitError() << "reference executor: " << e.what();
  }
  return success();
}

LogicalResult Executor::distributeArguments(std::vector<HostTensor> &args) {
  Block &body = func_.getBody().front();
  for (RankEnv &env : ranks_)
    env.values.clear();
  if (mesh_) {
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      std::vector<HostTensor> perRank;
      if (failed(mesh_->distributeArgument(i, std::move(args[i]), perRank)))
        return failure();
      // A pipelined step's state lives on its stage only.
      auto stage = func_.getArgAttrOfType<IntegerAttr>(i, xf::XfDialect::kStageAttrName);
      for (auto [env, value] : llvm::zip_equal(ranks_, perRank))
        if (pipelineAxis_ < 0 || !stage || stage.getInt() == env.stage)
          env.values[arg] = std::move(value);
    }
    return success();
  }
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto spec = tensorSpec(arg.getType());
    if (failed(spec))
      return func_.emitError() << argumentName(func_, i) << " has type " << arg.getType()
                               << "; the executor needs static tensors of f32, f64, bf16, "
                                  "f16 or i32";
    if (spec->first != args[i].dtype || spec->second != args[i].shape)
      return func_.emitError() << argumentName(func_, i) << " is " << arg.getType()
                               << " but was given " << rt::dtype_name(args[i].dtype) << " "
                               << rt::shape_str(args[i].shape);
    ranks_.front().values[arg] = std::move(args[i]);
  }
  return success();
}

LogicalResult Executor::collectResults(func::ReturnOp ret, std::vector<HostTensor> &results) {
  results.clear();
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!mesh_) {
      results.push_back(ranks_.front().values.lookup(v));
      continue;
    }
    // A pipelined step's value is on its stage: every rank reports its
    // counterpart's there.
    int64_t stage = xf::stageOf(v);
    std::vector<const HostTensor *> perRank;
    for (const RankEnv &rankEnv : ranks_) {
      const RankEnv &env = onStage(rankEnv, stage);
      auto it = env.values.find(v);
      if (it == env.values.end())
        return ret.emitError("reference executor: returned value has no value");
      perRank.push_back(&it->second);
    }
    HostTensor global;
    if (failed(mesh_->assembleResult(ret, i, perRank, global)))
      return failure();
    results.push_back(std::move(global));
  }
  return success();
}

LogicalResult Executor::run(std::vector<HostTensor> args, std::vector<HostTensor> &results) {
  if (func_.isExternal())
    return func_.emitError("cannot execute a function declaration");
  if (!mesh_ && func_->hasAttr(sharding::kGridAttr)) {
    // Report why the constructor could not resolve the grid.
    if (succeeded(MeshSimulation::forFunction(func_, true)))
      func_.emitError("reference executor: cannot resolve the function's grid");
    return failure();
  }
  Block &body = func_.getBody().front();
  if (args.size() != body.getNumArguments())
    return func_.emitError() << "expected " << body.getNumArguments() << " arguments, got "
                             << args.size();

  // Drop each value after its last use: activations of a full model would not
  // all fit otherwise.
  llvm::DenseMap<Operation *, SmallVector<Value>> dying;
  {
    llvm::DenseMap<Value, Operation *> lastUse;
    for (Operation &op : body)
      for (Value v : op.getOperands())
        lastUse[v] = &op;
    for (auto &[v, op] : lastUse)
      dying[op].push_back(v);
  }

  if (failed(distributeArguments(args)))
    return failure();
  results.clear();
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return collectResults(ret, results);
    bool isXf = op.getNumResults() >= 1 && op.getDialect() && isa<xf::XfDialect>(op.getDialect());
    if (!isXf && !MeshSimulation::isCollective(&op))
      return op.emitError() << "reference executor: '" << op.getName()
                            << "' is not supported (xf ops and the shard collectives "
                               "all_gather, all_reduce, reduce_scatter, all_slice and "
                               "all_to_all only)";
    auto start = std::chrono::steady_clock::now();
    if (isa<xf::TransferOp>(op)) {
      if (failed(execTransfer(&op)))
        return failure();
    } else if (MeshSimulation::isCollective(&op)) {
      if (failed(execCollective(&op)))
        return failure();
    } else if (isCrossEntropy(&op)) {
      if (failed(execCrossEntropy(&op)))
        return failure();
    } else {
      for (RankEnv &env : ranks_)
        if (runsOn(&op, env) && failed(execLocal(&op, env)))
          return failure();
    }
    if (options_.profile)
      profile_[op.getName().getStringRef().str()] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (Value v : dying.lookup(&op))
      for (RankEnv &env : ranks_)
        env.values.erase(v);
  }
  return success();
}
