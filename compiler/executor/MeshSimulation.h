//===- MeshSimulation.h - the executor's simulated device mesh --*- C++ -*-===//
//
// What the reference executor needs beyond single-rank kernels to run a
// partitioned function (one with `xf.grid`) on every rank of its mesh:
//  - the mesh itself (the `shard.grid` the function names),
//  - the layout of the function's boundary: each argument and result is a
//    rank-local tensor whose global layout is its `xf.sharding`; the executor
//    still takes and returns global tensors, cut and assembled here,
//  - the collectives (shard.all_gather, all_reduce, reduce_scatter, all_slice,
//    all_to_all), which see the values of all ranks at once,
//  - OpPlacement: where a rank's local op lies in the global op it is a shard
//    of (`xf.factor_axes`), for ops whose values depend on global indices
//    (embedding rows, iota, dropout's mask, rope positions, the vocabulary
//    block of a cross-entropy).
//
// Ranks are numbered row-major over the mesh coordinates and collective
// groups are ordered by shard index (sharding::Mesh). Reductions run in group
// order, so every member of a group gets bit-identical results.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H
#define SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H

#include "compiler/sharding/Sharding.h"
#include "runtime/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace shardc::exec {

using rt::HostTensor;

/// "argument #3 (param 'wte')", "result #0 (report 'loss')": how errors name
/// a function's arguments and results.
std::string argumentName(mlir::func::FuncOp func, unsigned i);
std::string resultName(mlir::func::FuncOp func, unsigned i);

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

  /// Whether `op` is a collective this simulation runs.
  static bool isCollective(mlir::Operation *op);
  /// Runs a collective: `in[r]` is rank r's operand, `out[r]` receives its
  /// result. Throws rt::Error for unsupported reductions or shapes.
  void runCollective(mlir::Operation *op, llvm::ArrayRef<const HostTensor *> in,
                     std::vector<HostTensor> &out) const;

private:
  explicit MeshSimulation(mlir::func::FuncOp func, sharding::Mesh mesh)
      : func_(func), mesh_(std::move(mesh)) {}

  /// An op handle (MLIR's accessors are not const).
  mutable mlir::func::FuncOp func_;
  sharding::Mesh mesh_;
};

/// Where one rank's local op lies in the global op it is a shard of, read
/// from the op's `xf.factor_axes` (one axis list per factor of its sharding
/// rule) and the rank's coordinates. An op without the attribute, or any op
/// outside a partitioned function, is the whole op: offsets 0.
class OpPlacement {
public:
  /// One tensor dim: its local block starts at `offset` of `global` elements;
  /// `axes` are the mesh axes splitting it (first major).
  struct Dim {
    int64_t offset = 0;
    int64_t global = 0;
    int64_t local = 0;
    sharding::AxisList axes;
  };

  /// `mesh` may be null (unpartitioned function). Throws rt::Error for a
  /// malformed xf.factor_axes.
  OpPlacement(mlir::Operation *op, const sharding::Mesh *mesh, int64_t rank);

  Dim operandDim(unsigned operand, unsigned dim) const;
  Dim resultDim(unsigned result, unsigned dim) const;

private:
  Dim place(mlir::Value value, bool isResult, unsigned index, unsigned dim) const;

  mlir::Operation *op_;
  const sharding::Mesh *mesh_;
  std::vector<int64_t> coords_;
  /// Per factor of the op's rule, the axes splitting it (empty without the
  /// attribute).
  std::vector<sharding::AxisList> factorAxes_;
  /// The rule's factors of each operand and result dim (only with the
  /// attribute).
  std::vector<llvm::SmallVector<llvm::SmallVector<int, 2>, 4>> operandFactors_, resultFactors_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_MESHSIMULATION_H
