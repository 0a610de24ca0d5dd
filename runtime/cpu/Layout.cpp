//===- Layout.cpp - transpose and iota ------------------------------------===//
//
// transpose() copies rows of the output when the input's contiguous dimension
// stays last (the common [B,S,H,D] -> [B,H,S,D] head split), and otherwise
// moves 32x32 tiles between the two dimensions that are contiguous in the
// input and in the output, so both sides are read and written in cache lines.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <string>

namespace shardc::cpu {

namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void checkShape(const char *kernel, const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d < 0)
      throw rt::Error(std::string(kernel) + ": shape " + shapeString(shape) +
                      " has a negative dimension");
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d)
    strides[d - 2] = strides[d - 1] * shape[d - 1];
  return strides;
}

} // namespace

template <class T>
void transpose(const T *in, T *out, const std::vector<int64_t> &inShape,
               const std::vector<int64_t> &perm) {
  size_t rank = inShape.size();
  checkShape("transpose", inShape);
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] >= 0 && perm[i] < int64_t(rank) && !seen[perm[i]];
    if (valid)
      seen[perm[i]] = true;
  }
  if (!valid)
    throw rt::Error("transpose: " + shapeString(perm) +
                    " is not a permutation of the dimensions of a tensor of "
                    "shape " +
                    shapeString(inShape));

  int64_t total = 1;
  for (int64_t d : inShape)
    total *= d;
  if (total == 0)
    return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }

  std::vector<int64_t> inStrides = rowMajorStrides(inShape);
  std::vector<int64_t> outShape(rank), srcStride(rank);
  for (size_t i = 0; i < rank; ++i) {
    outShape[i] = inShape[perm[i]];
    srcStride[i] = inStrides[perm[i]];
  }
  std::vector<int64_t> outStrides = rowMajorStrides(outShape);
  size_t last = rank - 1;
  // Output dimension that is contiguous in the input.
  size_t q =
      size_t(std::find(perm.begin(), perm.end(), int64_t(last)) - perm.begin());

  if (q == last || outShape[q] == 1 || outShape[last] == 1) {
    int64_t rowLen = outShape[last];
    int64_t rowStride = srcStride[last];
    int64_t nRows = total / rowLen;
#pragma omp parallel for schedule(static) if (total >= kParallelGrain)
    for (int64_t row = 0; row < nRows; ++row) {
      int64_t src = 0, rem = row;
      for (size_t d = last; d > 0; --d) {
        src += (rem % outShape[d - 1]) * srcStride[d - 1];
        rem /= outShape[d - 1];
      }
      T *dst = out + row * rowLen;
      for (int64_t j = 0; j < rowLen; ++j)
        dst[j] = in[src + j * rowStride];
    }
    return;
  }

  // Tiled: a runs along output dimension q (stride 1 in the input), b along
  // the last output dimension (stride 1 in the output).
  constexpr int64_t kTile = 32;
  std::vector<size_t> others;
  for (size_t d = 0; d < last; ++d)
    if (d != q)
      others.push_back(d);
  int64_t nA = outShape[q], nB = outShape[last];
  int64_t tilesA = (nA + kTile - 1) / kTile, tilesB = (nB + kTile - 1) / kTile;
  int64_t nOuter = total / (nA * nB);
  int64_t dstStrideA = outStrides[q], srcStrideB = srcStride[last];
#pragma omp parallel for schedule(static) if (total >= kParallelGrain)
  for (int64_t t = 0; t < nOuter * tilesA * tilesB; ++t) {
    int64_t tileB = t % tilesB, tileA = (t / tilesB) % tilesA;
    int64_t outer = t / (tilesA * tilesB);
    int64_t src = 0, dst = 0;
    for (size_t i = others.size(); i > 0; --i) {
      size_t d = others[i - 1];
      int64_t idx = outer % outShape[d];
      outer /= outShape[d];
      src += idx * srcStride[d];
      dst += idx * outStrides[d];
    }
    int64_t a0 = tileA * kTile, a1 = std::min(nA, a0 + kTile);
    int64_t b0 = tileB * kTile, b1 = std::min(nB, b0 + kTile);
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = b0; b < b1; ++b)
        out[dst + a * dstStrideA + b] = in[src + a + b * srcStrideB];
  }
}

void iota(int32_t *out, const std::vector<int64_t> &shape, int64_t dim, int64_t offset) {
  checkShape("iota", shape);
  if (dim < 0 || dim >= int64_t(shape.size()))
    throw rt::Error("iota: dimension " + std::to_string(dim) +
                    " is out of range for shape " + shapeString(shape));
  int64_t inner = 1, total = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    total *= shape[d];
    if (int64_t(d) > dim)
      inner *= shape[d];
  }
  int64_t extent = shape[dim];
#pragma omp parallel for schedule(static) if (total >= kParallelGrain)
  for (int64_t i = 0; i < total; ++i)
    out[i] = int32_t((i / inner) % extent + offset);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void transpose<T>(const T *, T *, const std::vector<int64_t> &,     \
                             const std::vector<int64_t> &);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
SHARDC_INSTANTIATE(int32_t)
SHARDC_INSTANTIATE(uint16_t)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
