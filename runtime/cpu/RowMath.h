//===- RowMath.h - shared row reductions for the CPU kernels ----*- C++ -*-===//
//
// Internal to runtime/cpu. The exp-and-sum at the heart of softmax, attention
// and cross-entropy, written once. A naive `sum += exp(x[j])` loop keeps the
// sum in memory across every libm call (calls clobber all vector registers),
// which makes the store-to-load latency, not exp, the bottleneck; computing a
// block of exps first and then summing with independent accumulators runs
// about twice as fast.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CPU_ROWMATH_H
#define SHARDC_RUNTIME_CPU_ROWMATH_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace shardc::cpu {

/// Returns the sum over j of exp(x[j] - shift), each exp in T and the sum in
/// double, in a fixed order. If `out` is non-null it receives the exps; it may
/// be `x` itself.
template <class T>
double expShiftedSum(const T *x, T shift, int64_t n, T *out) {
  constexpr int64_t kBlock = 256;
  T buf[kBlock];
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    int64_t len = std::min(kBlock, n - j0);
    for (int64_t t = 0; t < len; ++t)
      buf[t] = std::exp(x[j0 + t] - shift);
    if (out)
      std::copy(buf, buf + len, out + j0);
    int64_t t = 0;
    for (; t + 4 <= len; t += 4)
      for (int lane = 0; lane < 4; ++lane)
        acc[lane] += double(buf[t + lane]);
    for (; t < len; ++t)
      acc[0] += double(buf[t]);
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

} // namespace shardc::cpu

#endif // SHARDC_RUNTIME_CPU_ROWMATH_H
