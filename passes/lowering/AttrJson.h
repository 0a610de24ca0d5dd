//===- AttrJson.h - MLIR attributes as JSON ---------------------*- C++ -*-===//
//
// The program descriptor (runtime/program/Program.h) is JSON written by the
// lowering passes from MLIR attributes: call attributes (-rt-to-llvm) and
// the pipeline description (-xf-lower-to-rt).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_LOWERING_ATTRJSON_H
#define SHARDC_PASSES_LOWERING_ATTRJSON_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/JSON.h"

namespace shardc {

/// An attribute as JSON: numbers, booleans (unit attributes are true),
/// strings, arrays; anything else as its printed form.
inline llvm::json::Value attrJson(mlir::Attribute a) {
  using namespace mlir;
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a)) {
    if (i.getType().isInteger(1))
      return i.getValue().getBoolValue();
    return i.getValue().getSExtValue();
  }
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (isa<UnitAttr>(a))
    return true;
  if (auto s = dyn_cast<StringAttr>(a))
    return s.str();
  if (auto arr = dyn_cast<DenseI16ArrayAttr>(a))
    return llvm::json::Array(llvm::map_range(arr.asArrayRef(), [](int16_t x) { return llvm::json::Value(x); }));
  if (auto arr = dyn_cast<DenseI32ArrayAttr>(a))
    return llvm::json::Array(llvm::map_range(arr.asArrayRef(), [](int32_t x) { return llvm::json::Value(x); }));
  if (auto arr = dyn_cast<DenseI64ArrayAttr>(a))
    return llvm::json::Array(llvm::map_range(arr.asArrayRef(), [](int64_t x) { return llvm::json::Value(x); }));
  if (auto arr = dyn_cast<ArrayAttr>(a))
    return llvm::json::Array(llvm::map_range(arr, [](mlir::Attribute x) { return attrJson(x); }));
  if (auto dict = dyn_cast<DictionaryAttr>(a)) {
    llvm::json::Object o;
    for (NamedAttribute n : dict)
      o[n.getName().getValue()] = attrJson(n.getValue());
    return o;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  a.print(os);
  return text;
}

} // namespace shardc

#endif // SHARDC_PASSES_LOWERING_ATTRJSON_H
