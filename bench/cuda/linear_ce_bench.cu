//===- linear_ce_bench.cu - fused linear + cross-entropy on the GPU -------===//
//
// Times the chunked fused linear cross-entropy of runtime/cuda
// (LinearCrossEntropy.h) at the shape of an LM head: tokens x hidden @
// vocab x hidden (bf16, vocab-major weight as an HF lm_head / tied
// embedding), forward (statistics + loss) and backward (dx, dW, both bf16),
// with cudaEvents, and the device memory it needs beyond the inputs and the
// gradients (cudaMemGetInfo around its allocations: the workspace, Gemm's
// cuBLASLt workspace and handle). Prints one line per run in the format of
// bench/torch_linear_ce.py, so the two can be compared row by row:
//
//   impl=shardc_lce tokens=8192 hidden=4096 vocab=131072 dtype=bf16
//   fwd_ms=.. bwd_ms=.. total_ms=.. extra_MiB=.. peak_MiB=.. tflops=.. loss=..
//
// extra_MiB: memory beyond x, W, targets, dx, dW; peak_MiB: extra + those.
// tflops: model FLOPs (6 * tokens * hidden * vocab: forward, dx, dW) per
// second of total_ms; the backward also recomputes the logits (a 4th GEMM).
//
//   built by the CMake build where CUDA is found: build/bench/linear_ce_bench
// Run: ./linear_ce_bench [--tokens N] [--hidden H] [--vocab V] [--iters K]
//                        [--chunk-elems E] [--chunking auto|rows|vocab]
// Exits 77 without a CUDA device.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/LinearCrossEntropy.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace shardc;
using namespace shardc::cuda;

namespace {

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__,     \
                   __LINE__);                                                                      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

__device__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return uint32_t(x);
}

__global__ void fillUniform(__nv_bfloat16 *p, int64_t n, float scale, uint64_t seed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float u = float(hash32(seed * 0x9e3779b97f4a7c15ull + uint64_t(i))) * (1.0f / 4294967296.0f);
    p[i] = __float2bfloat16_rn(scale * (2.0f * u - 1.0f));
  }
}

__global__ void fillTargets(int32_t *t, int64_t n, int64_t vocab, uint64_t seed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    t[i] = int32_t(hash32(seed + uint64_t(i)) % uint32_t(vocab));
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

} // namespace

int main(int argc, char **argv) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device (%s): skipping\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  int64_t tokens = 8192, hidden = 4096, vocab = 131072, chunkElems = 0;
  int iters = 10, warmup = 3;
  LinearCrossEntropyChunking chunking = LinearCrossEntropyChunking::Auto;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--tokens")
      tokens = std::atoll(v.c_str());
    else if (k == "--hidden")
      hidden = std::atoll(v.c_str());
    else if (k == "--vocab")
      vocab = std::atoll(v.c_str());
    else if (k == "--iters")
      iters = std::atoi(v.c_str());
    else if (k == "--chunk-elems")
      chunkElems = std::atoll(v.c_str());
    else if (k == "--chunking")
      chunking = v == "rows"    ? LinearCrossEntropyChunking::Rows
                 : v == "vocab" ? LinearCrossEntropyChunking::Vocab
                                : LinearCrossEntropyChunking::Auto;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }

  try {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    // Inputs and gradient outputs (the same in every implementation).
    __nv_bfloat16 *x, *w, *dx, *dw;
    int32_t *targets;
    CHECK(cudaMalloc(&x, size_t(tokens * hidden) * 2));
    CHECK(cudaMalloc(&w, size_t(vocab * hidden) * 2));
    CHECK(cudaMalloc(&dx, size_t(tokens * hidden) * 2));
    CHECK(cudaMalloc(&dw, size_t(vocab * hidden) * 2));
    CHECK(cudaMalloc(&targets, size_t(tokens) * 4));
    const double baseBytes =
        double(tokens * hidden) * 2 * 2 + double(vocab * hidden) * 2 * 2 + double(tokens) * 4;
    fillUniform<<<1024, 256, 0, s>>>(x, tokens * hidden, 1.0f, 1);
    fillUniform<<<1024, 256, 0, s>>>(w, vocab * hidden, 0.02f, 2);
    fillTargets<<<256, 256, 0, s>>>(targets, tokens, vocab, 3);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));

    LinearCrossEntropyShape shape;
    shape.rows = tokens;
    shape.hidden = hidden;
    shape.vocab = shape.blockVocab = vocab;
    shape.vocabMajor = true;
    shape.chunkElems = chunkElems;
    shape.chunking = chunking;
    const int64_t wsBytes =
        linear_cross_entropy_workspace_bytes(shape, DType::BF16, DType::BF16, DType::BF16);

    size_t freeBefore = 0, freeAfter = 0, total = 0;
    CHECK(cudaMemGetInfo(&freeBefore, &total));
    Gemm gemm; // its 32 MiB cuBLASLt workspace counts as extra memory
    void *ws;
    float *stats, *loss, *dloss;
    KernelError *err;
    CHECK(cudaMalloc(&ws, size_t(wsBytes)));
    CHECK(cudaMalloc(&stats, size_t(3 * tokens) * 4));
    CHECK(cudaMalloc(&loss, 4));
    CHECK(cudaMalloc(&dloss, 4));
    CHECK(cudaMalloc(&err, sizeof(KernelError)));
    CHECK(cudaMemset(err, 0, sizeof(KernelError)));
    const float one = 1.0f;
    CHECK(cudaMemcpy(dloss, &one, 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemGetInfo(&freeAfter, &total));
    const double extraBytes = double(freeBefore) - double(freeAfter);

    TView xv{x, DType::BF16}, wv{w, DType::BF16}, dxv{dx, DType::BF16}, dwv{dw, DType::BF16};
    auto forward = [&] {
      linear_cross_entropy_stats(gemm, xv, wv, targets, {}, shape, stats, ws, err, s);
      cross_entropy_loss(stats, targets, {}, tokens, shape.ignoreIndex, nullptr, {loss, DType::F32},
                         s);
    };
    auto backward = [&] {
      linear_cross_entropy_backward(gemm, {dloss, DType::F32}, xv, wv, targets, {}, shape, stats,
                                    nullptr, dxv, dwv, ws, s);
    };
    for (int i = 0; i < warmup; ++i) {
      forward();
      backward();
    }
    CHECK(cudaStreamSynchronize(s));

    cudaEvent_t e0, e1, e2;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreate(&e2));
    std::vector<float> fwd, bwd;
    for (int i = 0; i < iters; ++i) {
      CHECK(cudaEventRecord(e0, s));
      forward();
      CHECK(cudaEventRecord(e1, s));
      backward();
      CHECK(cudaEventRecord(e2, s));
      CHECK(cudaEventSynchronize(e2));
      float f = 0, b = 0;
      CHECK(cudaEventElapsedTime(&f, e0, e1));
      CHECK(cudaEventElapsedTime(&b, e1, e2));
      fwd.push_back(f);
      bwd.push_back(b);
    }
    std::sort(fwd.begin(), fwd.end());
    std::sort(bwd.begin(), bwd.end());
    const float fwdMs = fwd[fwd.size() / 2], bwdMs = bwd[bwd.size() / 2]; // medians
    float hostLoss = 0;
    KernelError hostErr{};
    CHECK(cudaMemcpy(&hostLoss, loss, 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hostErr, err, sizeof(hostErr), cudaMemcpyDeviceToHost));
    if (hostErr.code != kNoError)
      std::fprintf(stderr, "kernel error %d at %lld\n", hostErr.code, hostErr.position);
    const double flops = 6.0 * double(tokens) * double(hidden) * double(vocab);
    const double totalMs = double(fwdMs) + double(bwdMs);
    std::printf("impl=shardc_lce tokens=%lld hidden=%lld vocab=%lld dtype=bf16 fwd_ms=%.3f "
                "bwd_ms=%.3f total_ms=%.3f extra_MiB=%.1f peak_MiB=%.1f tflops=%.1f loss=%.4f\n",
                (long long)tokens, (long long)hidden, (long long)vocab, fwdMs, bwdMs, totalMs,
                mib(extraBytes), mib(extraBytes + baseBytes), flops / (totalMs * 1e-3) / 1e12,
                hostLoss);
    std::printf("# chunking: %lld rows x %lld columns per chunk, workspace %.1f MiB "
                "(of extra %.1f MiB)\n",
                (long long)linear_cross_entropy_chunk_rows(shape),
                (long long)linear_cross_entropy_chunk_vocab(shape), mib(double(wsBytes)),
                mib(extraBytes));
  } catch (const rt::Error &ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    return 1;
  }
  return 0;
}
