//===- Norm.cpp - row normalisations and softmax --------------------------===//
//
// One row per OpenMP iteration. Row statistics accumulate in double: with
// float rows of a few thousand elements a float sum loses digits the backward
// pass and the reference comparisons care about, and the extra cost is small
// next to the memory traffic.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RowMath.h"

#include <algorithm>
#include <cmath>

namespace shardc::cpu {

template <class T>
void layernorm_forward(const T *x, const T *gamma, const T *beta, T *out,
                       T *mean, T *rstd, int64_t rows, int64_t cols,
                       double eps) {
  if (cols == 0)
    return;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    // Two passes: the shifted sum of squares does not cancel like E[x^2] -
    // E[x]^2 when the mean is large.
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sum += double(xr[c]);
    double mu = sum / double(cols);
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      double d = double(xr[c]) - mu;
      sq += d * d;
    }
    double rs = 1.0 / std::sqrt(sq / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = T((double(xr[c]) - mu) * rs) * gamma[c] + beta[c];
    if (mean)
      mean[r] = T(mu);
    if (rstd)
      rstd[r] = T(rs);
  }
}

template <class T>
void rmsnorm_forward(const T *x, const T *gamma, T *out, T *rstd, int64_t rows,
                     int64_t cols, double eps) {
  if (cols == 0)
    return;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sq += double(xr[c]) * double(xr[c]);
    double rs = 1.0 / std::sqrt(sq / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = T(double(xr[c]) * rs) * gamma[c];
    if (rstd)
      rstd[r] = T(rs);
  }
}

template <class T>
void softmax_lastdim(const T *x, T *out, int64_t rows, int64_t cols) {
  if (cols == 0)
    return;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    T mx = *std::max_element(xr, xr + cols);
    double sum = expShiftedSum(xr, mx, cols, yr);
    T inv = T(1.0 / sum);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] *= inv;
  }
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void layernorm_forward<T>(const T *, const T *, const T *, T *,     \
                                     T *, T *, int64_t, int64_t, double);      \
  template void rmsnorm_forward<T>(const T *, const T *, T *, T *, int64_t,    \
                                   int64_t, double);                           \
  template void softmax_lastdim<T>(const T *, T *, int64_t, int64_t);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
