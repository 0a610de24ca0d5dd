//===- Norm.cu - softmax, layernorm, rmsnorm and rope ---------------------===//
//
// Row kernels of the CUDA backend (DeviceKernels.h), mirroring
// runtime/cpu/Norm.cpp, Backward.cpp and Elementwise.cpp (rope). Loads are
// widened to f32, statistics are reduced in f32 in a fixed order (so every
// launch of a shape gives the same bits) and each result is rounded once.
//
// Row scheduling ("teams"): a row is owned by a team of T threads:
//  - T = 32 (one warp per row, 8 rows per 256-thread block) for rows of up to
//    1024 columns (512 for the backward kernels, which hold more per column);
//  - T = 512 (one block per row) for wider rows.
// Thread t of a team owns the columns c = t + k * T (k < M): each warp-wide
// access is 32 consecutive elements (coalesced), and with M > 0 the row stays
// in registers between the passes, so DRAM sees one read and one write per
// element. Rows wider than 512 * M_max (M = 0) are re-read per pass; those
// re-reads of a 64+ KB row mostly hit L2.
// Team reductions are xor-butterflies within a warp (every lane gets the same,
// order-fixed sum) and, for T = 512, the 16 warp sums combined in warp order
// through shared memory.
//
// Parameter gradients (dgamma, dbeta) are deterministic two-stage sums: the
// backward kernel runs a fixed number of slots (teams), slot s handling rows
// s, s + slots, ... and keeping its per-column partial sums in registers
// (M > 0) or in its own workspace row (M = 0); a second kernel sums the
// slots' partials in slot order.
//
// Every kernel reads an element before writing it from the same thread, so
// outputs may alias their first input (and residualOut may alias x or
// residual).
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
#include <climits>
#include <cmath>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace shardc::cuda {

namespace {

template <int N> using IC = std::integral_constant<int, N>;

constexpr int kWarpRowsCta = 256; ///< threads of a warp-per-row block (8 rows)
constexpr int kRowTeam = 512;     ///< threads of a block-per-row team
constexpr int64_t kMaxGrid = 1 << 16;

//===----------------------------------------------------------------------===//
// Device helpers
//===----------------------------------------------------------------------===//


// Row arrays in registers: thread `tid` of a team of T holds columns
// tid + k * T. The dtype switch is outside the unrolled loop (one per row
// array, not per element), which keeps the code small and fast to compile;
// the row kernels take f32, bf16 and f16 only (checked on the host).

template <int M, int T, class E>
__device__ __forceinline__ void loadRowT(const void *p, int64_t base, int tid, int cols,
                                         float (&v)[M], float pad) {
  const E *e = static_cast<const E *>(p) + base;
#pragma unroll
  for (int k = 0; k < M; ++k) {
    const int c = tid + k * T;
    v[k] = c < cols ? toF(e[c]) : pad;
  }
}

template <int M, int T>
__device__ __forceinline__ void loadRow(TView t, int64_t base, int tid, int cols, float (&v)[M],
                                        float pad = 0.0f) {
  switch (t.dtype) {
  case DType::F32:
    loadRowT<M, T, float>(t.p, base, tid, cols, v, pad);
    break;
  case DType::BF16:
    loadRowT<M, T, __nv_bfloat16>(t.p, base, tid, cols, v, pad);
    break;
  default:
    loadRowT<M, T, __half>(t.p, base, tid, cols, v, pad);
    break;
  }
}

template <int M, int T, class E>
__device__ __forceinline__ void storeRowT(void *p, int64_t base, int tid, int cols,
                                          const float (&v)[M]) {
  E *e = static_cast<E *>(p) + base;
#pragma unroll
  for (int k = 0; k < M; ++k) {
    const int c = tid + k * T;
    if (c < cols)
      e[c] = fromF<E>(v[k]);
  }
}

template <int M, int T>
__device__ __forceinline__ void storeRow(TView t, int64_t base, int tid, int cols,
                                         const float (&v)[M]) {
  switch (t.dtype) {
  case DType::F32:
    storeRowT<M, T, float>(t.p, base, tid, cols, v);
    break;
  case DType::BF16:
    storeRowT<M, T, __nv_bfloat16>(t.p, base, tid, cols, v);
    break;
  default:
    storeRowT<M, T, __half>(t.p, base, tid, cols, v);
    break;
  }
}

/// Calls f(k, value) for each column tid + k * T < cols of row `base` of t,
/// without a register array of its own.
template <int M, int T, class E, class F>
__device__ __forceinline__ void forRowT(const void *p, int64_t base, int tid, int cols, F &f) {
  const E *e = static_cast<const E *>(p) + base;
#pragma unroll
  for (int k = 0; k < M; ++k) {
    const int c = tid + k * T;
    if (c < cols)
      f(k, toF(e[c]));
  }
}

template <int M, int T, class F>
__device__ __forceinline__ void forRow(TView t, int64_t base, int tid, int cols, F &&f) {
  switch (t.dtype) {
  case DType::F32:
    forRowT<M, T, float>(t.p, base, tid, cols, f);
    break;
  case DType::BF16:
    forRowT<M, T, __nv_bfloat16>(t.p, base, tid, cols, f);
    break;
  default:
    forRowT<M, T, __half>(t.p, base, tid, cols, f);
    break;
  }
}

/// Rounds every value of v to dtype t (and widens it back).
template <int M> __device__ __forceinline__ void roundRow(DType t, float (&v)[M]) {
  if (t == DType::BF16) {
#pragma unroll
    for (int k = 0; k < M; ++k)
      v[k] = __bfloat162float(__float2bfloat16_rn(v[k]));
  } else if (t == DType::F16) {
#pragma unroll
    for (int k = 0; k < M; ++k)
      v[k] = __half2float(__float2half_rn(v[k]));
  }
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <int T> __device__ __forceinline__ int teamTid() {
  return T == 32 ? int(threadIdx.x % 32) : int(threadIdx.x);
}
template <int T> __device__ __forceinline__ int64_t teamId() {
  return T == 32 ? int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32
                 : int64_t(blockIdx.x);
}
template <int T> __device__ __forceinline__ int64_t teamCount() {
  return T == 32 ? int64_t(gridDim.x) * (blockDim.x / 32) : int64_t(gridDim.x);
}

/// Sums N values over the team; every thread receives the sums. `red` is
/// shared scratch of N * 32 floats (unused for T = 32). The leading barrier
/// keeps a fast warp from overwriting `red` while others still read the
/// previous reduction.
template <int T, int N>
__device__ __forceinline__ void teamSum(float (&v)[N], float *red) {
#pragma unroll
  for (int j = 0; j < N; ++j)
    v[j] = warpSum(v[j]);
  if constexpr (T > 32) {
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < N; ++j)
        red[j * 32 + w] = v[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < N; ++j)
      v[j] = warpSum(lane < T / 32 ? red[j * 32 + lane] : 0.0f);
  }
}

template <int T> __device__ __forceinline__ float teamMax(float v, float *red) {
  v = warpMax(v);
  if constexpr (T > 32) {
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0)
      red[w] = v;
    __syncthreads();
    v = warpMax(lane < T / 32 ? red[lane] : -INFINITY);
  }
  return v;
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

/// y = exp(x - max) / sum exp(x - max) per row (cpu::softmax_lastdim: the
/// exps in f32, y = exp * (1 / sum)). Three team passes: max, sum, write.
template <int M, int T>
__global__ void __launch_bounds__(T == 32 ? kWarpRowsCta : T)
    softmaxKernel(TView x, TView out, int64_t rows, int cols) {
  __shared__ float red[64];
  const int tid = teamTid<T>();
  for (int64_t row = teamId<T>(); row < rows; row += teamCount<T>()) {
    const int64_t base = row * cols;
    if constexpr (M > 0) {
      float v[M];
      loadRow<M, T>(x, base, tid, cols, v, -INFINITY);
      float mx = -INFINITY;
#pragma unroll
      for (int k = 0; k < M; ++k)
        mx = fmaxf(mx, v[k]);
      mx = teamMax<T>(mx, red);
      float sum[1] = {0.0f};
#pragma unroll
      for (int k = 0; k < M; ++k)
        if (tid + k * T < cols) {
          v[k] = expf(v[k] - mx);
          sum[0] += v[k];
        }
      teamSum<T>(sum, red);
      const float inv = 1.0f / sum[0];
#pragma unroll
      for (int k = 0; k < M; ++k)
        v[k] *= inv;
      storeRow<M, T>(out, base, tid, cols, v);
    } else {
      float mx = -INFINITY;
      for (int c = tid; c < cols; c += T)
        mx = fmaxf(mx, load(x, base + c));
      mx = teamMax<T>(mx, red);
      float sum[1] = {0.0f};
      for (int c = tid; c < cols; c += T)
        sum[0] += expf(load(x, base + c) - mx);
      teamSum<T>(sum, red);
      const float inv = 1.0f / sum[0];
      for (int c = tid; c < cols; c += T)
        store(out, base + c, expf(load(x, base + c) - mx) * inv);
    }
  }
}

/// dx = y * (dy - sum(dy * y)) per row: one team reduction.
template <int M, int T>
__global__ void __launch_bounds__(T == 32 ? kWarpRowsCta : T)
    softmaxGradKernel(TView dy, TView y, TView dx, int64_t rows, int cols) {
  __shared__ float red[64];
  const int tid = teamTid<T>();
  for (int64_t row = teamId<T>(); row < rows; row += teamCount<T>()) {
    const int64_t base = row * cols;
    float dot[1] = {0.0f};
    if constexpr (M > 0) {
      float dv[M], yv[M];
      loadRow<M, T>(dy, base, tid, cols, dv);
      loadRow<M, T>(y, base, tid, cols, yv);
#pragma unroll
      for (int k = 0; k < M; ++k)
        dot[0] += dv[k] * yv[k];
      teamSum<T>(dot, red);
#pragma unroll
      for (int k = 0; k < M; ++k)
        yv[k] = yv[k] * (dv[k] - dot[0]);
      storeRow<M, T>(dx, base, tid, cols, yv);
    } else {
      for (int c = tid; c < cols; c += T)
        dot[0] += load(dy, base + c) * load(y, base + c);
      teamSum<T>(dot, red);
      for (int c = tid; c < cols; c += T) {
        const float yc = load(y, base + c);
        store(dx, base + c, yc * (load(dy, base + c) - dot[0]));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// layernorm / rmsnorm forward, with the fused residual add
//===----------------------------------------------------------------------===//

struct NormFwdArgs {
  TView x, res, gamma, beta, out, resOut;
  DType hType; ///< dtype h = x + res is rounded to (resOut's, else x's)
  int64_t rows;
  int cols;
  float eps;
};

/// h[i]: x, or x + residual rounded to hType (exactly what an add kernel
/// followed by the norm would see), stored to residualOut when asked.
__device__ __forceinline__ float loadH(const NormFwdArgs &a, int64_t i, bool storeRes) {
  float v = load(a.x, i);
  if (a.res.p) {
    v = roundTo(a.hType, v + load(a.res, i));
    if (storeRes && a.resOut.p)
      store(a.resOut, i, v);
  }
  return v;
}

/// h again in a later pass (M = 0): from residualOut when it was stored.
__device__ __forceinline__ float reloadH(const NormFwdArgs &a, int64_t i) {
  return a.res.p && a.resOut.p ? load(a.resOut, i) : loadH(a, i, false);
}

/// LayerNorm (kRms = false): two-pass mean and biased variance, y = (h -
/// mean) * rstd * gamma + beta. RMSNorm (kRms): y = h * rstd * gamma with
/// rstd = 1 / sqrt(mean(h^2) + eps). As cpu::layernorm_forward /
/// rmsnorm_forward, in f32.
template <int M, int T, bool kRms>
__global__ void __launch_bounds__(T == 32 ? kWarpRowsCta : T) normKernel(NormFwdArgs a) {
  __shared__ float red[64];
  const int tid = teamTid<T>();
  const int cols = a.cols;
  const float fc = float(cols);
  for (int64_t row = teamId<T>(); row < a.rows; row += teamCount<T>()) {
    const int64_t base = row * cols;
    float s[1] = {0.0f};
    if constexpr (M > 0) {
      float h[M];
      loadRow<M, T>(a.x, base, tid, cols, h);
      if (a.res.p) {
        forRow<M, T>(a.res, base, tid, cols, [&](int k, float r) { h[k] += r; });
        roundRow(a.hType, h);
        if (a.resOut.p)
          storeRow<M, T>(a.resOut, base, tid, cols, h);
      }
#pragma unroll
      for (int k = 0; k < M; ++k) // padding columns hold 0
        s[0] += kRms ? h[k] * h[k] : h[k];
      teamSum<T>(s, red);
      float mean = 0.0f, rs;
      if constexpr (kRms) {
        rs = 1.0f / sqrtf(s[0] / fc + a.eps);
      } else {
        mean = s[0] / fc;
        float q[1] = {0.0f};
#pragma unroll
        for (int k = 0; k < M; ++k)
          if (tid + k * T < cols) {
            const float d = h[k] - mean;
            q[0] += d * d;
          }
        teamSum<T>(q, red);
        rs = 1.0f / sqrtf(q[0] / fc + a.eps);
      }
#pragma unroll
      for (int k = 0; k < M; ++k)
        h[k] = kRms ? h[k] * rs : (h[k] - mean) * rs;
      forRow<M, T>(a.gamma, 0, tid, cols, [&](int k, float g) { h[k] *= g; });
      if constexpr (!kRms)
        forRow<M, T>(a.beta, 0, tid, cols, [&](int k, float b) { h[k] += b; });
      storeRow<M, T>(a.out, base, tid, cols, h);
    } else {
      for (int c = tid; c < cols; c += T) {
        const float h = loadH(a, base + c, true);
        s[0] += kRms ? h * h : h;
      }
      teamSum<T>(s, red);
      float mean = 0.0f, rs;
      if constexpr (kRms) {
        rs = 1.0f / sqrtf(s[0] / fc + a.eps);
      } else {
        mean = s[0] / fc;
        float q[1] = {0.0f};
        for (int c = tid; c < cols; c += T) {
          const float d = reloadH(a, base + c) - mean;
          q[0] += d * d;
        }
        teamSum<T>(q, red);
        rs = 1.0f / sqrtf(q[0] / fc + a.eps);
      }
      for (int c = tid; c < cols; c += T) {
        const float h = reloadH(a, base + c);
        const float y = kRms ? (h * rs) * load(a.gamma, c)
                             : ((h - mean) * rs) * load(a.gamma, c) + load(a.beta, c);
        store(a.out, base + c, y);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// layernorm / rmsnorm backward
//===----------------------------------------------------------------------===//

struct NormBwdArgs {
  TView dy, x, gamma, dx;
  TView dres; ///< added to dx when non-null (the residual stream's gradient)
  float *partG, *partB; ///< [slots][cols] partial dgamma / dbeta
  int64_t rows, slots;
  int cols;
  float eps;
};

/// Per row (statistics recomputed from x, g = dy * gamma):
///   LayerNorm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
///              dgamma += dy * xhat, dbeta += dy;
///   RMSNorm:   dx = rstd * (g - x * rstd^2 * mean(g * x)), dgamma += dy * x * rstd.
/// The team is slot `teamId`; its partial sums go to part*[slot].
/// g is rounded by __fmul_rn, never contracted into an FMA: `g - sum(g) / n`
/// must see the same g that was summed, or a row with one column (or constant
/// x, where dx is exactly 0) gets g's rounding error times rstd (found on an
/// H100: 1e-5 instead of 0 at cols = 1).
template <int M, int T, bool kRms>
__global__ void __launch_bounds__(T == 32 ? kWarpRowsCta : T) normGradKernel(NormBwdArgs a) {
  __shared__ float red[64];
  const int64_t slot = teamId<T>();
  if (slot >= a.slots) // uniform over the team
    return;
  const int tid = teamTid<T>();
  const int cols = a.cols;
  const float fc = float(cols);
  float *pg = a.partG + slot * cols;
  float *pb = kRms ? nullptr : a.partB + slot * cols;
  if constexpr (M > 0) {
    float accG[M], accB[M];
#pragma unroll
    for (int k = 0; k < M; ++k)
      accG[k] = accB[k] = 0.0f;
    for (int64_t row = slot; row < a.rows; row += a.slots) {
      const int64_t base = row * cols;
      float xv[M], dv[M];
      loadRow<M, T>(a.x, base, tid, cols, xv);
      loadRow<M, T>(a.dy, base, tid, cols, dv);
      float s[1] = {0.0f};
#pragma unroll
      for (int k = 0; k < M; ++k) // padding columns hold 0
        s[0] += kRms ? xv[k] * xv[k] : xv[k];
      teamSum<T>(s, red);
      float mean = 0.0f, rs;
      if constexpr (kRms) {
        rs = 1.0f / sqrtf(s[0] / fc + a.eps);
      } else {
        mean = s[0] / fc;
        float q[1] = {0.0f};
#pragma unroll
        for (int k = 0; k < M; ++k)
          if (tid + k * T < cols) {
            const float d = xv[k] - mean;
            q[0] += d * d;
          }
        teamSum<T>(q, red);
        rs = 1.0f / sqrtf(q[0] / fc + a.eps);
      }
      // With g = dy * gamma. LN: t = (sum g, sum g * xhat); RMS: t[0] = sum g * x.
      float t[2] = {0.0f, 0.0f};
      forRow<M, T>(a.gamma, 0, tid, cols, [&](int k, float gm) {
        const float g = __fmul_rn(dv[k], gm);
        if constexpr (kRms) {
          t[0] += g * xv[k];
        } else {
          t[0] += g;
          t[1] += g * ((xv[k] - mean) * rs);
        }
      });
      teamSum<T>(t, red);
      // dx overwrites xv in place; padding columns are never stored.
      forRow<M, T>(a.gamma, 0, tid, cols, [&](int k, float gm) {
        const float g = __fmul_rn(dv[k], gm);
        if constexpr (kRms) {
          const float kk = rs * rs * t[0] / fc;
          accG[k] += dv[k] * xv[k] * rs;
          xv[k] = rs * (g - xv[k] * kk);
        } else {
          const float xhat = (xv[k] - mean) * rs;
          accG[k] += dv[k] * xhat;
          accB[k] += dv[k];
          xv[k] = rs * (g - t[0] / fc - xhat * (t[1] / fc));
        }
      });
      if (a.dres.p) { // read where dx is written: dx may overwrite it
        float rv[M];
        loadRow<M, T>(a.dres, base, tid, cols, rv);
#pragma unroll
        for (int k = 0; k < M; ++k)
          xv[k] = __fadd_rn(xv[k], rv[k]); // never contracted with the product
      }
      storeRow<M, T>(a.dx, base, tid, cols, xv);
    }
#pragma unroll
    for (int k = 0; k < M; ++k) {
      const int c = tid + k * T;
      if (c < cols) {
        pg[c] = accG[k];
        if constexpr (!kRms)
          pb[c] = accB[k];
      }
    }
  } else {
    for (int64_t row = slot; row < a.rows; row += a.slots) {
      const int64_t base = row * cols;
      const bool firstRow = row == slot;
      float s[1] = {0.0f};
      for (int c = tid; c < cols; c += T) {
        const float xc = load(a.x, base + c);
        s[0] += kRms ? xc * xc : xc;
      }
      teamSum<T>(s, red);
      float mean = 0.0f, rs;
      if constexpr (kRms) {
        rs = 1.0f / sqrtf(s[0] / fc + a.eps);
      } else {
        mean = s[0] / fc;
        float q[1] = {0.0f};
        for (int c = tid; c < cols; c += T) {
          const float d = load(a.x, base + c) - mean;
          q[0] += d * d;
        }
        teamSum<T>(q, red);
        rs = 1.0f / sqrtf(q[0] / fc + a.eps);
      }
      float t[2] = {0.0f, 0.0f};
      for (int c = tid; c < cols; c += T) {
        const float xc = load(a.x, base + c);
        const float g = __fmul_rn(load(a.dy, base + c), load(a.gamma, c));
        if constexpr (kRms) {
          t[0] += g * xc;
        } else {
          t[0] += g;
          t[1] += g * ((xc - mean) * rs);
        }
      }
      teamSum<T>(t, red);
      for (int c = tid; c < cols; c += T) {
        const float xc = load(a.x, base + c);
        const float dyc = load(a.dy, base + c);
        const float g = __fmul_rn(dyc, load(a.gamma, c));
        float d, partG;
        if constexpr (kRms) {
          const float kk = rs * rs * t[0] / fc;
          d = rs * (g - xc * kk);
          partG = dyc * xc * rs;
        } else {
          const float xhat = (xc - mean) * rs;
          d = rs * (g - t[0] / fc - xhat * (t[1] / fc));
          partG = dyc * xhat;
          pb[c] = firstRow ? dyc : pb[c] + dyc;
        }
        pg[c] = firstRow ? partG : pg[c] + partG;
        if (a.dres.p)
          d = __fadd_rn(d, load(a.dres, base + c));
        store(a.dx, base + c, d);
      }
    }
  }
}

/// out[c] = sum over slots of part[slot][c], in slot order: 8 thread rows
/// each sum a strided subset in order, then row 0 adds the 8 in row order.
__global__ void __launch_bounds__(256)
    slotReduceKernel(const float *part, int64_t slots, int cols, TView out) {
  __shared__ float sh[8][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int64_t c = int64_t(blockIdx.x) * 32 + tx;
  float acc = 0.0f;
  if (c < cols)
    for (int64_t p = ty; p < slots; p += 8)
      acc += part[p * cols + c];
  sh[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < cols) {
    float sum = 0.0f;
#pragma unroll
    for (int y = 0; y < 8; ++y)
      sum += sh[y][tx];
    store(out, c, sum);
  }
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

constexpr int kRopeRows = 16; ///< (batch, head) rows per thread per angle

/// Thread p owns pair (s, i): it computes the angle (s + offset) *
/// theta^(-2i/D) in double with a double sincos, exactly as the CPU table
/// (rounded to f32 once), and rotates that pair in kRopeRows (b, h) rows, so
/// the double-precision work is amortised. Consecutive threads take
/// consecutive i: loads and stores of a half-row coalesce.
__global__ void __launch_bounds__(256)
    ropeKernel(TView x, TView out, int64_t S, int64_t H, int64_t D, int64_t BH, double theta,
               int64_t positionOffset, double sign) {
  const int64_t half = D / 2, pairs = S * half;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = p / half, i = p - s * half;
    const double pos = double(s + positionOffset);
    const double angle = pos * pow(theta, -2.0 * double(i) / double(D));
    double sn, cs;
    sincos(angle, &sn, &cs);
    const float c = float(cs), sv = float(sign * sn);
    for (int64_t r0 = int64_t(blockIdx.y) * kRopeRows; r0 < BH;
         r0 += int64_t(gridDim.y) * kRopeRows) {
      int64_t b = r0 / H, h = r0 - b * H;
      const int64_t r1 = r0 + kRopeRows < BH ? r0 + kRopeRows : BH;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t off = ((b * S + s) * H + h) * D + i;
        const float lo = load(x, off), hi = load(x, off + half);
        store(out, off, lo * c - hi * sv);
        store(out, off + half, hi * c + lo * sv);
        if (++h == H) {
          h = 0;
          ++b;
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Host-side dispatch
//===----------------------------------------------------------------------===//

/// Picks (M, T) for `cols`: warp teams up to 1024 columns (512 with kGrad),
/// 512-thread teams with the row in registers up to 16384 (8192), then
/// uncached (M = 0). The backward keeps 512-thread teams (M = 2) for 513..1024
/// columns: measured on an H200 (GPT-2 124M step, 25 layernorm_grad calls at
/// 768 columns, 2026-11-27), a warp per row with M = 24 took 30.4 ms per step
/// against their 21.2: it holds 197 registers per thread (the row, dy and the
/// dgamma/dbeta accumulators), so one 8-warp block fits an SM, against 32
/// warps per SM for the block teams.
template <bool kGrad, class F> void dispatchCols(int64_t cols, F &&f) {
  if (cols <= 128)
    f(IC<4>{}, IC<32>{});
  else if (cols <= 256)
    f(IC<8>{}, IC<32>{});
  else if (cols <= 512)
    f(IC<16>{}, IC<32>{});
  else if (cols <= 1024) {
    if constexpr (kGrad)
      f(IC<2>{}, IC<kRowTeam>{});
    else if (cols <= 768) // GPT-2 124M's width without M = 32's idle lanes (the forward:
      f(IC<24>{}, IC<32>{}); // 5.4 -> 3.1 ms per 124M step on an H200, 2026-11-27)
    else
      f(IC<32>{}, IC<32>{});
  } else if (cols <= 2048)
    f(IC<4>{}, IC<kRowTeam>{});
  else if (cols <= 4096)
    f(IC<8>{}, IC<kRowTeam>{});
  else if (cols <= 8192)
    f(IC<16>{}, IC<kRowTeam>{});
  else {
    if constexpr (!kGrad) {
      if (cols <= 16384) {
        f(IC<32>{}, IC<kRowTeam>{});
        return;
      }
    }
    f(IC<0>{}, IC<kRowTeam>{});
  }
}

template <int T> int threadsOf() { return T == 32 ? kWarpRowsCta : T; }

/// Blocks for `teams` teams of T threads.
template <int T> int64_t blocksOf(int64_t teams, bool capped) {
  int64_t b = T == 32 ? (teams + kWarpRowsCta / 32 - 1) / (kWarpRowsCta / 32) : teams;
  return capped ? std::clamp<int64_t>(b, 1, kMaxGrid) : std::max<int64_t>(b, 1);
}

void checkCols(const char *kernel, int64_t cols) {
  if (cols > INT_MAX)
    throw rt::Error(std::string(kernel) + ": rows of " + std::to_string(cols) +
                    " elements are too long");
}

/// The row kernels take f32, bf16 and f16 tensors (f64 is not run on the GPU).
void checkDTypes(const char *kernel, std::initializer_list<TView> views) {
  for (const TView &v : views)
    if (v.p && v.dtype != DType::F32 && v.dtype != DType::BF16 && v.dtype != DType::F16)
      throw rt::Error(std::string(kernel) + ": " + rt::dtype_name(v.dtype) +
                      " tensors are not supported on the GPU");
}

/// Slots (partial-sum rows) of the backward kernels: one per warp team (up
/// to 1024) or per block team (up to 264, fewer for very wide rows so the
/// workspace stays <= 16 MB per parameter). A function of the shape only,
/// so the order of the sums, and the result, never depends on the device;
/// the memory plan sizes the workspace by it (KernelScratch.h).
int64_t gradSlots(int64_t rows, int64_t cols) { return rt::scratch::normGradSlots(rows, cols); }

template <bool kRms>
void normForward(TView x, TView residual, TView gamma, TView beta, TView out,
                 TView residualOut, int64_t rows, int64_t cols, double eps, cudaStream_t s) {
  checkCols(kRms ? "rmsnorm" : "layernorm", cols);
  checkDTypes(kRms ? "rmsnorm" : "layernorm", {x, residual, gamma, beta, out, residualOut});
  if (rows <= 0 || cols <= 0)
    return;
  NormFwdArgs a{x,
                residual,
                gamma,
                beta,
                out,
                residualOut,
                residualOut.p ? residualOut.dtype : x.dtype,
                rows,
                int(cols),
                float(eps)};
  dispatchCols<false>(cols, [&](auto m, auto t) {
    constexpr int M = decltype(m)::value, T = decltype(t)::value;
    normKernel<M, T, kRms><<<blocksOf<T>(rows, true), threadsOf<T>(), 0, s>>>(a);
  });
  SHARDC_CUDA_LAUNCH();
}

template <bool kRms>
void normBackward(TView dy, TView x, TView gamma, TView dx, TView dgamma, TView dbeta,
                  int64_t rows, int64_t cols, double eps, void *workspace, cudaStream_t s,
                  TView dres) {
  checkCols(kRms ? "rmsnorm_grad" : "layernorm_grad", cols);
  checkDTypes(kRms ? "rmsnorm_grad" : "layernorm_grad", {dy, x, gamma, dx, dgamma, dbeta, dres});
  if (cols <= 0)
    return;
  if (rows <= 0) {
    for (TView t : {dgamma, dbeta})
      if (t.p)
        SHARDC_CUDA(cudaMemsetAsync(t.p, 0, size_t(cols * rt::dtype_size(t.dtype)), s));
    return;
  }
  const int64_t slots = gradSlots(rows, cols);
  float *partG = static_cast<float *>(workspace);
  NormBwdArgs a{dy,    x,     gamma,     dx,        dres, partG, kRms ? nullptr : partG + slots * cols,
                rows,  slots, int(cols), float(eps)};
  dispatchCols<true>(cols, [&](auto m, auto t) {
    constexpr int M = decltype(m)::value, T = decltype(t)::value;
    normGradKernel<M, T, kRms><<<blocksOf<T>(slots, false), threadsOf<T>(), 0, s>>>(a);
  });
  SHARDC_CUDA_LAUNCH();
  const unsigned colBlocks = unsigned((cols + 31) / 32);
  if (dgamma.p) {
    slotReduceKernel<<<colBlocks, 256, 0, s>>>(a.partG, slots, int(cols), dgamma);
    SHARDC_CUDA_LAUNCH();
  }
  if (!kRms && dbeta.p) {
    slotReduceKernel<<<colBlocks, 256, 0, s>>>(a.partB, slots, int(cols), dbeta);
    SHARDC_CUDA_LAUNCH();
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

void softmax(TView x, TView out, int64_t rows, int64_t cols, cudaStream_t s) {
  checkCols("softmax", cols);
  checkDTypes("softmax", {x, out});
  if (rows <= 0 || cols <= 0)
    return;
  dispatchCols<false>(cols, [&](auto m, auto t) {
    constexpr int M = decltype(m)::value, T = decltype(t)::value;
    softmaxKernel<M, T><<<blocksOf<T>(rows, true), threadsOf<T>(), 0, s>>>(x, out, rows,
                                                                         int(cols));
  });
  SHARDC_CUDA_LAUNCH();
}

void softmax_grad(TView dy, TView y, TView dx, int64_t rows, int64_t cols, cudaStream_t s) {
  checkCols("softmax_grad", cols);
  checkDTypes("softmax_grad", {dy, y, dx});
  if (rows <= 0 || cols <= 0)
    return;
  dispatchCols<false>(cols, [&](auto m, auto t) {
    constexpr int M = decltype(m)::value, T = decltype(t)::value;
    softmaxGradKernel<M, T><<<blocksOf<T>(rows, true), threadsOf<T>(), 0, s>>>(dy, y, dx, rows,
                                                                             int(cols));
  });
  SHARDC_CUDA_LAUNCH();
}

void layernorm(TView x, TView residual, TView gamma, TView beta, TView out, TView residualOut,
               int64_t rows, int64_t cols, double eps, cudaStream_t s) {
  normForward<false>(x, residual, gamma, beta, out, residualOut, rows, cols, eps, s);
}

void rmsnorm(TView x, TView residual, TView gamma, TView out, TView residualOut, int64_t rows,
             int64_t cols, double eps, cudaStream_t s) {
  normForward<true>(x, residual, gamma, TView{}, out, residualOut, rows, cols, eps, s);
}

int64_t layernorm_grad_workspace_bytes(int64_t rows, int64_t cols) {
  return rt::scratch::normGradBytes(rows, cols, /*rms=*/false);
}

int64_t rmsnorm_grad_workspace_bytes(int64_t rows, int64_t cols) {
  return rt::scratch::normGradBytes(rows, cols, /*rms=*/true);
}

void layernorm_grad(TView dy, TView x, TView gamma, TView dx, TView dgamma, TView dbeta,
                    int64_t rows, int64_t cols, double eps, void *workspace, cudaStream_t s,
                    TView dresidual) {
  normBackward<false>(dy, x, gamma, dx, dgamma, dbeta, rows, cols, eps, workspace, s, dresidual);
}

void rmsnorm_grad(TView dy, TView x, TView gamma, TView dx, TView dgamma, int64_t rows,
                  int64_t cols, double eps, void *workspace, cudaStream_t s, TView dresidual) {
  normBackward<true>(dy, x, gamma, dx, dgamma, TView{}, rows, cols, eps, workspace, s, dresidual);
}

void rope(TView x, TView out, int64_t B, int64_t S, int64_t H, int64_t D, double theta,
          int64_t positionOffset, bool inverse, cudaStream_t s) {
  const char *kernel = inverse ? "rope_backward" : "rope";
  if (D % 2 != 0)
    throw rt::Error(std::string(kernel) + ": head dimension " + std::to_string(D) +
                    " must be even");
  if (!(theta > 0))
    throw rt::Error(std::string(kernel) + ": theta = " + std::to_string(theta) +
                    " must be positive");
  if (B <= 0 || S <= 0 || H <= 0 || D <= 0)
    return;
  const int64_t pairs = S * (D / 2), BH = B * H;
  dim3 grid(unsigned(std::clamp<int64_t>((pairs + 255) / 256, 1, kMaxGrid)),
            unsigned(std::clamp<int64_t>((BH + kRopeRows - 1) / kRopeRows, 1, 65535)));
  ropeKernel<<<grid, 256, 0, s>>>(x, out, S, H, D, BH, theta, positionOffset,
                                  inverse ? -1.0 : 1.0);
  SHARDC_CUDA_LAUNCH();
}

} // namespace shardc::cuda
