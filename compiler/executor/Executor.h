//===- Executor.h - reference executor for xf functions ---------*- C++ -*-===//
//
// Runs a func.func of xf ops on the CPU with the runtime's kernel library
// (runtime/cpu), the oracle every transformation is checked against.
//
// The executor keeps one value environment per simulated rank and walks the
// function's ops in order, all ranks in lockstep. Every local op runs through
// the runtime's kernel runner (runtime/program/KernelRunner.h), encoded by the
// same op table and encoder as lowering (compiler/abi/CallEncoding.h): the
// executor and compiled steps share one dispatcher and one set of kernels. A function without `xf.grid`
// runs on one rank. A partitioned function (`xf.grid = @mesh`, produced by
// -xf-partition) runs on every rank of the mesh in one process
// (MeshSimulation.h):
//  - run() still takes and returns global tensors: each argument is cut into
//    the ranks' blocks by its `xf.sharding`, each result assembled from them
//    (replicated copies must agree bit for bit, which catches partitioner
//    bugs);
//  - local ops run on every rank; ops with `xf.factor_axes` get their rank's
//    offset in the global op (embedding rows, iota, dropout's mask, rope
//    positions);
//  - the shard collectives and the cross-entropy ops with a split vocabulary
//    (Megatron-style vocabulary-parallel loss: per-row max, sum of exps and
//    target logit are combined over the vocabulary group) see all ranks at
//    once.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
#define SHARDC_COMPILER_EXECUTOR_EXECUTOR_H

#include "runtime/HostTensor.h"
#include "runtime/program/KernelRunner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::exec {

class MeshSimulation;

using rt::DType;
using rt::HostTensor;

/// Options of one execution.
struct RunOptions {
  uint64_t seed = 1234; ///< dropout (and, through Params, init) seed
  uint64_t step = 0;    ///< training step, part of the dropout key
  bool training = false; ///< dropout active
  bool profile = false;  ///< accumulate time per op name
};

/// Maps an MLIR element type onto the executor's dtypes; fails for others.
mlir::FailureOr<DType> dtypeOf(mlir::Type elementType);
/// The HostTensor type of a statically shaped ranked tensor type.
mlir::FailureOr<std::pair<DType, std::vector<int64_t>>> tensorSpec(mlir::Type type);

/// The value of a one-element tensor of any dtype (f32, f64, bf16, f16, i32)
/// as a double; throws rt::Error for other sizes.
double scalarValue(const HostTensor &t);

/// Executes one function. Arguments are given by position; the results are
/// the function's return values. Errors (bad ids, unsupported ops, argument
/// mismatches) are emitted as diagnostics at the op or function location.
class Executor {
public:
  explicit Executor(mlir::func::FuncOp func, RunOptions options = {});

  mlir::LogicalResult run(std::vector<HostTensor> args, std::vector<HostTensor> &results);

  /// Seconds spent per op name over all runs (when options.profile is set).
  const std::map<std::string, double> &profile() const { return profile_; }
  /// The number of simulated ranks: the mesh size of a partitioned function,
  /// else 1.
  int numRanks() const { return static_cast<int>(ranks_.size()); }

private:
  struct RankEnv {
    int rank = 0;
    /// The rank's pipeline stage (0 without a pipeline).
    int64_t stage = 0;
    llvm::DenseMap<mlir::Value, HostTensor> values;
  };

  /// Rank `env`'s operands of `op`; fails (with a diagnostic) on a missing one.
  mlir::LogicalResult operandsOf(mlir::Operation *op, const RankEnv &env,
                                 llvm::SmallVectorImpl<const HostTensor *> &in);
  /// A pipelined function (-xf-pipeline): whether `env` runs `op` (its
  /// stage's ops), and the rank of `env`'s coordinates on stage `stage` (the
  /// rank a group op of another stage reads for it: groups never span
  /// stages, so every stage's groups compute alike).
  bool runsOn(mlir::Operation *op, const RankEnv &env) const;
  const RankEnv &onStage(const RankEnv &env, int64_t stage) const;
  /// xf.transfer: the receiving stage's ranks get the sending stage's value.
  mlir::LogicalResult execTransfer(mlir::Operation *op);
  mlir::LogicalResult execLocal(mlir::Operation *op, RankEnv &env);
  /// The runtime's kernel runner for `op` on `rank` (built once: the op
  /// encoded as a one-call program, decoded for the rank's coordinates);
  /// null after emitting an error if the runtime cannot run it.
  rt::KernelRunner *kernelFor(mlir::Operation *op, int rank);
  /// shard collectives: all ranks at once.
  mlir::LogicalResult execCollective(mlir::Operation *op);
  /// The cross-entropy ops: statistics combined over each vocabulary group.
  mlir::LogicalResult execCrossEntropy(mlir::Operation *op);
  mlir::LogicalResult distributeArguments(std::vector<HostTensor> &args);
  mlir::LogicalResult collectResults(mlir::func::ReturnOp ret, std::vector<HostTensor> &results);

  mlir::func::FuncOp func_;
  RunOptions options_;
  /// The mesh of a partitioned function; null for one rank.
  std::shared_ptr<const MeshSimulation> mesh_;
  std::vector<RankEnv> ranks_;
  /// The pipeline axis of a pipelined function, else -1.
  int pipelineAxis_ = -1;
  std::map<std::string, double> profile_;
  struct OpKernel {
    std::unique_ptr<rt::Program> program;
    std::unique_ptr<rt::KernelRunner> runner;
  };
  std::map<std::pair<mlir::Operation *, int>, OpKernel> kernels_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
