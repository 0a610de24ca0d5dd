//===- Elementwise.cpp - pointwise and gather kernels ---------------------===//
//
// Memory-bound kernels: one pass over the data, split across OpenMP threads
// in contiguous static chunks. Each reads an element's inputs before writing
// its output, so `out` may alias the first input.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/rng/Philox.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardc::cpu {

template <class T> void add(const T *a, const T *b, T *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

template <class T>
void bias_add(const T *x, const T *bias, T *out, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = x[r * cols + c] + bias[c];
}

template <class T> void gelu_tanh(const T *x, T *out, int64_t n) {
  const T kAlpha = T(0.7978845608028654); // sqrt(2 / pi)
  const T kBeta = T(0.044715);
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    T u = kAlpha * (v + kBeta * v * v * v);
    // 0.5 * (1 + tanh(u)) == sigmoid(2u); this form does not cancel to 0 for
    // large negative inputs the way 1 + tanh(u) does.
    out[i] = v / (T(1) + std::exp(T(-2) * u));
  }
}

template <class T> void swiglu(const T *gate, const T *up, T *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T g = gate[i];
    out[i] = g / (T(1) + std::exp(-g)) * up[i];
  }
}

namespace {

/// Rotary embedding in either direction: the forward rotates pair
/// (i, i + D/2) by +angle, the backward by -angle (the transpose).
template <class T>
void ropeRotate(const char *kernel, const T *x, T *out, int64_t B, int64_t S, int64_t H,
                int64_t D, double theta, int64_t positionOffset, bool inverse) {
  if (D % 2 != 0)
    throw rt::Error(std::string(kernel) + ": head dimension " + std::to_string(D) +
                    " must be even");
  if (!(theta > 0))
    throw rt::Error(std::string(kernel) + ": theta = " + std::to_string(theta) +
                    " must be positive");
  int64_t half = D / 2;
  if (B * S * H * D == 0)
    return;

  // One cos/sin table for the sequence, shared by every batch row and head.
  const double sign = inverse ? -1.0 : 1.0;
  std::vector<T> cosTable(S * half), sinTable(S * half);
#pragma omp parallel for schedule(static) if (S * half >= kParallelGrain)
  for (int64_t s = 0; s < S; ++s) {
    double pos = double(s + positionOffset);
    for (int64_t i = 0; i < half; ++i) {
      double angle = pos * std::pow(theta, -2.0 * double(i) / double(D));
      cosTable[s * half + i] = T(std::cos(angle));
      sinTable[s * half + i] = T(sign * std::sin(angle));
    }
  }

#pragma omp parallel for schedule(static) if (B * S * H * D >= kParallelGrain)
  for (int64_t bs = 0; bs < B * S; ++bs) {
    const T *c = cosTable.data() + (bs % S) * half;
    const T *sn = sinTable.data() + (bs % S) * half;
    for (int64_t h = 0; h < H; ++h) {
      const T *xi = x + (bs * H + h) * D;
      T *oi = out + (bs * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        T lo = xi[i], hi = xi[i + half];
        oi[i] = lo * c[i] - hi * sn[i];
        oi[i + half] = hi * c[i] + lo * sn[i];
      }
    }
  }
}

} // namespace

template <class T>
void rope(const T *x, T *out, int64_t B, int64_t S, int64_t H, int64_t D,
          double theta, int64_t positionOffset) {
  ropeRotate("rope", x, out, B, S, H, D, theta, positionOffset, false);
}

template <class T>
void rope_backward(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D,
                   double theta, int64_t positionOffset) {
  ropeRotate("rope_backward", dy, dx, B, S, H, D, theta, positionOffset, true);
}

namespace {

std::string dimsString(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

} // namespace

template <class T>
void dropout_block(const T *x, T *out, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &offset,
                   const std::vector<int64_t> &globalShape, double rate,
                   uint64_t seed, uint64_t step, uint64_t opKey) {
  if (!(rate >= 0.0 && rate <= 1.0))
    throw rt::Error("dropout: rate = " + std::to_string(rate) +
                    " is outside [0, 1]");
  size_t rank = shape.size();
  bool valid = offset.size() == rank && globalShape.size() == rank;
  for (size_t d = 0; valid && d < rank; ++d)
    valid = shape[d] >= 0 && offset[d] >= 0 &&
            offset[d] + shape[d] <= globalShape[d];
  if (!valid)
    throw rt::Error("dropout: block " + dimsString(shape) + " at offset " +
                    dimsString(offset) + " does not lie in a tensor of shape " +
                    dimsString(globalShape));
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  if (rate == 0.0) {
    if (out != x)
      std::copy(x, x + n, out);
    return;
  }
  if (rate == 1.0) {
    std::fill(out, out + n, T(0));
    return;
  }
  // Row-major strides of the global tensor.
  std::vector<int64_t> gstride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    gstride[d - 1] = gstride[d] * globalShape[d];
  uint64_t stream = rng::stream_key(step, opKey);
  T scale = T(1.0 / (1.0 - rate));
  // Chunks of the block in local order; each decodes its first multi-index
  // and then walks the global index along. A Philox block per element is
  // compute-bound: parallelise sooner than the memory-bound kernels.
  constexpr int64_t kChunk = 1024;
  int64_t nChunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelGrain / 16)
  for (int64_t c = 0; c < nChunks; ++c) {
    int64_t i0 = c * kChunk, i1 = std::min(n, i0 + kChunk);
    std::vector<int64_t> idx(rank);
    int64_t g = 0;
    for (size_t d = rank, rem = size_t(i0); d-- > 0;) {
      idx[d] = int64_t(rem % size_t(shape[d]));
      rem /= size_t(shape[d]);
      g += (idx[d] + offset[d]) * gstride[d];
    }
    for (int64_t i = i0; i < i1; ++i) {
      bool keep = double(rng::uniform(seed, stream, uint64_t(g))) >= rate;
      out[i] = keep ? x[i] * scale : T(0);
      // Next multi-index (a 0-d tensor has one element and no dims).
      for (size_t d = rank; d-- > 0;) {
        g += gstride[d];
        if (++idx[d] < shape[d])
          break;
        g -= shape[d] * gstride[d];
        idx[d] = 0;
      }
    }
  }
}

template <class T>
void dropout(const T *x, T *out, int64_t n, double rate, uint64_t seed,
             uint64_t step, uint64_t opKey, int64_t globalOffset) {
  dropout_block(x, out, {n}, {globalOffset}, {globalOffset + n}, rate, seed,
                step, opKey);
}

template <class T>
void embedding_block(const T *block, const int32_t *ids, T *out, int64_t nIds,
                     int64_t vocab, int64_t rowBegin, int64_t rows,
                     int64_t dim) {
  if (rowBegin < 0 || rows < 0 || rowBegin + rows > vocab)
    throw rt::Error("embedding: table rows [" + std::to_string(rowBegin) +
                    ", " + std::to_string(rowBegin + rows) +
                    ") are not inside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
  // Validate first: an exception cannot leave an OpenMP region.
  for (int64_t i = 0; i < nIds; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw rt::Error("embedding: token id " + std::to_string(ids[i]) +
                      " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " +
                      std::to_string(vocab) + ")");
#pragma omp parallel for schedule(static) if (nIds * dim >= kParallelGrain)
  for (int64_t i = 0; i < nIds; ++i) {
    int64_t r = int64_t(ids[i]) - rowBegin;
    if (r < 0 || r >= rows) {
      std::fill(out + i * dim, out + (i + 1) * dim, T(0));
      continue;
    }
    const T *row = block + r * dim;
    std::copy(row, row + dim, out + i * dim);
  }
}

template <class T>
void embedding(const T *table, const int32_t *ids, T *out, int64_t nIds,
               int64_t vocab, int64_t dim) {
  embedding_block(table, ids, out, nIds, vocab, 0, vocab, dim);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void add<T>(const T *, const T *, T *, int64_t);                    \
  template void bias_add<T>(const T *, const T *, T *, int64_t, int64_t);      \
  template void gelu_tanh<T>(const T *, T *, int64_t);                         \
  template void swiglu<T>(const T *, const T *, T *, int64_t);                 \
  template void rope<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t,    \
                        double, int64_t);                                      \
  template void rope_backward<T>(const T *, T *, int64_t, int64_t, int64_t,    \
                                 int64_t, double, int64_t);                                      \
  template void dropout<T>(const T *, T *, int64_t, double, uint64_t,          \
                           uint64_t, uint64_t, int64_t);                       \
  template void dropout_block<T>(                                              \
      const T *, T *, const std::vector<int64_t> &,                            \
      const std::vector<int64_t> &, const std::vector<int64_t> &, double,      \
      uint64_t, uint64_t, uint64_t);                                           \
  template void embedding<T>(const T *, const int32_t *, T *, int64_t,         \
                             int64_t, int64_t);                                \
  template void embedding_block<T>(const T *, const int32_t *, T *, int64_t,   \
                                   int64_t, int64_t, int64_t, int64_t);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
