//===- XfInterfaces.h - xf op interfaces ------------------------*- C++ -*-===//
#ifndef SHARDC_DIALECTS_XF_XFINTERFACES_H
#define SHARDC_DIALECTS_XF_XFINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"
#include "dialects/xf/ShardingRule.h"

#include <memory>

namespace shardc::xf {
/// Verifies the sharding decision attributes an op carries
/// (`xf.factor_axes`, `xf.linear_partial`, `xf.linear_group`) against its
/// sharding rule and its grid. Run by ShardingRuleOpInterface's verifier.
mlir::LogicalResult verifyShardingDecision(mlir::Operation *op);
/// Verifies an `xf.sharding` layout of a function's argument or result
/// (`what` names it): every split axis an axis of the function's grid.
mlir::LogicalResult verifyLayoutAxes(mlir::Operation *func, llvm::StringRef what,
                                     mlir::Attribute layout);
/// A context's cache of sharding rules (held by the xf dialect).
std::shared_ptr<void> makeShardingRuleCache();
} // namespace shardc::xf

#include "dialects/xf/XfInterfaces.h.inc"

namespace shardc::xf {
/// `op`'s sharding rule, computed once per distinct (op name, properties,
/// operand and result types) in its context: a rule is a function of those
/// alone, and the sharding passes, the report and the planner's thousands
/// of compiles ask for the same layers' rules again and again.
const OpShardingRule &cachedShardingRule(ShardingRuleOpInterface op);
} // namespace shardc::xf

#endif // SHARDC_DIALECTS_XF_XFINTERFACES_H
