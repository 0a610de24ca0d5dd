//===- attention_bench.cu - CUDA attention forward/backward timing ---------===//
//
// Times shardc::cuda::attention_forward / attention_backward
// (runtime/cuda/Attention.cu) on causal bf16 MHA shapes with cudaEvents over
// warm iterations; bench/torch_attention.py prints the same lines for
// torch.nn.functional.scaled_dot_product_attention.
//
//   built by the CMake build where CUDA is found: build/bench/attention_bench
//   ./attention_bench [--iters N]
//
// FLOPs (the usual FlashAttention accounting): forward 4 B H S^2 D (two
// S x S x D GEMMs), backward 2.5 x forward, both halved when causal. The
// kernels' own backward does more arithmetic than that (a separate dq pass
// and an lse recomputation); the count is the same for every implementation
// so that TFLOP/s compare like for like.
//
// Exits 77 without a CUDA device.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

using namespace shardc;

namespace {

/// x[i] = uniform(-1, 1) from a hash of (seed, i), rounded to bf16.
__global__ void fillUniform(__nv_bfloat16 *x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ seed * 0x85EBCA77u ^ uint32_t(i >> 32);
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    h ^= h >> 16;
    x[i] = __float2bfloat16_rn(float(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

struct Shape {
  int64_t B, S, H, D;
};

template <class F> float timeMs(F f, int iters, cudaStream_t s) {
  cudaEvent_t start, stop;
  SHARDC_CUDA(cudaEventCreate(&start));
  SHARDC_CUDA(cudaEventCreate(&stop));
  SHARDC_CUDA(cudaEventRecord(start, s));
  for (int i = 0; i < iters; ++i)
    f();
  SHARDC_CUDA(cudaEventRecord(stop, s));
  SHARDC_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  SHARDC_CUDA(cudaEventElapsedTime(&ms, start, stop));
  SHARDC_CUDA(cudaEventDestroy(start));
  SHARDC_CUDA(cudaEventDestroy(stop));
  return ms / float(iters);
}

void report(const char *what, const Shape &sh, bool causal, double flops, float ms) {
  std::printf("attention %-4s B=%lld S=%lld H=%lld D=%lld %s bf16: %9.3f ms %8.2f TFLOP/s\n", what,
              (long long)sh.B, (long long)sh.S, (long long)sh.H, (long long)sh.D,
              causal ? "causal" : "full", ms, flops / (double(ms) * 1e-3) / 1e12);
}

void run(const Shape &sh, bool causal, int warmup, int iters, cudaStream_t s) {
  const int64_t n = sh.B * sh.S * sh.H * sh.D;
  const size_t bytes = size_t(n) * sizeof(__nv_bfloat16);
  const double scale = 1.0 / std::sqrt(double(sh.D));
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *ws;
  float *lse;
  for (void **p : {&q, &k, &v, &o, &dout, &dq, &dk, &dv})
    SHARDC_CUDA(cudaMalloc(p, bytes));
  SHARDC_CUDA(cudaMalloc(&lse, size_t(sh.B * sh.H * sh.S) * sizeof(float)));
  const int64_t wsBytes = cuda::attention_backward_workspace_bytes(sh.B, sh.S, sh.H, sh.H, sh.D);
  SHARDC_CUDA(cudaMalloc(&ws, size_t(wsBytes > 0 ? wsBytes : 1)));
  uint32_t seed = 1;
  for (void *p : {q, k, v, dout}) {
    fillUniform<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16 *>(p), n, seed++);
    SHARDC_CUDA_LAUNCH();
  }

  const cuda::TView Q{q, rt::DType::BF16}, K{k, rt::DType::BF16}, V{v, rt::DType::BF16},
      O{o, rt::DType::BF16}, dO{dout, rt::DType::BF16}, dQ{dq, rt::DType::BF16},
      dK{dk, rt::DType::BF16}, dV{dv, rt::DType::BF16};
  auto fwd = [&] {
    cuda::attention_forward(Q, K, V, O, lse, sh.B, sh.S, sh.H, sh.H, sh.D, causal, scale, s);
  };
  auto bwd = [&] {
    cuda::attention_backward(dO, Q, K, V, O, dQ, dK, dV, sh.B, sh.S, sh.H, sh.H, sh.D, causal,
                             scale, ws, s);
  };
  auto both = [&] {
    fwd();
    bwd();
  };
  for (int i = 0; i < warmup; ++i)
    both();
  SHARDC_CUDA(cudaStreamSynchronize(s));

  double fwdFlops = 4.0 * double(sh.B) * double(sh.H) * double(sh.S) * double(sh.S) *
                    double(sh.D) * (causal ? 0.5 : 1.0);
  report("fwd", sh, causal, fwdFlops, timeMs(fwd, iters, s));
  report("bwd", sh, causal, 2.5 * fwdFlops, timeMs(bwd, iters, s));
  report("f+b", sh, causal, 3.5 * fwdFlops, timeMs(both, iters, s));

  for (void *p : {q, k, v, o, dout, dq, dk, dv, ws})
    SHARDC_CUDA(cudaFree(p));
  SHARDC_CUDA(cudaFree(lse));
}

} // namespace

int main(int argc, char **argv) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s): skipping\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--iters N]\n", argv[0]);
      return 2;
    }
  }
  if (iters <= 0)
    iters = 1;
  try {
    cudaDeviceProp prop;
    SHARDC_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s (sm_%d%d, %d SMs), %d timed iterations after 3 warm-up\n", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, iters);
    cudaStream_t s;
    SHARDC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (const Shape &sh : {Shape{4, 1024, 16, 64}, Shape{1, 4096, 16, 64}})
      run(sh, /*causal=*/true, /*warmup=*/3, iters, s);
    SHARDC_CUDA(cudaStreamDestroy(s));
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "%s\n", ex.what());
    return 1;
  }
  return 0;
}
