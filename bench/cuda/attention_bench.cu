//===- attention_bench.cu - CUDA attention forward/backward timing ---------===//
//
// Times shardc::cuda::attention_forward / attention_backward
// (runtime/cuda/Attention.cu; bf16 with D = 64 / 128 runs the tensor-core
// kernels of AttentionTC.cu) on causal bf16 MHA shapes with cudaEvents over
// warm iterations; bench/torch_attention.py prints the same lines for
// torch.nn.functional.scaled_dot_product_attention.
//
//   built by the CMake build where CUDA is found: build/bench/attention_bench
//   ./attention_bench [--iters N]
//
// Shapes: S = 1024 and 4096, D = 64 and 128, H = 16, B = 8M / (H S) (8M
// query rows x heads per config, enough work to fill the GPU many times).
// Before timing, a quick check runs each D on a small shape against the f32
// CUDA-core kernels (on the same bf16-rounded inputs) and prints the largest
// error relative to the largest f32 value of out, dq, dk, dv.
//
// FLOPs (the usual FlashAttention accounting, as bench/torch_attention.py):
// forward 4 B H S^2 D (two S x S x D GEMMs), backward 2.5 x forward
// (five GEMMs against two), both halved when causal; forward + backward 3.5 x
// forward. The kernels' own backward does more arithmetic than that (a
// separate dq pass and an lse recomputation); the count is the same for every
// implementation so that TFLOP/s compare like for like.
//
// Besides the human-readable lines, one JSON line per config:
//   {"bench": "attention", "impl": "shardc", "B": .., "S": .., "H": .., "D": ..,
//    "causal": true, "dtype": "bf16", "fwd_ms": .., "fwd_tflops": ..,
//    "bwd_ms": .., "bwd_tflops": .., "fwd_bwd_ms": .., "fwd_bwd_tflops": ..}
//
// Exits 77 without a CUDA device.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

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

__global__ void bf16ToF32(const __nv_bfloat16 *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
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

double report(const char *what, const Shape &sh, bool causal, double flops, float ms) {
  const double tflops = flops / (double(ms) * 1e-3) / 1e12;
  std::printf("attention %-4s B=%lld S=%lld H=%lld D=%lld %s bf16: %9.3f ms %8.2f TFLOP/s\n", what,
              (long long)sh.B, (long long)sh.S, (long long)sh.H, (long long)sh.D,
              causal ? "causal" : "full", ms, tflops);
  return tflops;
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
  const float fwdMs = timeMs(fwd, iters, s), bwdMs = timeMs(bwd, iters, s),
              bothMs = timeMs(both, iters, s);
  const double fwdT = report("fwd", sh, causal, fwdFlops, fwdMs);
  const double bwdT = report("bwd", sh, causal, 2.5 * fwdFlops, bwdMs);
  const double bothT = report("f+b", sh, causal, 3.5 * fwdFlops, bothMs);
  std::printf("{\"bench\": \"attention\", \"impl\": \"shardc\", \"B\": %lld, \"S\": %lld, "
              "\"H\": %lld, \"D\": %lld, \"causal\": %s, \"dtype\": \"bf16\", "
              "\"fwd_ms\": %.4f, \"fwd_tflops\": %.2f, \"bwd_ms\": %.4f, "
              "\"bwd_tflops\": %.2f, \"fwd_bwd_ms\": %.4f, \"fwd_bwd_tflops\": %.2f}\n",
              (long long)sh.B, (long long)sh.S, (long long)sh.H, (long long)sh.D,
              causal ? "true" : "false", fwdMs, fwdT, bwdMs, bwdT, bothMs, bothT);
  std::fflush(stdout);

  for (void *p : {q, k, v, o, dout, dq, dk, dv, ws})
    SHARDC_CUDA(cudaFree(p));
  SHARDC_CUDA(cudaFree(lse));
}

/// The bf16 kernels against the f32 ones on the same (bf16-rounded) inputs:
/// max |bf16 - f32| / max |f32| of out, dq, dk, dv on a small causal GQA
/// shape with a ragged tail. Returns false above 2e-2.
bool quickCheck(int64_t D, cudaStream_t s) {
  const int64_t B = 1, S = 300, Hq = 4, Hkv = 2, nQ = B * S * Hq * D, nKV = B * S * Hkv * D;
  const double scale = 1.0 / std::sqrt(double(D));
  const int64_t counts[8] = {nQ, nKV, nKV, nQ, nQ, nQ, nKV, nKV}; // q k v o do dq dk dv
  void *h[8];
  float *f[8];
  for (int i = 0; i < 8; ++i) {
    SHARDC_CUDA(cudaMalloc(&h[i], size_t(counts[i]) * 2));
    SHARDC_CUDA(cudaMalloc(&f[i], size_t(counts[i]) * 4));
  }
  const int64_t ws = cuda::attention_backward_workspace_bytes(B, S, Hq, Hkv, D);
  void *w;
  SHARDC_CUDA(cudaMalloc(&w, size_t(ws)));
  for (int i : {0, 1, 2, 4}) {
    fillUniform<<<256, 256, 0, s>>>(static_cast<__nv_bfloat16 *>(h[i]), counts[i], 100 + i);
    SHARDC_CUDA_LAUNCH();
    bf16ToF32<<<256, 256, 0, s>>>(static_cast<const __nv_bfloat16 *>(h[i]), f[i], counts[i]);
    SHARDC_CUDA_LAUNCH();
  }
  cuda::TView hv[8], fv[8];
  for (int i = 0; i < 8; ++i) {
    hv[i] = cuda::TView{h[i], rt::DType::BF16};
    fv[i] = cuda::TView{f[i], rt::DType::F32};
  }
  cuda::attention_forward(hv[0], hv[1], hv[2], hv[3], nullptr, B, S, Hq, Hkv, D, true, scale, s);
  cuda::attention_backward(hv[4], hv[0], hv[1], hv[2], hv[3], hv[5], hv[6], hv[7], B, S, Hq, Hkv,
                           D, true, scale, w, s);
  std::vector<std::vector<float>> ref(8);
  std::vector<std::vector<uint16_t>> got(8);
  for (int i : {3, 5, 6, 7}) {
    ref[i].resize(size_t(counts[i]));
    got[i].resize(size_t(counts[i]));
    SHARDC_CUDA(cudaMemcpyAsync(got[i].data(), h[i], size_t(counts[i]) * 2,
                                cudaMemcpyDeviceToHost, s));
  }
  // The f32 forward's own out is the reference for out; the f32 backward
  // then gets the bf16 out (as the bf16 backward did).
  cuda::attention_forward(fv[0], fv[1], fv[2], fv[3], nullptr, B, S, Hq, Hkv, D, true, scale, s);
  SHARDC_CUDA(cudaMemcpyAsync(ref[3].data(), f[3], size_t(nQ) * 4, cudaMemcpyDeviceToHost, s));
  bf16ToF32<<<256, 256, 0, s>>>(static_cast<const __nv_bfloat16 *>(h[3]), f[3], nQ);
  SHARDC_CUDA_LAUNCH();
  cuda::attention_backward(fv[4], fv[0], fv[1], fv[2], fv[3], fv[5], fv[6], fv[7], B, S, Hq, Hkv,
                           D, true, scale, w, s);
  for (int i : {5, 6, 7})
    SHARDC_CUDA(cudaMemcpyAsync(ref[i].data(), f[i], size_t(counts[i]) * 4,
                                cudaMemcpyDeviceToHost, s));
  SHARDC_CUDA(cudaStreamSynchronize(s));
  const char *names[8] = {"", "", "", "out", "", "dq", "dk", "dv"};
  bool ok = true;
  std::printf("quick check D=%lld (B=%lld S=%lld Hq=%lld Hkv=%lld causal, bf16 vs f32 kernels):",
              (long long)D, (long long)B, (long long)S, (long long)Hq, (long long)Hkv);
  for (int i : {3, 5, 6, 7}) {
    double maxRef = 1e-6, maxErr = 0;
    for (size_t e = 0; e < ref[i].size(); ++e) {
      uint32_t bits = uint32_t(got[i][e]) << 16;
      float g;
      std::memcpy(&g, &bits, 4);
      maxRef = std::max(maxRef, double(std::fabs(ref[i][e])));
      maxErr = std::isfinite(g) ? std::max(maxErr, double(std::fabs(g - ref[i][e]))) : INFINITY;
    }
    const double rel = maxErr / maxRef;
    ok = ok && rel <= 2e-2;
    std::printf(" %s %.2e", names[i], rel);
  }
  std::printf("%s\n", ok ? "" : "  FAILED");
  for (int i = 0; i < 8; ++i) {
    SHARDC_CUDA(cudaFree(h[i]));
    SHARDC_CUDA(cudaFree(f[i]));
  }
  SHARDC_CUDA(cudaFree(w));
  return ok;
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
    bool ok = true;
    for (int64_t D : {64, 128})
      ok = quickCheck(D, s) && ok;
    constexpr int64_t kRowsHeads = int64_t(8) << 20; // B * H * S per config
    for (int64_t S : {1024, 4096})
      for (int64_t D : {64, 128})
        run(Shape{kRowsHeads / (16 * S), S, 16, D}, /*causal=*/true, /*warmup=*/3, iters, s);
    if (!ok) {
      SHARDC_CUDA(cudaStreamDestroy(s));
      std::fprintf(stderr, "quick check failed\n");
      return 1;
    }
    SHARDC_CUDA(cudaStreamDestroy(s));
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "%s\n", ex.what());
    return 1;
  }
  return 0;
}
