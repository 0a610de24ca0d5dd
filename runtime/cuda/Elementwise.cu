//===- Elementwise.cu - pointwise, layout and gather kernels --------------===//
//
// The memory-bound kernels of the CUDA backend (DeviceKernels.h): pointwise
// maps, casts, dropout, iota, transpose, embedding and reduce_sum. Each
// mirrors its CPU kernel (runtime/cpu/Elementwise.cpp, Backward.cpp,
// Layout.cpp, Cast.cpp) op for op: inputs are widened to f32, the op is
// computed in f32 and the result is rounded once (round to nearest even)
// into the output's dtype.
//
// Performance notes:
//  - Pointwise maps whose operands all share one 16-bit or 32-bit float dtype
//    and are 16-byte aligned move 16 bytes per thread per access (4 f32 or
//    8 bf16/f16 lanes); mixed-dtype calls take a scalar path whose dtype
//    switch is uniform across the grid.
//  - Every kernel is a grid-stride loop over int64 indices with a capped
//    grid, so any size runs with one launch and no index overflow.
//  - Dropout is compute-bound (one Philox4x32-10 block per element): each
//    thread walks 4 consecutive elements and decodes the global index once.
//  - Transposes collapse unit and contiguous dims first; a transpose that
//    keeps the innermost dim copies rows in up-to-16-byte units, any other
//    moves 32x32 tiles through shared memory so reads and writes coalesce.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/DeviceDType.cuh"
#include "runtime/cuda/DeviceKernels.h"

#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/rng/PhiloxCore.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardc::cuda {

namespace {

constexpr int kThreads = 256;
/// Grid cap of the grid-stride kernels (about 16 waves of 256-thread blocks
/// on an H100); larger problems loop.
constexpr int64_t kMaxBlocks = 8192;

int64_t gridFor(int64_t work, int64_t perBlock = kThreads) {
  return std::clamp<int64_t>((work + perBlock - 1) / perBlock, 1, kMaxBlocks);
}

std::string dimsString(const Dims &d) {
  std::string s = "[";
  for (int i = 0; i < d.rank; ++i)
    s += (i ? ", " : "") + std::to_string(d.d[i]);
  return s + "]";
}

void checkDims(const char *kernel, const Dims &d) {
  if (d.rank < 0 || d.rank > Dims::kMax)
    throw rt::Error(std::string(kernel) + ": rank " + std::to_string(d.rank) +
                    " is outside [0, " + std::to_string(Dims::kMax) + "]");
  for (int i = 0; i < d.rank; ++i)
    if (d.d[i] < 0)
      throw rt::Error(std::string(kernel) + ": shape " + dimsString(d) +
                      " has a negative dimension");
}

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

//===----------------------------------------------------------------------===//
// Device-side loads and stores of any float dtype
//===----------------------------------------------------------------------===//



__device__ __forceinline__ float warpSum(float v) {
  // A butterfly: every lane ends with the same, order-fixed sum.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ void recordError(KernelError *err, int code, int64_t position,
                                            int64_t value, int64_t limit) {
  if (err && atomicCAS(&err->code, 0, code) == 0) {
    err->position = position;
    err->value = value;
    err->limit = limit;
  }
}

//===----------------------------------------------------------------------===//
// Pointwise maps
//===----------------------------------------------------------------------===//

template <int NI, int NO> struct MapArgs {
  static constexpr int kIn = NI > 0 ? NI : 1;
  const void *in[kIn] = {};
  DType inT[kIn] = {};
  void *out[NO] = {};
  DType outT[NO] = {};
};

/// out[o][k] = op's result o on element k of the inputs' packs (the first NI
/// of the kIn rows of `in`), element by element in f32.
template <int NI, int kIn, int NO, int V, class Op>
__device__ __forceinline__ void applyPack(const Op &op, const float (&in)[kIn][V],
                                          float (&out)[NO][V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float x[kIn], y[NO];
#pragma unroll
    for (int j = 0; j < NI; ++j)
      x[j] = in[j][k];
    op(x, y);
#pragma unroll
    for (int o = 0; o < NO; ++o)
      out[o][k] = y[o];
  }
}

/// All operands of dtype T, 16-byte aligned: thread-strided 16-byte packs,
/// then the < 16-byte tail on the first threads.
template <class T, int NI, int NO, class Op>
__global__ void __launch_bounds__(kThreads) mapVecKernel(MapArgs<NI, NO> a, int64_t n, Op op) {
  constexpr int V = kPack<T>;
  constexpr int kIn = MapArgs<NI, NO>::kIn;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t nPacks = n / V;
  for (int64_t p = tid; p < nPacks; p += stride) {
    float in[kIn][V];
#pragma unroll
    for (int j = 0; j < NI; ++j)
      loadPack(static_cast<const T *>(a.in[j]), p * V, in[j]);
    float out[NO][V];
    applyPack<NI>(op, in, out);
#pragma unroll
    for (int o = 0; o < NO; ++o)
      storePack(static_cast<T *>(a.out[o]), p * V, out[o]);
  }
  const int64_t i = nPacks * V + tid;
  if (i < n) {
    float x[kIn], y[NO];
#pragma unroll
    for (int j = 0; j < NI; ++j)
      x[j] = toF(static_cast<const T *>(a.in[j])[i]);
    op(x, y);
#pragma unroll
    for (int o = 0; o < NO; ++o)
      static_cast<T *>(a.out[o])[i] = fromF<T>(y[o]);
  }
}

/// Element i of every operand, any dtypes (switched per operand).
template <int NI, int NO, class Op>
__device__ __forceinline__ void mapOne(const MapArgs<NI, NO> &a, int64_t i, const Op &op) {
  constexpr int kIn = MapArgs<NI, NO>::kIn;
  float x[kIn], y[NO];
#pragma unroll
  for (int j = 0; j < NI; ++j)
    x[j] = loadF(a.in[j], a.inT[j], i);
  op(x, y);
#pragma unroll
  for (int o = 0; o < NO; ++o)
    storeF(a.out[o], a.outT[o], i, y[o]);
}

/// 8 elements of any storage float dtype at i (16-byte aligned): one 16-byte
/// access for bf16/f16, two for f32. The dtype switch is uniform over the
/// grid (one per operand and pack), not per element.
__device__ __forceinline__ void loadEight(const void *p, DType t, int64_t i, float (&v)[8]) {
  if (t == DType::F32) {
    float lo[4], hi[4];
    loadPack(static_cast<const float *>(p), i, lo);
    loadPack(static_cast<const float *>(p), i + 4, hi);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      v[k] = lo[k];
      v[k + 4] = hi[k];
    }
  } else if (t == DType::BF16) {
    loadPack(static_cast<const __nv_bfloat16 *>(p), i, v);
  } else {
    loadPack(static_cast<const __half *>(p), i, v);
  }
}

__device__ __forceinline__ void storeEight(void *p, DType t, int64_t i, const float (&v)[8]) {
  if (t == DType::F32) {
    const float lo[4] = {v[0], v[1], v[2], v[3]}, hi[4] = {v[4], v[5], v[6], v[7]};
    storePack(static_cast<float *>(p), i, lo);
    storePack(static_cast<float *>(p), i + 4, hi);
  } else if (t == DType::BF16) {
    storePack(static_cast<__nv_bfloat16 *>(p), i, v);
  } else {
    storePack(static_cast<__half *>(p), i, v);
  }
}

/// Mixed storage dtypes (a cast, an f32 residual plus a bf16 branch), every
/// operand 16-byte aligned: packs of 8 elements per thread step, then the
/// tail one element per thread. The same f32 op and the same rounding as
/// mapKernel, so the bits do not depend on the path. A profile of the GPT-2
/// 124M bf16 step on an H200 (2026-11-27) found casts at 1.4 TB/s on the
/// element-wise path; this is the vectorized one.
template <int NI, int NO, class Op>
__global__ void __launch_bounds__(kThreads) mapMixedKernel(MapArgs<NI, NO> a, int64_t n, Op op) {
  constexpr int kIn = MapArgs<NI, NO>::kIn;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t nPacks = n / 8;
  for (int64_t p = tid; p < nPacks; p += stride) {
    float in[kIn][8];
#pragma unroll
    for (int j = 0; j < NI; ++j)
      loadEight(a.in[j], a.inT[j], p * 8, in[j]);
    float out[NO][8];
    applyPack<NI>(op, in, out);
#pragma unroll
    for (int o = 0; o < NO; ++o)
      storeEight(a.out[o], a.outT[o], p * 8, out[o]);
  }
  const int64_t i = nPacks * 8 + tid;
  if (i < n)
    mapOne(a, i, op);
}

/// Any dtypes: one element per thread per step, dtype switched per operand.
template <int NI, int NO, class Op>
__global__ void __launch_bounds__(kThreads) mapKernel(MapArgs<NI, NO> a, int64_t n, Op op) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    mapOne(a, i, op);
}

bool isStorageFloat(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

template <int NI, int NO, class Op>
void launchMap(const TView *in, const TView *out, int64_t n, Op op, cudaStream_t s) {
  if (n <= 0)
    return;
  MapArgs<NI, NO> a;
  const DType t = out[0].dtype;
  bool vec = isStorageFloat(t), mixed = true; // mixed: aligned storage floats of any dtypes
  for (int j = 0; j < NI; ++j) {
    a.in[j] = in[j].p;
    a.inT[j] = in[j].dtype;
    vec = vec && in[j].dtype == t && aligned16(in[j].p);
    mixed = mixed && isStorageFloat(in[j].dtype) && aligned16(in[j].p);
  }
  for (int o = 0; o < NO; ++o) {
    a.out[o] = out[o].p;
    a.outT[o] = out[o].dtype;
    vec = vec && out[o].dtype == t && aligned16(out[o].p);
    mixed = mixed && isStorageFloat(out[o].dtype) && aligned16(out[o].p);
  }
  if (vec) {
    switch (t) {
    case DType::F32:
      mapVecKernel<float, NI, NO><<<gridFor(n / 4 + 1), kThreads, 0, s>>>(a, n, op);
      break;
    case DType::BF16:
      mapVecKernel<__nv_bfloat16, NI, NO><<<gridFor(n / 8 + 1), kThreads, 0, s>>>(a, n, op);
      break;
    default:
      mapVecKernel<__half, NI, NO><<<gridFor(n / 8 + 1), kThreads, 0, s>>>(a, n, op);
      break;
    }
  } else if (mixed) {
    mapMixedKernel<NI, NO><<<gridFor(n / 8 + 1), kThreads, 0, s>>>(a, n, op);
  } else {
    mapKernel<NI, NO><<<gridFor(n), kThreads, 0, s>>>(a, n, op);
  }
  SHARDC_CUDA_LAUNCH();
}

// The ops, in f32 and in the CPU kernels' operation order.

struct AddOp {
  __device__ void operator()(const float *x, float *y) const { y[0] = x[0] + x[1]; }
};

// sqrt(2 / pi) and the cubic coefficient, rounded from double as T(...) does.
constexpr float kGeluAlpha = float(0.7978845608028654);
constexpr float kGeluBeta = float(0.044715);

struct GeluOp {
  __device__ void operator()(const float *x, float *y) const {
    float v = x[0];
    float u = kGeluAlpha * (v + kGeluBeta * v * v * v);
    // 0.5 (1 + tanh(u)) == sigmoid(2u), which does not cancel for v << 0.
    y[0] = v / (1.0f + expf(-2.0f * u));
  }
};

struct GeluGradOp { // x = {dy, x}
  __device__ void operator()(const float *x, float *y) const {
    float v = x[1];
    float u = kGeluAlpha * (v + kGeluBeta * v * v * v);
    float s = 1.0f / (1.0f + expf(-2.0f * u));
    float du = kGeluAlpha * (1.0f + 3.0f * kGeluBeta * v * v);
    y[0] = x[0] * (s + 2.0f * v * s * (1.0f - s) * du);
  }
};

struct SwigluOp { // x = {gate, up}
  __device__ void operator()(const float *x, float *y) const {
    float g = x[0];
    y[0] = g / (1.0f + expf(-g)) * x[1];
  }
};

struct SwigluGradOp { // x = {dy, gate, up}; y = {dgate, dup}
  __device__ void operator()(const float *x, float *y) const {
    float d = x[0], g = x[1], u = x[2];
    float sig = 1.0f / (1.0f + expf(-g));
    y[0] = d * u * (sig * (1.0f + g * (1.0f - sig)));
    y[1] = d * (g * sig);
  }
};

struct ScaleOp { // in double, as cpu::scale
  double factor;
  __device__ void operator()(const float *x, float *y) const {
    y[0] = float(double(x[0]) * factor);
  }
};

struct FillOp {
  float value;
  __device__ void operator()(const float *, float *y) const { y[0] = value; }
};

struct CopyOp {
  __device__ void operator()(const float *x, float *y) const { y[0] = x[0]; }
};

//===----------------------------------------------------------------------===//
// bias_add
//===----------------------------------------------------------------------===//

/// x and out of T, cols a multiple of the pack: each pack lies in one row.
/// bias may have another dtype (f32 bias on bf16 activations); its reads hit
/// L1/L2.
template <class T>
__global__ void __launch_bounds__(kThreads)
    biasAddVecKernel(const T *x, TView bias, T *out, int64_t n, int64_t cols) {
  constexpr int V = kPack<T>;
  const int64_t nPacks = n / V;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < nPacks;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (p * V) % cols;
    float v[V];
    loadPack(x, p * V, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      v[k] += load(bias, c + k);
    storePack(out, p * V, v);
  }
}

__global__ void __launch_bounds__(kThreads)
    biasAddKernel(TView x, TView bias, TView out, int64_t n, int64_t cols) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(out, i, load(x, i) + load(bias, i % cols));
}

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

/// The block as runs of merged dims: the innermost run (inner elements at
/// global stride innerStride) and the outer runs, innermost first.
struct DropGeom {
  int nOuter = 0;
  int64_t size[Dims::kMax] = {}, stride[Dims::kMax] = {};
  int64_t inner = 1, innerStride = 0, base = 0;
};

__device__ __forceinline__ int64_t dropRowOffset(const DropGeom &g, int64_t row) {
  int64_t off = g.base;
#pragma unroll
  for (int d = 0; d < Dims::kMax; ++d)
    if (d < g.nOuter) {
      int64_t q = row / g.size[d];
      off += (row - q * g.size[d]) * g.stride[d];
      row = q;
    }
  return off;
}

/// Each thread walks 4 consecutive local elements, decoding the global
/// row-major index once; the keep test is rng::core::dropout_keep, the very
/// function cpu::dropout_block calls, so masks are bit-identical. Seed and
/// step are read from device memory (a replayed CUDA graph sees this step).
__global__ void __launch_bounds__(kThreads)
    dropoutKernel(TView x, TView out, int64_t n, DropGeom g, double rate, float scale,
                  const StepScalars *scalars, uint64_t opKey) {
  constexpr int K = 4;
  const uint64_t seed = scalars->seed;
  const uint64_t stream = rng::core::stream_key(scalars->step, opKey);
  for (int64_t i0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * K; i0 < n;
       i0 += int64_t(gridDim.x) * blockDim.x * K) {
    int64_t row = i0 / g.inner, col = i0 - row * g.inner;
    int64_t off = dropRowOffset(g, row);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t i = i0 + k;
      if (i >= n)
        break;
      const uint64_t gi = uint64_t(off + col * g.innerStride);
      const bool keep = rng::core::dropout_keep(seed, stream, gi, rate);
      const float v = load(x, i);
      store(out, i, keep ? v * scale : 0.0f);
      if (++col == g.inner) {
        col = 0;
        off = dropRowOffset(g, ++row);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// iota, transpose
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kThreads)
    iotaKernel(int32_t *out, int64_t total, int64_t inner, int64_t extent, int64_t offset) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int32_t((i / inner) % extent + offset);
}

/// A permutation after merging: output dim i has size outShape[i] and input
/// stride srcStride[i].
struct PermGeom {
  int rank = 0;
  int64_t outShape[Dims::kMax] = {}, srcStride[Dims::kMax] = {};
};

/// Row-preserving permutation (the innermost dim stays innermost, stride 1
/// on both sides): out[i] = in[src(i)] in units E of up to 16 bytes; reads
/// and writes are contiguous along each row. I is 32-bit when the tensor
/// allows it (cheaper divisions).
template <class E, class I>
__global__ void __launch_bounds__(kThreads) permuteKernel(const E *in, E *out, PermGeom g,
                                                          I total) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += I(gridDim.x) * blockDim.x) {
    I rem = i, src = 0;
#pragma unroll
    for (int d = Dims::kMax - 1; d >= 0; --d)
      if (d < g.rank) {
        I size = I(g.outShape[d]);
        I q = rem / size;
        src += (rem - q * size) * I(g.srcStride[d]);
        rem = q;
      }
    out[i] = in[src];
  }
}

/// Tiled transpose. a runs along output dim q (stride 1 in the input), b
/// along the innermost output dim (stride 1 in the output); the other dims
/// (`others`, innermost first) select the slab.
struct TileGeom {
  int nOthers = 0;
  int64_t size[Dims::kMax] = {}, srcStride[Dims::kMax] = {}, dstStride[Dims::kMax] = {};
  int64_t nA = 0, nB = 0, srcStrideB = 0, dstStrideA = 0, tilesA = 0, tilesB = 0, nOuter = 0;
};

constexpr int kTile = 32, kTileRows = 8;

/// A 32x32 tile is read with threadIdx.x along a (coalesced in the input),
/// parked in shared memory (row pitch 33: conflict-free for 4-byte
/// elements) and written with threadIdx.x along b (coalesced in the output).
template <class E>
__global__ void __launch_bounds__(kTile *kTileRows)
    transposeTileKernel(const E *in, E *out, TileGeom g) {
  __shared__ E tile[kTile][kTile + 1];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t nTiles = g.tilesA * g.tilesB;
  for (int64_t outer = blockIdx.y; outer < g.nOuter; outer += gridDim.y) {
    int64_t src = 0, dst = 0, rem = outer;
#pragma unroll
    for (int d = 0; d < Dims::kMax; ++d)
      if (d < g.nOthers) {
        int64_t q = rem / g.size[d];
        int64_t idx = rem - q * g.size[d];
        src += idx * g.srcStride[d];
        dst += idx * g.dstStride[d];
        rem = q;
      }
    for (int64_t t = blockIdx.x; t < nTiles; t += gridDim.x) {
      const int64_t a0 = (t / g.tilesB) * kTile, b0 = (t % g.tilesB) * kTile;
#pragma unroll
      for (int j = 0; j < kTile; j += kTileRows) {
        int64_t a = a0 + tx, b = b0 + ty + j;
        if (a < g.nA && b < g.nB)
          tile[ty + j][tx] = in[src + a + b * g.srcStrideB];
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kTile; j += kTileRows) {
        int64_t a = a0 + ty + j, b = b0 + tx;
        if (a < g.nA && b < g.nB)
          out[dst + a * g.dstStrideA + b] = tile[tx][ty + j];
      }
      __syncthreads();
    }
  }
}

template <class E>
void launchPermute(const void *in, void *out, const PermGeom &g, int64_t total,
                   cudaStream_t s) {
  const E *src = static_cast<const E *>(in);
  E *dst = static_cast<E *>(out);
  if (total <= int64_t(UINT32_MAX))
    permuteKernel<E, uint32_t><<<gridFor(total), kThreads, 0, s>>>(src, dst, g, uint32_t(total));
  else
    permuteKernel<E, uint64_t><<<gridFor(total), kThreads, 0, s>>>(src, dst, g, uint64_t(total));
  SHARDC_CUDA_LAUNCH();
}

template <class E>
void launchTile(const void *in, void *out, const TileGeom &g, cudaStream_t s) {
  dim3 grid(unsigned(std::min<int64_t>(g.tilesA * g.tilesB, INT32_MAX)),
            unsigned(std::min<int64_t>(g.nOuter, 65535)));
  transposeTileKernel<E><<<grid, kTile * kTileRows, 0, s>>>(static_cast<const E *>(in),
                                                           static_cast<E *>(out), g);
  SHARDC_CUDA_LAUNCH();
}

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

constexpr int kWarpsPerBlock = kThreads / 32;

__device__ __forceinline__ int64_t warpId() {
  return int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
}
__device__ __forceinline__ int64_t warpCount() { return int64_t(gridDim.x) * kWarpsPerBlock; }

/// One warp per token; block and out share a dtype and rows are whole
/// 16-byte units: lanes copy 16 bytes each along the row.
__global__ void __launch_bounds__(kThreads)
    embeddingVecKernel(const uint4 *block, const int32_t *ids, uint4 *out, int64_t nIds,
                       int64_t vocab, int64_t rowBegin, int64_t rows, int64_t units,
                       KernelError *err) {
  const int lane = threadIdx.x % 32;
  for (int64_t i = warpId(); i < nIds; i += warpCount()) {
    const int64_t id = ids[i];
    const bool bad = id < 0 || id >= vocab;
    if (bad && lane == 0)
      recordError(err, kBadTokenId, i, id, vocab);
    const int64_t r = id - rowBegin;
    const bool inBlock = !bad && r >= 0 && r < rows;
    for (int64_t u = lane; u < units; u += 32)
      out[i * units + u] = inBlock ? block[r * units + u] : make_uint4(0, 0, 0, 0);
  }
}

__global__ void __launch_bounds__(kThreads)
    embeddingKernel(TView block, const int32_t *ids, TView out, int64_t nIds, int64_t vocab,
                    int64_t rowBegin, int64_t rows, int64_t dim, KernelError *err) {
  const int lane = threadIdx.x % 32;
  for (int64_t i = warpId(); i < nIds; i += warpCount()) {
    const int64_t id = ids[i];
    const bool bad = id < 0 || id >= vocab;
    if (bad && lane == 0)
      recordError(err, kBadTokenId, i, id, vocab);
    const int64_t r = id - rowBegin;
    const bool inBlock = !bad && r >= 0 && r < rows;
    for (int64_t c = lane; c < dim; c += 32)
      store(out, i * dim + c, inBlock ? load(block, r * dim + c) : 0.0f);
  }
}

/// embedding_grad, pass 1: each token's key is its row in the block, or
/// `rows` (a bucket nobody reads) for ids outside the block or the vocabulary;
/// its value is its position. Counts per key (integer atomics: exact).
__global__ void __launch_bounds__(kThreads)
    embeddingGradKeysKernel(const int32_t *ids, int32_t *keys, int32_t *positions,
                            int32_t *counts, int64_t nIds, int64_t vocab, int64_t rowBegin,
                            int64_t rows, KernelError *err) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nIds;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t id = ids[i];
    const bool bad = id < 0 || id >= vocab;
    if (bad)
      recordError(err, kBadTokenId, i, id, vocab);
    const int64_t r = id - rowBegin;
    const int32_t key = !bad && r >= 0 && r < rows ? int32_t(r) : int32_t(rows);
    keys[i] = key;
    positions[i] = int32_t(i);
    atomicAdd(&counts[key], 1);
  }
}

/// embedding_grad, pass 3: one CTA per row sums the dy rows of its tokens and
/// rounds once into dblock; rows no token names are written as zeros. The
/// row's tokens (in token order: the stable sort kept it) are cut into
/// kEmbedWarps contiguous segments, one per warp; a warp sums its segment in
/// order into per-lane f32 accumulators (kEmbedCols columns per lane, 8
/// independent loads in flight), and the segments' sums are added in warp
/// order: a fixed order that depends only on the ids, so every launch gives
/// the same bits. A row as frequent as "the" (thousands of tokens in a GPT-2
/// batch) is one CTA's work; summed by one thread per column, as before
/// (2026-11-27, H200 profile of the 124M step), it took 6 ms of the step.
constexpr int kEmbedWarps = 16, kEmbedCols = 8, kEmbedTile = 32 * kEmbedCols;

__global__ void __launch_bounds__(kEmbedWarps * 32)
    embeddingGradRowsKernel(TView dy, const int32_t *order, const int32_t *offsets,
                            const int32_t *counts, TView dblock, int64_t rows, int64_t dim) {
  __shared__ float part[kEmbedWarps][kEmbedTile];
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t *tokens = order + offsets[r];
    const int32_t n = counts[r];
    const int32_t per = (n + kEmbedWarps - 1) / kEmbedWarps;
    const int32_t j0 = min(n, warp * per), j1 = min(n, j0 + per);
    for (int64_t c0 = 0; c0 < dim; c0 += kEmbedTile) {
      float acc[kEmbedCols];
#pragma unroll
      for (int k = 0; k < kEmbedCols; ++k)
        acc[k] = 0.0f;
      for (int32_t j = j0; j < j1; ++j) {
        const int64_t rowOff = int64_t(tokens[j]) * dim;
#pragma unroll
        for (int k = 0; k < kEmbedCols; ++k) {
          const int64_t c = c0 + lane + 32 * k;
          if (c < dim)
            acc[k] += load(dy, rowOff + c);
        }
      }
#pragma unroll
      for (int k = 0; k < kEmbedCols; ++k)
        part[warp][lane + 32 * k] = acc[k];
      __syncthreads();
      for (int i = int(threadIdx.x); i < kEmbedTile; i += kEmbedWarps * 32) {
        const int64_t c = c0 + i;
        if (c < dim) {
          float sum = 0.0f;
#pragma unroll
          for (int w = 0; w < kEmbedWarps; ++w)
            sum += part[w][i];
          store(dblock, r * dim + c, sum);
        }
      }
      __syncthreads(); // part is rewritten by the next tile
    }
  }
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// Merged runs of dims (innermost first): index -> element offset.
struct RunList {
  int n = 0;
  int64_t size[Dims::kMax] = {}, stride[Dims::kMax] = {};
};

__device__ __forceinline__ int64_t runOffset(const RunList &r, int64_t idx) {
  int64_t off = 0;
#pragma unroll
  for (int d = 0; d < Dims::kMax; ++d)
    if (d < r.n) {
      if (d + 1 == r.n) { // the outermost run needs no modulo
        off += idx * r.stride[d];
      } else {
        int64_t q = idx / r.size[d];
        off += (idx - q * r.size[d]) * r.stride[d];
        idx = q;
      }
    }
  return off;
}

constexpr int kReduceThreads = 512;

/// Kept innermost run (`inner` contiguous columns): a block owns W columns of
/// one outer index; its 512 / W thread rows split the reduced indices
/// (strided, in order) and are combined in row order through shared memory,
/// so the result is deterministic. Loads along the W columns coalesce.
template <int W>
__global__ void __launch_bounds__(kReduceThreads)
    reduceColsKernel(TView x, TView out, RunList kept, RunList red, int64_t nOuter,
                     int64_t inner, int64_t nRed) {
  constexpr int R = kReduceThreads / W;
  __shared__ float sh[R][W + 1];
  const int tx = threadIdx.x % W, ty = threadIdx.x / W;
  const int64_t colTiles = (inner + W - 1) / W;
  for (int64_t t = blockIdx.x; t < nOuter * colTiles; t += gridDim.x) {
    const int64_t o = t / colTiles, c = (t - o * colTiles) * W + tx;
    float acc = 0.0f;
    if (c < inner) {
      const int64_t base = runOffset(kept, o) + c;
#pragma unroll 4
      for (int64_t r = ty; r < nRed; r += R)
        acc += load(x, base + runOffset(red, r));
    }
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < inner) {
      float sum = 0.0f;
      for (int y = 0; y < R; ++y)
        sum += sh[y][tx];
      store(out, o * inner + c, sum);
    }
    __syncthreads();
  }
}

/// Reduced innermost run: L threads (a warp, or a 256-thread block for long
/// reductions) per output, lanes strided over the reduced indices, combined
/// by a butterfly and (L = 256) the 8 warp sums in warp order.
template <int L>
__global__ void __launch_bounds__(kThreads)
    reduceRowsKernel(TView x, TView out, RunList kept, RunList red, int64_t nOuter,
                     int64_t nRed) {
  constexpr int kPer = kThreads / L;
  __shared__ float sh[kThreads / 32];
  const int lane = threadIdx.x % L;
  for (int64_t o0 = int64_t(blockIdx.x) * kPer; o0 < nOuter; o0 += int64_t(gridDim.x) * kPer) {
    const int64_t o = o0 + threadIdx.x / L;
    float acc = 0.0f;
    if (o < nOuter) {
      const int64_t base = runOffset(kept, o);
#pragma unroll 4
      for (int64_t r = lane; r < nRed; r += L)
        acc += load(x, base + runOffset(red, r));
    }
    acc = warpSum(acc);
    if constexpr (L == 32) {
      if (lane == 0 && o < nOuter)
        store(out, o, acc);
    } else {
      __syncthreads();
      if (threadIdx.x % 32 == 0)
        sh[threadIdx.x / 32] = acc;
      __syncthreads();
      if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int w = 0; w < kThreads / 32; ++w)
          sum += sh[w];
        store(out, o, sum);
      }
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

void add(TView a, TView b, TView out, int64_t n, cudaStream_t s) {
  TView in[2] = {a, b};
  launchMap<2, 1>(in, &out, n, AddOp{}, s);
}

void bias_add(TView x, TView bias, TView out, int64_t rows, int64_t cols, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n <= 0)
    return;
  const bool same = x.dtype == out.dtype && isStorageFloat(x.dtype) && aligned16(x.p) &&
                    aligned16(out.p);
  const int64_t pack = same ? 16 / rt::dtype_size(x.dtype) : 0;
  if (same && cols % pack == 0) {
    switch (x.dtype) {
    case DType::F32:
      biasAddVecKernel<<<gridFor(n / pack), kThreads, 0, s>>>(
          static_cast<const float *>(x.p), bias, static_cast<float *>(out.p), n, cols);
      break;
    case DType::BF16:
      biasAddVecKernel<<<gridFor(n / pack), kThreads, 0, s>>>(
          static_cast<const __nv_bfloat16 *>(x.p), bias, static_cast<__nv_bfloat16 *>(out.p), n,
          cols);
      break;
    default:
      biasAddVecKernel<<<gridFor(n / pack), kThreads, 0, s>>>(
          static_cast<const __half *>(x.p), bias, static_cast<__half *>(out.p), n, cols);
      break;
    }
  } else {
    biasAddKernel<<<gridFor(n), kThreads, 0, s>>>(x, bias, out, n, cols);
  }
  SHARDC_CUDA_LAUNCH();
}

void gelu(TView x, TView out, int64_t n, cudaStream_t s) {
  launchMap<1, 1>(&x, &out, n, GeluOp{}, s);
}

void gelu_grad(TView dy, TView x, TView dx, int64_t n, cudaStream_t s) {
  TView in[2] = {dy, x};
  launchMap<2, 1>(in, &dx, n, GeluGradOp{}, s);
}

void swiglu(TView gate, TView up, TView out, int64_t n, cudaStream_t s) {
  TView in[2] = {gate, up};
  launchMap<2, 1>(in, &out, n, SwigluOp{}, s);
}

void swiglu_grad(TView dy, TView gate, TView up, TView dgate, TView dup, int64_t n,
                 cudaStream_t s) {
  TView in[3] = {dy, gate, up};
  TView out[2] = {dgate, dup};
  launchMap<3, 2>(in, out, n, SwigluGradOp{}, s);
}

void scale(TView x, TView out, int64_t n, double factor, cudaStream_t s) {
  launchMap<1, 1>(&x, &out, n, ScaleOp{factor}, s);
}

void fill(TView out, int64_t n, double value, cudaStream_t s) {
  if (n <= 0)
    return;
  // The value as cpu's static_cast<float>, then rounded into the dtype.
  const float v = float(value);
  if (v == 0.0f && !std::signbit(v) && out.dtype != DType::I32) {
    SHARDC_CUDA(cudaMemsetAsync(out.p, 0, size_t(n * rt::dtype_size(out.dtype)), s));
    return;
  }
  launchMap<0, 1>(nullptr, &out, n, FillOp{v}, s);
}

void cast(TView x, TView out, int64_t n, cudaStream_t s) {
  if (n <= 0)
    return;
  if (x.dtype == out.dtype) {
    if (x.p != out.p)
      SHARDC_CUDA(cudaMemcpyAsync(out.p, x.p, size_t(n * rt::dtype_size(x.dtype)),
                                  cudaMemcpyDeviceToDevice, s));
    return;
  }
  launchMap<1, 1>(&x, &out, n, CopyOp{}, s);
}

void dropout(TView x, TView out, const Dims &shape, const Dims &offset, const Dims &global,
             double rate, const StepScalars *scalars, uint64_t opKey, cudaStream_t s) {
  if (!(rate >= 0.0 && rate <= 1.0))
    throw rt::Error("dropout: rate = " + std::to_string(rate) + " is outside [0, 1]");
  checkDims("dropout", shape);
  const int rank = shape.rank;
  bool valid = offset.rank == rank && global.rank == rank;
  for (int d = 0; valid && d < rank; ++d)
    valid = offset.d[d] >= 0 && offset.d[d] + shape.d[d] <= global.d[d];
  if (!valid)
    throw rt::Error("dropout: block " + dimsString(shape) + " at offset " +
                    dimsString(offset) + " does not lie in a tensor of shape " +
                    dimsString(global));
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= shape.d[d];
  if (n == 0)
    return;
  if (rate == 0.0) {
    cast(x, out, n, s);
    return;
  }
  if (rate == 1.0) {
    SHARDC_CUDA(cudaMemsetAsync(out.p, 0, size_t(n * rt::dtype_size(out.dtype)), s));
    return;
  }
  // Global row-major strides; unit dims fold into the base offset and a dim
  // whose inner neighbour is whole merges with it.
  int64_t gstride[Dims::kMax];
  int64_t st = 1;
  for (int d = rank - 1; d >= 0; --d) {
    gstride[d] = st;
    st *= global.d[d];
  }
  DropGeom g;
  std::vector<std::pair<int64_t, int64_t>> runs; // (size, global stride), innermost first
  for (int d = rank - 1; d >= 0; --d) {
    g.base += offset.d[d] * gstride[d];
    if (shape.d[d] == 1)
      continue;
    if (!runs.empty() && gstride[d] == runs.back().first * runs.back().second)
      runs.back().first *= shape.d[d];
    else
      runs.push_back({shape.d[d], gstride[d]});
  }
  if (!runs.empty()) {
    g.inner = runs[0].first;
    g.innerStride = runs[0].second;
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    g.size[g.nOuter] = runs[r].first;
    g.stride[g.nOuter] = runs[r].second;
    ++g.nOuter;
  }
  const float scaleF = float(1.0 / (1.0 - rate));
  dropoutKernel<<<gridFor((n + 3) / 4), kThreads, 0, s>>>(x, out, n, g, rate, scaleF, scalars,
                                                          opKey);
  SHARDC_CUDA_LAUNCH();
}

void iota(int32_t *out, const Dims &shape, int dim, int64_t offset, cudaStream_t s) {
  checkDims("iota", shape);
  if (dim < 0 || dim >= shape.rank)
    throw rt::Error("iota: dimension " + std::to_string(dim) + " is out of range for shape " +
                    dimsString(shape));
  int64_t inner = 1, total = 1;
  for (int d = 0; d < shape.rank; ++d) {
    total *= shape.d[d];
    if (d > dim)
      inner *= shape.d[d];
  }
  if (total == 0)
    return;
  iotaKernel<<<gridFor(total), kThreads, 0, s>>>(out, total, inner, shape.d[dim], offset);
  SHARDC_CUDA_LAUNCH();
}

void transpose(const void *in, void *out, int64_t elemBytes, const Dims &inShape,
               const Dims &perm, cudaStream_t s) {
  if (elemBytes != 2 && elemBytes != 4 && elemBytes != 8)
    throw rt::Error("transpose: element size " + std::to_string(elemBytes) +
                    " is not 2, 4 or 8 bytes");
  checkDims("transpose", inShape);
  const int rank = inShape.rank;
  bool valid = perm.rank == rank;
  bool seen[Dims::kMax] = {};
  for (int i = 0; valid && i < rank; ++i) {
    valid = perm.d[i] >= 0 && perm.d[i] < rank && !seen[perm.d[i]];
    if (valid)
      seen[perm.d[i]] = true;
  }
  if (!valid)
    throw rt::Error("transpose: " + dimsString(perm) +
                    " is not a permutation of the dimensions of a tensor of shape " +
                    dimsString(inShape));
  int64_t total = 1;
  for (int d = 0; d < rank; ++d)
    total *= inShape.d[d];
  if (total == 0)
    return;

  // Drop unit dims, then merge output neighbours that are input neighbours.
  int newIdx[Dims::kMax];
  std::vector<int64_t> cShape;
  for (int d = 0; d < rank; ++d) {
    newIdx[d] = inShape.d[d] == 1 ? -1 : int(cShape.size());
    if (inShape.d[d] != 1)
      cShape.push_back(inShape.d[d]);
  }
  std::vector<int> q; // output order of the compacted input dims
  for (int i = 0; i < rank; ++i)
    if (newIdx[perm.d[i]] >= 0)
      q.push_back(newIdx[perm.d[i]]);
  std::vector<std::pair<int, int>> groups; // [first, last] input dims, output order
  for (int dIn : q) {
    if (!groups.empty() && groups.back().second + 1 == dIn)
      groups.back().second = dIn;
    else
      groups.push_back({dIn, dIn});
  }
  const int R = int(groups.size());
  if (R <= 1) { // the identity on the data
    if (in != out)
      SHARDC_CUDA(cudaMemcpyAsync(out, in, size_t(total * elemBytes), cudaMemcpyDeviceToDevice, s));
    return;
  }
  // Groups in input order: their sizes and input strides.
  std::vector<int> byInput(R);
  for (int i = 0; i < R; ++i)
    byInput[i] = i;
  std::sort(byInput.begin(), byInput.end(),
            [&](int a, int b) { return groups[a].first < groups[b].first; });
  std::vector<int64_t> gSize(R), gInStride(R);
  for (int i = 0; i < R; ++i) {
    gSize[i] = 1;
    for (int d = groups[i].first; d <= groups[i].second; ++d)
      gSize[i] *= cShape[d];
  }
  int64_t st = 1;
  for (int k = R - 1; k >= 0; --k) {
    gInStride[byInput[k]] = st;
    st *= gSize[byInput[k]];
  }
  std::vector<int64_t> outStride(R);
  st = 1;
  for (int i = R - 1; i >= 0; --i) {
    outStride[i] = st;
    st *= gSize[i];
  }

  if (gInStride[R - 1] == 1) {
    // The innermost dim stays innermost: copy rows in the widest unit that
    // divides a row and both addresses' alignment.
    int64_t unit = elemBytes;
    const int64_t rowBytes = gSize[R - 1] * elemBytes;
    for (int64_t u : {16, 8, 4})
      if (u > elemBytes && rowBytes % u == 0 &&
          (reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) % u == 0) {
        unit = u;
        break;
      }
    const int64_t k = unit / elemBytes; // elements per unit
    PermGeom g;
    g.rank = R;
    for (int i = 0; i < R; ++i) {
      g.outShape[i] = i == R - 1 ? gSize[i] / k : gSize[i];
      g.srcStride[i] = i == R - 1 ? 1 : gInStride[i] / k;
    }
    const int64_t units = total / k;
    switch (unit) {
    case 16:
      launchPermute<uint4>(in, out, g, units, s);
      break;
    case 8:
      launchPermute<unsigned long long>(in, out, g, units, s);
      break;
    case 4:
      launchPermute<uint32_t>(in, out, g, units, s);
      break;
    default:
      launchPermute<uint16_t>(in, out, g, units, s);
      break;
    }
    return;
  }

  // Tiled: a along output group qa (the input's innermost), b along the
  // output's innermost group.
  int qa = 0;
  while (gInStride[qa] != 1)
    ++qa;
  TileGeom g;
  g.nA = gSize[qa];
  g.nB = gSize[R - 1];
  g.srcStrideB = gInStride[R - 1];
  g.dstStrideA = outStride[qa];
  g.tilesA = (g.nA + kTile - 1) / kTile;
  g.tilesB = (g.nB + kTile - 1) / kTile;
  g.nOuter = 1;
  for (int i = R - 2; i >= 0; --i) {
    if (i == qa)
      continue;
    g.size[g.nOthers] = gSize[i];
    g.srcStride[g.nOthers] = gInStride[i];
    g.dstStride[g.nOthers] = outStride[i];
    ++g.nOthers;
    g.nOuter *= gSize[i];
  }
  switch (elemBytes) {
  case 2:
    launchTile<uint16_t>(in, out, g, s);
    break;
  case 4:
    launchTile<uint32_t>(in, out, g, s);
    break;
  default:
    launchTile<unsigned long long>(in, out, g, s);
    break;
  }
}

namespace {

void checkEmbeddingBlock(const char *kernel, int64_t vocab, int64_t rowBegin, int64_t rows) {
  if (rowBegin < 0 || rows < 0 || rowBegin + rows > vocab)
    throw rt::Error(std::string(kernel) + ": table rows [" + std::to_string(rowBegin) + ", " +
                    std::to_string(rowBegin + rows) + ") are not inside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
}

} // namespace

void embedding(TView block, const int32_t *ids, TView out, int64_t nIds, int64_t vocab,
               int64_t rowBegin, int64_t rows, int64_t dim, KernelError *err, cudaStream_t s) {
  checkEmbeddingBlock("embedding", vocab, rowBegin, rows);
  if (nIds <= 0 || dim <= 0)
    return;
  const int64_t grid = std::clamp<int64_t>((nIds + kWarpsPerBlock - 1) / kWarpsPerBlock, 1,
                                           kMaxBlocks);
  const int64_t rowBytes = dim * rt::dtype_size(out.dtype);
  if (block.dtype == out.dtype && rowBytes % 16 == 0 && aligned16(block.p) && aligned16(out.p))
    embeddingVecKernel<<<grid, kThreads, 0, s>>>(static_cast<const uint4 *>(block.p), ids,
                                                 static_cast<uint4 *>(out.p), nIds, vocab,
                                                 rowBegin, rows, rowBytes / 16, err);
  else
    embeddingKernel<<<grid, kThreads, 0, s>>>(block, ids, out, nIds, vocab, rowBegin, rows, dim,
                                              err);
  SHARDC_CUDA_LAUNCH();
}

namespace {

/// The workspace of embedding_grad, 256-byte aligned pieces: keys, positions,
/// sorted keys, sorted positions (nIds int32 each), counts and offsets (rows +
/// 1 int32 each), then CUB's temporary storage (the larger of the sort's and
/// the scan's).
struct EmbeddingGradWorkspace {
  int64_t keys = 0, positions = 0, sortedKeys = 0, order = 0, counts = 0, offsets = 0,
          temp = 0, tempBytes = 0, total = 0;
  int endBit = 1;

  EmbeddingGradWorkspace(int64_t nIds, int64_t rows) {
    if (nIds > INT32_MAX - 1 || rows > INT32_MAX - 1)
      throw rt::Error("embedding_grad: " + std::to_string(nIds) + " ids over " +
                      std::to_string(rows) + " rows do not fit the 32-bit sort");
    while (endBit < 31 && (int64_t(1) << endBit) <= rows) // keys 0..rows
      ++endBit;
    auto piece = [&](int64_t bytes) {
      const int64_t at = total;
      total += (bytes + 255) / 256 * 256;
      return at;
    };
    size_t sortBytes = 0, scanBytes = 0;
    SHARDC_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, (const int32_t *)nullptr,
                                                (int32_t *)nullptr, (const int32_t *)nullptr,
                                                (int32_t *)nullptr, int(nIds), 0, endBit));
    SHARDC_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scanBytes, (const int32_t *)nullptr,
                                              (int32_t *)nullptr, int(rows + 1)));
    keys = piece(nIds * 4);
    positions = piece(nIds * 4);
    sortedKeys = piece(nIds * 4);
    order = piece(nIds * 4);
    counts = piece((rows + 1) * 4);
    offsets = piece((rows + 1) * 4);
    tempBytes = int64_t(std::max(sortBytes, scanBytes));
    temp = piece(tempBytes);
  }
};

} // namespace

int64_t embedding_grad_workspace_bytes(int64_t nIds, int64_t rows) {
  if (nIds <= 0 || rows <= 0)
    return 0;
  return EmbeddingGradWorkspace(nIds, rows).total;
}

void embedding_grad(TView dy, const int32_t *ids, TView dblock, int64_t nIds, int64_t vocab,
                    int64_t rowBegin, int64_t rows, int64_t dim, void *workspace,
                    KernelError *err, cudaStream_t s) {
  checkEmbeddingBlock("embedding_grad", vocab, rowBegin, rows);
  if (rows <= 0 || dim <= 0)
    return;
  if (nIds <= 0) {
    SHARDC_CUDA(cudaMemsetAsync(dblock.p, 0, size_t(rows * dim * rt::dtype_size(dblock.dtype)),
                                s));
    return;
  }
  if (!workspace)
    throw rt::Error("embedding_grad: no workspace (embedding_grad_workspace_bytes)");
  const EmbeddingGradWorkspace w(nIds, rows);
  auto *base = static_cast<char *>(workspace);
  auto at = [&](int64_t off) { return reinterpret_cast<int32_t *>(base + off); };
  int32_t *counts = at(w.counts), *offsets = at(w.offsets);
  SHARDC_CUDA(cudaMemsetAsync(counts, 0, size_t(rows + 1) * sizeof(int32_t), s));
  embeddingGradKeysKernel<<<gridFor(nIds, kThreads), kThreads, 0, s>>>(
      ids, at(w.keys), at(w.positions), counts, nIds, vocab, rowBegin, rows, err);
  SHARDC_CUDA_LAUNCH();
  size_t tempBytes = size_t(w.tempBytes);
  SHARDC_CUDA(cub::DeviceScan::ExclusiveSum(base + w.temp, tempBytes, counts, offsets,
                                            int(rows + 1), s));
  tempBytes = size_t(w.tempBytes);
  // Stable: the positions of one row stay in token order.
  SHARDC_CUDA(cub::DeviceRadixSort::SortPairs(base + w.temp, tempBytes, at(w.keys),
                                              at(w.sortedKeys), at(w.positions), at(w.order),
                                              int(nIds), 0, w.endBit, s));
  embeddingGradRowsKernel<<<int(std::min<int64_t>(rows, 65535)), kEmbedWarps * 32, 0, s>>>(
      dy, at(w.order), offsets, counts, dblock, rows, dim);
  SHARDC_CUDA_LAUNCH();
}

void reduce_sum(TView x, TView out, const Dims &shape, uint32_t dimMask, cudaStream_t s) {
  checkDims("reduce_sum", shape);
  const int rank = shape.rank;
  if (rank < 32 && (dimMask >> rank) != 0)
    throw rt::Error("reduce_sum: dim mask " + std::to_string(dimMask) +
                    " names dims outside a tensor of rank " + std::to_string(rank));
  // Merge neighbouring dims of one kind, drop unit dims (as cpu::reduce_sum).
  struct Run {
    int64_t size, stride;
    bool reduced;
  };
  std::vector<Run> runs; // innermost first
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const bool reduced = (dimMask >> d) & 1u;
    if (shape.d[d] != 1) {
      if (!runs.empty() && runs.back().reduced == reduced &&
          runs.back().stride * runs.back().size == stride)
        runs.back().size *= shape.d[d];
      else
        runs.push_back({shape.d[d], stride, reduced});
    }
    stride *= shape.d[d];
  }
  int64_t inner = 1;
  size_t first = 0;
  if (!runs.empty() && !runs[0].reduced) {
    inner = runs[0].size;
    first = 1;
  }
  RunList kept, red;
  int64_t nOuter = 1, nRed = 1;
  for (size_t i = first; i < runs.size(); ++i) {
    RunList &l = runs[i].reduced ? red : kept;
    l.size[l.n] = runs[i].size;
    l.stride[l.n] = runs[i].stride;
    ++l.n;
    (runs[i].reduced ? nRed : nOuter) *= runs[i].size;
  }
  const int64_t nOut = nOuter * inner;
  if (nOut == 0)
    return;
  if (nRed == 0 || stride == 0) { // an empty reduced dim: zeros
    SHARDC_CUDA(cudaMemsetAsync(out.p, 0, size_t(nOut * rt::dtype_size(out.dtype)), s));
    return;
  }
  if (inner > 1) {
    const int64_t tiles32 = nOuter * ((inner + 31) / 32);
    if (tiles32 >= 264) {
      reduceColsKernel<32><<<std::min(tiles32, kMaxBlocks), kReduceThreads, 0, s>>>(
          x, out, kept, red, nOuter, inner, nRed);
    } else {
      // Few column tiles: narrower tiles (8 columns = one 32-byte sector
      // of f32) and more threads per column keep more SMs busy.
      const int64_t tiles8 = nOuter * ((inner + 7) / 8);
      reduceColsKernel<8><<<std::min(tiles8, kMaxBlocks), kReduceThreads, 0, s>>>(
          x, out, kept, red, nOuter, inner, nRed);
    }
  } else if (nRed >= 1024 && nOuter < 8192) {
    reduceRowsKernel<kThreads><<<std::min(nOuter, kMaxBlocks), kThreads, 0, s>>>(
        x, out, kept, red, nOuter, nRed);
  } else {
    reduceRowsKernel<32><<<gridFor(nOuter, kWarpsPerBlock), kThreads, 0, s>>>(x, out, kept, red,
                                                                              nOuter, nRed);
  }
  SHARDC_CUDA_LAUNCH();
}

} // namespace shardc::cuda
