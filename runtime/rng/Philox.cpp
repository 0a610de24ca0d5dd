//===- Philox.cpp - counter-based random numbers --------------------------===//
//
// Philox4x32-10 and the distributions built on it. Every draw costs one block;
// elements are independent, so the fills below parallelise trivially and give
// the same bits for any thread count or sharding.
//
//===----------------------------------------------------------------------===//
#include "runtime/rng/Philox.h"
#include "runtime/rng/PhiloxCore.h"

#include "runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardc::rng {

namespace {

/// Below this many elements a fill runs on the calling thread.
constexpr int64_t kParallelGrain = 1 << 14;

std::array<uint32_t, 4> counterOf(uint64_t stream, uint64_t index) {
  return {uint32_t(index), uint32_t(index >> 32), uint32_t(stream),
          uint32_t(stream >> 32)};
}

std::array<uint32_t, 2> keyOf(uint64_t seed) {
  return {uint32_t(seed), uint32_t(seed >> 32)};
}

/// The one place a normal draw becomes a parameter value, shared by the whole
/// and the slice fills so both round identically.
template <class T>
void fillNormalRun(T *out, int64_t n, uint64_t firstIndex, uint64_t seed,
                   uint64_t stream, double mean, double std) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = T(mean + std * normal(seed, stream, firstIndex + uint64_t(i)));
}

} // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                      std::array<uint32_t, 2> key) {
  core::philox(ctr.data(), key[0], key[1]);
  return ctr;
}

uint64_t name_key(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t stream_key(uint64_t step, uint64_t opKey) { return core::stream_key(step, opKey); }

float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return core::uniform(seed, stream, index);
}

double normal(uint64_t seed, uint64_t stream, uint64_t index) {
  std::array<uint32_t, 4> r =
      philox4x32_10(counterOf(stream, index), keyOf(seed));
  // u1 in (0, 1] keeps log() finite; u2 in [0, 1).
  double u1 = (double(r[0]) + 1.0) * 0x1p-32;
  double u2 = double(r[1]) * 0x1p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

template <class T>
void init_normal(T *out, int64_t n, int64_t globalOffset, uint64_t seed,
                 std::string_view name, double mean, double std) {
  uint64_t stream = name_key(name);
  constexpr int64_t kBlock = 4096;
  int64_t nBlocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t blk = 0; blk < nBlocks; ++blk) {
    int64_t begin = blk * kBlock;
    int64_t len = std::min(kBlock, n - begin);
    fillNormalRun(out + begin, len, uint64_t(globalOffset + begin), seed,
                  stream, mean, std);
  }
}

template <class T> void init_constant(T *out, int64_t n, double value) {
  T v = T(value);
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = v;
}

template <class T>
void init_normal_slice(T *out, const std::vector<int64_t> &fullShape,
                       const std::vector<int64_t> &offsets,
                       const std::vector<int64_t> &sliceShape, uint64_t seed,
                       std::string_view name, double mean, double std) {
  size_t rank = fullShape.size();
  if (offsets.size() != rank || sliceShape.size() != rank)
    throw rt::Error("init_normal_slice(" + std::string(name) +
                    "): offsets and slice shape must have rank " +
                    std::to_string(rank));
  int64_t sliceElems = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (offsets[d] < 0 || sliceShape[d] < 0 ||
        offsets[d] + sliceShape[d] > fullShape[d])
      throw rt::Error("init_normal_slice(" + std::string(name) + "): slice [" +
                      std::to_string(offsets[d]) + ", " +
                      std::to_string(offsets[d] + sliceShape[d]) +
                      ") of dimension " + std::to_string(d) +
                      " is outside [0, " + std::to_string(fullShape[d]) + ")");
    sliceElems *= sliceShape[d];
  }
  if (sliceElems == 0)
    return;
  if (rank == 0) {
    init_normal(out, 1, 0, seed, name, mean, std);
    return;
  }

  // Each slice row (all dimensions but the last) is a contiguous run of the
  // full tensor starting at its global row-major index.
  std::vector<int64_t> fullStrides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    fullStrides[d - 1] = fullStrides[d] * fullShape[d];
  int64_t rowLen = sliceShape[rank - 1];
  int64_t nRows = sliceElems / rowLen;
  uint64_t stream = name_key(name);

#pragma omp parallel for schedule(static) if (sliceElems >= kParallelGrain)
  for (int64_t row = 0; row < nRows; ++row) {
    int64_t global = offsets[rank - 1];
    int64_t rem = row;
    for (size_t d = rank - 1; d > 0; --d) {
      int64_t idx = rem % sliceShape[d - 1];
      rem /= sliceShape[d - 1];
      global += (offsets[d - 1] + idx) * fullStrides[d - 1];
    }
    fillNormalRun(out + row * rowLen, rowLen, uint64_t(global), seed, stream,
                  mean, std);
  }
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void init_normal<T>(T *, int64_t, int64_t, uint64_t,                \
                               std::string_view, double, double);              \
  template void init_constant<T>(T *, int64_t, double);                        \
  template void init_normal_slice<T>(T *, const std::vector<int64_t> &,        \
                                     const std::vector<int64_t> &,             \
                                     const std::vector<int64_t> &, uint64_t,   \
                                     std::string_view, double, double);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::rng
