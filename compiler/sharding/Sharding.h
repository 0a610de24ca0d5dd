//===- Sharding.h - meshes, tensor shardings and resharding plans -*- C++ -*-===//
//
// The data model shared by the sharding passes, the cost model, the report and
// the executor's mesh simulation:
//  - Mesh: named axes ("dp=2,tp=4") over a `shard.grid` (the names live in the
//    grid's `xf.axis_names` attribute; upstream grids have only sizes); the
//    rank arithmetic is the runtime's (runtime/abi/Mesh.h), one type.
//  - TensorSharding: for each tensor dim the mesh axes splitting it (major
//    first), plus the axes over which the value is a pending partial sum.
//  - planReshard: the collectives that turn one sharding into another, used
//    to emit them (xf-partition) and to price them (CostModel) alike.
//
// Ranks are numbered row-major over the mesh coordinates (the last axis
// varies fastest), as MPI_Cart and NCCL communicator splits will number them.
// A dim split over axes [a, b] is cut into size(a)*size(b) contiguous blocks;
// block index = coord(a) * size(b) + coord(b).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_SHARDING_SHARDING_H
#define SHARDC_COMPILER_SHARDING_SHARDING_H

#include "dialects/xf/XfDialect.h"
#include "runtime/abi/Mesh.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::sharding {

using Axis = int16_t;
using AxisList = llvm::SmallVector<Axis, 2>;

/// Discardable attribute names of the sharding passes (declared and verified
/// by the xf dialect, XfBase.td).
inline constexpr llvm::StringLiteral kAxisNamesAttr = xf::XfDialect::kAxisNamesAttrName;
inline constexpr llvm::StringLiteral kPartialAttr = xf::XfDialect::kPartialAttrName;
inline constexpr llvm::StringLiteral kGatherOnceAttr = xf::XfDialect::kGatherOnceAttrName;
inline constexpr llvm::StringLiteral kGridAttr = xf::XfDialect::kGridAttrName;
inline constexpr llvm::StringLiteral kShardingAttr = xf::XfDialect::kShardingAttrName;
inline constexpr llvm::StringLiteral kFactorAxesAttr = xf::XfDialect::kFactorAxesAttrName;

/// The device mesh (runtime/abi/Mesh.h: names, sizes and the rank arithmetic
/// shared with the runtime) plus what only the compiler needs: the grid's
/// symbol and reading/writing `shard.grid`.
struct Mesh : abi::Mesh {
  std::string symbol = "mesh";

  Mesh() = default;
  explicit Mesh(abi::Mesh mesh, std::string symbol = "mesh")
      : abi::Mesh(std::move(mesh)), symbol(std::move(symbol)) {}

  /// Number of axes.
  int rank() const { return numAxes(); }

  /// Parses "dp=2,tp=4" (abi::Mesh::parse).
  static mlir::FailureOr<Mesh> parse(llvm::StringRef spec, std::string &error);
  /// Reads a shard.grid (static shape; axis names from xf.axis_names, else
  /// "a0", "a1", ...).
  static mlir::FailureOr<Mesh> fromGrid(mlir::shard::GridOp grid);
  /// The module's only shard.grid (error if none or several, unless `symbol`
  /// names one).
  static mlir::FailureOr<Mesh> fromModule(mlir::ModuleOp module, llvm::StringRef symbol = "");
  /// Creates (or replaces) `shard.grid @symbol` with the axis names.
  mlir::shard::GridOp materialize(mlir::ModuleOp module) const;
};

struct TensorSharding {
  llvm::SmallVector<AxisList, 4> dims;
  AxisList partial; ///< kept sorted

  static TensorSharding replicated(int64_t rank);
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool isReplicated() const; ///< no split, no partial
  bool isSplit() const;      ///< some dim split
  /// Every axis the sharding uses (splits and partial).
  AxisList usedAxes() const;
  bool operator==(const TensorSharding &o) const { return dims == o.dims && partial == o.partial; }
  bool operator!=(const TensorSharding &o) const { return !(*this == o); }
  /// The same sharding without the pending sum.
  TensorSharding withoutPartial() const {
    TensorSharding s = *this;
    s.partial.clear();
    return s;
  }
  void addPartial(llvm::ArrayRef<Axis> axes);

  /// Local shape on every rank; fails if a dim is not divisible, saying
  /// which and the size to pad it to in `why`.
  mlir::FailureOr<llvm::SmallVector<int64_t>> localShape(llvm::ArrayRef<int64_t> global,
                                                         const Mesh &mesh,
                                                         std::string *why = nullptr) const;
  /// "[dp, -, tp] partial(tp)"; multi-axis dims print as "dp+tp".
  std::string str(const Mesh &mesh) const;

  /// IR encoding: split axes as #shard<axisarray ...>; the partial axes are
  /// carried separately (xf.partial on shard.shard).
  mlir::shard::GridAxesArrayAttr splitAttr(mlir::MLIRContext *ctx) const;
  static TensorSharding fromSplitAttr(mlir::shard::GridAxesArrayAttr attr, int64_t rank);
};

/// One collective of a resharding plan. Kinds map onto the upstream ops.
struct CollectiveStep {
  /// MakePartial: a value without a pending sum joins one locally (each rank
  /// keeps x/n), so it can be added to a pending sum; no communication.
  enum Kind { AllReduce, ReduceScatter, AllGather, AllSlice, AllToAll, MakePartial };
  Kind kind;
  AxisList axes; ///< grid axes of the op (group order: first major)
  int64_t dim = -1; ///< gather/scatter/slice axis (AllToAll: the split axis)
  int64_t concatDim = -1; ///< AllToAll only: the dim the axis leaves
  /// Sharding of the value before this step.
  TensorSharding before;
};
llvm::StringRef kindName(CollectiveStep::Kind kind);

/// The collectives (in order) turning `from` into `to`. Pending sums are
/// reduce-scattered where `to` splits a dim over their axes, all-reduced
/// otherwise; an axis moving from the end of one dim to the next place of
/// another is an all-to-all; other axes leaving a dim are all-gathered (minor
/// first), axes joining one are sliced locally (no communication); pending
/// sums `to` has and `from` lacks are made locally (MakePartial).
llvm::SmallVector<CollectiveStep> planReshard(const TensorSharding &from, const TensorSharding &to);

} // namespace shardc::sharding

#endif // SHARDC_COMPILER_SHARDING_SHARDING_H
