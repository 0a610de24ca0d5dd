//===- XfShardingAttrs.cpp - verifiers of the sharding attributes ---------===//
//
// The sharding passes record their decisions in discardable `xf.*`
// attributes (XfBase.td lists them). Every pass that reads one may trust it:
// the dialect verifies its shape where it sits (verifyOperationAttribute), and
// the sharding-rule interface checks `xf.factor_axes` against the op's rule
// and its grid once the op itself has verified. A mutated or hand-written
// attribute is then a diagnostic at the op, never an out-of-range axis inside
// a pass.
//
//===----------------------------------------------------------------------===//

#include "runtime/abi/Mesh.h"
#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

using namespace mlir;
using namespace shardc::xf;

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

/// The grid an op's axis numbers refer to: the `xf.grid` of its function
/// (partitioned IR), else the module's only shard.grid. Null when there is
/// none or the choice is ambiguous (the passes then check against the grid
/// they are given).
static shard::GridOp gridOf(Operation *op) {
  Operation *func = isa<FunctionOpInterface>(op) ? op : op->getParentOfType<FunctionOpInterface>();
  if (func)
    if (auto ref = func->getAttrOfType<FlatSymbolRefAttr>(XfDialect::kGridAttrName))
      return SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(func, ref);
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  shard::GridOp found;
  for (auto grid : module.getOps<shard::GridOp>()) {
    if (found)
      return {};
    found = grid;
  }
  return found;
}

/// The grid of a `shard.shard`'s sharding, else the op's grid.
static shard::GridOp gridOfAnnotation(shard::ShardOp ann) {
  if (auto def = ann.getSharding().getDefiningOp<shard::ShardingOp>())
    if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(ann, def.getGridAttr()))
      return grid;
  return gridOf(ann);
}

/// Checks that every axis of `axes` is an axis of `grid` (when known) and
/// that none repeats; `what` names the attribute in the message.
static LogicalResult verifyAxes(Operation *op, StringRef what, ArrayRef<int16_t> axes,
                                shard::GridOp grid) {
  llvm::SmallSet<int16_t, 8> seen;
  for (int16_t a : axes) {
    if (a < 0)
      return op->emitOpError() << "'" << what << "' names grid axis " << a
                               << "; axes are numbered from 0";
    if (grid && a >= static_cast<int64_t>(grid.getShape().size()))
      return op->emitOpError() << "'" << what << "' names grid axis " << a << " but @"
                               << grid.getSymName() << " has " << grid.getShape().size()
                               << " axes";
    if (!seen.insert(a).second)
      return op->emitOpError() << "'" << what << "' names grid axis " << a << " twice";
  }
  return success();
}


/// `xf.axis_names` on a shard.grid: one identifier per axis, unique; the grid
/// static, every size positive, the device count bounded.
static LogicalResult verifyAxisNames(Operation *op, Attribute value) {
  auto grid = dyn_cast<shard::GridOp>(op);
  if (!grid)
    return op->emitOpError() << "'" << XfDialect::kAxisNamesAttrName
                             << "' belongs on a shard.grid";
  auto names = dyn_cast<ArrayAttr>(value);
  if (!names)
    return op->emitOpError() << "'" << XfDialect::kAxisNamesAttrName
                             << "' must be an array of strings";
  ArrayRef<int64_t> shape = grid.getShape();
  if (names.size() != shape.size())
    return op->emitOpError() << "'" << XfDialect::kAxisNamesAttrName << "' names "
                             << names.size() << " axes but the grid has " << shape.size();
  llvm::StringSet<> seen;
  for (Attribute a : names) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || !shardc::abi::isAxisName(name.getValue().str()))
      return op->emitOpError() << "'" << XfDialect::kAxisNamesAttrName
                               << "' must hold identifiers, got " << a;
    if (!seen.insert(name.getValue()).second)
      return op->emitOpError() << "grid axis '" << name.getValue() << "' is named twice";
  }
  for (auto [i, size] : llvm::enumerate(shape))
    if (ShapedType::isDynamic(size) || size <= 0)
      return op->emitOpError() << "grid axis '" << cast<StringAttr>(names[i]).getValue()
                               << "' must have a static positive size";
  if (!shardc::abi::withinDeviceLimit(shape.vec()))
    return op->emitOpError() << "the grid has more than " << shardc::abi::kMaxDevices << " devices";
  return success();
}

//===----------------------------------------------------------------------===//
// Dialect hooks
//===----------------------------------------------------------------------===//

LogicalResult XfDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == kModelAttrName) {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a dictionary on the module";
    return success();
  }
  if (name == kAxisNamesAttrName)
    return verifyAxisNames(op, value);
  if (name == kOptimizerAttrName) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !dict ||
        !llvm::all_of(dict, [](NamedAttribute a) { return isa<FloatAttr, IntegerAttr>(a.getValue()); }))
      return op->emitOpError() << "'" << name << "' must be a dictionary of numbers on a function";
    return success();
  }
  if (name == kGridAttrName) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !ref)
      return op->emitOpError() << "'" << name << "' must be a symbol reference on a function";
    if (!SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, ref))
      return op->emitOpError() << "'" << name << "' names " << ref << ", which is not a shard.grid";
    return success();
  }
  if (name == kPartialAttrName) {
    auto ann = dyn_cast<shard::ShardOp>(op);
    auto axes = dyn_cast<DenseI16ArrayAttr>(value);
    if (!ann || !axes)
      return op->emitOpError() << "'" << name << "' must be an array<i16> on a shard.shard";
    return verifyAxes(op, name, axes.asArrayRef(), gridOfAnnotation(ann));
  }
  if (name == kGatherOnceAttrName) {
    auto ann = dyn_cast<shard::ShardOp>(op);
    if (!isa<UnitAttr>(value) ||
        !((ann && ann.getAnnotateForUsers()) || isa<shard::AllGatherOp>(op)))
      return op->emitOpError() << "'" << name
                               << "' must be a unit attribute on a shard.shard annotate_for_users "
                                  "or the shard.all_gather made from one";
    return success();
  }
  if (name == kFactorAxesAttrName) {
    auto entries = dyn_cast<ArrayAttr>(value);
    if (!entries || !llvm::all_of(entries, [](Attribute a) { return isa<DenseI16ArrayAttr>(a); }))
      return op->emitOpError() << "'" << name << "' must be an array of array<i16>";
    if (!isa<ShardingRuleOpInterface>(op))
      return op->emitOpError() << "'" << name << "' on an op without a sharding rule";
    return success(); // against the rule: verifyShardingDecision
  }
  if (name == kLinearPartialAttrName) {
    if (!isa<DenseI16ArrayAttr>(value) || !isa<ShardingRuleOpInterface>(op))
      return op->emitOpError() << "'" << name
                               << "' must be an array<i16> on an op with a sharding rule";
    return success();
  }
  if (name == kLinearGroupAttrName) {
    auto group = dyn_cast<IntegerAttr>(value);
    if (!group || !isa<ShardingRuleOpInterface>(op))
      return op->emitOpError() << "'" << name
                               << "' must be an integer on an op with a sharding rule";
    return success();
  }
  if (name == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(value);
    if (!stage || stage.getInt() < 0)
      return op->emitOpError() << "'" << name << "' must be a non-negative integer";
    return success();
  }
  if (name == kRecomputedAttrName) {
    if (!isa<UnitAttr>(value) || !isa<ShardingRuleOpInterface>(op))
      return op->emitOpError() << "'" << name << "' must be a unit attribute on an xf op";
    return success();
  }
  if (name == kRegatherAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a unit attribute on a function";
    return success();
  }
  if (name == kStateNotSplitAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<DictionaryAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a dictionary on a function";
    return success();
  }
  if (name == kAttentionRowsAttrName) {
    auto choice = dyn_cast<StringAttr>(value);
    if (!isa<FunctionOpInterface>(op) || !choice ||
        (choice.getValue() != "split" && choice.getValue() != "whole"))
      return op->emitOpError() << "'" << name
                               << "' must be \"split\" or \"whole\" on a function";
    return success();
  }
  if (name == kPipelineAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<DictionaryAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a dictionary on a function";
    return success();
  }
  return op->emitOpError() << "unknown xf attribute '" << name << "'";
}

/// A step's state flows from a result to the next step's argument with the
/// same `xf.state`, and a gradient has its parameter's type: checked once per
/// function (at its first result carrying either), so that the passes pairing
/// results with arguments (ReturnTargets, the runtime's state binding) never
/// meet two arguments of one state or a result of another type.
static LogicalResult verifyStateAndGradResults(FunctionOpInterface func) {
  llvm::StringMap<unsigned> argOfState, argOfParam;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (auto st = func.getArgAttrOfType<StringAttr>(i, XfDialect::kStateAttrName))
      if (!argOfState.try_emplace(st.getValue(), i).second)
        return func->emitOpError() << "arguments #" << argOfState.lookup(st.getValue())
                                   << " and #" << i << " carry the same xf.state \""
                                   << st.getValue() << "\"";
    if (auto p = func.getArgAttrOfType<ParamAttr>(i, XfDialect::kParamAttrName))
      argOfParam.try_emplace(p.getName(), i);
  }
  llvm::StringMap<unsigned> resultOfState;
  ArrayRef<Type> argTypes = func.getArgumentTypes(), resultTypes = func.getResultTypes();
  for (unsigned k = 0, e = func.getNumResults(); k < e; ++k) {
    if (auto st = func.getResultAttrOfType<StringAttr>(k, XfDialect::kStateAttrName)) {
      if (!resultOfState.try_emplace(st.getValue(), k).second)
        return func->emitOpError() << "results #" << resultOfState.lookup(st.getValue())
                                   << " and #" << k << " carry the same xf.state \""
                                   << st.getValue() << "\"";
      auto arg = argOfState.find(st.getValue());
      if (arg != argOfState.end() && argTypes[arg->second] != resultTypes[k])
        return func->emitOpError() << "result #" << k << " (xf.state \"" << st.getValue()
                                   << "\") has type " << resultTypes[k] << " but argument #"
                                   << arg->second << " of the same state has "
                                   << argTypes[arg->second];
    }
    if (auto g = func.getResultAttrOfType<StringAttr>(k, XfDialect::kGradAttrName)) {
      auto arg = argOfParam.find(g.getValue());
      if (arg == argOfParam.end())
        return func->emitOpError() << "result #" << k << " is the gradient of '" << g.getValue()
                                   << "', which is not a parameter of the function";
      if (argTypes[arg->second] != resultTypes[k])
        return func->emitOpError() << "result #" << k << " (the gradient of '" << g.getValue()
                                   << "') has type " << resultTypes[k] << " but the parameter has "
                                   << argTypes[arg->second];
    }
  }
  return success();
}

LogicalResult XfDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                                     unsigned resultIndex, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kStateAttrName || name == kGradAttrName || name == kReportAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "result #" << resultIndex << ": '" << name
                               << "' must be a string";
    if (name == kReportAttrName)
      return success();
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!func)
      return op->emitOpError() << "'" << name << "' is only meaningful on function results";
    // Once per function: at the first result carrying xf.state or xf.grad.
    for (unsigned k = 0; k < resultIndex; ++k)
      if (func.getResultAttr(k, kStateAttrName) || func.getResultAttr(k, kGradAttrName))
        return success();
    if (name == kGradAttrName && func.getResultAttr(resultIndex, kStateAttrName))
      return success(); // checked at the xf.state of the same result
    return verifyStateAndGradResults(func);
  }
  if (name == kShardingAttrName)
    return verifyLayoutAxes(op, "result #" + std::to_string(resultIndex), attr.getValue());
  return op->emitOpError() << "unknown xf result attribute '" << name << "'";
}

LogicalResult shardc::xf::verifyLayoutAxes(Operation *func, StringRef what, Attribute layout) {
  auto axes = dyn_cast<shard::GridAxesArrayAttr>(layout);
  if (!axes)
    return func->emitOpError() << what << ": '" << XfDialect::kShardingAttrName
                               << "' must be a #shard<axisarray ...>";
  shard::GridOp grid = gridOf(func);
  int64_t rank = grid ? static_cast<int64_t>(grid.getShape().size()) : INT64_MAX;
  for (shard::GridAxesAttr dim : axes.getAxes())
    for (int16_t a : dim.asArrayRef())
      if (a < 0 || a >= rank) {
        auto diag = func->emitOpError() << what << ": '" << XfDialect::kShardingAttrName
                                        << "' names grid axis " << a;
        if (a < 0)
          diag << "; axes are numbered from 0";
        else
          diag << " but @" << grid.getSymName() << " has " << rank << " axes";
        return diag;
      }
  return success();
}

//===----------------------------------------------------------------------===//
// xf.factor_axes against the rule
//===----------------------------------------------------------------------===//

LogicalResult shardc::xf::verifyShardingDecision(Operation *op) {
  auto entries = op->getAttrOfType<ArrayAttr>(XfDialect::kFactorAxesAttrName);
  auto linearPartial = op->getAttrOfType<DenseI16ArrayAttr>(XfDialect::kLinearPartialAttrName);
  auto linearGroup = op->getAttrOfType<IntegerAttr>(XfDialect::kLinearGroupAttrName);
  if (!entries) {
    if (linearPartial || linearGroup)
      return op->emitOpError() << "'" << XfDialect::kLinearPartialAttrName << "' and '"
                               << XfDialect::kLinearGroupAttrName << "' need '"
                               << XfDialect::kFactorAxesAttrName << "'";
    return success();
  }
  if (!linearPartial != !linearGroup)
    return op->emitOpError() << "'" << XfDialect::kLinearPartialAttrName << "' and '"
                             << XfDialect::kLinearGroupAttrName << "' come together";
  OpShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  StringRef what = XfDialect::kFactorAxesAttrName;
  if (entries.size() != rule.factors.size())
    return op->emitOpError() << "'" << what << "' has " << entries.size()
                             << " entries but the op's sharding rule has " << rule.factors.size()
                             << " factors";
  shard::GridOp grid = gridOf(op);
  SmallVector<int16_t> used;
  if (linearPartial)
    used.append(linearPartial.asArrayRef().begin(), linearPartial.asArrayRef().end());
  for (auto [f, entry] : llvm::enumerate(entries)) {
    ArrayRef<int16_t> axes = cast<DenseI16ArrayAttr>(entry).asArrayRef();
    if (axes.empty())
      continue;
    if (rule.factors[f].kind == FactorKind::Replicated)
      return op->emitOpError() << "'" << what << "' splits factor " << f
                               << ", which the op's sharding rule keeps whole";
    used.append(axes.begin(), axes.end());
  }
  // Every axis splits at most one factor (or carries the linear sum).
  if (failed(verifyAxes(op, what, used, grid)))
    return failure();
  // Only the major factor of a merged dimension may be split.
  auto minorSplit = [&](const TensorFactors &tensor) {
    return llvm::any_of(tensor, [&](const DimFactors &dim) {
      return llvm::any_of(llvm::drop_begin(dim), [&](int f) {
        return !cast<DenseI16ArrayAttr>(entries[f]).asArrayRef().empty();
      });
    });
  };
  if (llvm::any_of(rule.operands, minorSplit) || llvm::any_of(rule.results, minorSplit))
    return op->emitOpError() << "'" << what
                             << "' splits a minor factor of a merged dimension";
  if (linearGroup) {
    int64_t g = linearGroup.getInt();
    if (g < 0 || g >= static_cast<int64_t>(rule.linearGroups.size()))
      return op->emitOpError() << "'" << XfDialect::kLinearGroupAttrName << "' is " << g
                               << " but the op has " << rule.linearGroups.size()
                               << " linear groups";
  }
  return success();
}
