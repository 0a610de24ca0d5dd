//===- Executor.h - reference executor for xf functions ---------*- C++ -*-===//
//
// Runs a func.func of xf ops on the CPU with the runtime's kernel library
// (runtime/cpu), the oracle every transformation is checked against.
//
// The executor keeps one value environment per simulated rank and walks the
// function's ops in order. Local ops run on every rank's environment; ops that
// communicate (the shard collectives, once partitioned IR reaches it) see all
// ranks' environments at once, so a whole mesh is simulated in one process.
// Today every function runs on one rank.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
#define SHARDC_COMPILER_EXECUTOR_EXECUTOR_H

#include "runtime/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <vector>

namespace shardc::exec {

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
  /// The number of simulated ranks.
  int numRanks() const { return static_cast<int>(ranks_.size()); }

private:
  struct RankEnv {
    int rank = 0;
    llvm::DenseMap<mlir::Value, HostTensor> values;
  };

  mlir::LogicalResult execLocal(mlir::Operation *op, RankEnv &env);

  mlir::func::FuncOp func_;
  RunOptions options_;
  std::vector<RankEnv> ranks_;
  std::map<std::string, double> profile_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_EXECUTOR_H
