//===- Loss.cu - vocabulary-parallel cross-entropy kernels ----------------===//
//
// The cross-entropy kernels of DeviceKernels.h and their general forms of
// LossInternal.h, with the semantics of the CPU vocabulary-parallel
// functions (runtime/cpu/Loss.cpp, Backward.cpp) and KernelRunner's
// runCrossEntropyAs:
//  - row r counts iff targets[r] != ignoreIndex and (no mask or mask[r] != 0);
//  - a target that is not ignoreIndex and lies outside [0, vocab) sets the
//    KernelError (kBadTarget, first writer wins through atomicCAS on the
//    code), whatever the mask says, as cpu::countTargets throws;
//  - loss = sum over counted rows of (max + log(sumExp) - target) / count,
//    count = *groupCount (the token group) or the counted rows of the call;
//  - grad = dloss / count * (softmax - onehot) on counted rows, 0 elsewhere.
//
// Row kernels run one block per row (32..512 threads, by row length): each
// thread keeps an online (max, sum of exp) over 16-byte vector loads (head
// and tail elements scalar, so any row alignment works), the block combines
// the pairs in a fixed tree, so results are deterministic for a launch
// shape. Everything is computed in f32 except the final loss sum (double).
// The kernels are bandwidth-bound: stats read the logits once, grad reads
// them once and writes dlogits once.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceDType.cuh"
#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/LossInternal.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

namespace shardc::cuda {

namespace {

constexpr int kMaxRowThreads = 512;
constexpr int kReduceThreads = 1024;

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//


/// Element i of a device array of any dtype, as double (scalars, masks).
__device__ __forceinline__ double loadAny(const void *p, DType t, int64_t i) {
  switch (t) {
  case DType::F64:
    return static_cast<const double *>(p)[i];
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case DType::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case DType::I32:
    return static_cast<const int32_t *>(p)[i];
  default:
    return static_cast<const float *>(p)[i];
  }
}

/// Whether row r counts (cpu::isCounted). -0.0 masks are zero, as T(0) == -0.
__device__ __forceinline__ bool isCounted(const int32_t *targets, TView mask, int64_t r,
                                          int64_t ignoreIndex) {
  if (int64_t(targets[r]) == ignoreIndex)
    return false;
  return !mask.p || loadAny(mask.p, mask.dtype, r) != 0.0;
}

__device__ __forceinline__ void reportBadTarget(KernelError *err, int64_t position, int64_t value,
                                                int64_t limit) {
  if (!err)
    return;
  if (atomicCAS(&err->code, int(kNoError), int(kBadTarget)) == int(kNoError)) {
    err->position = position;
    err->value = value;
    err->limit = limit;
  }
}

/// Elements per 16-byte vector.
template <class T> struct Vec { static constexpr int N = 16 / int(sizeof(T)); };

template <class T> __device__ __forceinline__ void loadVec(const T *p, float (&v)[Vec<T>::N]) {
  uint4 raw = *reinterpret_cast<const uint4 *>(p);
  const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
  for (int q = 0; q < Vec<T>::N; ++q)
    v[q] = toF(e[q]);
}

/// Stores V floats as TO at p, p aligned to min(16, V * sizeof(TO)) bytes.
template <class TO, int V> __device__ __forceinline__ void storeVec(TO *p, const float *o) {
  constexpr int kBytes = V * int(sizeof(TO));
  alignas(16) TO e[V];
#pragma unroll
  for (int q = 0; q < V; ++q)
    e[q] = fromF<TO>(o[q]);
  if constexpr (kBytes == 8) {
    *reinterpret_cast<uint2 *>(p) = *reinterpret_cast<const uint2 *>(e);
  } else {
    static_assert(kBytes % 16 == 0, "vector stores of 8, 16 or 32 bytes");
#pragma unroll
    for (int w = 0; w < kBytes / 16; ++w)
      reinterpret_cast<uint4 *>(p)[w] = reinterpret_cast<const uint4 *>(e)[w];
  }
}

/// Elements before the first 16-byte boundary of `row` (at most n).
template <class T> __device__ __forceinline__ int64_t headElements(const T *row, int64_t n) {
  int64_t head = int64_t((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) / int64_t(sizeof(T));
  return head < n ? head : n;
}

/// Calls f(values, count, firstColumn) for every element of row[0, n), split
/// among the block's threads: scalar head, 16-byte vectors (four in flight
/// per thread), scalar tail.
template <class T, class F> __device__ __forceinline__ void forRow(const T *row, int64_t n, F &&f) {
  constexpr int V = Vec<T>::N;
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t head = headElements(row, n);
  for (int64_t j = tid; j < head; j += nt) {
    float v = toF(row[j]);
    f(&v, 1, j);
  }
  const T *body = row + head;
  const int64_t nVec = (n - head) / V;
  int64_t i = tid;
  for (; i + 3 * int64_t(nt) < nVec; i += 4 * int64_t(nt)) {
    float v[4][V];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      loadVec<T>(body + (i + u * int64_t(nt)) * V, v[u]);
#pragma unroll
    for (int u = 0; u < 4; ++u)
      f(v[u], V, head + (i + u * int64_t(nt)) * V);
  }
  for (; i < nVec; i += nt) {
    float v[V];
    loadVec<T>(body + i * V, v);
    f(v, V, head + i * V);
  }
  for (int64_t j = head + nVec * V + tid; j < n; j += nt) {
    float v = toF(row[j]);
    f(&v, 1, j);
  }
}

/// out[j] = f(in[j]) for the row, in-place safe (each element is read and
/// written by one thread). f(values, results, count, firstColumn).
template <class T, class TO, class F>
__device__ __forceinline__ void mapRow(const T *in, TO *out, int64_t n, F &&f) {
  constexpr int V = Vec<T>::N;
  constexpr int kOutBytes = V * int(sizeof(TO));
  constexpr int kOutAlign = kOutBytes < 16 ? kOutBytes : 16;
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t head = headElements(in, n);
  // Uniform across the block: vector stores when out's body is aligned too.
  const bool outVec = reinterpret_cast<uintptr_t>(out + head) % kOutAlign == 0;
  for (int64_t j = tid; j < head; j += nt) {
    float v = toF(in[j]), o;
    f(&v, &o, 1, j);
    out[j] = fromF<TO>(o);
  }
  const T *body = in + head;
  TO *outBody = out + head;
  const int64_t nVec = (n - head) / V;
  auto store = [&](int64_t i, const float *o) {
    if (outVec) {
      storeVec<TO, V>(outBody + i * V, o);
    } else {
#pragma unroll
      for (int q = 0; q < V; ++q)
        outBody[i * V + q] = fromF<TO>(o[q]);
    }
  };
  int64_t i = tid;
  for (; i + 3 * int64_t(nt) < nVec; i += 4 * int64_t(nt)) {
    float v[4][V];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      loadVec<T>(body + (i + u * int64_t(nt)) * V, v[u]);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      float o[V];
      f(v[u], o, V, head + (i + u * int64_t(nt)) * V);
      store(i + u * int64_t(nt), o);
    }
  }
  for (; i < nVec; i += nt) {
    float v[V], o[V];
    loadVec<T>(body + i * V, v);
    f(v, o, V, head + i * V);
    store(i, o);
  }
  for (int64_t j = head + nVec * V + tid; j < n; j += nt) {
    float v = toF(in[j]), o;
    f(&v, &o, 1, j);
    out[j] = fromF<TO>(o);
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A running (max, sum of exp(x - max)).
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY)
    return {m, 0.0f};
  // exp(-inf) = 0 covers an empty side; the sum is symmetric in a and b, so
  // every lane of a butterfly computes the same value.
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ void update(MaxSum &a, const float *v, int count) {
  float lm = v[0];
  for (int q = 1; q < count; ++q)
    lm = fmaxf(lm, v[q]);
  if (lm == -INFINITY)
    return; // all -inf: contributes nothing (and exp(-inf - -inf) would be NaN)
  if (lm > a.m) {
    a.s *= expf(a.m - lm);
    a.m = lm;
  }
  for (int q = 0; q < count; ++q)
    a.s += expf(v[q] - a.m);
}

/// The block's combined pair, returned to every thread.
__device__ MaxSum blockReduce(MaxSum a) {
  __shared__ MaxSum warpVals[32];
  __shared__ MaxSum result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    MaxSum o{__shfl_xor_sync(0xffffffffu, a.m, off), __shfl_xor_sync(0xffffffffu, a.s, off)};
    a = combine(a, o);
  }
  if (lane == 0)
    warpVals[warp] = a;
  __syncthreads();
  if (warp == 0) {
    MaxSum b = lane < warps ? warpVals[lane] : MaxSum{-INFINITY, 0.0f};
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      MaxSum o{__shfl_xor_sync(0xffffffffu, b.m, off), __shfl_xor_sync(0xffffffffu, b.s, off)};
      b = combine(b, o);
    }
    if (lane == 0)
      result = b;
  }
  __syncthreads();
  return result;
}

template <class V> __device__ V blockSum(V x) {
  __shared__ V warpVals[32];
  __shared__ V result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, off);
  if (lane == 0)
    warpVals[warp] = x;
  __syncthreads();
  if (warp == 0) {
    V y = lane < warps ? warpVals[lane] : V(0);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      y += __shfl_xor_sync(0xffffffffu, y, off);
    if (lane == 0)
      result = y;
  }
  __syncthreads();
  return result;
}

/// The number of counted rows in [0, rows), returned to every thread.
__device__ int blockCountRows(const int32_t *targets, TView mask, int64_t rows,
                              int64_t ignoreIndex) {
  int c = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    c += isCounted(targets, mask, r, ignoreIndex) ? 1 : 0;
  return blockSum<int>(c);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

template <class T>
__global__ void __launch_bounds__(kMaxRowThreads)
    statsKernel(const T *logits, int64_t ld, const int32_t *targets, TView mask, int64_t vocab,
                int64_t vocabBegin, int64_t n, int64_t ignoreIndex, float *rowMax, float *rowSumExp,
                float *targetLogit, bool merge, int64_t positionOffset, KernelError *err) {
  const int64_t r = blockIdx.x;
  const int64_t t = targets[r];
  if (threadIdx.x == 0 && t != ignoreIndex && (t < 0 || t >= vocab))
    reportBadTarget(err, positionOffset + r, t, vocab);
  if (!isCounted(targets, mask, r, ignoreIndex)) { // uniform in the block
    if (threadIdx.x == 0 && !merge)
      rowMax[r] = rowSumExp[r] = targetLogit[r] = 0.0f;
    return;
  }
  const T *row = logits + r * ld;
  MaxSum a{-INFINITY, 0.0f};
  forRow(row, n, [&](const float *v, int count, int64_t) { update(a, v, count); });
  a = blockReduce(a);
  if (threadIdx.x == 0) {
    const int64_t tj = t - vocabBegin;
    const float target = tj >= 0 && tj < n ? toF(row[tj]) : 0.0f;
    if (merge) {
      MaxSum c = combine(MaxSum{rowMax[r], rowSumExp[r]}, a);
      rowMax[r] = c.m;
      rowSumExp[r] = c.s;
      targetLogit[r] += target;
    } else {
      rowMax[r] = a.m;
      rowSumExp[r] = a.s;
      targetLogit[r] = target;
    }
  }
}

template <class T, class TO>
__global__ void __launch_bounds__(kMaxRowThreads)
    gradKernel(TView dloss, const T *logits, int64_t ldIn, const int32_t *targets, TView mask,
               const float *rowMax, const float *rowSumExp, const int32_t *denom, int64_t countRows,
               TO *dlogits, int64_t ldOut, int64_t vocabBegin, int64_t n, int64_t ignoreIndex) {
  const int64_t r = blockIdx.x;
  __shared__ float coefShared;
  int local = denom ? 0 : blockCountRows(targets, mask, countRows, ignoreIndex);
  if (threadIdx.x == 0) {
    const int64_t count = denom ? int64_t(*denom) : int64_t(local);
    const double d = loadAny(dloss.p, dloss.dtype, 0);
    coefShared = count > 0 ? float(d / double(count)) : 0.0f;
  }
  __syncthreads();
  const float coef = coefShared;
  const T *in = logits + r * ldIn;
  TO *out = dlogits + r * ldOut;
  if (!isCounted(targets, mask, r, ignoreIndex)) { // uniform in the block
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      out[j] = fromF<TO>(0.0f);
    return;
  }
  const float mx = rowMax[r];
  const float scale = coef / rowSumExp[r];
  const int64_t tj = int64_t(targets[r]) - vocabBegin;
  mapRow(in, out, n, [&](const float *v, float *o, int count, int64_t j0) {
    for (int q = 0; q < count; ++q) {
      const float p = expf(v[q] - mx);
      // coef * p - coef in one rounding for the target: p - 1 cancels.
      o[q] = j0 + q == tj ? fmaf(p, scale, -coef) : p * scale;
    }
  });
}

__global__ void combineKernel(const float *stats, int64_t blocks, int64_t rows, float *out) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float mx = stats[r];
  for (int64_t b = 1; b < blocks; ++b)
    mx = fmaxf(mx, stats[b * 3 * rows + r]);
  float sum = 0.0f, target = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const float *s = stats + b * 3 * rows;
    const float se = s[rows + r];
    // Blocks of a counted row all have sums >= 1; rows that do not count
    // have zeros everywhere (0 * exp(0)).
    if (se != 0.0f)
      sum += se * expf(s[r] - mx);
    target += s[2 * rows + r];
  }
  out[r] = mx; // out may alias block 0: every input of row r is read above
  out[rows + r] = sum;
  out[2 * rows + r] = target;
}

__global__ void __launch_bounds__(kReduceThreads)
    countKernel(const int32_t *targets, TView mask, int64_t rows, int64_t ignoreIndex,
                int32_t *count) {
  const int c = blockCountRows(targets, mask, rows, ignoreIndex);
  if (threadIdx.x == 0)
    *count = c;
}

__global__ void __launch_bounds__(kReduceThreads)
    lossKernel(const float *stats, const int32_t *targets, TView mask, int64_t rows,
               int64_t ignoreIndex, const int32_t *groupCount, TView loss) {
  double sum = 0.0;
  int count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    if (!isCounted(targets, mask, r, ignoreIndex))
      continue;
    sum += double(stats[r]) + log(double(stats[rows + r])) - double(stats[2 * rows + r]);
    ++count;
  }
  sum = blockSum<double>(sum);
  count = blockSum<int>(count);
  if (threadIdx.x == 0) {
    const int64_t denom = groupCount ? int64_t(*groupCount) : int64_t(count);
    const double value = denom > 0 ? sum / double(denom) : 0.0;
    switch (loss.dtype) {
    case DType::F64:
      *static_cast<double *>(loss.p) = value;
      break;
    case DType::BF16:
      *static_cast<__nv_bfloat16 *>(loss.p) = __float2bfloat16_rn(float(value));
      break;
    case DType::F16:
      *static_cast<__half *>(loss.p) = __float2half_rn(float(value));
      break;
    default:
      *static_cast<float *>(loss.p) = float(value);
      break;
    }
  }
}

template <class TO> __global__ void castKernel(const float *in, TO *out, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = fromF<TO>(in[i]);
}

//===----------------------------------------------------------------------===//
// Launch helpers
//===----------------------------------------------------------------------===//

[[noreturn]] void badArgument(const char *kernel, const std::string &what) {
  std::string prefix = errorRank() >= 0 ? "rank " + std::to_string(errorRank()) + ": " : "";
  throw rt::Error(prefix + kernel + ": " + what);
}

void checkFloat(const char *kernel, const char *what, DType t, bool allowF64 = false) {
  if (t == DType::F32 || t == DType::BF16 || t == DType::F16 || (allowF64 && t == DType::F64))
    return;
  badArgument(kernel, std::string(what) + " has dtype " + rt::dtype_name(t) +
                          ", not a float dtype the GPU kernels run");
}

void checkMask(const char *kernel, TView mask) {
  if (mask.p && mask.dtype != DType::I32)
    checkFloat(kernel, "the mask", mask.dtype, true);
}

void checkRows(const char *kernel, int64_t rows) {
  if (rows < 0 || rows > INT_MAX)
    badArgument(kernel, "rows = " + std::to_string(rows) + " is outside [0, 2^31)");
}

/// Threads per row: about 32 elements per thread, 32..512.
int rowThreads(int64_t n) {
  int t = 32;
  while (t < kMaxRowThreads && int64_t(t) * 32 < n)
    t *= 2;
  return t;
}

template <class F> void dispatchFloat(DType t, F &&f) {
  switch (t) {
  case DType::BF16:
    f(__nv_bfloat16{});
    break;
  case DType::F16:
    f(__half{});
    break;
  default:
    f(float{});
    break;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// LossInternal.h
//===----------------------------------------------------------------------===//

namespace detail {

void ce_stats(TView logits, int64_t ld, const int32_t *targets, TView mask, int64_t rows,
              int64_t vocab, int64_t vocabBegin, int64_t n, int64_t ignoreIndex, float *rowMax,
              float *rowSumExp, float *targetLogit, bool merge, int64_t positionOffset,
              KernelError *err, cudaStream_t s) {
  const char *kernel = "cross_entropy_block_stats";
  checkRows(kernel, rows);
  checkFloat(kernel, "the logits", logits.dtype);
  checkMask(kernel, mask);
  if (vocabBegin < 0 || n <= 0 || vocabBegin + n > vocab || ld < n)
    badArgument(kernel, "vocabulary block [" + std::to_string(vocabBegin) + ", " +
                            std::to_string(vocabBegin + n) +
                            ") is empty or not inside the vocabulary [0, " + std::to_string(vocab) +
                            ") (or ld " + std::to_string(ld) + " is shorter than the block)");
  if (rows == 0)
    return;
  dispatchFloat(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    statsKernel<T><<<unsigned(rows), rowThreads(n), 0, s>>>(
        static_cast<const T *>(logits.p), ld, targets, mask, vocab, vocabBegin, n, ignoreIndex,
        rowMax, rowSumExp, targetLogit, merge, positionOffset, err);
  });
  SHARDC_CUDA_LAUNCH();
}

void ce_grad(TView dloss, TView logits, int64_t ldIn, const int32_t *targets, TView mask,
             const float *rowMax, const float *rowSumExp, const int32_t *denom, TView dlogits,
             int64_t ldOut, int64_t rows, int64_t vocabBegin, int64_t n, int64_t ignoreIndex,
             cudaStream_t s) {
  const char *kernel = "cross_entropy_block_grad";
  checkRows(kernel, rows);
  checkFloat(kernel, "the logits", logits.dtype);
  checkFloat(kernel, "dlogits", dlogits.dtype);
  checkFloat(kernel, "dloss", dloss.dtype, true);
  checkMask(kernel, mask);
  if (vocabBegin < 0 || n <= 0 || ldIn < n || ldOut < n)
    badArgument(kernel, "bad vocabulary block [" + std::to_string(vocabBegin) + ", " +
                            std::to_string(vocabBegin + n) + ") or row strides");
  if (dlogits.p == logits.p && (dlogits.dtype != logits.dtype || ldIn != ldOut))
    badArgument(kernel, "dlogits may alias the logits only with their dtype and row stride");
  if (rows == 0)
    return;
  dispatchFloat(logits.dtype, [&](auto inTag) {
    using T = decltype(inTag);
    dispatchFloat(dlogits.dtype, [&](auto outTag) {
      using TO = decltype(outTag);
      gradKernel<T, TO><<<unsigned(rows), rowThreads(n), 0, s>>>(
          dloss, static_cast<const T *>(logits.p), ldIn, targets, mask, rowMax, rowSumExp, denom,
          rows, static_cast<TO *>(dlogits.p), ldOut, vocabBegin, n, ignoreIndex);
    });
  });
  SHARDC_CUDA_LAUNCH();
}

void zero_columns(TView m, int64_t rows, int64_t ld, int64_t from, cudaStream_t s) {
  if (from >= ld || rows <= 0)
    return;
  const size_t es = rt::dtype_size(m.dtype);
  SHARDC_CUDA(cudaMemset2DAsync(static_cast<char *>(m.p) + size_t(from) * es, size_t(ld) * es, 0,
                                size_t(ld - from) * es, size_t(rows), s));
}

void cast_from_f32(const float *in, TView out, int64_t n, cudaStream_t s) {
  checkFloat("cast", "the output", out.dtype);
  if (n <= 0)
    return;
  if (out.dtype == DType::F32) {
    if (out.p != in)
      SHARDC_CUDA(
          cudaMemcpyAsync(out.p, in, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, s));
    return;
  }
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 132 * 16);
  dispatchFloat(out.dtype, [&](auto tag) {
    using TO = decltype(tag);
    castKernel<TO><<<unsigned(blocks), threads, 0, s>>>(in, static_cast<TO *>(out.p), n);
  });
  SHARDC_CUDA_LAUNCH();
}

} // namespace detail

//===----------------------------------------------------------------------===//
// DeviceKernels.h
//===----------------------------------------------------------------------===//

void cross_entropy_block_stats(TView logits, const int32_t *targets, TView mask, int64_t rows,
                               int64_t vocab, int64_t vocabBegin, int64_t blockVocab,
                               int64_t ignoreIndex, float *rowMax, float *rowSumExp,
                               float *targetLogit, KernelError *err, cudaStream_t s) {
  detail::ce_stats(logits, blockVocab, targets, mask, rows, vocab, vocabBegin, blockVocab,
                   ignoreIndex, rowMax, rowSumExp, targetLogit, /*merge=*/false,
                   /*positionOffset=*/0, err, s);
}

void cross_entropy_combine_stats(const float *stats, int64_t blocks, int64_t rows, float *out,
                                 cudaStream_t s) {
  if (blocks <= 0)
    badArgument("cross_entropy_combine_stats", "no blocks to combine");
  checkRows("cross_entropy_combine_stats", rows);
  if (rows == 0)
    return;
  const int threads = 256;
  combineKernel<<<unsigned((rows + threads - 1) / threads), threads, 0, s>>>(stats, blocks, rows,
                                                                             out);
  SHARDC_CUDA_LAUNCH();
}

void cross_entropy_count(const int32_t *targets, TView mask, int64_t rows, int64_t ignoreIndex,
                         int32_t *count, cudaStream_t s) {
  checkRows("cross_entropy_count", rows);
  checkMask("cross_entropy_count", mask);
  countKernel<<<1, kReduceThreads, 0, s>>>(targets, mask, rows, ignoreIndex, count);
  SHARDC_CUDA_LAUNCH();
}

void cross_entropy_loss(const float *stats, const int32_t *targets, TView mask, int64_t rows,
                        int64_t ignoreIndex, const int32_t *groupCount, TView loss,
                        cudaStream_t s) {
  checkRows("cross_entropy_loss", rows);
  checkMask("cross_entropy_loss", mask);
  checkFloat("cross_entropy_loss", "the loss", loss.dtype, true);
  lossKernel<<<1, kReduceThreads, 0, s>>>(stats, targets, mask, rows, ignoreIndex, groupCount,
                                          loss);
  SHARDC_CUDA_LAUNCH();
}

void cross_entropy_block_grad(TView dloss, TView logits, const int32_t *targets, TView mask,
                              const float *stats, const int32_t *groupCount, TView dlogits,
                              int64_t rows, int64_t vocabBegin, int64_t blockVocab,
                              int64_t ignoreIndex, cudaStream_t s) {
  detail::ce_grad(dloss, logits, blockVocab, targets, mask, stats, stats + rows, groupCount,
                  dlogits, blockVocab, rows, vocabBegin, blockVocab, ignoreIndex, s);
}

} // namespace shardc::cuda
