//===- Optimizer.cu - sum of squares, AdamW and the step scalars ----------===//
//
// The optimizer kernels of the CUDA backend (DeviceKernels.h), mirroring
// runtime/cpu/Optimizer.cpp and the scalar ops of KernelRunner::runKernel
// (LrSchedule, ClipGradNorm, CountStep, LossScaleUpdate).
//
//  - sum_squares is a deterministic two-level reduction: a grid whose size
//    depends on n only; each thread accumulates squares in f32 (one
//    accumulator per lane of its 16-byte loads), each block combines its
//    threads in a fixed tree and stores its sum as a double; one block then
//    sums the block sums in double in a fixed order.
//  - adamw_multi updates many tensors in one launch: blockIdx.y picks the
//    descriptor, blocks grid-stride over its elements. The step scalars
//    (lr, grad scale, step, skip) are read on the device, so a captured graph
//    replays with the current step; the bias corrections are computed once
//    per block (thread 0, in double) and shared.
//  - The step-scalar ops run on one thread and use KernelRunner's formulas in
//    double, rounding each result once.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/DeviceDType.cuh"
#include "runtime/cuda/DeviceKernels.h"

#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/program/KernelScratch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

namespace shardc::cuda {

namespace {

constexpr int kThreads = 256;

//===----------------------------------------------------------------------===//
// Device helpers
//===----------------------------------------------------------------------===//



template <class V> __device__ __forceinline__ V warpSum(V v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// The block's sum of v (thread 0 gets it): warp butterflies, then the 8
/// warp sums in warp order. Deterministic.
template <class V> __device__ __forceinline__ V blockSum(V v) {
  __shared__ V sh[kThreads / 32];
  v = warpSum(v);
  if (threadIdx.x % 32 == 0)
    sh[threadIdx.x / 32] = v;
  __syncthreads();
  V total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w)
      total += sh[w];
  return total;
}

//===----------------------------------------------------------------------===//
// sum_squares
//===----------------------------------------------------------------------===//

/// Blocks (= partial sums) of sum_squares for n elements: one per 4096
/// elements, at most 2048, so a thread sums at most n / 2^19 elements.
int64_t sumSquaresBlocks(int64_t n) { return rt::scratch::sumSquaresBlocks(n); }

/// x of T, 16-byte aligned: V accumulators per thread (one per pack lane).
template <class T>
__global__ void __launch_bounds__(kThreads)
    sumSquaresVecKernel(const T *x, int64_t n, double *partial) {
  constexpr int V = kPack<T>;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k)
    acc[k] = 0.0f;
  const int64_t nPacks = n / V;
  for (int64_t p = tid; p < nPacks; p += stride) {
    float v[V];
    loadPack(x, p * V, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      acc[k] += v[k] * v[k];
  }
  const int64_t i = nPacks * V + tid;
  if (i < n) {
    const float v = toF(x[i]);
    acc[0] += v * v;
  }
#pragma unroll
  for (int w = V / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k)
      acc[k] += acc[k + w];
  const float total = blockSum(acc[0]);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = double(total);
}

__global__ void __launch_bounds__(kThreads)
    sumSquaresKernel(TView x, int64_t n, double *partial) {
  float acc = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = loadF(x.p, x.dtype, i);
    acc += v * v;
  }
  const float total = blockSum(acc);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = double(total);
}

/// *out = the block sums added in double, in a fixed order.
__global__ void __launch_bounds__(kThreads)
    sumPartialsKernel(const double *partial, int64_t blocks, float *out) {
  double acc = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
    acc += partial[b];
  const double total = blockSum(acc);
  if (threadIdx.x == 0)
    *out = float(total);
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

struct AdamWConsts {
  float beta1, beta2, oneMinusBeta1, oneMinusBeta2, eps;
  double beta1d, beta2d, weightDecay;
};

/// torch.optim.AdamW on every element of the block's tensor, in f32:
///   g = gradScale * grad; p *= 1 - lr * wd; m = b1 m + (1 - b1) g;
///   v = b2 v + (1 - b2) g^2; p -= lr * (m / bias1) / (sqrt(v / bias2) + eps)
/// with t = step + 1, bias_k = 1 - beta_k^t (double, then f32).
__global__ void __launch_bounds__(kThreads)
    adamwKernel(const AdamWTensor *tensors, int count, AdamWScalars sc, AdamWConsts k) {
  __shared__ float shared[5]; // skip, lr, gradScale, bias1, bias2 (+ decay below)
  __shared__ float sharedDecay;
  bool ready = false;
  for (int ti = int(blockIdx.y); ti < count; ti += int(gridDim.y)) {
    const AdamWTensor d = tensors[ti];
    if (int64_t(blockIdx.x) * blockDim.x >= d.n) // nothing here for this block
      continue;
    if (!ready) { // the step's scalars, once per block
      if (threadIdx.x == 0) {
        const bool skip = sc.skip.p && scalarOf(sc.skip) != 0.0;
        const double lr = scalarOf(sc.lr);
        const double t = double(int64_t(scalarOf(sc.step)) + 1);
        shared[0] = skip ? 1.0f : 0.0f;
        shared[1] = float(lr);
        shared[2] = float(scalarOf(sc.gradScale));
        shared[3] = float(1.0 - pow(k.beta1d, t));
        shared[4] = float(1.0 - pow(k.beta2d, t));
        sharedDecay = float(1.0 - lr * k.weightDecay);
      }
      __syncthreads();
      ready = true;
    }
    const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    if (shared[0] != 0.0f) { // skipped step: only the copies are written
      if (d.copy)
        for (int64_t i = first; i < d.n; i += stride)
          storeF(d.copy, d.copyType, i, loadF(d.param, d.paramType, i));
      continue;
    }
    const float lr = shared[1], gradScale = shared[2], bias1 = shared[3], bias2 = shared[4];
    const float decay = d.decays ? sharedDecay : 1.0f;
    for (int64_t i = first; i < d.n; i += stride) {
      const float g = gradScale * loadF(d.grad, d.gradType, i);
      const float m = k.beta1 * loadF(d.m, d.mType, i) + k.oneMinusBeta1 * g;
      const float v = k.beta2 * loadF(d.v, d.vType, i) + k.oneMinusBeta2 * g * g;
      float p = loadF(d.param, d.paramType, i) * decay;
      p -= lr * (m / bias1) / (sqrtf(v / bias2) + k.eps);
      storeF(d.m, d.mType, i, m);
      storeF(d.v, d.vType, i, v);
      storeF(d.param, d.paramType, i, p);
      if (d.copy)
        storeF(d.copy, d.copyType, i, p);
    }
  }
}

//===----------------------------------------------------------------------===//
// Step scalars (KernelRunner's formulas)
//===----------------------------------------------------------------------===//

__global__ void lrScheduleKernel(TView step, float *out, double lr, double minLr,
                                 int64_t warmup, int64_t decaySteps) {
  const int64_t st = int64_t(scalarOf(step));
  double r;
  if (st < warmup) {
    r = lr * double(st + 1) / double(warmup);
  } else if (decaySteps <= warmup) {
    r = lr;
  } else if (st >= decaySteps) {
    r = minLr;
  } else {
    double ratio = double(st - warmup) / double(decaySteps - warmup);
    ratio = ratio < 0.0 ? 0.0 : ratio > 1.0 ? 1.0 : ratio;
    r = minLr + 0.5 * (1.0 + cos(M_PI * ratio)) * (lr - minLr);
  }
  *out = float(r);
}

__global__ void clipGradNormKernel(TView sumsq, TView scale, float *norm, float *coef,
                                   float *overflow, double maxNorm) {
  const double ss = scalarOf(sumsq);
  const double sc = scale.p ? scalarOf(scale) : 1.0;
  const double nrm = sqrt(ss) / sc;
  double c = 1.0;
  if (maxNorm > 0.0) {
    const double r = maxNorm / (nrm + 1e-6);
    c = r < 1.0 ? r : 1.0; // std::min(1.0, r)
  }
  const bool inf = !isfinite(ss);
  *norm = float(nrm);
  *coef = float(inf ? 0.0 : c / sc);
  *overflow = inf ? 1.0f : 0.0f;
}

__global__ void countStepKernel(TView step, TView skip, int32_t *out) {
  const bool skipped = skip.p && scalarOf(skip) != 0.0;
  *out = int32_t(int64_t(scalarOf(step)) + (skipped ? 0 : 1));
}

__global__ void lossScaleUpdateKernel(TView scale, TView good, TView overflow, float *outScale,
                                      int32_t *outGood, int64_t window, double factor,
                                      double minScale) {
  double sc = scalarOf(scale);
  int64_t g = int64_t(scalarOf(good));
  if (scalarOf(overflow) != 0.0) {
    const double down = sc / factor;
    sc = down < minScale ? minScale : down; // std::max(scale / factor, minScale)
    g = 0;
  } else if (++g >= window) {
    sc *= factor;
    g = 0;
  }
  *outScale = float(sc);
  *outGood = int32_t(g);
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

int64_t sum_squares_workspace_bytes(int64_t n) {
  return sumSquaresBlocks(n) * int64_t(sizeof(double));
}

namespace {

/// sum_squares's first level: the block sums of x into partial[0, blocks).
void sumSquaresPartials(TView x, int64_t n, double *partial, cudaStream_t s) {
  const int64_t blocks = sumSquaresBlocks(n);
  const bool aligned = (reinterpret_cast<uintptr_t>(x.p) & 15u) == 0;
  if (aligned && x.dtype == DType::F32)
    sumSquaresVecKernel<<<blocks, kThreads, 0, s>>>(static_cast<const float *>(x.p), n, partial);
  else if (aligned && x.dtype == DType::BF16)
    sumSquaresVecKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __nv_bfloat16 *>(x.p), n,
                                                    partial);
  else if (aligned && x.dtype == DType::F16)
    sumSquaresVecKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half *>(x.p), n, partial);
  else
    sumSquaresKernel<<<blocks, kThreads, 0, s>>>(x, n, partial);
  SHARDC_CUDA_LAUNCH();
}

} // namespace

void sum_squares(TView x, int64_t n, float *out, void *workspace, cudaStream_t s) {
  sum_squares_multi(&x, &n, 1, out, workspace, s);
}

int64_t sum_squares_multi_workspace_bytes(const int64_t *ns, int count) {
  return rt::scratch::sumSquaresBytes(ns, count);
}

void sum_squares_multi(const TView *xs, const int64_t *ns, int count, float *out,
                       void *workspace, cudaStream_t s) {
  double *partial = static_cast<double *>(workspace);
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i)
    if (ns[i] > 0) {
      sumSquaresPartials(xs[i], ns[i], partial + blocks, s);
      blocks += sumSquaresBlocks(ns[i]);
    }
  if (blocks == 0) {
    SHARDC_CUDA(cudaMemsetAsync(out, 0, sizeof(float), s));
    return;
  }
  sumPartialsKernel<<<1, kThreads, 0, s>>>(partial, blocks, out);
  SHARDC_CUDA_LAUNCH();
}

void adamw_multi(const AdamWTensor *tensors, int count, int64_t maxN, AdamWScalars scalars,
                 double beta1, double beta2, double eps, double weightDecay, cudaStream_t s) {
  if (count <= 0 || maxN <= 0)
    return;
  AdamWConsts k{float(beta1), float(beta2), float(1.0 - beta1), float(1.0 - beta2), float(eps),
                beta1,        beta2,        weightDecay};
  // Up to 1024 blocks per tensor, each thread then handles >= 4 elements of
  // the largest tensor; blocks past a smaller tensor's end exit at once.
  dim3 grid(unsigned(std::clamp<int64_t>((maxN + 4 * kThreads - 1) / (4 * kThreads), 1, 1024)),
            unsigned(std::min(count, 65535)));
  adamwKernel<<<grid, kThreads, 0, s>>>(tensors, count, scalars, k);
  SHARDC_CUDA_LAUNCH();
}

void lr_schedule(TView step, float *out, double lr, double minLr, int64_t warmup,
                 int64_t decaySteps, cudaStream_t s) {
  if (warmup < 0)
    throw rt::Error("lr_schedule: warmup = " + std::to_string(warmup) +
                    " must not be negative");
  lrScheduleKernel<<<1, 1, 0, s>>>(step, out, lr, minLr, warmup, decaySteps);
  SHARDC_CUDA_LAUNCH();
}

void clip_grad_norm(TView sumsq, TView scale, float *norm, float *coef, float *overflow,
                    double maxNorm, cudaStream_t s) {
  clipGradNormKernel<<<1, 1, 0, s>>>(sumsq, scale, norm, coef, overflow, maxNorm);
  SHARDC_CUDA_LAUNCH();
}

void count_step(TView step, TView skip, int32_t *out, cudaStream_t s) {
  countStepKernel<<<1, 1, 0, s>>>(step, skip, out);
  SHARDC_CUDA_LAUNCH();
}

void loss_scale_update(TView scale, TView good, TView overflow, float *outScale,
                       int32_t *outGood, int64_t window, double factor, double minScale,
                       cudaStream_t s) {
  lossScaleUpdateKernel<<<1, 1, 0, s>>>(scale, good, overflow, outScale, outGood, window,
                                        factor, minScale);
  SHARDC_CUDA_LAUNCH();
}

} // namespace shardc::cuda
