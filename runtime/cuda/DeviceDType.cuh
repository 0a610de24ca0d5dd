//===- DeviceDType.cuh - loads and stores of any dtype on the device -*- C++ -*-===//
//
// The device-side element access shared by the backend's kernels: a TView's
// element as f32 (loadF/load), f32 rounded to nearest even into any storage
// dtype (storeF/store), the 16-bit types widened (toF) and narrowed
// (fromF<T>), and a one-element tensor as a double (scalarOf, as
// cpu::scalarValue). The switch on the dtype is uniform across a warp; hot
// loops hoist it (Norm.cu's row loaders) or use the typed toF/fromF.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_DEVICEDTYPE_CUH
#define SHARDC_RUNTIME_CUDA_DEVICEDTYPE_CUH

#include "runtime/cuda/DeviceKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace shardc::cuda {

__device__ __forceinline__ float loadF(const void *p, DType t, int64_t i) {
  switch (t) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case DType::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case DType::F64:
    return float(static_cast<const double *>(p)[i]);
  case DType::I32:
    return float(static_cast<const int32_t *>(p)[i]);
  }
  return 0.0f;
}

__device__ __forceinline__ void storeF(void *p, DType t, int64_t i, float v) {
  switch (t) {
  case DType::F32:
    static_cast<float *>(p)[i] = v;
    break;
  case DType::BF16:
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
    break;
  case DType::F16:
    static_cast<__half *>(p)[i] = __float2half_rn(v);
    break;
  case DType::F64:
    static_cast<double *>(p)[i] = double(v);
    break;
  case DType::I32:
    static_cast<int32_t *>(p)[i] = int32_t(v);
    break;
  }
}

__device__ __forceinline__ float load(TView v, int64_t i) { return loadF(v.p, v.dtype, i); }
__device__ __forceinline__ void store(TView v, int64_t i, float x) { storeF(v.p, v.dtype, i, x); }

/// A one-element tensor of any dtype as a double (cpu::scalarValue).
__device__ __forceinline__ double scalarOf(TView t) {
  switch (t.dtype) {
  case DType::F64:
    return *static_cast<const double *>(t.p);
  case DType::I32:
    return double(*static_cast<const int32_t *>(t.p));
  default:
    return double(loadF(t.p, t.dtype, 0));
  }
}

/// x rounded to dtype t and widened back (what a store and a load give).
__device__ __forceinline__ float roundTo(DType t, float x) {
  switch (t) {
  case DType::BF16:
    return __bfloat162float(__float2bfloat16_rn(x));
  case DType::F16:
    return __half2float(__float2half_rn(x));
  default:
    return x;
  }
}

__device__ __forceinline__ float toF(float v) { return v; }
__device__ __forceinline__ float toF(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toF(__half v) { return __half2float(v); }

template <class T> __device__ __forceinline__ T fromF(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return __float2half_rn(v);
}

/// 16-byte vector access (the aligned fast paths): kPack<T> elements as
/// floats, through bit intrinsics rather than pointer casts.
/// Elements of T in one 16-byte access.
template <class T> constexpr int kPack = int(16 / sizeof(T));

/// 32-bit word w of a 16-byte pack as two (16-bit T) or one (f32) floats.
/// Bit intrinsics, not pointer casts: no strict-aliasing questions.
template <class T> __device__ __forceinline__ void unpackWord(uint32_t w, float *v) {
  if constexpr (std::is_same_v<T, float>) {
    v[0] = __uint_as_float(w);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    v[0] = __bfloat162float(__ushort_as_bfloat16((unsigned short)(w & 0xffffu)));
    v[1] = __bfloat162float(__ushort_as_bfloat16((unsigned short)(w >> 16)));
  } else {
    v[0] = __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
    v[1] = __half2float(__ushort_as_half((unsigned short)(w >> 16)));
  }
}

/// Loads elements [i, i + kPack) of p (16-byte aligned) as floats.
template <class T>
__device__ __forceinline__ void loadPack(const T *p, int64_t i, float (&v)[kPack<T>]) {
  constexpr int E = kPack<T> / 4; // elements per 32-bit word
  const uint4 raw = *reinterpret_cast<const uint4 *>(p + i);
  unpackWord<T>(raw.x, v);
  unpackWord<T>(raw.y, v + E);
  unpackWord<T>(raw.z, v + 2 * E);
  unpackWord<T>(raw.w, v + 3 * E);
}

template <class T> __device__ __forceinline__ uint32_t packWord(const float *v) {
  if constexpr (std::is_same_v<T, float>) {
    return __float_as_uint(v[0]);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(v[0]))) |
           uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(v[1]))) << 16;
  } else {
    return uint32_t(__half_as_ushort(__float2half_rn(v[0]))) |
           uint32_t(__half_as_ushort(__float2half_rn(v[1]))) << 16;
  }
}

/// Stores v, rounded to T, to elements [i, i + kPack) of p (16-byte aligned).
template <class T>
__device__ __forceinline__ void storePack(T *p, int64_t i, const float (&v)[kPack<T>]) {
  constexpr int E = kPack<T> / 4;
  uint4 raw;
  raw.x = packWord<T>(v);
  raw.y = packWord<T>(v + E);
  raw.z = packWord<T>(v + 2 * E);
  raw.w = packWord<T>(v + 3 * E);
  *reinterpret_cast<uint4 *>(p + i) = raw;
}

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_DEVICEDTYPE_CUH
