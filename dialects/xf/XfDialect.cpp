//===- XfDialect.cpp - xf dialect, attributes and argument checks ---------===//

#include "dialects/xf/XfDialect.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace shardc::xf;

#include "dialects/xf/XfDialect.cpp.inc"
#include "dialects/xf/XfEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/xf/XfAttrs.cpp.inc"

void XfDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/xf/XfOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/xf/XfAttrs.cpp.inc"
      >();
  shardingRules = makeShardingRuleCache();
}

LogicalResult ParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, ParamRole role, InitKind init, FloatAttr stdAttr) {
  double std = stdAttr ? stdAttr.getValueAsDouble() : 0.0;
  if (name.empty())
    return emitError() << "parameter name must not be empty";
  if (init == InitKind::normal && !(std > 0.0))
    return emitError() << "parameter '" << name << "' has init = normal with std = " << std
                       << "; std must be positive";
  if (init != InitKind::normal && stdAttr)
    return emitError() << "parameter '" << name << "': std applies only to init = normal";
  return success();
}

/// Data inputs a model may take, and the element types they must have.
static bool isKnownInput(StringRef kind) {
  return kind == "tokens" || kind == "targets" || kind == "token_types" || kind == "loss_mask";
}

LogicalResult XfDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                                  unsigned argIndex, NamedAttribute attr) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitOpError() << "'" << attr.getName().strref()
                             << "' is only meaningful on func.func arguments";
  Type argType = func.getArgument(argIndex).getType();
  auto tensor = dyn_cast<RankedTensorType>(argType);
  if (attr.getName() == kParamAttrName) {
    auto param = dyn_cast<ParamAttr>(attr.getValue());
    if (!param)
      return op->emitOpError() << "argument #" << argIndex << ": '" << kParamAttrName
                               << "' must be an #xf.param attribute";
    if (!tensor || !tensor.hasStaticShape() || !isa<FloatType>(tensor.getElementType()))
      return op->emitOpError() << "parameter '" << param.getName() << "' (argument #"
                               << argIndex << ") must be a statically shaped float tensor, got "
                               << argType;
    // Names are unique: checked once per function, at its first parameter
    // (a scan per parameter would be quadratic in a 2,000-argument step).
    for (unsigned i = 0; i < argIndex; ++i)
      if (func.getArgAttrOfType<ParamAttr>(i, kParamAttrName))
        return success();
    llvm::StringMap<unsigned> first;
    for (unsigned i = argIndex, e = func.getNumArguments(); i < e; ++i)
      if (auto other = func.getArgAttrOfType<ParamAttr>(i, kParamAttrName)) {
        auto [it, inserted] = first.try_emplace(other.getName(), i);
        if (!inserted)
          return op->emitOpError() << "parameter name '" << other.getName()
                                   << "' is used by arguments #" << it->second << " and #" << i;
      }
    return success();
  }
  if (attr.getName() == kInputAttrName) {
    auto kind = dyn_cast<StringAttr>(attr.getValue());
    if (!kind || !isKnownInput(kind.getValue()))
      return op->emitOpError() << "argument #" << argIndex << ": '" << kInputAttrName
                               << "' must be one of \"tokens\", \"targets\", \"token_types\", "
                                  "\"loss_mask\"";
    if (!tensor || !tensor.hasStaticShape())
      return op->emitOpError() << "input '" << kind.getValue() << "' (argument #" << argIndex
                               << ") must be a statically shaped tensor, got " << argType;
    bool wantFloat = kind.getValue() == "loss_mask";
    Type elt = tensor.getElementType();
    if (wantFloat ? !isa<FloatType>(elt) : !elt.isInteger(32))
      return op->emitOpError() << "input '" << kind.getValue() << "' (argument #" << argIndex
                               << ") must have " << (wantFloat ? "a float" : "i32")
                               << " elements, got " << argType;
    return success();
  }
  if (attr.getName() == kStateAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "argument #" << argIndex << ": '" << kStateAttrName
                               << "' must be a string";
    return success();
  }
  if (attr.getName() == kMicroBatchAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getInt() < 0)
      return op->emitOpError() << "argument #" << argIndex << ": '" << kMicroBatchAttrName
                               << "' must be a non-negative integer";
    return success();
  }
  if (attr.getName() == kShardingAttrName) // set by -xf-partition: the global layout
    return verifyLayoutAxes(op, "argument #" + std::to_string(argIndex), attr.getValue());
  if (attr.getName() == kStageAttrName) { // set by -xf-pipeline: the stage holding it
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0)
      return op->emitOpError() << "argument #" << argIndex << ": '" << kStageAttrName
                               << "' must be a non-negative integer";
    return success();
  }
  return op->emitOpError() << "unknown xf argument attribute '" << attr.getName().strref()
                           << "'";
}
