//===- ShardingIR.h - op rules meet tensor shardings ------------*- C++ -*-===//
//
// Helpers shared by -xf-propagate-sharding, -xf-partition and
// -xf-report-sharding: an op's decision is the mesh axes of each factor of
// its sharding rule (`xf.factor_axes`); from it follow the sharding each
// operand must have and the sharding each result is produced with. A
// tensor's sharding, read through the rule, proposes axes for the factors
// it contains.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_SHARDINGIR_H
#define SHARDC_PASSES_SHARDING_SHARDINGIR_H

#include "compiler/cost/CostModel.h"
#include "compiler/sharding/Sharding.h"
#include "dialects/xf/ShardingRule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace shardc::sharding {

/// The decision for one op: per factor, the axes splitting it.
struct OpDecision {
  llvm::SmallVector<AxisList, 8> factorAxes;
  /// Pending sum passed through a linear group (operands of `linearGroup`
  /// carry it, and so do the results); empty when none.
  AxisList linearPartial;
  int linearGroup = -1;
};

inline constexpr llvm::StringLiteral kLinearPartialAttr = xf::XfDialect::kLinearPartialAttrName;
inline constexpr llvm::StringLiteral kLinearGroupAttr = xf::XfDialect::kLinearGroupAttrName;

/// Reads / writes `xf.factor_axes` (+ the linear pending sum) on an op.
std::optional<OpDecision> readDecision(mlir::Operation *op, size_t numFactors);
void writeDecision(mlir::Operation *op, const OpDecision &decision);

/// Sharding the op needs for operand `i` under `d`.
TensorSharding operandSharding(const xf::OpShardingRule &rule, int i, const OpDecision &d);
/// Sharding result `i` is produced with (partial over split factors it lacks).
TensorSharding resultSharding(const xf::OpShardingRule &rule, int i, const OpDecision &d);

/// Reads a tensor's sharding through its factors: fills `proposal[f]` for
/// every factor the tensor contains (all axes of a dim go to its major
/// factor). Returns false if the sharding cannot be expressed by the rule
/// (axes on a dim without factors, a non-divisible major factor). With
/// `perDim`, a dim that cannot be expressed proposes nothing (that dim is
/// resharded at the op) and the others still propose: a split over tp that
/// does not divide the heads leaves the batch split over dp standing.
bool proposeFactors(const xf::OpShardingRule &rule, const xf::TensorFactors &tensor,
                    const TensorSharding &sharding, const Mesh &mesh,
                    llvm::SmallVectorImpl<std::optional<AxisList>> &proposal,
                    bool perDim = false);

/// Checks a decision: no axis on two factors, Replicated factors unsplit,
/// every factor divisible by its axes. On failure `why` says which.
bool isValidDecision(const xf::OpShardingRule &rule, const OpDecision &d, const Mesh &mesh,
                     std::string *why = nullptr);

/// The value an annotation stands for: the result of a (result-form)
/// `shard.shard` is the value it annotates.
mlir::Value annotatedValue(mlir::Value v);

/// The `shard.shard` annotation of a value: its one user that annotates it
/// (not for users). Null if none.
mlir::shard::ShardOp resultAnnotation(mlir::Value value);
/// Sharding of an annotation op (split axes + xf.partial).
TensorSharding annotationSharding(mlir::shard::ShardOp op);

/// The sharding each result of a function is returned in: optimizer state
/// in its argument's layout (matched by xf.state), gradients in their
/// parameter's (xf.grad), everything else replicated.
class ReturnTargets {
public:
  explicit ReturnTargets(mlir::func::FuncOp func);
  /// Nullopt for a non-tensor result, or while the matching argument's
  /// sharding is unknown (`argSharding` returns null).
  std::optional<TensorSharding>
  target(unsigned index,
         llvm::function_ref<const TensorSharding *(mlir::Value)> argSharding) const;

  /// The argument result `index` follows, or -1 (replicated).
  int argumentOf(unsigned index) const { return argOf_[index]; }

private:
  mutable mlir::func::FuncOp func_;
  llvm::SmallVector<int> argOf_; ///< per result: the argument it follows, or -1
};

/// Checks every `shard.sharding` of `func` against the mesh: split axes must
/// be axes of the grid (upstream's verifier checks only that they are not
/// negative and not repeated). Emits an error at each offending op.
mlir::LogicalResult verifyShardingOps(mlir::func::FuncOp func, const Mesh &mesh);

/// The hardware description `name` (shipped name or .json path); emits the
/// reason at `where` when it cannot be read.
mlir::FailureOr<cost::HardwareDesc> loadHardware(mlir::Operation *where, llvm::StringRef name);

/// Bytes of a statically shaped tensor type (0 for others).
double tensorBytes(mlir::Type type);

} // namespace shardc::sharding

#endif // SHARDC_PASSES_SHARDING_SHARDINGIR_H
