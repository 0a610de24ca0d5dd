//===- MeshSimulation.h - the executor's simulated device mesh --*- C++ -*-===//
//
// What the reference executor needs, beyond the runtime's kernel runner and
// communicators, to run a partitioned function (one with `xf.grid`) on every
// rank of its mesh:
//  - the mesh itself (the `shard.grid` the function names),
//  - the layout of the function's boundary: each argument and result is a
//    rank-local tensor whose global layout is its `xf.sharding`; the executor
//    still takes and returns global tensors, cut and assembled here.
// The collectives are the runtime's (Executor.h). Ranks are numbered
// row-major over the mesh coordinates (runtime/abi/Mesh.h).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H
#define SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H

#include "compiler/abi/CallEncoding.h"
#include "compiler/sharding/Sharding.h"
#include "runtime/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace shardc::exec {

using rt::HostTensor;

using abi::argumentName;
using abi::resultName;

class MeshSimulation {
public:
  /// The mesh of a function with `xf.grid`; std::nullopt for a function
  /// without one (it runs on one rank). Fails, after emitting an error when
  /// `emitErrors` is set, if the grid cannot be resolved.
  static mlir::FailureOr<std::optional<MeshSimulation>> forFunction(mlir::func::FuncOp func,
                                                                    bool emitErrors);

  const sharding::Mesh &mesh() const { return mesh_; }
  int64_t numRanks() const { return mesh_.numRanks(); }

  /// Cuts global argument `i` into one local tensor per rank by its
  /// xf.sharding. Fails (naming the argument) if the given tensor is not the
  /// argument's dtype and local shape times the splits.
  mlir::LogicalResult distributeArgument(unsigned i, HostTensor global,
                                         std::vector<HostTensor> &perRank) const;

  /// Assembles result `i` from the ranks' local values: split dims from the
  /// owning ranks; every rank holding a copy of a block (the replicated axes)
  /// must hold bit-identical bytes, or an error naming the result is emitted
  /// at `ret`.
  mlir::LogicalResult assembleResult(mlir::func::ReturnOp ret, unsigned i,
                                     llvm::ArrayRef<const HostTensor *> perRank,
                                     HostTensor &global) const;

private:
  explicit MeshSimulation(mlir::func::FuncOp func, sharding::Mesh mesh)
      : func_(func), mesh_(std::move(mesh)) {}

  /// An op handle (MLIR's accessors are not const).
  mutable mlir::func::FuncOp func_;
  sharding::Mesh mesh_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H
