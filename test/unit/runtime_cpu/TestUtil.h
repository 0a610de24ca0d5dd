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

/// A packed attention problem: qkv [B, S, Hkv, G + 2, D] (xf.packed_attention's
/// layout) and its q, k, v unpacked into dense copies.
struct PackedCase {
  int64_t B, S, Hkv, G, D;
};
/// Ragged S = 37, S past one and two 64-row blocks, G = 1 and 2.
inline const std::vector<PackedCase> &packedCases() {
  static const std::vector<PackedCase> cases = {
      {2, 37, 2, 1, 8}, {1, 37, 2, 2, 16}, {2, 70, 1, 2, 4}, {1, 130, 3, 1, 8}};
  return cases;
}
template <class T> struct PackedQkv {
  cpu::AttentionLayout layout;
  int64_t rows, Hq;
  std::vector<T> qkv, q, k, v;
};
template <class T> PackedQkv<T> makePackedQkv(const PackedCase &c, uint64_t seed) {
  PackedQkv<T> p{cpu::AttentionLayout::packedQkv(c.Hkv, c.G, c.D), c.B * c.S, c.Hkv * c.G,
                 randomVector<T>(c.B * c.S * c.Hkv * (c.G + 2) * c.D, seed, -2.0, 2.0), {}, {},
                 {}};
  p.q = gatherHeads(p.qkv.data(), p.layout.q, p.rows, p.Hq, c.D);
  p.k = gatherHeads(p.qkv.data(), p.layout.k, p.rows, c.Hkv, c.D);
  p.v = gatherHeads(p.qkv.data(), p.layout.v, p.rows, c.Hkv, c.D);
  return p;
}
inline std::string describe(const PackedCase &c, bool causal) {
  return "B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) + " Hkv=" +
         std::to_string(c.Hkv) + " G=" + std::to_string(c.G) + " D=" + std::to_string(c.D) +
         " causal=" + std::to_string(causal);
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
