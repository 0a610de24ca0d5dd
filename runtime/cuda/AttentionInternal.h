//===- AttentionInternal.h - shared by the attention kernels ---*- C++ -*-===//
//
// Internal to runtime/cuda (Attention.cu, AttentionTC.cu): the tensor-core
// entry points Attention.cu dispatches to, and the once-per-kernel opt-in to
// more than 48 KB of dynamic shared memory both files' launches need.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_ATTENTIONINTERNAL_H
#define SHARDC_RUNTIME_CUDA_ATTENTIONINTERNAL_H

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace shardc::cuda::detail {

/// Raises kernel K's dynamic shared-memory limit to smemBytes (a host-side
/// call, not a stream operation) once per kernel and device (bit d of
/// `optedIn`), so that steady-state launches and CUDA-graph captures after
/// the first step make no driver call besides the launch.
template <auto K> void optInSharedMemory(int smemBytes) {
  static std::atomic<uint64_t> optedIn{0};
  int dev = 0;
  SHARDC_CUDA(cudaGetDevice(&dev));
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t(1) << dev : 0;
  if (!bit || !(optedIn.load(std::memory_order_acquire) & bit)) {
    SHARDC_CUDA(cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes));
    optedIn.fetch_or(bit, std::memory_order_release);
  }
}

/// The tensor-core path (AttentionTC.cu): bf16/f16, D in {64, 128}, 16-byte
/// aligned tensors; false when it does not apply (nothing launched).
bool attention_forward_tc(TView q, TView k, TView v, TView out, float *lse, int64_t B, int64_t S,
                          int64_t Hq, int64_t Hkv, int64_t D, bool causal, double scale,
                          cudaStream_t s);
bool attention_backward_tc(TView dout, TView q, TView k, TView v, TView out, TView dq, TView dk,
                           TView dv, int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                           bool causal, double scale, float *lse2, float *delta,
                           cudaStream_t s);

} // namespace shardc::cuda::detail

#endif // SHARDC_RUNTIME_CUDA_ATTENTIONINTERNAL_H
