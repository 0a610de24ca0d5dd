//===- OptimizerTest.cpp - AdamW, clipping helpers and the lr schedule ----===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <omp.h>

#include <limits>

using namespace shardc;
using namespace shardc::test;

namespace {

template <class T> class CpuOptimizer : public ::testing::Test {};
TYPED_TEST_SUITE(CpuOptimizer, FloatTypes);

TYPED_TEST(CpuOptimizer, ScaleInPlace) {
  using T = TypeParam;
  auto x = randomVector<T>(40000, 1);
  std::vector<double> expected;
  for (T v : x)
    expected.push_back(double(v) * -0.37);
  std::vector<T> out(x.size());
  cpu::scale<T>(x.data(), out.data(), int64_t(x.size()), -0.37);
  EXPECT_TRUE(allClose(out, expected));
  cpu::scale<T>(x.data(), x.data(), int64_t(x.size()), -0.37);
  EXPECT_EQ(x, out);
}

TYPED_TEST(CpuOptimizer, SumSquaresMatchesNaiveAndIgnoresThreads) {
  using T = TypeParam;
  for (int64_t n : {0, 1, 7, 4096, 100003}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto x = randomVector<T>(n, 2, -3.0, 3.0);
    double expected = 0;
    for (T v : x)
      expected += double(v) * double(v);
    double got = cpu::sum_squares<T>(x.data(), n);
    EXPECT_NEAR(got, expected, 1e-12 * (1 + expected));
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double serial = cpu::sum_squares<T>(x.data(), n);
    omp_set_num_threads(3);
    double three = cpu::sum_squares<T>(x.data(), n);
    omp_set_num_threads(threads);
    EXPECT_EQ(serial, got);
    EXPECT_EQ(three, got);
  }
}

TYPED_TEST(CpuOptimizer, AllFiniteDetectsInfAndNaN) {
  using T = TypeParam;
  const int64_t n = 50000;
  auto x = randomVector<T>(n, 3, -1e3, 1e3);
  EXPECT_TRUE(cpu::all_finite<T>(x.data(), n));
  EXPECT_TRUE(cpu::all_finite<T>(x.data(), 0));
  const T bad[] = {std::numeric_limits<T>::infinity(),
                   -std::numeric_limits<T>::infinity(),
                   std::numeric_limits<T>::quiet_NaN()};
  for (T b : bad)
    for (int64_t pos : {int64_t(0), int64_t(12345), n - 1}) {
      auto y = x;
      y[pos] = b;
      EXPECT_FALSE(cpu::all_finite<T>(y.data(), n))
          << "value " << b << " at " << pos;
      // Outside the range checked it does not count.
      if (pos == n - 1) {
        EXPECT_TRUE(cpu::all_finite<T>(y.data(), n - 1));
      }
    }
  // The largest finite value is finite.
  x[7] = std::numeric_limits<T>::max();
  EXPECT_TRUE(cpu::all_finite<T>(x.data(), n));
}

/// torch.optim.AdamW's single-tensor step, written out in double.
struct NaiveAdamW {
  std::vector<double> param, m, v;
  void step(const std::vector<double> &grad, double lr, double beta1,
            double beta2, double eps, double wd, int64_t t) {
    for (size_t i = 0; i < param.size(); ++i) {
      param[i] *= 1 - lr * wd;
      m[i] = m[i] * beta1 + grad[i] * (1 - beta1);
      v[i] = v[i] * beta2 + grad[i] * grad[i] * (1 - beta2);
      double bc1 = 1 - std::pow(beta1, double(t));
      double bc2 = 1 - std::pow(beta2, double(t));
      double stepSize = lr / bc1;
      double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
      param[i] -= stepSize * m[i] / denom;
    }
  }
};

TYPED_TEST(CpuOptimizer, AdamWMatchesTorchOverThreeSteps) {
  using T = TypeParam;
  const int64_t n = 1000;
  const double lr = 3e-2, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1;
  const double gradScale = 0.25; // e.g. clipping by 4x
  auto param = randomVector<T>(n, 4);
  std::vector<T> m(n, T(0)), v(n, T(0));
  NaiveAdamW ref{toDouble(param), std::vector<double>(n, 0.0),
                 std::vector<double>(n, 0.0)};
  for (int64_t t = 1; t <= 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    auto grad = randomVector<T>(n, 10 + uint32_t(t), -2.0, 2.0);
    std::vector<double> scaled;
    for (T g : grad)
      scaled.push_back(gradScale * double(g));
    ref.step(scaled, lr, beta1, beta2, eps, wd, t);
    cpu::adamw<T>(param.data(), grad.data(), m.data(), v.data(), n, lr, beta1,
                  beta2, eps, wd, t, gradScale);
    EXPECT_TRUE(allClose(param, ref.param));
    EXPECT_TRUE(allClose(m, ref.m));
    EXPECT_TRUE(allClose(v, ref.v));
  }
  // The updates moved the parameters by the order of lr: not vacuous.
  auto start = randomVector<T>(n, 4);
  double moved = 0;
  for (int64_t i = 0; i < n; ++i)
    moved += std::fabs(double(param[i]) - double(start[i]));
  EXPECT_GT(moved / n, 1e-2);
}

TYPED_TEST(CpuOptimizer, AdamWWeightDecayOnlyWithZeroGradient) {
  using T = TypeParam;
  // With zero gradients m = v = 0 and the update is pure decoupled decay.
  std::vector<T> param = {T(2), T(-4)}, grad(2, T(0)), m(2, T(0)), v(2, T(0));
  cpu::adamw<T>(param.data(), grad.data(), m.data(), v.data(), 2, 0.5, 0.9,
                0.999, 1e-8, 0.2, 1, 1.0);
  EXPECT_TRUE(allClose(param, {1.8, -3.6}));
}

TEST(CpuOptimizerErrors, AdamWRejectsStepZero) {
  std::vector<float> p(2), g(2), m(2), v(2);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::adamw<float>(p.data(), g.data(), m.data(), v.data(), 2, 1e-3, 0.9,
                          0.999, 1e-8, 0.0, 0, 1.0);
      },
      {"adamw", "step = 0"}));
}

TEST(CpuLrSchedule, WarmupCosineAndFloor) {
  const double lr = 1e-3, minLr = 1e-4;
  const int64_t warmup = 10, decay = 110;
  auto at = [&](int64_t step) {
    return cpu::lr_schedule(step, lr, minLr, warmup, decay);
  };
  // Linear warm-up: lr * (step + 1) / warmup.
  EXPECT_DOUBLE_EQ(at(0), 1e-4);
  EXPECT_DOUBLE_EQ(at(4), 5e-4);
  EXPECT_DOUBLE_EQ(at(9), lr);
  // Peak: the cosine starts at lr.
  EXPECT_DOUBLE_EQ(at(10), lr);
  // Mid-cosine: ratio 0.25, 0.5 and 0.75.
  double pi = std::acos(-1.0);
  EXPECT_DOUBLE_EQ(at(35),
                   minLr + 0.5 * (1 + std::cos(pi * 0.25)) * (lr - minLr));
  EXPECT_DOUBLE_EQ(at(60), minLr + 0.5 * (lr - minLr));
  EXPECT_DOUBLE_EQ(at(85),
                   minLr + 0.5 * (1 + std::cos(pi * 0.75)) * (lr - minLr));
  // End and beyond: minLr.
  EXPECT_DOUBLE_EQ(at(110), minLr);
  EXPECT_DOUBLE_EQ(at(111), minLr);
  EXPECT_DOUBLE_EQ(at(100000), minLr);
  // Monotone decay after the peak.
  for (int64_t s = 10; s < 110; ++s)
    EXPECT_GT(at(s), at(s + 1)) << "step " << s;
}

TEST(CpuLrSchedule, EdgeCases) {
  // No warm-up: the cosine starts at step 0.
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(0, 1.0, 0.0, 0, 100), 1.0);
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(50, 1.0, 0.0, 0, 100), 0.5);
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(100, 1.0, 0.0, 0, 100), 0.0);
  // decaySteps <= warmup: constant lr after the warm-up.
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(1, 2.0, 0.1, 4, 4), 1.0);
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(4, 2.0, 0.1, 4, 4), 2.0);
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(1000, 2.0, 0.1, 4, 2), 2.0);
  // Neither warm-up nor decay: constant.
  EXPECT_DOUBLE_EQ(cpu::lr_schedule(7, 2.0, 0.1, 0, 0), 2.0);
  EXPECT_TRUE(throwsErrorWith([] { cpu::lr_schedule(-1, 1.0, 0.0, 2, 10); },
                              {"lr_schedule", "step = -1"}));
}

} // namespace
