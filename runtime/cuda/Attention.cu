//===- Attention.cu - flash-style attention forward and backward ----------===//
//
// attention_forward / attention_backward of DeviceKernels.h: the FlashAttention-2
// algorithm (online softmax over key tiles held in shared memory; the S x S
// scores are never written to global memory) on CUDA cores in f32.
//
// bf16/f16 with D = 64 or 128 and 16-byte aligned tensors go to the tensor-core
// kernels of AttentionTC.cu (mma.sync, same semantics and workspace); the f32
// kernels here serve every other case and stay the reference-exact fallback.
//
// Layout and semantics are those of cpu::attention_forward/backward: BSHD,
// q/out/dq [B, S, Hq, D], k/v/dk/dv [B, S, Hkv, D], query head h reads kv head
// h / (Hq / Hkv), causal masks key j > i, `scale` multiplies the scores, lse is
// [B, Hq, S] (natural log of the sum of exp of the scaled, masked scores).
//
// Tiling, shared by every kernel here:
//  - a CTA has 256 threads seen as a 16 x 16 grid (ty = tid / 16, tx = tid %
//    16) and works on 64-row tiles. The head dim is padded to Dp in {32, 64,
//    128} (template), zero-filled in shared memory, so any D <= 128 works.
//  - tiles are staged in shared memory as f32 [64][Dp + 4] (loads convert
//    from bf16/f16/f32 once; 16-byte vector loads when D and the pointers
//    allow, element loads otherwise). The +4 pad makes the float4 reads of
//    tile rows conflict-free.
//  - a score tile [64 x 64] = A B^T (rows of A: the CTA's rows, rows of B: the
//    tile's columns) is a register micro-tile of 4 x 4 per thread: rows
//    ty*4 + i, columns tx + 16*c. The 16 threads holding a row are one
//    half-warp, so row max / row sum are 4 xor-shuffles.
//  - a [64 x Dp] accumulator (O, dQ, dK, dV) is a 4 x Dp/16 micro-tile per
//    thread: the same rows ty*4 + i (so a row's softmax statistics stay in
//    the thread that owns the row) and columns tx*4 + 64*q + e (tx*2 + e for
//    Dp = 32), read from shared memory as float4 (float2).
//  - the probability tile goes through shared memory ([64][68]: the +4 pad
//    makes the scalar stores of the two half-warps hit disjoint banks).
//  - scores are kept in the log2 domain (score * scale * log2 e) so that the
//    softmax uses exp2f; the workspace's lse is stored that way too.
//
// Backward (two launches, no atomics, so bitwise deterministic):
//  1. attnBwdDqKernel, one CTA per (b, h, 64-query block): delta_i =
//     rowsum(dO * O); a statistics pass over the key tiles recomputes lse
//     (the API gets `out` but no lse); then dQ = scale * sum_j dS_ij K_j with
//     dS = P * (dP - delta), dP = dO V^T. lse and delta go to the workspace.
//  2. attnBwdDkDvKernel, one CTA per (b, kv head, 64-key block): for each
//     query head of the group (in head order) and each query tile that sees
//     the block, P^T and dP^T are recomputed and dV += P^T dO, dK += dS^T Q
//     accumulate in registers; GQA needs no atomics or f32 scratch.
//  Per (query tile, key tile) that is 8 tile GEMMs (dq pass: QK^T for the
//  statistics, QK^T, dO V^T, dS K; dk/dv pass: K Q^T, V dO^T, P^T dO, dS^T Q)
//  against FA2's 5 with atomic dq: 3 extra (the recomputed QK^T and dO V^T,
//  and the lse recomputation) -- the price of a fixed reduction order, no
//  [B, S, Hq, D] f32 scratch and no lse input.
//  Workspace (attention_backward_workspace_bytes): lse2 f32 [B, Hq, S] (lse *
//  log2 e) then delta f32 [B, Hq, S], each 256-byte aligned; fully written by
//  the dq pass before the dk/dv pass reads it, so it needs no zeroing.
//
// Speed: everything is f32 FMA on CUDA cores (H100: ~60 TFLOP/s peak FMA), so
// expect a fraction of cuDNN/FlashAttention; AttentionTC.cu is the fast path.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/AttentionInternal.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"
#include "runtime/program/KernelScratch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace shardc::cuda {

namespace {

constexpr int kThreads = 256; ///< 16 x 16 threads per CTA
constexpr int kTile = 64;     ///< query and key rows per tile (BM = BN)
constexpr int kPLD = kTile + 4; ///< row stride (floats) of a probability tile
constexpr float kLn2 = 0.6931471805599453f;

/// Every launch's scalars and pointers (by value, in kernel parameter space).
struct AttnParams {
  const void *q, *k, *v, *o, *dout;
  void *out, *dq, *dk, *dv;
  float *lse;     ///< forward: [B, Hq, S] natural log (nullable)
  float *lse2;    ///< backward workspace: [B, Hq, S] lse * log2(e)
  float *delta;   ///< backward workspace: [B, Hq, S] rowsum(dO * O)
  int B, S, Hq, Hkv, D, group, nTiles;
  bool causal;
  bool vec;        ///< 16-byte global loads/stores are allowed
  float scale;     ///< the softmax scale
  float scaleLog2; ///< scale * log2(e)
};

//===----------------------------------------------------------------------===//
// Element conversions
//===----------------------------------------------------------------------===//

template <class T> __device__ __forceinline__ float toF32(T x);
template <> __device__ __forceinline__ float toF32<float>(float x) { return x; }
template <> __device__ __forceinline__ float toF32<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <> __device__ __forceinline__ float toF32<__half>(__half x) { return __half2float(x); }

template <class T> __device__ __forceinline__ T fromF32(float x);
template <> __device__ __forceinline__ float fromF32<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 fromF32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half fromF32<__half>(float x) {
  return __float2half_rn(x);
}

/// Two consecutive 16-bit elements (element 0 in the low half) as floats.
template <class T> __device__ __forceinline__ float2 unpack2(uint32_t w);
template <> __device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <> __device__ __forceinline__ float2 unpack2<__half>(uint32_t w) {
  __half2 h;
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi); // .x = lo = low half
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}

/// 16 bytes of T as 16 / sizeof(T) floats.
template <class T> __device__ __forceinline__ void unpack16(const uint4 &r, float *f) {
  if constexpr (sizeof(T) == 4) {
    f[0] = __uint_as_float(r.x);
    f[1] = __uint_as_float(r.y);
    f[2] = __uint_as_float(r.z);
    f[3] = __uint_as_float(r.w);
  } else {
    float2 a = unpack2<T>(r.x), b = unpack2<T>(r.y), c = unpack2<T>(r.z), d = unpack2<T>(r.w);
    f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y;
    f[4] = c.x, f[5] = c.y, f[6] = d.x, f[7] = d.y;
  }
}
template <class T> __device__ __forceinline__ uint4 pack16(const float *f) {
  if constexpr (sizeof(T) == 4)
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  else
    return make_uint4(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]), pack2<T>(f[4], f[5]),
                      pack2<T>(f[6], f[7]));
}

//===----------------------------------------------------------------------===//
// Tile movement between global memory (T, BSHD rows of stride ld) and shared
// memory (f32 [kTile][Dp + 4])
//===----------------------------------------------------------------------===//

/// sm[r][c] = g[r * ld + c] for r < rows, c < D; zero elsewhere (padding rows
/// and columns must be zero: they take part in the dot products).
///
/// A thread always handles the same column (chunk) and rows r0, r0 + step,
/// ...: one 64-bit address, advanced by step * ld. Loads are issued in
/// batches (4 x 16 bytes, or 8 elements) before their shared-memory stores,
/// which keeps several requests in flight without holding a whole tile in
/// registers.
template <int Dp, class T>
__device__ __forceinline__ void loadTile(float *sm, const T *__restrict__ g, int64_t ld, int rows,
                                         int D, bool vec) {
  constexpr int LD = Dp + 4;
  if (vec) {
    constexpr int N = 16 / int(sizeof(T)); // elements per 16-byte chunk
    constexpr int CPR = Dp / N;            // chunks per tile row
    constexpr int STEP = kThreads / CPR;   // rows between a thread's chunks
    constexpr int ITER = kTile / STEP;
    constexpr int BATCH = ITER < 4 ? ITER : 4;
    static_assert(kThreads % CPR == 0 && ITER % BATCH == 0, "tile chunks must split evenly");
    const int col = (threadIdx.x % CPR) * N, r0 = threadIdx.x / CPR;
    const bool colOk = col < D; // D % N == 0: a chunk is wholly inside or outside
    const T *src = g + r0 * ld + col;
    float *dst = sm + r0 * LD + col;
#pragma unroll 1
    for (int it0 = 0; it0 < ITER; it0 += BATCH) {
      uint4 raw[BATCH];
#pragma unroll
      for (int it = 0; it < BATCH; ++it) {
        raw[it] = make_uint4(0u, 0u, 0u, 0u);
        if (colOk && r0 + (it0 + it) * STEP < rows)
          raw[it] = __ldg(reinterpret_cast<const uint4 *>(src + (it0 + it) * STEP * ld));
      }
#pragma unroll
      for (int it = 0; it < BATCH; ++it) {
        float f[N];
        unpack16<T>(raw[it], f);
        float4 *d4 = reinterpret_cast<float4 *>(dst + (it0 + it) * STEP * LD);
#pragma unroll
        for (int e = 0; e < N / 4; ++e)
          d4[e] = make_float4(f[4 * e], f[4 * e + 1], f[4 * e + 2], f[4 * e + 3]);
      }
    }
  } else {
    constexpr int STEP = kThreads / Dp;
    constexpr int ITER = kTile / STEP;
    constexpr int BATCH = 8;
    static_assert(kThreads % Dp == 0 && ITER % BATCH == 0, "tile elements must split evenly");
    const int col = threadIdx.x % Dp, r0 = threadIdx.x / Dp;
    const bool colOk = col < D;
    const T *src = g + r0 * ld + col;
    float *dst = sm + r0 * LD + col;
#pragma unroll 1
    for (int it0 = 0; it0 < ITER; it0 += BATCH) {
      float f[BATCH];
#pragma unroll
      for (int it = 0; it < BATCH; ++it)
        f[it] = colOk && r0 + (it0 + it) * STEP < rows ? toF32<T>(src[(it0 + it) * STEP * ld])
                                                        : 0.f;
#pragma unroll
      for (int it = 0; it < BATCH; ++it)
        dst[(it0 + it) * STEP * LD] = f[it];
    }
  }
}

/// g[r * ld + c] = sm[r][c] for r < rows, c < D (rounded once to T); the
/// thread-to-element map of loadTile.
template <int Dp, class T>
__device__ __forceinline__ void storeTile(const float *sm, T *__restrict__ g, int64_t ld, int rows,
                                          int D, bool vec) {
  constexpr int LD = Dp + 4;
  if (vec) {
    constexpr int N = 16 / int(sizeof(T));
    constexpr int CPR = Dp / N;
    constexpr int STEP = kThreads / CPR;
    const int col = (threadIdx.x % CPR) * N, r0 = threadIdx.x / CPR;
    if (col >= D)
      return;
#pragma unroll 4
    for (int r = r0; r < rows; r += STEP) {
      float f[N];
      const float4 *s4 = reinterpret_cast<const float4 *>(sm + r * LD + col);
#pragma unroll
      for (int e = 0; e < N / 4; ++e) {
        float4 x = s4[e];
        f[4 * e] = x.x, f[4 * e + 1] = x.y, f[4 * e + 2] = x.z, f[4 * e + 3] = x.w;
      }
      *reinterpret_cast<uint4 *>(g + r * ld + col) = pack16<T>(f);
    }
  } else {
    constexpr int STEP = kThreads / Dp;
    const int col = threadIdx.x % Dp, r0 = threadIdx.x / Dp;
    if (col >= D)
      return;
#pragma unroll 4
    for (int r = r0; r < rows; r += STEP)
      g[r * ld + col] = fromF32<T>(sm[r * LD + col]);
  }
}

//===----------------------------------------------------------------------===//
// Register micro-kernels
//===----------------------------------------------------------------------===//

/// acc[i][c] = sum_d A[ty*4 + i][d] * B[tx + 16c][d] over d < Dp (A, B:
/// [kTile][Dp + 4] f32 in shared memory). Per 4 d: 8 LDS.128 for 64 FMA; the
/// A reads are broadcasts within a quarter-warp, the B reads hit 8 distinct
/// 16-byte bank groups ((Dp + 4) / 4 is odd).
template <int Dp>
__device__ __forceinline__ void tileDot(const float *A, const float *B, int ty, int tx,
                                        float acc[4][4]) {
  constexpr int LD = Dp + 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      acc[i][c] = 0.f;
  const float *a = A + ty * 4 * LD;
  const float *b = B + tx * LD;
  // Not unrolled: unrolling lets the compiler hoist the next step's 8
  // float4 loads and costs 30+ registers (spills under the 128-register
  // budget of 2 CTAs/SM); the other resident warps hide the LDS latency.
#pragma unroll 1
  for (int d = 0; d < Dp; d += 4) {
    float4 av[4], bv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      av[i] = *reinterpret_cast<const float4 *>(a + i * LD + d);
#pragma unroll
    for (int c = 0; c < 4; ++c)
      bv[c] = *reinterpret_cast<const float4 *>(b + 16 * c * LD + d);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        acc[i][c] = fmaf(av[i].x, bv[c].x, acc[i][c]);
        acc[i][c] = fmaf(av[i].y, bv[c].y, acc[i][c]);
        acc[i][c] = fmaf(av[i].z, bv[c].z, acc[i][c]);
        acc[i][c] = fmaf(av[i].w, bv[c].w, acc[i][c]);
      }
  }
}

/// Loads this thread's Dp / 16 accumulator columns of shared row `row`.
template <int Dp>
__device__ __forceinline__ void loadAccRow(const float *row, int tx, float *x) {
  if constexpr (Dp == 32) {
    float2 t = *reinterpret_cast<const float2 *>(row + tx * 2);
    x[0] = t.x, x[1] = t.y;
  } else {
#pragma unroll
    for (int q = 0; q < Dp / 64; ++q) {
      float4 t = *reinterpret_cast<const float4 *>(row + q * 64 + tx * 4);
      x[4 * q] = t.x, x[4 * q + 1] = t.y, x[4 * q + 2] = t.z, x[4 * q + 3] = t.w;
    }
  }
}

/// Stores this thread's Dp / 16 accumulator columns into shared row `row`.
template <int Dp>
__device__ __forceinline__ void storeAccRow(float *row, int tx, const float *x) {
  if constexpr (Dp == 32) {
    *reinterpret_cast<float2 *>(row + tx * 2) = make_float2(x[0], x[1]);
  } else {
#pragma unroll
    for (int q = 0; q < Dp / 64; ++q)
      *reinterpret_cast<float4 *>(row + q * 64 + tx * 4) =
          make_float4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
  }
}

/// acc[i][c] += sum_j P[ty*4 + i][j] * V[j][accCol(c)] over j < kTile (P:
/// [kTile][kPLD], V: [kTile][Dp + 4]), accCol(c) = 64 (c / 4) + 4 tx + c % 4
/// (2 tx + c for Dp = 32). Per 4 j: 4 broadcast LDS.128 of P and 4 Dp / 64
/// LDS.128 of V (4 LDS.64 for Dp = 32) for Dp FMA.
template <int Dp>
__device__ __forceinline__ void tileAccumulate(const float *P, const float *V, int ty, int tx,
                                               float acc[4][Dp / 16]) {
  constexpr int LD = Dp + 4, NC = Dp / 16;
  const float *p = P + ty * 4 * kPLD;
#pragma unroll 2
  for (int j = 0; j < kTile; j += 4) {
    float pv[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float4 t = *reinterpret_cast<const float4 *>(p + i * kPLD + j);
      pv[i][0] = t.x, pv[i][1] = t.y, pv[i][2] = t.z, pv[i][3] = t.w;
    }
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      float vv[NC];
      loadAccRow<Dp>(V + (j + jj) * LD, tx, vv);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int c = 0; c < NC; ++c)
          acc[i][c] = fmaf(pv[i][jj], vv[c], acc[i][c]);
    }
  }
}

/// Max / sum over the 16 threads (a half-warp) that share a row.
__device__ __forceinline__ float rowMax16(float x) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
__device__ __forceinline__ float rowSum16(float x) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

/// The (b, h, 64-row block) of a CTA of a grid over B * H * nTiles blocks.
/// The row block is the slowest index and, with `heavyLast`, runs from the
/// last block down: under a causal mask the last query blocks see the most
/// keys, so the longest CTAs start first and the tail of the grid is short.
struct BlockCoords {
  int b, h, blk;
};
__device__ __forceinline__ BlockCoords blockCoords(int H, int B, int nTiles, bool heavyLast) {
  int bh = int(blockIdx.x % unsigned(B * H));
  int t = int(blockIdx.x / unsigned(B * H));
  return {bh / H, bh % H, heavyLast ? nTiles - 1 - t : t};
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Forward: Q, V and a region holding K, then P (P overwrites K once the
/// scores are computed; this keeps Dp = 128 at 99 KB, two CTAs per SM).
template <int Dp> constexpr int fwdKPFloats() {
  return kTile * (Dp + 4) > kTile * kPLD ? kTile * (Dp + 4) : kTile * kPLD;
}
template <int Dp> constexpr int fwdSmemBytes() {
  return int(sizeof(float)) * (2 * kTile * (Dp + 4) + fwdKPFloats<Dp>());
}
template <int Dp> constexpr int dqSmemBytes() {
  return int(sizeof(float)) * (4 * kTile * (Dp + 4) + kTile * kPLD);
}
template <int Dp> constexpr int dkdvSmemBytes() {
  return int(sizeof(float)) * (4 * kTile * (Dp + 4) + 2 * kTile * kPLD + 2 * kTile);
}

/// Forward. One CTA per (b, h, 64-query block): Q tile in shared memory, then
/// for each key tile (only those at or below the diagonal when causal): S =
/// Q K^T (scaled, masked, log2 domain), online softmax (running row max m and
/// per-thread partial row sums l, O rescaled by exp2(m_old - m_new)), P to
/// shared memory, O += P V. O / l goes out through shared memory with 16-byte
/// stores; lse = (m + log2 l) ln 2.
/// Fast because every K/V element loaded to shared memory is reused by 64
/// queries and every score stays on chip; per thread a 4 x 4 score and a 4 x
/// Dp/16 output micro-tile give 2 shared loads per 16 FMA. Faster: tensor-core
/// MMA (mma.sync / wgmma), cp.async double buffering of K/V, fewer padded
/// columns for D not in {32, 64, 128}.
template <int Dp, class T>
__global__ void __launch_bounds__(kThreads, 2) attnFwdKernel(const AttnParams p) {
  constexpr int LD = Dp + 4, NC = Dp / 16;
  extern __shared__ float4 smem4[];
  float *Qs = reinterpret_cast<float *>(smem4);
  float *Vs = Qs + kTile * LD;
  float *Ks = Vs + kTile * LD;
  float *Ps = Ks; // [kTile][kPLD], written once the scores are in registers
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const BlockCoords bc = blockCoords(p.Hq, p.B, p.nTiles, p.causal);
  const int S = p.S, D = p.D;
  const int g = bc.h / p.group;
  const int i0 = bc.blk * kTile;
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const T *q = static_cast<const T *>(p.q) + (int64_t(bc.b) * S + i0) * ldq + int64_t(bc.h) * D;
  const T *kHead = static_cast<const T *>(p.k) + int64_t(bc.b) * S * ldk + int64_t(g) * D;
  const T *vHead = static_cast<const T *>(p.v) + int64_t(bc.b) * S * ldk + int64_t(g) * D;

  loadTile<Dp, T>(Qs, q, ldq, min(kTile, S - i0), D, p.vec);

  float acc[4][NC], m[4], l[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < NC; ++c)
      acc[i][c] = 0.f;
  }

  const int nKT = p.causal ? min(p.nTiles, bc.blk + 1) : p.nTiles;
  for (int kt = 0; kt < nKT; ++kt) {
    const int j0 = kt * kTile;
    __syncthreads(); // the previous tile's K, V, P are no longer read
    loadTile<Dp, T>(Ks, kHead + j0 * ldk, ldk, min(kTile, S - j0), D, p.vec);
    loadTile<Dp, T>(Vs, vHead + j0 * ldk, ldk, min(kTile, S - j0), D, p.vec);
    __syncthreads();

    float s[4][4];
    tileDot<Dp>(Qs, Ks, ty, tx, s);
    __syncthreads(); // K is no longer read: P overwrites it
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = i0 + ty * 4 + i;
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = j0 + tx + 16 * c;
        const bool ok = j < S && (!p.causal || j <= row);
        s[i][c] = ok ? s[i][c] * p.scaleLog2 : -INFINITY;
        mx = fmaxf(mx, s[i][c]);
      }
      const float mNew = fmaxf(m[i], rowMax16(mx));
      // A row with no visible key so far keeps m = -inf; use 0 as the shift
      // then so that exp2(-inf - shift) = 0 instead of NaN.
      const float shift = mNew == -INFINITY ? 0.f : mNew;
      const float alpha = exp2f(m[i] - shift);
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float e = exp2f(s[i][c] - shift);
        sum += e;
        Ps[(ty * 4 + i) * kPLD + tx + 16 * c] = e;
      }
      l[i] = l[i] * alpha + sum;
      m[i] = mNew;
#pragma unroll
      for (int c = 0; c < NC; ++c)
        acc[i][c] *= alpha;
    }
    __syncthreads();
    tileAccumulate<Dp>(Ps, Vs, ty, tx, acc);
  }

  // Normalise, stage the tile in Qs (no longer read) and store it.
  const int rowsQ = min(kTile, S - i0);
  __syncthreads(); // not needed today (Qs was last read before the last P
                   // barrier); keeps the staging independent of the loop body
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float sum = rowSum16(l[i]);
    const float inv = 1.f / sum;
    float x[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c)
      x[c] = acc[i][c] * inv;
    storeAccRow<Dp>(Qs + (ty * 4 + i) * LD, tx, x);
    const int r = ty * 4 + i;
    if (p.lse && tx == 0 && r < rowsQ)
      p.lse[(int64_t(bc.b) * p.Hq + bc.h) * S + i0 + r] = (m[i] + log2f(sum)) * kLn2;
  }
  __syncthreads();
  T *out = static_cast<T *>(p.out) + (int64_t(bc.b) * S + i0) * ldq + int64_t(bc.h) * D;
  storeTile<Dp, T>(Qs, out, ldq, rowsQ, D, p.vec);
}

/// Backward, dq pass. One CTA per (b, h, 64-query block), Q and dO tiles in
/// shared memory for the whole CTA:
///  1. delta_i = sum_d dO[i][d] O[i][d] (O staged through the K buffer);
///  2. statistics pass over the visible key tiles: running max and sum of
///     exp2 of the log2-domain scores -> lse2_i = m_i + log2 l_i;
///  3. for each visible key tile: S = Q K^T, dP = dO V^T, P = exp2(S - lse2),
///     dS = P (dP - delta) (shared memory), dQ += dS K.
/// dQ * scale goes out through shared memory; lse2 and delta go to the
/// workspace for the dk/dv pass. No atomics: every dQ row is summed by one
/// thread group in key order.
/// Fast for the reasons of the forward (on-chip scores, 64-fold reuse of K
/// and V); costs one extra QK^T per tile for the statistics. Faster: MMA, and
/// FA2's single pass with dq accumulated by f32 atomics in the dk/dv kernel.
template <int Dp, class T>
__global__ void __launch_bounds__(kThreads, Dp == 128 ? 1 : 2) attnBwdDqKernel(const AttnParams p) {
  constexpr int LD = Dp + 4, NC = Dp / 16;
  extern __shared__ float4 smem4[];
  float *Qs = reinterpret_cast<float *>(smem4);
  float *dOs = Qs + kTile * LD;
  float *Ks = dOs + kTile * LD;
  float *Vs = Ks + kTile * LD;
  float *dSs = Vs + kTile * LD;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const BlockCoords bc = blockCoords(p.Hq, p.B, p.nTiles, p.causal);
  const int S = p.S, D = p.D;
  const int g = bc.h / p.group;
  const int i0 = bc.blk * kTile;
  const int rowsQ = min(kTile, S - i0);
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const int64_t qOff = (int64_t(bc.b) * S + i0) * ldq + int64_t(bc.h) * D;
  const T *kHead = static_cast<const T *>(p.k) + int64_t(bc.b) * S * ldk + int64_t(g) * D;
  const T *vHead = static_cast<const T *>(p.v) + int64_t(bc.b) * S * ldk + int64_t(g) * D;

  loadTile<Dp, T>(Qs, static_cast<const T *>(p.q) + qOff, ldq, rowsQ, D, p.vec);
  loadTile<Dp, T>(dOs, static_cast<const T *>(p.dout) + qOff, ldq, rowsQ, D, p.vec);
  loadTile<Dp, T>(Ks, static_cast<const T *>(p.o) + qOff, ldq, rowsQ, D, p.vec);
  __syncthreads();

  float delta[4], m[4], l[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float *a = dOs + (ty * 4 + i) * LD, *b = Ks + (ty * 4 + i) * LD;
    float part = 0.f;
#pragma unroll
    for (int d = tx; d < Dp; d += 16)
      part = fmaf(a[d], b[d], part);
    delta[i] = rowSum16(part);
    m[i] = -INFINITY;
    l[i] = 0.f;
  }

  const int nKT = p.causal ? min(p.nTiles, bc.blk + 1) : p.nTiles;
  // Statistics pass.
  for (int kt = 0; kt < nKT; ++kt) {
    const int j0 = kt * kTile;
    __syncthreads(); // O (first tile) or the previous K tile is no longer read
    loadTile<Dp, T>(Ks, kHead + j0 * ldk, ldk, min(kTile, S - j0), D, p.vec);
    __syncthreads();
    float s[4][4];
    tileDot<Dp>(Qs, Ks, ty, tx, s);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = i0 + ty * 4 + i;
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = j0 + tx + 16 * c;
        const bool ok = j < S && (!p.causal || j <= row);
        s[i][c] = ok ? s[i][c] * p.scaleLog2 : -INFINITY;
        mx = fmaxf(mx, s[i][c]);
      }
      const float mNew = fmaxf(m[i], rowMax16(mx));
      const float shift = mNew == -INFINITY ? 0.f : mNew;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c)
        sum += exp2f(s[i][c] - shift);
      l[i] = l[i] * exp2f(m[i] - shift) + sum;
      m[i] = mNew;
    }
  }
  float lse2[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    lse2[i] = m[i] + log2f(rowSum16(l[i]));
    const int r = ty * 4 + i;
    if (tx == 0 && r < rowsQ) {
      const int64_t idx = (int64_t(bc.b) * p.Hq + bc.h) * S + i0 + r;
      p.lse2[idx] = lse2[i];
      p.delta[idx] = delta[i];
    }
  }

  // dQ pass.
  float acc[4][NC];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < NC; ++c)
      acc[i][c] = 0.f;
  for (int kt = 0; kt < nKT; ++kt) {
    const int j0 = kt * kTile;
    __syncthreads(); // the previous K, V, dS are no longer read
    loadTile<Dp, T>(Ks, kHead + j0 * ldk, ldk, min(kTile, S - j0), D, p.vec);
    loadTile<Dp, T>(Vs, vHead + j0 * ldk, ldk, min(kTile, S - j0), D, p.vec);
    __syncthreads();
    float s[4][4], dp[4][4];
    tileDot<Dp>(Qs, Ks, ty, tx, s);
    tileDot<Dp>(dOs, Vs, ty, tx, dp);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = i0 + ty * 4 + i;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = j0 + tx + 16 * c;
        const bool ok = j < S && (!p.causal || j <= row);
        const float pr = exp2f(s[i][c] * p.scaleLog2 - lse2[i]);
        dSs[(ty * 4 + i) * kPLD + tx + 16 * c] = ok ? pr * (dp[i][c] - delta[i]) : 0.f;
      }
    }
    __syncthreads();
    tileAccumulate<Dp>(dSs, Ks, ty, tx, acc);
  }

  __syncthreads(); // defensive, as in the forward: Qs is not read after the last dS barrier
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float x[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c)
      x[c] = acc[i][c] * p.scale;
    storeAccRow<Dp>(Qs + (ty * 4 + i) * LD, tx, x);
  }
  __syncthreads();
  storeTile<Dp, T>(Qs, static_cast<T *>(p.dq) + qOff, ldq, rowsQ, D, p.vec);
}

/// Backward, dk/dv pass. One CTA per (b, kv head g, 64-key block): K and V
/// tiles stay in shared memory; for each query head h of the group (in head
/// order) and each query tile that sees the block (from the diagonal on when
/// causal) the CTA loads Q, dO, lse2, delta and computes, keys as rows:
///   S^T = K Q^T, dP^T = V dO^T, P^T = exp2(S^T - lse2), dS^T = P^T (dP^T -
///   delta), dV += P^T dO, dK += dS^T Q,
/// with P^T and dS^T through shared memory. dK * scale and dV go out through
/// shared memory. GQA's sum over the group is this loop: no atomics and no
/// f32 scratch, and a fixed summation order.
/// Fast because K, V, dK, dV stay on chip for the whole sweep and each Q/dO
/// tile loaded feeds 4 tile products. Faster: MMA; split the query sweep of
/// long sequences / large groups over more CTAs when B * Hkv * S / 64 is
/// below a few waves (the diagonal-first order below only shortens the tail).
template <int Dp, class T>
__global__ void __launch_bounds__(kThreads, Dp == 128 ? 1 : 2) attnBwdDkDvKernel(const AttnParams p) {
  constexpr int LD = Dp + 4, NC = Dp / 16;
  extern __shared__ float4 smem4[];
  float *Ks = reinterpret_cast<float *>(smem4);
  float *Vs = Ks + kTile * LD;
  float *Qs = Vs + kTile * LD;
  float *dOs = Qs + kTile * LD;
  float *Ps = dOs + kTile * LD;
  float *dSs = Ps + kTile * kPLD;
  float *lseS = dSs + kTile * kPLD;
  float *deltaS = lseS + kTile;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  // Causal: key block 0 is seen by every query tile, so it is the heaviest;
  // blocks run in increasing key order (heavyLast = false).
  const BlockCoords bc = blockCoords(p.Hkv, p.B, p.nTiles, false);
  const int S = p.S, D = p.D;
  const int j0 = bc.blk * kTile;
  const int rowsK = min(kTile, S - j0);
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const int64_t kOff = (int64_t(bc.b) * S + j0) * ldk + int64_t(bc.h) * D;

  loadTile<Dp, T>(Ks, static_cast<const T *>(p.k) + kOff, ldk, rowsK, D, p.vec);
  loadTile<Dp, T>(Vs, static_cast<const T *>(p.v) + kOff, ldk, rowsK, D, p.vec);

  float dk[4][NC], dv[4][NC];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < NC; ++c)
      dk[i][c] = dv[i][c] = 0.f;

  const int qtBegin = p.causal ? bc.blk : 0;
  for (int hi = 0; hi < p.group; ++hi) {
    const int h = bc.h * p.group + hi;
    const T *qHead = static_cast<const T *>(p.q) + int64_t(bc.b) * S * ldq + int64_t(h) * D;
    const T *dOHead = static_cast<const T *>(p.dout) + int64_t(bc.b) * S * ldq + int64_t(h) * D;
    const int64_t statOff = (int64_t(bc.b) * p.Hq + h) * S;
    for (int qt = qtBegin; qt < p.nTiles; ++qt) {
      const int i0 = qt * kTile;
      const int rowsQ = min(kTile, S - i0);
      __syncthreads(); // the previous Q, dO, P, dS, stats are no longer read
      loadTile<Dp, T>(Qs, qHead + i0 * ldq, ldq, rowsQ, D, p.vec);
      loadTile<Dp, T>(dOs, dOHead + i0 * ldq, ldq, rowsQ, D, p.vec);
      if (const int t = int(threadIdx.x); t < kTile)
        lseS[t] = t < rowsQ ? p.lse2[statOff + i0 + t] : 0.f;
      else if (t < 2 * kTile)
        deltaS[t - kTile] = t - kTile < rowsQ ? p.delta[statOff + i0 + t - kTile] : 0.f;
      __syncthreads();

      float s[4][4], dp[4][4];
      tileDot<Dp>(Ks, Qs, ty, tx, s);  // s[i][c]: key ty*4+i, query tx+16c
      tileDot<Dp>(Vs, dOs, ty, tx, dp);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int qc = tx + 16 * c;
        const int iq = i0 + qc;
        const float lq = lseS[qc], dlt = deltaS[qc];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = j0 + ty * 4 + i;
          const bool ok = iq < S && j < S && (!p.causal || j <= iq);
          const float pr = ok ? exp2f(s[i][c] * p.scaleLog2 - lq) : 0.f;
          Ps[(ty * 4 + i) * kPLD + qc] = pr;
          dSs[(ty * 4 + i) * kPLD + qc] = ok ? pr * (dp[i][c] - dlt) : 0.f;
        }
      }
      __syncthreads();
      tileAccumulate<Dp>(Ps, dOs, ty, tx, dv);
      tileAccumulate<Dp>(dSs, Qs, ty, tx, dk);
    }
  }

  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float x[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c)
      x[c] = dk[i][c] * p.scale;
    storeAccRow<Dp>(Qs + (ty * 4 + i) * LD, tx, x);
    storeAccRow<Dp>(dOs + (ty * 4 + i) * LD, tx, dv[i]);
  }
  __syncthreads();
  storeTile<Dp, T>(Qs, static_cast<T *>(p.dk) + kOff, ldk, rowsK, D, p.vec);
  storeTile<Dp, T>(dOs, static_cast<T *>(p.dv) + kOff, ldk, rowsK, D, p.vec);
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

bool isFloatStorage(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

void checkShape(const char *fn, int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D) {
  if (B < 0 || S < 0 || Hq < 0 || Hkv <= 0 || D <= 0 || Hq % Hkv != 0 ||
      D > kMaxAttentionHeadDim)
    throw rt::Error(std::string(fn) + ": invalid shape B=" + std::to_string(B) +
                    " S=" + std::to_string(S) + " Hq=" + std::to_string(Hq) +
                    " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D) +
                    " (query heads must be a multiple of kv heads; D <= " +
                    std::to_string(kMaxAttentionHeadDim) + ")");
  // Tile rows and head offsets are int inside the kernels; global offsets are
  // 64-bit. The grid is B * H * ceil(S / 64) CTAs in x.
  int64_t tiles = (S + kTile - 1) / kTile;
  int64_t H = Hq > Hkv ? Hq : Hkv;
  if (S > INT_MAX - kTile || B > INT_MAX || H * D > INT_MAX ||
      (B * H > 0 && tiles > int64_t(INT_MAX) / (B * H)))
    throw rt::Error(std::string(fn) + ": shape B=" + std::to_string(B) + " S=" +
                    std::to_string(S) + " Hq=" + std::to_string(Hq) + " D=" + std::to_string(D) +
                    " exceeds the kernels' 32-bit grid/index range");
}

void checkDTypes(const char *fn, std::initializer_list<TView> views) {
  DType t = views.begin()->dtype;
  if (!isFloatStorage(t))
    throw rt::Error(std::string(fn) + ": unsupported dtype " + rt::dtype_name(t) +
                    " (f32, bf16 or f16)");
  for (const TView &v : views)
    if (v.dtype != t)
      throw rt::Error(std::string(fn) + ": all tensors must share one dtype, got " +
                      rt::dtype_name(t) + " and " + rt::dtype_name(v.dtype));
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// 16-byte vector access is valid when a 16-byte chunk of a row is all in or
/// all out of [0, D) and every row start is 16-byte aligned.
bool vectorizable(DType t, int64_t D, std::initializer_list<const void *> ptrs) {
  int64_t n = 16 / rt::dtype_size(t);
  if (D % n != 0)
    return false;
  for (const void *p : ptrs)
    if (p && !aligned16(p))
      return false;
  return true;
}

int paddedHeadDim(int64_t D) { return D <= 32 ? 32 : D <= 64 ? 64 : 128; }

/// Launches kernel K with smemBytes of dynamic shared memory (opted in past
/// 48 KB once per kernel and device).
template <auto K> void launch(int smemBytes, int64_t blocks, const AttnParams &p, cudaStream_t s) {
  detail::optInSharedMemory<K>(smemBytes);
  K<<<unsigned(blocks), kThreads, smemBytes, s>>>(p);
  SHARDC_CUDA_LAUNCH();
}

template <int Dp, class T> void forwardT(const AttnParams &p, cudaStream_t s) {
  launch<attnFwdKernel<Dp, T>>(fwdSmemBytes<Dp>(), int64_t(p.B) * p.Hq * p.nTiles, p, s);
}

template <int Dp, class T> void backwardT(const AttnParams &p, cudaStream_t s) {
  launch<attnBwdDqKernel<Dp, T>>(dqSmemBytes<Dp>(), int64_t(p.B) * p.Hq * p.nTiles, p, s);
  launch<attnBwdDkDvKernel<Dp, T>>(dkdvSmemBytes<Dp>(), int64_t(p.B) * p.Hkv * p.nTiles, p, s);
}

template <class T> void forwardD(int Dp, const AttnParams &p, cudaStream_t s) {
  switch (Dp) {
  case 32:
    return forwardT<32, T>(p, s);
  case 64:
    return forwardT<64, T>(p, s);
  default:
    return forwardT<128, T>(p, s);
  }
}
template <class T> void backwardD(int Dp, const AttnParams &p, cudaStream_t s) {
  switch (Dp) {
  case 32:
    return backwardT<32, T>(p, s);
  case 64:
    return backwardT<64, T>(p, s);
  default:
    return backwardT<128, T>(p, s);
  }
}

AttnParams makeParams(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D, bool causal,
                      double scale) {
  AttnParams p{};
  p.B = int(B);
  p.S = int(S);
  p.Hq = int(Hq);
  p.Hkv = int(Hkv);
  p.D = int(D);
  p.group = int(Hq / Hkv);
  p.nTiles = int((S + kTile - 1) / kTile);
  p.causal = causal;
  p.scale = float(scale);
  p.scaleLog2 = float(scale * 1.4426950408889634);
  return p;
}

/// Workspace layout (each part 256-byte aligned, in this order):
///   lse2  f32 [B, Hq, S]  log-sum-exp of the scaled scores times log2(e)
///   delta f32 [B, Hq, S]  rowsum(dout * out)
int64_t statsBytes(int64_t B, int64_t S, int64_t Hq) {
  return rt::scratch::attentionStatsBytes(B, S, Hq);
}

} // namespace

using detail::attention_backward_tc;
using detail::attention_forward_tc;

void attention_forward(TView q, TView k, TView v, TView out, float *lse, int64_t B, int64_t S,
                       int64_t Hq, int64_t Hkv, int64_t D, bool causal, double scale,
                       cudaStream_t s) {
  checkShape("attention_forward", B, S, Hq, Hkv, D);
  checkDTypes("attention_forward", {q, k, v, out});
  if (B == 0 || S == 0 || Hq == 0)
    return;
  if (attention_forward_tc(q, k, v, out, lse, B, S, Hq, Hkv, D, causal, scale, s))
    return;
  AttnParams p = makeParams(B, S, Hq, Hkv, D, causal, scale);
  p.q = q.p;
  p.k = k.p;
  p.v = v.p;
  p.out = out.p;
  p.lse = lse;
  p.vec = vectorizable(q.dtype, D, {q.p, k.p, v.p, out.p});
  int Dp = paddedHeadDim(D);
  switch (q.dtype) {
  case DType::F32:
    return forwardD<float>(Dp, p, s);
  case DType::BF16:
    return forwardD<__nv_bfloat16>(Dp, p, s);
  default:
    return forwardD<__half>(Dp, p, s);
  }
}

void attention_backward(TView dout, TView q, TView k, TView v, TView out, TView dq, TView dk,
                        TView dv, int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                        bool causal, double scale, void *workspace, cudaStream_t s) {
  checkShape("attention_backward", B, S, Hq, Hkv, D);
  checkDTypes("attention_backward", {q, k, v, out, dout, dq, dk, dv});
  if (B == 0 || S == 0)
    return;
  if (Hq == 0) { // no query reads k or v
    size_t bytes = size_t(B * S * Hkv * D * rt::dtype_size(dk.dtype));
    SHARDC_CUDA(cudaMemsetAsync(dk.p, 0, bytes, s));
    SHARDC_CUDA(cudaMemsetAsync(dv.p, 0, bytes, s));
    return;
  }
  if (!workspace)
    throw rt::Error("attention_backward: null workspace (attention_backward_workspace_bytes = " +
                    std::to_string(attention_backward_workspace_bytes(B, S, Hq, Hkv, D)) +
                    " bytes)");
  AttnParams p = makeParams(B, S, Hq, Hkv, D, causal, scale);
  p.q = q.p;
  p.k = k.p;
  p.v = v.p;
  p.o = out.p;
  p.dout = dout.p;
  p.dq = dq.p;
  p.dk = dk.p;
  p.dv = dv.p;
  char *ws = static_cast<char *>(workspace);
  int64_t stats = statsBytes(B, S, Hq);
  p.lse2 = reinterpret_cast<float *>(ws);
  p.delta = reinterpret_cast<float *>(ws + stats);
  if (attention_backward_tc(dout, q, k, v, out, dq, dk, dv, B, S, Hq, Hkv, D, causal, scale,
                            p.lse2, p.delta, s))
    return;
  p.vec = vectorizable(q.dtype, D, {q.p, k.p, v.p, out.p, dout.p, dq.p, dk.p, dv.p});
  int Dp = paddedHeadDim(D);
  switch (q.dtype) {
  case DType::F32:
    return backwardD<float>(Dp, p, s);
  case DType::BF16:
    return backwardD<__nv_bfloat16>(Dp, p, s);
  default:
    return backwardD<__half>(Dp, p, s);
  }
}

int64_t attention_backward_workspace_bytes(int64_t B, int64_t S, int64_t Hq, int64_t /*Hkv*/,
                                           int64_t /*D*/) {
  return rt::scratch::attentionBackwardBytes(B, S, Hq);
}

} // namespace shardc::cuda
