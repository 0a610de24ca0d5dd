//===- ComputeType.h - storage types to compute types and back -*- C++ -*-===//
//
// Kernels compute in f32 (f64 for f64 tensors); bf16 and f16 are storage
// types, widened before an op and rounded after it. The reference executor
// and the compiled step's kernel runner convert with these, so both round
// exactly alike.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CPU_COMPUTETYPE_H
#define SHARDC_RUNTIME_CPU_COMPUTETYPE_H

#include "runtime/HostTensor.h"
#include "runtime/cpu/Kernels.h"

#include <type_traits>

namespace shardc::cpu {

using rt::DType;

/// The storage type that needs no conversion for compute type C.
template <class C> constexpr DType computeDType() {
  return std::is_same_v<C, double> ? DType::F64 : DType::F32;
}

/// Converts n float elements of storage type `dtype` into C.
template <class C> void toCompute(const void *p, DType dtype, int64_t n, C *out) {
  switch (dtype) {
  case DType::F32:
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<C>(static_cast<const float *>(p)[i]);
    break;
  case DType::F64:
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<C>(static_cast<const double *>(p)[i]);
    break;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<C>(cpu::bf16_to_f32(static_cast<const uint16_t *>(p)[i]));
    break;
  case DType::F16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<C>(cpu::f16_to_f32(static_cast<const uint16_t *>(p)[i]));
    break;
  case DType::I32:
    throw rt::Error("integer tensor used where a float tensor is expected");
  }
}

/// Stores n compute-type values into storage of `dtype`, rounding.
template <class C> void fromCompute(const C *in, int64_t n, DType dtype, void *p) {
  switch (dtype) {
  case DType::F32:
    for (int64_t i = 0; i < n; ++i)
      static_cast<float *>(p)[i] = static_cast<float>(in[i]);
    break;
  case DType::F64:
    for (int64_t i = 0; i < n; ++i)
      static_cast<double *>(p)[i] = static_cast<double>(in[i]);
    break;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i)
      static_cast<uint16_t *>(p)[i] = cpu::f32_to_bf16(static_cast<float>(in[i]));
    break;
  case DType::F16:
    for (int64_t i = 0; i < n; ++i)
      static_cast<uint16_t *>(p)[i] = cpu::f32_to_f16(static_cast<float>(in[i]));
    break;
  case DType::I32:
    throw rt::Error("cannot store floats into an integer tensor");
  }
}

/// The value of a one-element buffer of any dtype (f32, f64, bf16, f16, i32).
inline double scalarValue(const void *p, DType dtype) {
  switch (dtype) {
  case DType::F64:
    return *static_cast<const double *>(p);
  case DType::I32:
    return *static_cast<const int32_t *>(p);
  default: {
    float v;
    toCompute(p, dtype, 1, &v);
    return v;
  }
  }
}

} // namespace shardc::cpu

#endif // SHARDC_RUNTIME_CPU_COMPUTETYPE_H
