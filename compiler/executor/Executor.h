//===- Executor.h - reference executor for xf functions ---------*- C++ -*-===//
//
// Runs a func.func of xf ops on the CPU with the runtime's kernel library
// (runtime/cpu), the oracle every transformation is checked against.
//
// The executor keeps one value environment per simulated rank and walks the
// function's ops in order, all ranks in lockstep. Every op runs through the
// runtime's kernel runner (runtime/program/KernelRunner.h), encoded by the
// same op table and encoder as lowering (compiler/abi/CallEncoding.h): the
// executor and compiled steps share one dispatcher, one set of kernels and
// one implementation of every collective. A function without `xf.grid` runs
// on one rank. A partitioned function (`xf.grid = @mesh`, produced by
// -xf-partition) runs on every rank of the mesh in one process:
//  - run() still takes and returns global tensors: each argument is cut into
//    the ranks' blocks by its `xf.sharding`, each result assembled from them
//    (replicated copies must agree bit for bit, which catches partitioner
//    bugs) (MeshSimulation.h);
//  - local ops run on every rank; ops with `xf.factor_axes` get their rank's
//    offset in the global op (embedding rows, iota, dropout's mask, rope
//    positions) from the call's axes, as in a compiled step;
//  - ops whose ranks exchange data (the shard collectives, xf.transfer, the
//    cross-entropy ops with a split vocabulary or batch) run each rank's
//    runner on its own thread, exchanging through the runtime's in-process
//    communicators (rt::InProcessMesh, behind the same Communicators
//    interface as MPI).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
#define SHARDC_COMPILER_EXECUTOR_EXECUTOR_H

#include "compiler/abi/CallEncoding.h"
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

namespace shardc::rt {
class Communicators;
class InProcessMesh;
} // namespace shardc::rt

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

using abi::dtypeOf;
using abi::tensorSpec;

/// The value of a one-element tensor of any dtype (f32, f64, bf16, f16, i32)
/// as a double; throws rt::Error for other sizes.
double scalarValue(const HostTensor &t);

/// Executes one function. Arguments are given by position; the results are
/// the function's return values. Errors (bad ids, unsupported ops, argument
/// mismatches) are emitted as diagnostics at the op or function location.
class Executor {
public:
  explicit Executor(mlir::func::FuncOp func, RunOptions options = {});
  ~Executor();

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
  mlir::LogicalResult execLocal(mlir::Operation *op, RankEnv &env);
  /// The runtime's kernel runner for `op` on `rank` (built once: the op
  /// encoded as a one-call program, decoded for the rank's coordinates);
  /// null after emitting an error if the runtime cannot run it.
  rt::KernelRunner *kernelFor(mlir::Operation *op, int rank);
  /// An op whose ranks exchange data (shard collectives, xf.transfer, the
  /// cross-entropy ops): every taking-part rank runs its kernel runner on
  /// its own thread, exchanging through the in-process communicators.
  mlir::LogicalResult execGroup(mlir::Operation *op);
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
  /// A partitioned function's ranks exchange through these (one per rank).
  std::unique_ptr<rt::InProcessMesh> inProcess_;
  std::vector<std::unique_ptr<rt::Communicators>> comms_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
