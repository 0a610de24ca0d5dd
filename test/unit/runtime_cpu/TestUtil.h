//===- TestUtil.h - helpers for the CPU kernel tests ------------*- C++ -*-===//
//
// Random inputs and a tolerance check against references computed in double.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H
#define SHARDC_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H

#include "runtime/Error.h"
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace shardc::test {

using FloatTypes = ::testing::Types<float, double>;

/// |actual - expected| <= atol + rtol * |expected|. References are computed in
/// double, so float kernels get float-sized tolerances.
template <class T> struct Tolerance;
template <> struct Tolerance<float> {
  static constexpr double rtol = 1e-5, atol = 1e-5;
};
template <> struct Tolerance<double> {
  static constexpr double rtol = 1e-12, atol = 1e-12;
};

template <class T>
std::vector<T> randomVector(int64_t n, uint32_t seed, double lo = -1.0,
                            double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(dist(gen));
  return v;
}

template <class T> std::vector<double> toDouble(const std::vector<T> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// Compares element-wise; reports at most a few mismatches per call.
template <class T>
::testing::AssertionResult allClose(const T *actual,
                                    const std::vector<double> &expected,
                                    double scale = 1.0) {
  double rtol = Tolerance<T>::rtol * scale, atol = Tolerance<T>::atol * scale;
  int bad = 0;
  std::string msg;
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = double(actual[i]), e = expected[i];
    if (std::fabs(a - e) <= atol + rtol * std::fabs(e))
      continue;
    if (++bad <= 5)
      msg += "\n  [" + std::to_string(i) + "] got " + std::to_string(a) +
             ", expected " + std::to_string(e);
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << expected.size() << " elements differ:" << msg;
}

template <class T>
::testing::AssertionResult allClose(const std::vector<T> &actual,
                                    const std::vector<double> &expected,
                                    double scale = 1.0) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  return allClose(actual.data(), expected, scale);
}

/// A scalar result of a kernel on T (computed in double) against a reference.
template <class T>
::testing::AssertionResult scalarClose(double actual, double expected) {
  double tol = Tolerance<T>::atol + Tolerance<T>::rtol * std::fabs(expected);
  if (std::fabs(actual - expected) <= tol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << actual << ", expected " << expected << " (tolerance "
         << tol << ")";
}

/// Writes dense [rows, H, D] `dense` (rows = batch x sequence) into `base` at
/// the places `l` gives its heads (an attention layout), leaving the rest.
template <class T>
void scatterHeads(const std::vector<T> &dense, T *base, const cpu::AttentionHeads &l,
                  int64_t rows, int64_t H, int64_t D) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(dense.data() + (r * H + h) * D, D, base + r * l.rowStride + l.head(h, D));
}

/// The inverse: the dense [rows, H, D] of the heads `l` places in `base`.
template <class T>
std::vector<T> gatherHeads(const T *base, const cpu::AttentionHeads &l, int64_t rows, int64_t H,
                           int64_t D) {
  std::vector<T> dense(rows * H * D);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(base + r * l.rowStride + l.head(h, D), D, dense.data() + (r * H + h) * D);
  return dense;
}

/// Runs `fn` and checks that it throws rt::Error whose message contains every
/// one of `needles`.
template <class Fn>
::testing::AssertionResult throwsErrorWith(Fn fn,
                                           std::vector<std::string> needles) {
  try {
    fn();
  } catch (const shardc::rt::Error &e) {
    std::string what = e.what();
    for (const std::string &n : needles)
      if (what.find(n) == std::string::npos)
        return ::testing::AssertionFailure()
               << "message \"" << what << "\" lacks \"" << n << "\"";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no rt::Error thrown";
}

} // namespace shardc::test

#endif // SHARDC_TEST_UNIT_RUNTIME_CPU_TESTUTIL_H
