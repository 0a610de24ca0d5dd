//===- HostTensor.h - a typed, shaped host buffer ---------------*- C++ -*-===//
//
// The value type of the reference executor and the runtime's checkpoint code:
// row-major bytes with an element type and a static shape. bf16 and f16 are
// stored as their 16-bit patterns; kernels compute them in f32.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_HOSTTENSOR_H
#define SHARDC_RUNTIME_HOSTTENSOR_H

#include "runtime/Error.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace shardc::rt {

enum class DType { F32, F64, BF16, F16, I32 };

inline int64_t dtype_size(DType t) {
  switch (t) {
  case DType::F64:
    return 8;
  case DType::BF16:
  case DType::F16:
    return 2;
  default:
    return 4;
  }
}

/// The safetensors spelling of a dtype ("F32", "BF16", ...).
inline const char *dtype_name(DType t) {
  switch (t) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::I32:
    return "I32";
  }
  return "?";
}

/// Parses a safetensors dtype name; throws Error for names shardc cannot hold.
inline DType dtype_from_name(const std::string &name) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I32})
    if (name == dtype_name(t))
      return t;
  throw Error("unsupported tensor dtype '" + name + "'");
}

inline int64_t num_elements(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

inline std::string shape_str(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A row-major host tensor owning its bytes.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, std::vector<int64_t> s)
      : dtype(t), shape(std::move(s)), bytes(num_elements(shape) * dtype_size(t)) {}

  int64_t numel() const { return num_elements(shape); }
  template <class T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <class T> const T *data() const { return reinterpret_cast<const T *>(bytes.data()); }
};

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_HOSTTENSOR_H
