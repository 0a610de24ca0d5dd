//===- TensorTesting.h - random tensors and tolerant comparison -*- C++ -*-===//
//
// What the executor tests share: seeded random f32 tensors and a comparison
// to a relative tolerance of the reference's largest value, which refuses an
// all-zero reference (a test that checks nothing).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TEST_UNIT_COMPILER_TENSORTESTING_H
#define SHARDC_TEST_UNIT_COMPILER_TENSORTESTING_H

#include "runtime/HostTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace shardc::test {

inline rt::HostTensor randomF32(std::vector<int64_t> shape, uint32_t seed, double lo = -1.0,
                                double hi = 1.0) {
  rt::HostTensor t(rt::DType::F32, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(dist(gen));
  return t;
}

/// max |a - b| / max |b| <= rtol (same shape and dtype, f32).
inline ::testing::AssertionResult close(const rt::HostTensor &a, const rt::HostTensor &b,
                                        double rtol = 1e-5) {
  if (a.dtype != b.dtype || a.shape != b.shape)
    return ::testing::AssertionFailure()
           << "shape " << rt::shape_str(a.shape) << " vs " << rt::shape_str(b.shape);
  double maxDiff = 0, maxRef = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::fabs(x - y) <= maxDiff)) {
      maxDiff = std::fabs(x - y);
      worst = i;
    }
    maxRef = std::max(maxRef, std::fabs(y));
  }
  if (maxRef == 0)
    return ::testing::AssertionFailure() << "reference is all zero: the test checks nothing";
  if (maxDiff <= rtol * maxRef)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "max difference " << maxDiff << " (relative " << maxDiff / maxRef << ") at element "
         << worst << ": " << a.data<float>()[worst] << " vs " << b.data<float>()[worst];
}

} // namespace shardc::test

#endif // SHARDC_TEST_UNIT_COMPILER_TENSORTESTING_H
