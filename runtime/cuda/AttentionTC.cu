//===- AttentionTC.cu - tensor-core attention forward and backward --------===//
//
// The bf16/f16 path of attention_forward / attention_backward (Attention.cu
// dispatches here for head dims 64 and 128 and 16-byte aligned tensors; all
// other cases keep Attention.cu's f32 CUDA-core kernels). Same layout and
// semantics: BSHD, q/out/dq [B, S, Hq, D], k/v/dk/dv [B, S, Hkv, D], query
// head h reads kv head h / (Hq / Hkv), causal masks key j > i, lse [B, Hq, S]
// natural log.
//
// FlashAttention-2 structure on mma.sync.m16n8k16 (bf16/f16 in, f32
// accumulate), which runs on sm_80 and later:
//  - a CTA of W warps owns a 16 W-row tile (queries in the forward and the
//    dq kernel, keys in the dk/dv kernel): W = 8 for the forward, 8 for the
//    backward at D = 128 and 4 at D = 64 (the faster on H100). Each warp owns
//    16 of those rows, so a row's softmax statistics live in the 4 threads (a
//    quad) of one warp that hold it in their accumulator fragments, and
//    reductions are two xor-shuffles; under a causal mask a warp skips the
//    streamed tiles that are wholly masked for its rows.
//  - the streamed operand (K/V tiles, or Q/dO tiles) is 64 rows, staged in
//    shared memory as [64][D + 8] (the 16-byte pad puts the 8 rows of each
//    ldmatrix in distinct banks) by cp.async with zero-fill for rows past S,
//    double-buffered: tile n + 1 is in flight while tile n is multiplied.
//  - every tile product is one of two warp-level shapes (mmaABt, mmaPV):
//    acc[16 x 64] += A[16 x D] B[64 x D]^T, both operands by plain ldmatrix
//    of row-major tiles; and acc[16 x D] += P[16 x 64] B[64 x D], P taken
//    from the f32 accumulators of the first shape (the C fragment of two
//    adjacent n8 tiles is the A fragment of one k16 step), B by ldmatrix.trans.
//  - softmax in the log2 domain (scores * scale * log2 e, ex2.approx).
//
// Registers (ptxas, sm_90a, bf16): forward 124 (D = 64) / 164 (D = 128); dq
// 167 / 222; dk/dv 166 / 245; no spills or local memory. Shared memory:
// forward (128 + 4 x 64) rows x (D + 8) x 2 B = 54 / 102 KB; backward
// (2 x 16 W + 4 x 64) rows of the same plus statistics = 55 / 137 KB.
//
// Backward (two launches, no atomics: bitwise deterministic), tile products
// (matrix products of the size of the forward's Q K^T) per (query rows, key
// rows) pair visited:
//  1. attnBwdDqTc, one CTA per (b, q head, query tile): delta = rowsum(dO *
//     O); a statistics sweep over the key tiles (S = Q K^T: 1 product) gives
//     lse2 = lse * log2 e (the API passes no lse); then per key tile S = Q K^T,
//     dP = dO V^T, dQ += dS K (3 products). lse2 and delta go to the
//     workspace.
//  2. attnBwdDkDvTc, one CTA per (b, kv head, key tile): for each query head
//     of the group and each 64-row query tile that sees the keys, S^T = K Q^T,
//     dV += P^T dO, dP^T = V dO^T, dK += dS^T Q (4 products), dK and dV in
//     registers across the whole group (GQA/MQA need no atomics or scratch).
//  8 products per pair against FlashAttention-2's 5 (which takes lse from the
//  forward and adds dq with f32 atomics): the price of no lse input, a fixed
//  reduction order and no f32 dq scratch.
//  Workspace: as Attention.cu's (lse2 then delta, f32 [B, Hq, S] each,
//  256-byte aligned), fully written by pass 1 before pass 2 reads it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/AttentionInternal.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace shardc::cuda {

namespace {

constexpr int kWarps = 4;           ///< the default CTA size (4 warps)
constexpr int kThreads = 32 * kWarps;
constexpr int kTile = 64; ///< rows of a streamed tile (K/V in fwd and dq, Q/dO in dk/dv)

struct TcParams {
  const void *q, *k, *v, *o, *dout;
  void *out, *dq, *dk, *dv;
  float *lse;   ///< forward: [B, Hq, S] natural log (nullable)
  float *lse2;  ///< backward workspace: [B, Hq, S] lse * log2(e)
  float *delta; ///< backward workspace: [B, Hq, S] rowsum(dO * O)
  int B, S, Hq, Hkv, group, nTiles;
  bool causal;
  float scale, scaleLog2;
};

//===----------------------------------------------------------------------===//
// PTX wrappers
//===----------------------------------------------------------------------===//

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

/// 16 bytes global -> shared, asynchronous; bytes = 0 zero-fills.
__device__ __forceinline__ void cpAsync16(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddr(dst)), "l"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cpAsyncWaitAll() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

__device__ __forceinline__ void ldsm4(uint32_t addr, uint32_t r[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm4T(uint32_t addr, uint32_t r[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// c[0..3] += A (16 x 16, a[0..3]) * B (16 x 8, b0 b1), f32 accumulate.
template <class T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// 2^x by the MUFU unit alone (exp2f adds a range fix-up around it); 2^-inf =
/// 0. The softmax's exponentials cost about as much as its mma at D = 64.
__device__ __forceinline__ float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/// Two floats as one 32-bit pair of T, `lo` (the lower column) in the low half.
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t w;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  } else {
    __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  }
  return w;
}
template <class T> __device__ __forceinline__ float2 unpack2(uint32_t w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  else {
    __half2 h;
    memcpy(&h, &w, sizeof(w));
    return __half22float2(h);
  }
}

//===----------------------------------------------------------------------===//
// Tiles and warp-level products
//===----------------------------------------------------------------------===//

template <int D> constexpr int kLds = D + 8;               ///< smem row stride (elements)
template <int D> constexpr int kTileElems = kTile * kLds<D>; ///< one staged tile

/// Starts sm[r][c] = g[r * ld + c] for r < rows (zero for rows >= rows), c < D,
/// for a tile of ROWS rows loaded by THREADS threads.
template <int D, class T, int ROWS = kTile, int THREADS = kThreads>
__device__ __forceinline__ void loadTileAsync(T *sm, const T *g, int64_t ld, int rows) {
  constexpr int CPR = D / 8; // 16-byte chunks per row
  static_assert(ROWS * CPR % THREADS == 0, "tile chunks must split evenly");
#pragma unroll
  for (int i = 0; i < ROWS * CPR / THREADS; ++i) {
    const int c = int(threadIdx.x) + i * THREADS;
    const int r = c / CPR, col = (c % CPR) * 8;
    const bool ok = r < rows;
    cpAsync16(sm + r * kLds<D> + col, g + (ok ? r : 0) * ld + col, ok ? 16 : 0);
  }
}

/// acc[n][.] += A[16 x D] * B[64 x D]^T: A = this warp's 16 rows, B = a whole
/// tile, both row-major in shared memory; acc is the C fragment of n8 tile n.
/// ldmatrix.x4 for A: lane l addresses row l % 16, column 8 (l / 16), so the
/// four matrices are a0..a3 of m16n8k16. For B (stored [n][k]): row
/// 8 (l / 16) + l % 8, column 8 ((l / 8) % 2), giving b0, b1 of n tile 2i
/// and b0, b1 of n tile 2i + 1.
template <int D, class T>
__device__ __forceinline__ void mmaABt(float acc[8][4], const T *A, const T *B, int lane) {
  const uint32_t aBase = smemAddr(A + (lane % 16) * kLds<D> + (lane / 16) * 8);
  const uint32_t bBase =
      smemAddr(B + ((lane / 16) * 8 + lane % 8) * kLds<D> + ((lane / 8) % 2) * 8);
#pragma unroll 2
  for (int k = 0; k < D; k += 16) {
    uint32_t a[4];
    ldsm4(aBase + k * 2, a);
#pragma unroll
    for (int n = 0; n < 8; n += 2) {
      uint32_t b[4];
      ldsm4(bBase + (n * 8 * kLds<D> + k) * 2, b);
      mma16816<T>(acc[n], a, b[0], b[1]);
      mma16816<T>(acc[n + 1], a, b[2], b[3]);
    }
  }
}

/// The A fragments (one per k16 step kk) of P[16 x 64] held in the C
/// fragments of mmaABt (row g: p[n][0..1], row g + 8: p[n][2..3], columns
/// 8n + 2t + {0, 1}): step kk is {p[2kk][0..1], p[2kk][2..3], p[2kk+1][0..1],
/// p[2kk+1][2..3]}, rounded to T.
template <class T>
__device__ __forceinline__ void packA(const float p[8][4], uint32_t a[4][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    a[kk][0] = pack2<T>(p[2 * kk][0], p[2 * kk][1]);
    a[kk][1] = pack2<T>(p[2 * kk][2], p[2 * kk][3]);
    a[kk][2] = pack2<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    a[kk][3] = pack2<T>(p[2 * kk + 1][2], p[2 * kk + 1][3]);
  }
}

/// acc[n][.] += P[16 x 64] * B[64 x D], P as packA's fragments. B is a
/// row-major [k][n] tile read with ldmatrix.trans: lane l addresses row
/// l % 16 of the k16 step, column 8 (l / 16) of the pair of n8 tiles, giving
/// b0, b1 of n tile 2i and of 2i + 1.
template <int D, class T>
__device__ __forceinline__ void mmaPV(float acc[D / 8][4], const uint32_t a[4][4], const T *B,
                                      int lane) {
  const uint32_t bBase = smemAddr(B + (lane % 16) * kLds<D> + (lane / 16) * 8);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int n = 0; n < D / 8; n += 2) {
      uint32_t b[4];
      ldsm4T(bBase + (kk * 16 * kLds<D> + n * 8) * 2, b);
      mma16816<T>(acc[n], a[kk], b[0], b[1]);
      mma16816<T>(acc[n + 1], a[kk], b[2], b[3]);
    }
  }
}

template <int N> __device__ __forceinline__ void zero(float acc[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[n][e] = 0.f;
}

__device__ __forceinline__ float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// Scores of a 16 x 64 C fragment block to the log2 domain; masked entries
/// (key >= S, or key > query when causal) become -inf. Element (n, e) is
/// row rowBase + 8 (e / 2) and column colBase + 8n + 2t + e % 2 of the score
/// matrix; `transposed` says rows are keys and columns queries.
__device__ __forceinline__ void scaleMask(float s[8][4], float scaleLog2, bool needMask,
                                          int rowBase, int colBase, int t, int S, bool causal,
                                          bool transposed) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = s[n][e] * scaleLog2;
      if (needMask) {
        const int row = rowBase + (e / 2) * 8, col = colBase + n * 8 + 2 * t + (e % 2);
        const int query = transposed ? col : row, key = transposed ? row : col;
        if (key >= S || query >= S || (causal && key > query))
          x = -INFINITY;
      }
      s[n][e] = x;
    }
}

/// Stores a 16 x D f32 fragment block (times `mul`) as T rows row0, row0 + 8
/// (only rows < S) of a BSHD head (row stride ld).
template <int D, class T>
__device__ __forceinline__ void storeRows(T *g, int64_t ld, int row0, int S, int t,
                                          const float acc[D / 8][4], float mul) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + 8 * h;
    if (r >= S)
      continue;
    T *dst = g + int64_t(r) * ld + 2 * t;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *reinterpret_cast<uint32_t *>(dst + n * 8) =
          pack2<T>(acc[n][2 * h] * mul, acc[n][2 * h + 1] * mul);
  }
}

/// The (b, h, tile) of a CTA of a grid over B * H * nTiles blocks; the tile
/// is the slowest index, counted from the last when `reverse` (so that under
/// a causal mask the longest CTAs start first).
struct Coords {
  int b, h, tile;
};
__device__ __forceinline__ Coords coords(int B, int H, int nTiles, bool reverse) {
  const int bh = int(blockIdx.x % unsigned(B * H));
  const int t = int(blockIdx.x / unsigned(B * H));
  return {bh / H, bh % H, reverse ? nTiles - 1 - t : t};
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// The forward's warps per CTA: its query tile is 16 kFwdWarps rows against
/// 64-row K/V tiles, so that each K/V tile staged serves twice the queries.
constexpr int kFwdWarps = 8;
template <int D> constexpr int fwdSmemBytes() {
  return (16 * kFwdWarps + 4 * kTile) * kLds<D> * 2;
}

/// One CTA per (b, q head, 16 W-row query tile): Q staged once; per key tile
/// (those at or below the diagonal when causal) S = Q K^T, online softmax,
/// O += P V, with K/V tile n + 1 loading meanwhile; a warp whose rows all
/// precede a key tile skips it. O / l is written from registers.
template <int D, class T, int W>
__global__ void __launch_bounds__(32 * W) attnFwdTc(const TcParams p) {
  constexpr int BM = 16 * W, NT = 32 * W;
  extern __shared__ __align__(128) unsigned char smemRaw[];
  T *Qs = reinterpret_cast<T *>(smemRaw);
  T *KV = Qs + BM * kLds<D>; // stage s: K at KV + 2s tiles, V after it
  const int S = p.S, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4,
            t = lane % 4;
  const Coords c = coords(p.B, p.Hq, (S + BM - 1) / BM, p.causal);
  const int hk = c.h / p.group, i0 = c.tile * BM;
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const T *qg = static_cast<const T *>(p.q) + int64_t(c.b) * S * ldq + int64_t(c.h) * D;
  const T *kg = static_cast<const T *>(p.k) + int64_t(c.b) * S * ldk + int64_t(hk) * D;
  const T *vg = static_cast<const T *>(p.v) + int64_t(c.b) * S * ldk + int64_t(hk) * D;
  const int nk = p.causal ? (min(i0 + BM, S) - 1) / kTile + 1 : p.nTiles;

  loadTileAsync<D, T, BM, NT>(Qs, qg + i0 * ldq, ldq, S - i0);
  loadTileAsync<D, T, kTile, NT>(KV, kg, ldk, S);
  loadTileAsync<D, T, kTile, NT>(KV + kTileElems<D>, vg, ldk, S);
  cpAsyncCommit();

  float o[D / 8][4];
  zero<D / 8>(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int row0 = i0 + warp * 16 + g;
  const T *Qw = Qs + warp * 16 * kLds<D>;

#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
    cpAsyncWaitAll();
    __syncthreads(); // tile kt landed; every warp is done with tile kt - 1
    if (kt + 1 < nk) {
      T *next = KV + ((kt + 1) % 2) * 2 * kTileElems<D>;
      const int j1 = (kt + 1) * kTile;
      loadTileAsync<D, T, kTile, NT>(next, kg + j1 * ldk, ldk, S - j1);
      loadTileAsync<D, T, kTile, NT>(next + kTileElems<D>, vg + j1 * ldk, ldk, S - j1);
      cpAsyncCommit();
    }
    const T *Ks = KV + (kt % 2) * 2 * kTileElems<D>, *Vs = Ks + kTileElems<D>;
    const int j0 = kt * kTile, warpRow0 = i0 + warp * 16;
    if (p.causal && j0 > warpRow0 + 15)
      continue; // every key of the tile is masked for this warp's rows

    float s[8][4];
    zero<8>(s);
    mmaABt<D, T>(s, Qw, Ks, lane);
    const bool needMask = j0 + kTile > S || (p.causal && j0 + kTile - 1 > warpRow0);
    scaleMask(s, p.scaleLog2, needMask, row0, j0, t, S, p.causal, false);

#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = m[h];
#pragma unroll
      for (int n = 0; n < 8; ++n)
        mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
      mx = quadMax(mx);
      const float base = mx == -INFINITY ? 0.f : mx; // a fully masked row so far
      const float alpha = fastExp2(m[h] - base);
      m[h] = mx;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        s[n][2 * h] = fastExp2(s[n][2 * h] - base);
        s[n][2 * h + 1] = fastExp2(s[n][2 * h + 1] - base);
        sum += s[n][2 * h] + s[n][2 * h + 1];
      }
      l[h] = l[h] * alpha + sum;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        o[n][2 * h] *= alpha, o[n][2 * h + 1] *= alpha;
    }
    uint32_t pa[4][4];
    packA<T>(s, pa);
    mmaPV<D, T>(o, pa, Vs, lane);
  }

  T *og = static_cast<T *>(p.out) + int64_t(c.b) * S * ldq + int64_t(c.h) * D;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quadSum(l[h]);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int r = row0 + 8 * h;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      o[n][2 * h] *= inv, o[n][2 * h + 1] *= inv;
    if (p.lse && t == 0 && r < S)
      p.lse[(int64_t(c.b) * p.Hq + c.h) * S + r] = (m[h] + log2f(sum)) * 0.6931471805599453f;
  }
  storeRows<D, T>(og, ldq, row0, S, t, o, 1.f);
}

//===----------------------------------------------------------------------===//
// Backward pass 1: lse, delta and dQ
//===----------------------------------------------------------------------===//

/// Warps per CTA of both backward kernels: the CTA's own tile (queries for
/// dq, keys for dk/dv) is 16 kBwdWarps rows against 64-row streamed tiles.
/// Measured on H100 (attention_bench): 8 warps are faster at D = 128 (-4 to
/// -10% backward time), 4 at D = 64 (+7 to +20% with 8).
template <int D> constexpr int kBwdWarps = D == 128 ? 8 : 4;
template <int D> constexpr int dqSmemBytes() {
  return (2 * 16 * kBwdWarps<D> + 4 * kTile) * kLds<D> * 2 + 16 * kBwdWarps<D> * 4;
}

/// One CTA per (b, q head, 16 W-row query tile). Iterations 0 .. nk - 1 sweep
/// the key tiles for the row statistics (K only); iterations nk .. 2 nk - 1
/// sweep them again for dQ (K and V), one pipeline across both sweeps. A warp
/// whose rows all precede a key tile skips it.
template <int D, class T, int W>
__global__ void __launch_bounds__(32 * W) attnBwdDqTc(const TcParams p) {
  constexpr int BM = 16 * W, NT = 32 * W;
  extern __shared__ __align__(128) unsigned char smemRaw[];
  T *Qs = reinterpret_cast<T *>(smemRaw);
  T *dOs = Qs + BM * kLds<D>;
  T *KV = dOs + BM * kLds<D>; // stage s: K at KV + 2s tiles, V after it
  float *deltaS = reinterpret_cast<float *>(KV + 4 * kTileElems<D>);
  const int S = p.S, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4,
            t = lane % 4;
  const Coords c = coords(p.B, p.Hq, (S + BM - 1) / BM, p.causal);
  const int hk = c.h / p.group, i0 = c.tile * BM;
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const int64_t qOff = int64_t(c.b) * S * ldq + int64_t(c.h) * D;
  const T *qg = static_cast<const T *>(p.q) + qOff;
  const T *kg = static_cast<const T *>(p.k) + int64_t(c.b) * S * ldk + int64_t(hk) * D;
  const T *vg = static_cast<const T *>(p.v) + int64_t(c.b) * S * ldk + int64_t(hk) * D;
  const int nk = p.causal ? (min(i0 + BM, S) - 1) / kTile + 1 : p.nTiles;

  loadTileAsync<D, T, BM, NT>(Qs, qg + i0 * ldq, ldq, S - i0);
  loadTileAsync<D, T, BM, NT>(dOs, static_cast<const T *>(p.dout) + qOff + i0 * ldq, ldq, S - i0);
  loadTileAsync<D, T, kTile, NT>(KV, kg, ldk, S);
  cpAsyncCommit();

  { // delta = rowsum(dO * O): two threads per row (NT = 2 BM), 16-byte loads.
    const int r = threadIdx.x / 2, half = threadIdx.x % 2;
    float acc = 0.f;
    if (i0 + r < S) {
      const int64_t off = qOff + int64_t(i0 + r) * ldq + half * (D / 2);
      const uint4 *o4 = reinterpret_cast<const uint4 *>(static_cast<const T *>(p.o) + off);
      const uint4 *d4 = reinterpret_cast<const uint4 *>(static_cast<const T *>(p.dout) + off);
#pragma unroll
      for (int i = 0; i < D / 16; ++i) {
        const uint4 a = o4[i], b = d4[i];
        const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const float2 x = unpack2<T>(aw[w]), y = unpack2<T>(bw[w]);
          acc = fmaf(x.x, y.x, fmaf(x.y, y.y, acc));
        }
      }
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if (half == 0)
      deltaS[r] = acc;
  }

  float dq[D / 8][4];
  zero<D / 8>(dq);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, lse2[2] = {0.f, 0.f},
        delta[2] = {0.f, 0.f};
  const int warpRow0 = i0 + warp * 16, row0 = warpRow0 + g;
  const T *Qw = Qs + warp * 16 * kLds<D>, *dOw = dOs + warp * 16 * kLds<D>;

#pragma unroll 1
  for (int it = 0; it < 2 * nk; ++it) {
    cpAsyncWaitAll();
    __syncthreads(); // tile `it` landed; every warp is done with tile it - 1
    if (it + 1 < 2 * nk) {
      const int nt = it + 1 < nk ? it + 1 : it + 1 - nk;
      T *next = KV + ((it + 1) % 2) * 2 * kTileElems<D>;
      loadTileAsync<D, T, kTile, NT>(next, kg + nt * kTile * ldk, ldk, S - nt * kTile);
      if (it + 1 >= nk)
        loadTileAsync<D, T, kTile, NT>(next + kTileElems<D>, vg + nt * kTile * ldk, ldk,
                                       S - nt * kTile);
      cpAsyncCommit();
    }
    const T *Ks = KV + (it % 2) * 2 * kTileElems<D>, *Vs = Ks + kTileElems<D>;
    const int kt = it < nk ? it : it - nk, j0 = kt * kTile;

    if (!(p.causal && j0 > warpRow0 + 15)) { // else every key is masked for this warp
      float s[8][4];
      zero<8>(s);
      mmaABt<D, T>(s, Qw, Ks, lane);
      const bool needMask = j0 + kTile > S || (p.causal && j0 + kTile - 1 > warpRow0);
      scaleMask(s, p.scaleLog2, needMask, row0, j0, t, S, p.causal, false);

      if (it < nk) { // statistics sweep
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float mx = m[h];
#pragma unroll
          for (int n = 0; n < 8; ++n)
            mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
          mx = quadMax(mx);
          const float base = mx == -INFINITY ? 0.f : mx;
          float sum = 0.f;
#pragma unroll
          for (int n = 0; n < 8; ++n)
            sum += fastExp2(s[n][2 * h] - base) + fastExp2(s[n][2 * h + 1] - base);
          l[h] = l[h] * fastExp2(m[h] - base) + sum;
          m[h] = mx;
        }
      } else {
        // dQ sweep: P = exp2(s - lse2), dP = dO V^T, dS = P (dP - delta), dQ += dS K.
        float dp[8][4];
        zero<8>(dp);
        mmaABt<D, T>(dp, dOw, Vs, lane);
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float pr = fastExp2(s[n][e] - lse2[e / 2]);
            dp[n][e] = pr * (dp[n][e] - delta[e / 2]);
          }
        uint32_t dsa[4][4];
        packA<T>(dp, dsa);
        mmaPV<D, T>(dq, dsa, Ks, lane);
      }
    }
    if (it == nk - 1) { // statistics complete
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float sum = quadSum(l[h]);
        lse2[h] = sum > 0.f ? m[h] + log2f(sum) : INFINITY; // no key: P = 0
        delta[h] = deltaS[warp * 16 + g + 8 * h]; // written before the first barrier
      }
    }
  }

  storeRows<D, T>(static_cast<T *>(p.dq) + qOff, ldq, row0, S, t, dq, p.scale);
  if (t == 0) {
    const int64_t statOff = (int64_t(c.b) * p.Hq + c.h) * S;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (row0 + 8 * h < S) {
        p.lse2[statOff + row0 + 8 * h] = lse2[h];
        p.delta[statOff + row0 + 8 * h] = delta[h];
      }
  }
}

//===----------------------------------------------------------------------===//
// Backward pass 2: dK and dV
//===----------------------------------------------------------------------===//

template <int D> constexpr int dkdvSmemBytes() {
  return (2 * 16 * kBwdWarps<D> + 4 * kTile) * kLds<D> * 2 + 2 * 2 * kTile * 4;
}

/// One CTA per (b, kv head, 16 W-row key tile): K, V staged once; for each
/// query head of the group and each 64-row query tile that sees the keys, the
/// Q, dO tiles and their lse2, delta rows stream through a double buffer. A
/// warp whose keys all follow a query tile (causal) or lie past S skips it.
template <int D, class T, int W>
__global__ void __launch_bounds__(32 * W) attnBwdDkDvTc(const TcParams p) {
  constexpr int BN = 16 * W, NT = 32 * W;
  static_assert(BN % kTile == 0, "a key tile starts on a query tile boundary");
  extern __shared__ __align__(128) unsigned char smemRaw[];
  T *Ks = reinterpret_cast<T *>(smemRaw);
  T *Vs = Ks + BN * kLds<D>;
  T *QdO = Vs + BN * kLds<D>; // stage s: Q at QdO + 2s tiles, dO after it
  float *stats = reinterpret_cast<float *>(QdO + 4 * kTileElems<D>); // [2][lse2 64, delta 64]
  const int S = p.S, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4,
            t = lane % 4;
  const Coords c = coords(p.B, p.Hkv, (S + BN - 1) / BN, false); // causal: tile 0 is longest
  const int j0 = c.tile * BN;
  const int64_t ldq = int64_t(p.Hq) * D, ldk = int64_t(p.Hkv) * D;
  const int64_t kOff = int64_t(c.b) * S * ldk + int64_t(c.h) * D;
  const int qtBegin = p.causal ? j0 / kTile : 0, nq = p.nTiles - qtBegin, nIt = p.group * nq;

  // Stage `it`: the Q and dO tiles and the statistics of (query head, tile).
  auto issue = [&](int it, int stage) {
    const int h = c.h * p.group + it / nq, qi0 = (qtBegin + it % nq) * kTile;
    const int64_t qOff = int64_t(c.b) * S * ldq + int64_t(h) * D + qi0 * ldq;
    T *dst = QdO + stage * 2 * kTileElems<D>;
    loadTileAsync<D, T, kTile, NT>(dst, static_cast<const T *>(p.q) + qOff, ldq, S - qi0);
    loadTileAsync<D, T, kTile, NT>(dst + kTileElems<D>, static_cast<const T *>(p.dout) + qOff,
                                   ldq, S - qi0);
    if (threadIdx.x < 2 * kTile) {
      const int r = threadIdx.x % kTile;
      const int64_t statOff = (int64_t(c.b) * p.Hq + h) * S + qi0 + r;
      const float *src = threadIdx.x < kTile ? p.lse2 : p.delta;
      stats[stage * 2 * kTile + threadIdx.x] = qi0 + r < S ? src[statOff] : 0.f;
    }
  };

  loadTileAsync<D, T, BN, NT>(Ks, static_cast<const T *>(p.k) + kOff + j0 * ldk, ldk, S - j0);
  loadTileAsync<D, T, BN, NT>(Vs, static_cast<const T *>(p.v) + kOff + j0 * ldk, ldk, S - j0);
  issue(0, 0);
  cpAsyncCommit();

  float dk[D / 8][4], dv[D / 8][4];
  zero<D / 8>(dk);
  zero<D / 8>(dv);
  const int warpKey0 = j0 + warp * 16, key0 = warpKey0 + g;
  const T *Kw = Ks + warp * 16 * kLds<D>, *Vw = Vs + warp * 16 * kLds<D>;

#pragma unroll 1
  for (int it = 0; it < nIt; ++it) {
    cpAsyncWaitAll();
    __syncthreads(); // stage `it` landed; every warp is done with stage it - 1
    if (it + 1 < nIt) {
      issue(it + 1, (it + 1) % 2);
      cpAsyncCommit();
    }
    const T *Qs = QdO + (it % 2) * 2 * kTileElems<D>, *dOs = Qs + kTileElems<D>;
    const float *lseS = stats + (it % 2) * 2 * kTile, *deltaS = lseS + kTile;
    const int qt = qtBegin + it % nq, i0 = qt * kTile;
    if (warpKey0 >= S || (p.causal && warpKey0 > i0 + kTile - 1))
      continue; // no valid key of this warp sees the query tile

    // P^T = exp2(K Q^T * scaleLog2 - lse2[query]), rows keys, columns queries.
    float s[8][4];
    zero<8>(s);
    mmaABt<D, T>(s, Kw, Qs, lane);
    const bool needMask =
        i0 + kTile > S || warpKey0 + 16 > S || (p.causal && warpKey0 + 15 > i0);
    scaleMask(s, p.scaleLog2, needMask, key0, i0, t, S, p.causal, true);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n][e] = fastExp2(s[n][e] - lseS[n * 8 + 2 * t + e % 2]);
    // P^T stays only in T (the mma operand; dS reuses the same rounded P).
    uint32_t pa[4][4];
    packA<T>(s, pa);
    mmaPV<D, T>(dv, pa, dOs, lane);

    // dS^T = P^T (V dO^T - delta[query]); dK += dS^T Q.
    float dp[8][4];
    zero<8>(dp);
    mmaABt<D, T>(dp, Vw, dOs, lane);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) { // a[kk][r] holds p[2kk + r / 2][2 (r % 2) .. + 1]
        const int n = 2 * kk + r / 2, e = 2 * (r % 2);
        const float2 pr = unpack2<T>(pa[kk][r]);
        dp[n][e] = pr.x * (dp[n][e] - deltaS[n * 8 + 2 * t]);
        dp[n][e + 1] = pr.y * (dp[n][e + 1] - deltaS[n * 8 + 2 * t + 1]);
      }
    packA<T>(dp, pa);
    mmaPV<D, T>(dk, pa, Qs, lane);
  }

  storeRows<D, T>(static_cast<T *>(p.dk) + kOff, ldk, key0, S, t, dk, p.scale);
  storeRows<D, T>(static_cast<T *>(p.dv) + kOff, ldk, key0, S, t, dv, 1.f);
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Launches K over `blocks` CTAs (opted in past 48 KB of shared memory once
/// per kernel and device).
template <auto K, int Threads = kThreads>
void launch(int smemBytes, int64_t blocks, const TcParams &p, cudaStream_t s) {
  detail::optInSharedMemory<K>(smemBytes);
  K<<<unsigned(blocks), Threads, smemBytes, s>>>(p);
  SHARDC_CUDA_LAUNCH();
}

bool tcApplies(DType t, int64_t D, std::initializer_list<const void *> ptrs) {
  if ((t != DType::BF16 && t != DType::F16) || (D != 64 && D != 128))
    return false;
  for (const void *p : ptrs) // row strides are multiples of D: 16-byte aligned
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return false;
  return true;
}

TcParams makeParams(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, bool causal, double scale) {
  TcParams p{};
  p.B = int(B);
  p.S = int(S);
  p.Hq = int(Hq);
  p.Hkv = int(Hkv);
  p.group = int(Hq / Hkv);
  p.nTiles = int((S + kTile - 1) / kTile);
  p.causal = causal;
  p.scale = float(scale);
  p.scaleLog2 = float(scale * 1.4426950408889634);
  return p;
}

template <int D, class T> void forwardTc(const TcParams &p, cudaStream_t s) {
  constexpr int BM = 16 * kFwdWarps;
  launch<attnFwdTc<D, T, kFwdWarps>, 32 * kFwdWarps>(fwdSmemBytes<D>(),
                                                     int64_t(p.B) * p.Hq * ((p.S + BM - 1) / BM),
                                                     p, s);
}
template <int D, class T> void backwardTc(const TcParams &p, cudaStream_t s) {
  constexpr int W = kBwdWarps<D>, BT = 16 * W;
  const int64_t nBig = (p.S + BT - 1) / BT; // tiles of the CTAs' own rows
  launch<attnBwdDqTc<D, T, W>, 32 * W>(dqSmemBytes<D>(), int64_t(p.B) * p.Hq * nBig, p, s);
  launch<attnBwdDkDvTc<D, T, W>, 32 * W>(dkdvSmemBytes<D>(), int64_t(p.B) * p.Hkv * nBig, p, s);
}
template <class T> void forwardD(int64_t D, const TcParams &p, cudaStream_t s) {
  D == 64 ? forwardTc<64, T>(p, s) : forwardTc<128, T>(p, s);
}
template <class T> void backwardD(int64_t D, const TcParams &p, cudaStream_t s) {
  D == 64 ? backwardTc<64, T>(p, s) : backwardTc<128, T>(p, s);
}

} // namespace

/// Called by attention_forward after its argument checks (non-empty shape);
/// false: not a tensor-core case, nothing launched.
bool detail::attention_forward_tc(TView q, TView k, TView v, TView out, float *lse, int64_t B,
                                  int64_t S, int64_t Hq, int64_t Hkv, int64_t D, bool causal,
                                  double scale, cudaStream_t s) {
  if (!tcApplies(q.dtype, D, {q.p, k.p, v.p, out.p}))
    return false;
  TcParams p = makeParams(B, S, Hq, Hkv, causal, scale);
  p.q = q.p;
  p.k = k.p;
  p.v = v.p;
  p.out = out.p;
  p.lse = lse;
  q.dtype == DType::BF16 ? forwardD<__nv_bfloat16>(D, p, s) : forwardD<__half>(D, p, s);
  return true;
}

/// Called by attention_backward after its argument checks (non-empty shape,
/// Hq > 0, workspace of attention_backward_workspace_bytes: lse2 then delta,
/// each f32 [B, Hq, S] at a 256-byte aligned offset `statsBytes`).
bool detail::attention_backward_tc(TView dout, TView q, TView k, TView v, TView out, TView dq,
                                   TView dk, TView dv, int64_t B, int64_t S, int64_t Hq,
                                   int64_t Hkv, int64_t D, bool causal, double scale, float *lse2,
                                   float *delta, cudaStream_t s) {
  if (!tcApplies(q.dtype, D, {q.p, k.p, v.p, out.p, dout.p, dq.p, dk.p, dv.p}))
    return false;
  TcParams p = makeParams(B, S, Hq, Hkv, causal, scale);
  p.q = q.p;
  p.k = k.p;
  p.v = v.p;
  p.o = out.p;
  p.dout = dout.p;
  p.dq = dq.p;
  p.dk = dk.p;
  p.dv = dv.p;
  p.lse2 = lse2;
  p.delta = delta;
  q.dtype == DType::BF16 ? backwardD<__nv_bfloat16>(D, p, s) : backwardD<__half>(D, p, s);
  return true;
}

} // namespace shardc::cuda
