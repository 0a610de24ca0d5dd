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

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_DEVICEDTYPE_CUH
