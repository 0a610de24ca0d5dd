//===- Params.cpp - parameters and inputs of a model function -------------===//

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace shardc::xf;

std::vector<ParamArg> shardc::xf::getParams(func::FuncOp func) {
  std::vector<ParamArg> params;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto attr = func.getArgAttrOfType<ParamAttr>(i, XfDialect::kParamAttrName))
      params.push_back({i, attr, cast<RankedTensorType>(func.getArgument(i).getType())});
  return params;
}

std::vector<InputArg> shardc::xf::getInputs(func::FuncOp func) {
  std::vector<InputArg> inputs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto attr = func.getArgAttrOfType<StringAttr>(i, XfDialect::kInputAttrName))
      inputs.push_back(
          {i, attr.getValue().str(), cast<RankedTensorType>(func.getArgument(i).getType())});
  return inputs;
}

func::FuncOp shardc::xf::getModelFunction(ModuleOp module, StringRef name) {
  if (!name.empty()) {
    auto f = module.lookupSymbol<func::FuncOp>(name);
    if (!f || f.isExternal())
      module.emitError() << "no function @" << name << " with a body in this module";
    return f && !f.isExternal() ? f : nullptr;
  }
  if (auto f = module.lookupSymbol<func::FuncOp>("forward"); f && !f.isExternal())
    return f;
  func::FuncOp only;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    if (only) {
      module.emitError("module has several functions and none is @forward; name one with "
                       "--function");
      return nullptr;
    }
    only = f;
  }
  if (!only)
    module.emitError("module has no function to run");
  return only;
}

int64_t shardc::xf::layerIndexOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef p : parts) {
    int64_t v;
    if (!p.empty() && !p.getAsInteger(10, v))
      return v;
  }
  return -1;
}

int64_t shardc::xf::stageOf(Value v) {
  IntegerAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      attr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), XfDialect::kStageAttrName);
  } else if (auto transfer = v.getDefiningOp<TransferOp>()) {
    return transfer.getTo(); // received there; the op itself is on `from`
  } else {
    attr = v.getDefiningOp()->getAttrOfType<IntegerAttr>(XfDialect::kStageAttrName);
  }
  return attr ? attr.getInt() : -1;
}

BlockArgument shardc::xf::argumentOrCastOf(Value v) {
  if (auto c = v.getDefiningOp<CastOp>())
    v = c.getX();
  return dyn_cast<BlockArgument>(v);
}

bool shardc::xf::isArgumentLayout(Value v, llvm::function_ref<bool(Operation *)> isLayout) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return true;
  return isLayout(def) && llvm::all_of(def->getOperands(), [&](Value o) {
           return isArgumentLayout(o, isLayout);
         });
}
