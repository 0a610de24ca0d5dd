//===- StateNames.h - the names of a step's state tensors -------*- C++ -*-===//
//
// A training step's state crosses the compiler-runtime boundary by name
// (`xf.state` in the IR, "name" of a boundary tensor in the program, the key
// in checkpoints). The names that more than one side derives meaning from are
// spelled here, MLIR-free:
//   "param:<name>"       a parameter (the fp32 master under mixed precision)
//   "param_bf16:<name>"  its bf16 copy the optimizer writes (-xf-adamw's
//   "param_f16:<name>"   low-precision copies), initialized as the master
//                        rounded
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_ABI_STATENAMES_H
#define SHARDC_RUNTIME_ABI_STATENAMES_H

#include <string>
#include <string_view>

namespace shardc::abi {

/// The state name of parameter `name`'s low-precision copy.
inline std::string lowPrecisionCopyState(bool f16, std::string_view name) {
  return (f16 ? "param_f16:" : "param_bf16:") + std::string(name);
}

/// The parameter `state` is the low-precision copy of ("" for any other).
inline std::string_view lowPrecisionCopyOf(std::string_view state) {
  for (std::string_view prefix : {"param_bf16:", "param_f16:"})
    if (state.substr(0, prefix.size()) == prefix)
      return state.substr(prefix.size());
  return {};
}

/// A parameter or a copy of one: initialized from the parameter's initializer.
inline bool isParameterState(std::string_view state) {
  return state.substr(0, 6) == "param:" || !lowPrecisionCopyOf(state).empty();
}

} // namespace shardc::abi

#endif // SHARDC_RUNTIME_ABI_STATENAMES_H
