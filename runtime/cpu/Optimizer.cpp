//===- Optimizer.cpp - AdamW, gradient clipping helpers, lr schedule ------===//
//
// Memory-bound pointwise kernels split across OpenMP threads in contiguous
// static chunks. sum_squares sums fixed-size blocks and then the block sums in
// block order, so the global gradient norm (and hence clipping) does not
// depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardc::cpu {

namespace {

/// Elements per partial sum of sum_squares.
constexpr int64_t kSumBlock = 4096;

} // namespace

template <class T> void scale(const T *x, T *out, int64_t n, double factor) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = T(double(x[i]) * factor);
}

template <class T> double sum_squares(const T *x, int64_t n) {
  if (n <= 0)
    return 0.0;
  int64_t nBlocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> partial(nBlocks);
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t blk = 0; blk < nBlocks; ++blk) {
    int64_t i0 = blk * kSumBlock, i1 = std::min(n, i0 + kSumBlock);
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4)
      for (int lane = 0; lane < 4; ++lane)
        acc[lane] += double(x[i + lane]) * double(x[i + lane]);
    for (; i < i1; ++i)
      acc[0] += double(x[i]) * double(x[i]);
    partial[blk] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
  double total = 0.0;
  for (double p : partial)
    total += p;
  return total;
}

template <class T> bool all_finite(const T *x, int64_t n) {
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite)               \
    if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    finite = finite && std::isfinite(x[i]);
  return finite;
}

template <class T>
void adamw(T *param, const T *grad, T *m, T *v, int64_t n, double lr,
           double beta1, double beta2, double eps, double weightDecay,
           int64_t step, double gradScale) {
  if (step < 1)
    throw rt::Error("adamw: step = " + std::to_string(step) +
                    " must be at least 1 (the number of this update)");
  double bias1 = 1.0 - std::pow(beta1, double(step));
  double bias2 = 1.0 - std::pow(beta2, double(step));
  double decay = 1.0 - lr * weightDecay;
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    double g = gradScale * double(grad[i]);
    double mi = beta1 * double(m[i]) + (1.0 - beta1) * g;
    double vi = beta2 * double(v[i]) + (1.0 - beta2) * g * g;
    double p = double(param[i]) * decay;
    p -= lr * (mi / bias1) / (std::sqrt(vi / bias2) + eps);
    m[i] = T(mi);
    v[i] = T(vi);
    param[i] = T(p);
  }
}

double lr_schedule(int64_t step, double lr, double minLr, int64_t warmup,
                   int64_t decaySteps) {
  if (step < 0 || warmup < 0)
    throw rt::Error("lr_schedule: step = " + std::to_string(step) +
                    " and warmup = " + std::to_string(warmup) +
                    " must not be negative");
  if (step < warmup)
    return lr * double(step + 1) / double(warmup);
  if (decaySteps <= warmup)
    return lr;
  if (step >= decaySteps)
    return minLr;
  double ratio = double(step - warmup) / double(decaySteps - warmup);
  ratio = std::clamp(ratio, 0.0, 1.0);
  return minLr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (lr - minLr);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void scale<T>(const T *, T *, int64_t, double);                     \
  template double sum_squares<T>(const T *, int64_t);                          \
  template bool all_finite<T>(const T *, int64_t);                             \
  template void adamw<T>(T *, const T *, T *, T *, int64_t, double, double,    \
                         double, double, double, int64_t, double);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
