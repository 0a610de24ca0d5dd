//===- Executor.cpp - reference executor for xf functions -----------------===//

#include "compiler/executor/Executor.h"

#include "compiler/abi/CallEncoding.h"
#include "runtime/comm/Comm.h"
#include "compiler/executor/MeshSimulation.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/cpu/ComputeType.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/RowMath.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <chrono>
#include <thread>
#include <cmath>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;
namespace xf = shardc::xf;

namespace {

using Results = std::vector<HostTensor>;

/// The (dtype, shape) of an op's result; verified IR guarantees it exists.
std::pair<DType, std::vector<int64_t>> resultSpec(Operation *op, unsigned i = 0) {
  return *tensorSpec(op->getResult(i).getType());
}

/// A collective by the op table (the shard collectives, xf.transfer): it runs
/// on the communicator of its grid axes.
bool isCollective(Operation *op) {
  const abi::OpSpec *spec = abi::findOp(op->getName().getStringRef());
  return spec && spec->collective;
}

/// Ops whose ranks exchange data: the collectives, and the ops whose sharding
/// rule has a log-sum-exp or a normalized (mean) factor, whose kernels combine
/// a split vocabulary's statistics or a split batch's token count over their
/// group.
bool isGroupOp(Operation *op) {
  if (isCollective(op))
    return true;
  auto rule = dyn_cast<xf::ShardingRuleOpInterface>(op);
  return rule && llvm::any_of(rule.getShardingRule().factors, [](const xf::ShardingFactor &f) {
           return f.logSumExp || f.normalized;
         });
}

} // namespace

double shardc::exec::scalarValue(const HostTensor &t) {
  if (t.numel() != 1)
    throw rt::Error("expected a single value, got a tensor of shape " + rt::shape_str(t.shape));
  return cpu::scalarValue(t.bytes.data(), t.dtype);
}

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
  // The ranks exchange through the runtime's communicator interface, each
  // on its own thread while a group op runs (runtime/comm/Comm.h).
  if (mesh_) {
    inProcess_ = std::make_unique<rt::InProcessMesh>(mesh_->mesh());
    for (size_t r = 0; r < ranks_.size(); ++r)
      comms_.push_back(inProcess_->communicators(static_cast<int64_t>(r)));
  }
}

Executor::~Executor() = default;

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
  if (isCollective(op)) {
    // Its communicator: the group on its grid axes (verified, required).
    auto gridAxes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes").asArrayRef();
    k.program->comms.push_back({rt::Axes(gridAxes.begin(), gridAxes.end())});
    call->comm = 0;
  }
  k.program->calls.push_back(std::move(*call));
  try {
    k.runner = std::make_unique<rt::KernelRunner>(*k.program, rank,
                                                  mesh_ ? comms_[rank].get() : nullptr);
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

LogicalResult Executor::execGroup(Operation *op) {
  if (!mesh_ && isCollective(op))
    return op->emitError() << "reference executor: '" << op->getName()
                           << "' needs a partitioned function (one with '"
                           << (isa<xf::TransferOp>(op) ? xf::XfDialect::kPipelineAttrName
                                                       : sharding::kGridAttr)
                           << "')";
  if (auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
      grid && grid.getValue() != mesh_->mesh().symbol)
    return op->emitError() << "reference executor: the collective runs on grid @"
                           << grid.getValue() << ", not the function's @"
                           << mesh_->mesh().symbol;
  auto transfer = dyn_cast<xf::TransferOp>(op);
  if (transfer && pipelineAxis_ < 0)
    return op->emitError("reference executor: xf.transfer outside a pipelined function (one "
                         "with xf.pipeline)");
  // The ranks that take part: a transfer's sending and receiving stages, any
  // other op's stage. Everything MLIR (encoding, operands) is done here, on
  // this thread; the threads only run kernels and exchanges.
  struct Part {
    RankEnv *env;
    rt::KernelRunner *runner;
    SmallVector<const HostTensor *> in;
    Results out;
    HostTensor scratch; ///< a receiving rank's unused send buffer
    bool keeps = true;  ///< stores the results (a transfer's sender does not)
  };
  std::vector<Part> parts;
  for (RankEnv &env : ranks_) {
    bool sends = transfer && env.stage == transfer.getFrom();
    bool receives = transfer && env.stage == transfer.getTo();
    if (transfer ? !(sends || receives) : !runsOn(op, env))
      continue;
    Part &p = parts.emplace_back();
    p.env = &env;
    p.keeps = !sends;
    if (!(p.runner = kernelFor(op, env.rank)))
      return failure();
    if (receives) {
      auto [dtype, shape] = *tensorSpec(op->getOperand(0).getType());
      p.scratch = HostTensor(dtype, shape);
      p.in.push_back(&p.scratch);
    } else if (failed(operandsOf(op, env, p.in))) {
      return failure();
    }
    for (Value r : op->getResults()) {
      auto [dtype, shape] = resultSpec(op, cast<OpResult>(r).getResultNumber());
      p.out.emplace_back(dtype, shape);
    }
  }
  // Each rank on its own thread: an exchange waits for every member.
  if (inProcess_)
    inProcess_->reset();
  std::vector<std::string> errors(parts.size());
  auto runPart = [&](size_t i) {
    Part &p = parts[i];
    try {
      SmallVector<void *, rt::kMaxCallBuffers> buffers;
      for (const HostTensor *t : p.in)
        buffers.push_back(const_cast<uint8_t *>(t->bytes.data()));
      for (HostTensor &t : p.out)
        buffers.push_back(t.bytes.data());
      if (isCollective(op))
        p.runner->collective(0, 0, buffers[0], buffers[1]);
      else
        p.runner->kernel(0, buffers.data(), {options_.seed, options_.step, options_.training});
    } catch (const rt::Error &e) {
      errors[i] = e.what();
      if (inProcess_)
        inProcess_->fail("rank " + std::to_string(p.env->rank) + ": " + e.what());
    }
  };
  if (parts.size() == 1) {
    runPart(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < parts.size(); ++i)
      threads.emplace_back(runPart, i);
    for (std::thread &t : threads)
      t.join();
  }
  // The first rank's own error (not a peer's report of it).
  for (bool own : {true, false})
    for (const std::string &e : errors)
      if (!e.empty() && (!own || e.find("another rank of the in-process mesh") != 0))
        return op->emitError() << "reference executor: " << e;
  for (Part &p : parts)
    if (p.keeps)
      for (auto [value, result] : llvm::zip_equal(op->getResults(), p.out))
        p.env->values[value] = std::move(result);
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
    if (!isXf && !isCollective(&op))
      return op.emitError() << "reference executor: '" << op.getName()
                            << "' is not supported (xf ops and the shard collectives "
                               "all_gather, all_reduce, reduce_scatter, all_slice and "
                               "all_to_all only)";
    auto start = std::chrono::steady_clock::now();
    if (isGroupOp(&op)) {
      if (failed(execGroup(&op)))
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
