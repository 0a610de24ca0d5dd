//===- LossTest.cpp - cross_entropy and linear_cross_entropy --------------===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <algorithm>

using namespace shardc;
using namespace shardc::test;

namespace {

constexpr int64_t kIgnore = -100;

/// Naive mean cross-entropy over counted rows, and the count.
template <class T>
std::pair<double, int64_t>
naiveCrossEntropy(const std::vector<double> &logits,
                  const std::vector<int32_t> &targets, const T *mask,
                  int64_t vocab) {
  double total = 0;
  int64_t count = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] == kIgnore || (mask && mask[r] == T(0)))
      continue;
    const double *row = logits.data() + r * vocab;
    double mx = *std::max_element(row, row + vocab), sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(row[j] - mx);
    total += mx + std::log(sum) - row[targets[r]];
    ++count;
  }
  return {count ? total / count : 0.0, count};
}

std::vector<int32_t> randomTargets(int64_t rows, int64_t vocab, uint32_t seed,
                                   double ignoreFraction) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int32_t> t(rows);
  for (int32_t &x : t)
    x = u(gen) < ignoreFraction ? int32_t(kIgnore) : id(gen);
  return t;
}

template <class T> std::vector<T> randomMask(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> m(rows);
  for (T &x : m)
    x = T(gen() % 3 != 0);
  return m;
}

template <class T> class CpuLoss : public ::testing::Test {};
TYPED_TEST_SUITE(CpuLoss, FloatTypes);

TYPED_TEST(CpuLoss, CrossEntropyWithIgnoreIndexAndMask) {
  using T = TypeParam;
  const int64_t rows = 37, vocab = 13;
  auto logits = randomVector<T>(rows * vocab, 1, -5.0, 5.0);
  auto targets = randomTargets(rows, vocab, 2, 0.2);
  auto mask = randomMask<T>(rows, 3);
  for (const T *m : std::vector<const T *>{nullptr, mask.data()}) {
    SCOPED_TRACE(m ? "with mask" : "without mask");
    auto [expLoss, expCount] =
        naiveCrossEntropy(toDouble(logits), targets, m, vocab);
    int64_t count = -1;
    double loss = cpu::cross_entropy<T>(logits.data(), targets.data(), m, rows,
                                        vocab, kIgnore, &count);
    EXPECT_EQ(count, expCount);
    EXPECT_TRUE(scalarClose<T>(loss, expLoss));
  }
}

TYPED_TEST(CpuLoss, CrossEntropyNothingCounted) {
  using T = TypeParam;
  std::vector<T> logits(3 * 4, T(1));
  std::vector<int32_t> targets = {kIgnore, 2, kIgnore};
  std::vector<T> mask = {T(1), T(0), T(1)};
  int64_t count = -1;
  EXPECT_EQ(cpu::cross_entropy<T>(logits.data(), targets.data(), mask.data(), 3,
                                  4, kIgnore, &count),
            0.0);
  EXPECT_EQ(count, 0);
}

TYPED_TEST(CpuLoss, CrossEntropyBadTargetThrows) {
  using T = TypeParam;
  std::vector<T> logits(3 * 4);
  std::vector<int32_t> targets = {0, 4, kIgnore};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy<T>(logits.data(), targets.data(), nullptr, 3, 4,
                              kIgnore, nullptr);
      },
      {"target 4", "row 1"}));
}

TYPED_TEST(CpuLoss, LinearCrossEntropyEqualsGemmThenCrossEntropy) {
  using T = TypeParam;
  // 300 rows with a vocabulary of 11 is two chunks of 256 rows.
  const int64_t rows = 300, hidden = 7, vocab = 11;
  auto x = randomVector<T>(rows * hidden, 4);
  auto targets = randomTargets(rows, vocab, 5, 0.1);
  auto mask = randomMask<T>(rows, 6);
  // A first chunk with no counted row is skipped without a GEMM.
  auto sparseMask = mask;
  std::fill(sparseMask.begin(), sparseMask.begin() + 256, T(0));
  for (bool vocabMajor : {true, false})
    for (const T *m :
         std::vector<const T *>{nullptr, mask.data(), sparseMask.data()}) {
      SCOPED_TRACE(testing::Message() << "vocabMajor=" << vocabMajor << " mask="
                                      << (m == nullptr       ? "none"
                                          : m == mask.data() ? "random"
                                                             : "sparse"));
      auto w = randomVector<T>(vocab * hidden, 7);
      std::vector<T> logits(rows * vocab);
      cpu::gemm<T>(false, vocabMajor, rows, vocab, hidden, T(1), x.data(),
                   hidden, w.data(), vocabMajor ? hidden : vocab, T(0),
                   logits.data(), vocab);
      int64_t expCount = -1, count = -2;
      double expected = cpu::cross_entropy<T>(logits.data(), targets.data(), m,
                                              rows, vocab, kIgnore, &expCount);
      double loss = cpu::linear_cross_entropy<T>(
          x.data(), w.data(), vocabMajor, targets.data(), m, rows, hidden,
          vocab, kIgnore, &count);
      EXPECT_EQ(count, expCount);
      EXPECT_TRUE(scalarClose<T>(loss, expected));

      // And against logits from a naive triple loop.
      std::vector<double> naiveLogits(rows * vocab, 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < vocab; ++j)
          for (int64_t p = 0; p < hidden; ++p)
            naiveLogits[r * vocab + j] +=
                double(x[r * hidden + p]) *
                (vocabMajor ? w[j * hidden + p] : w[p * vocab + j]);
      EXPECT_TRUE(scalarClose<T>(
          loss, naiveCrossEntropy(naiveLogits, targets, m, vocab).first));
    }
}

TYPED_TEST(CpuLoss, LinearCrossEntropyBadTargetThrows) {
  using T = TypeParam;
  std::vector<T> x(2 * 3), w(3 * 5);
  std::vector<int32_t> targets = {-3, 1};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::linear_cross_entropy<T>(x.data(), w.data(), false, targets.data(),
                                     nullptr, 2, 3, 5, kIgnore, nullptr);
      },
      {"linear_cross_entropy", "target -3", "row 0"}));
}

} // namespace
