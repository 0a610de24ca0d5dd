//===- LossTest.cpp - cross_entropy and linear_cross_entropy --------------===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <algorithm>
#include <cmath>

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

/// The cases both linear cross-entropy tests sweep: 300 rows with a
/// vocabulary of 11 (two chunks of 256 rows), no mask, a random mask, and a
/// mask whose first chunk counts no row (skipped without a GEMM); vocab-major
/// and hidden-major weights. `body(x, targets, mask, vocabMajor)`; the data
/// come from seeds `seed`, `seed + 1`, `seed + 2`.
constexpr int64_t kLinearRows = 300, kLinearHidden = 7, kLinearVocab = 11;
template <class T, class Body> void forEachLinearLossCase(uint32_t seed, Body body) {
  auto x = randomVector<T>(kLinearRows * kLinearHidden, seed);
  auto targets = randomTargets(kLinearRows, kLinearVocab, seed + 1, 0.1);
  auto mask = randomMask<T>(kLinearRows, seed + 2);
  auto sparseMask = mask;
  std::fill(sparseMask.begin(), sparseMask.begin() + 256, T(0));
  for (bool vocabMajor : {true, false})
    for (const T *m : std::vector<const T *>{nullptr, mask.data(), sparseMask.data()}) {
      SCOPED_TRACE(testing::Message() << "vocabMajor=" << vocabMajor << " mask="
                                      << (m == nullptr       ? "none"
                                          : m == mask.data() ? "random"
                                                             : "sparse"));
      body(x, targets, m, vocabMajor);
    }
}

TYPED_TEST(CpuLoss, LinearCrossEntropyEqualsGemmThenCrossEntropy) {
  using T = TypeParam;
  const int64_t rows = kLinearRows, hidden = kLinearHidden, vocab = kLinearVocab;
  forEachLinearLossCase<T>(4, [&](const std::vector<T> &x, const std::vector<int32_t> &targets,
                                  const T *m, bool vocabMajor) {
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
  });
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

//===----------------------------------------------------------------------===//
// Vocabulary-parallel statistics
//===----------------------------------------------------------------------===//

/// Uneven vocabulary blocks [begin, begin + size) covering a vocabulary of 11.
const std::vector<std::pair<int64_t, int64_t>> kBlocks = {{0, 4}, {4, 3}, {7, 4}};

/// Columns [begin, begin + n) of a row-major [rows, cols] matrix.
template <class T>
std::vector<T> columns(const std::vector<T> &m, int64_t rows, int64_t cols,
                       int64_t begin, int64_t n) {
  std::vector<T> out(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    std::copy(m.begin() + r * cols + begin, m.begin() + r * cols + begin + n,
              out.begin() + r * n);
  return out;
}

/// Per-block statistics, combined in block order, and the loss from them.
struct BlockStats {
  std::vector<std::vector<double>> mx, sumExp, target;
  std::vector<int64_t> counts;

  explicit BlockStats(int64_t rows)
      : mx(kBlocks.size(), std::vector<double>(rows, NAN)),
        sumExp(mx), target(mx) {}

  template <class T>
  double loss(const std::vector<int32_t> &targets, const T *mask,
              int64_t *count) {
    int64_t rows = int64_t(targets.size());
    std::vector<const double *> m, s, t;
    for (size_t b = 0; b < kBlocks.size(); ++b) {
      m.push_back(mx[b].data());
      s.push_back(sumExp[b].data());
      t.push_back(target[b].data());
    }
    std::vector<double> gm(rows), gs(rows), gt(rows);
    cpu::cross_entropy_combine_stats(int64_t(kBlocks.size()), m.data(), s.data(),
                                     t.data(), rows, gm.data(), gs.data(),
                                     gt.data());
    return cpu::cross_entropy_from_stats<T>(gm.data(), gs.data(), gt.data(),
                                            targets.data(), mask, rows, kIgnore,
                                            count);
  }
};

TYPED_TEST(CpuLoss, CrossEntropyVocabularyBlocksEqualTheWhole) {
  using T = TypeParam;
  const int64_t rows = 37, vocab = 11;
  // Rows with very different scales: the block maxima differ a lot.
  auto logits = randomVector<T>(rows * vocab, 8, -30.0, 30.0);
  auto targets = randomTargets(rows, vocab, 9, 0.2);
  auto mask = randomMask<T>(rows, 10);
  for (const T *m : std::vector<const T *>{nullptr, mask.data()}) {
    SCOPED_TRACE(m ? "with mask" : "without mask");
    int64_t expCount = -1, count = -2;
    double whole = cpu::cross_entropy<T>(logits.data(), targets.data(), m, rows,
                                         vocab, kIgnore, &expCount);
    BlockStats st(rows);
    for (size_t b = 0; b < kBlocks.size(); ++b) {
      auto [begin, n] = kBlocks[b];
      auto block = columns(logits, rows, vocab, begin, n);
      EXPECT_EQ(cpu::cross_entropy_block_stats<T>(
                    block.data(), targets.data(), m, rows, vocab, begin, n,
                    kIgnore, st.mx[b].data(), st.sumExp[b].data(),
                    st.target[b].data()),
                expCount);
    }
    EXPECT_TRUE(scalarClose<T>(st.loss<T>(targets, m, &count), whole));
    EXPECT_EQ(count, expCount);
    EXPECT_TRUE(scalarClose<T>(
        whole, naiveCrossEntropy(toDouble(logits), targets, m, vocab).first));
  }
}

TEST(CpuLossStats, CombiningOneBlockChangesNothing) {
  std::vector<double> mx = {1.5, -2.0, 0.0}, sum = {3.25, 1.0, 7.5},
                      target = {0.5, -0.25, 0.0};
  const double *m = mx.data(), *s = sum.data(), *t = target.data();
  std::vector<double> gm(3), gs(3), gt(3);
  cpu::cross_entropy_combine_stats(1, &m, &s, &t, 3, gm.data(), gs.data(),
                                   gt.data());
  EXPECT_EQ(gm, mx);
  EXPECT_EQ(gs, sum);
  EXPECT_EQ(gt, target);
  // Two blocks: max of the maxima, sums rescaled to it, targets added.
  std::vector<double> mx2 = {0.5, 1.0, 0.0}, sum2 = {2.0, 4.0, 1.0},
                      target2 = {0.0, 0.75, 0.0};
  const double *ms[] = {mx.data(), mx2.data()}, *ss[] = {sum.data(), sum2.data()},
               *ts[] = {target.data(), target2.data()};
  cpu::cross_entropy_combine_stats(2, ms, ss, ts, 3, gm.data(), gs.data(),
                                   gt.data());
  EXPECT_EQ(gm, (std::vector<double>{1.5, 1.0, 0.0}));
  EXPECT_DOUBLE_EQ(gs[0], 3.25 + 2.0 * std::exp(-1.0));
  EXPECT_DOUBLE_EQ(gs[1], 1.0 * std::exp(-3.0) + 4.0);
  EXPECT_EQ(gt, (std::vector<double>{0.5, 0.5, 0.0}));
}

TYPED_TEST(CpuLoss, LinearCrossEntropyVocabularyBlocksEqualTheWhole) {
  using T = TypeParam;
  const int64_t rows = kLinearRows, hidden = kLinearHidden, vocab = kLinearVocab;
  forEachLinearLossCase<T>(11, [&](const std::vector<T> &x, const std::vector<int32_t> &targets,
                                   const T *m, bool vocabMajor) {
      auto w = randomVector<T>(vocab * hidden, 14, -3.0, 3.0);
      int64_t expCount = -1, count = -2;
      double whole = cpu::linear_cross_entropy<T>(
          x.data(), w.data(), vocabMajor, targets.data(), m, rows, hidden,
          vocab, kIgnore, &expCount);
      BlockStats st(rows);
      for (size_t b = 0; b < kBlocks.size(); ++b) {
        auto [begin, n] = kBlocks[b];
        std::vector<T> wb =
            vocabMajor ? std::vector<T>(w.begin() + begin * hidden,
                                        w.begin() + (begin + n) * hidden)
                       : columns(w, hidden, vocab, begin, n);
        EXPECT_EQ(cpu::linear_cross_entropy_block_stats<T>(
                      x.data(), wb.data(), vocabMajor, targets.data(), m, rows,
                      hidden, vocab, begin, n, kIgnore, st.mx[b].data(),
                      st.sumExp[b].data(), st.target[b].data()),
                  expCount);
      }
      EXPECT_TRUE(scalarClose<T>(st.loss<T>(targets, m, &count), whole));
      EXPECT_EQ(count, expCount);
  });
}

TEST(CpuLossStats, VocabularyBlockErrors) {
  std::vector<float> logits(2 * 3);
  std::vector<double> mx(2), sum(2), target(2);
  std::vector<int32_t> targets = {1, 5};
  // Block [4, 7) of a vocabulary of 6.
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy_block_stats<float>(logits.data(), targets.data(),
                                              nullptr, 2, 6, 4, 3, kIgnore,
                                              mx.data(), sum.data(),
                                              target.data());
      },
      {"cross_entropy", "block [4, 7)", "[0, 6)"}));
  // Targets are checked against the whole vocabulary, not the block.
  targets = {1, 6};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy_block_stats<float>(logits.data(), targets.data(),
                                              nullptr, 2, 6, 3, 3, kIgnore,
                                              mx.data(), sum.data(),
                                              target.data());
      },
      {"cross_entropy", "target 6", "row 1"}));
}

} // namespace
