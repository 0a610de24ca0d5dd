//===- KernelsTest.cpp - elementwise, norm, softmax, rope, dropout --------===//
#include "runtime/cpu/Kernels.h"
#include "runtime/rng/Philox.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <omp.h>

#include <algorithm>

using namespace shardc;
using namespace shardc::test;

namespace {

template <class T> class CpuKernels : public ::testing::Test {};
TYPED_TEST_SUITE(CpuKernels, FloatTypes);

TYPED_TEST(CpuKernels, AddAndBiasAdd) {
  using T = TypeParam;
  const int64_t rows = 7, cols = 13;
  auto a = randomVector<T>(rows * cols, 1);
  auto b = randomVector<T>(rows * cols, 2);
  auto bias = randomVector<T>(cols, 3);
  std::vector<double> sum(rows * cols), biased(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      sum[r * cols + c] = double(a[r * cols + c]) + double(b[r * cols + c]);
      biased[r * cols + c] = double(a[r * cols + c]) + double(bias[c]);
    }
  std::vector<T> out(rows * cols);
  cpu::add<T>(a.data(), b.data(), out.data(), rows * cols);
  EXPECT_TRUE(allClose(out, sum));
  cpu::bias_add<T>(a.data(), bias.data(), out.data(), rows, cols);
  EXPECT_TRUE(allClose(out, biased));
}

TYPED_TEST(CpuKernels, GeluTanhMatchesFormulaInPlace) {
  using T = TypeParam;
  auto x = randomVector<T>(7 * 13 * 5, 4, -12.0, 12.0);
  std::vector<double> expected;
  for (T v : x) {
    double d = v;
    expected.push_back(
        0.5 * d *
        (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d))));
  }
  cpu::gelu_tanh<T>(x.data(), x.data(), int64_t(x.size()));
  EXPECT_TRUE(allClose(x, expected));
}

TYPED_TEST(CpuKernels, SwiGLU) {
  using T = TypeParam;
  auto gate = randomVector<T>(7 * 13 * 5, 5, -8.0, 8.0);
  auto up = randomVector<T>(gate.size(), 6);
  std::vector<double> expected;
  for (size_t i = 0; i < gate.size(); ++i) {
    double g = gate[i];
    expected.push_back(g / (1.0 + std::exp(-g)) * double(up[i]));
  }
  std::vector<T> out(gate.size());
  cpu::swiglu<T>(gate.data(), up.data(), out.data(), int64_t(out.size()));
  EXPECT_TRUE(allClose(out, expected));
}

TYPED_TEST(CpuKernels, LayerNormWithStatistics) {
  using T = TypeParam;
  const int64_t rows = 7, cols = 13;
  // A large common offset: a one-pass E[x^2] - E[x]^2 would lose the variance.
  auto x = randomVector<T>(rows * cols, 7, 99.0, 101.0);
  auto gamma = randomVector<T>(cols, 8);
  auto beta = randomVector<T>(cols, 9);
  const double eps = 1e-5;
  std::vector<double> expOut(rows * cols), expMean(rows), expRstd(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c)
      mu += x[r * cols + c];
    mu /= cols;
    for (int64_t c = 0; c < cols; ++c)
      var += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
    var /= cols;
    expMean[r] = mu;
    expRstd[r] = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c)
      expOut[r * cols + c] =
          (x[r * cols + c] - mu) * expRstd[r] * gamma[c] + beta[c];
  }
  std::vector<T> out(rows * cols), mean(rows), rstd(rows);
  cpu::layernorm_forward<T>(x.data(), gamma.data(), beta.data(), out.data(),
                            mean.data(), rstd.data(), rows, cols, eps);
  EXPECT_TRUE(allClose(out, expOut));
  EXPECT_TRUE(allClose(mean, expMean));
  EXPECT_TRUE(allClose(rstd, expRstd));
  // The statistics are optional.
  std::vector<T> out2(rows * cols);
  cpu::layernorm_forward<T>(x.data(), gamma.data(), beta.data(), out2.data(),
                            nullptr, nullptr, rows, cols, eps);
  EXPECT_EQ(out, out2);
}

TYPED_TEST(CpuKernels, RmsNorm) {
  using T = TypeParam;
  const int64_t rows = 7, cols = 13;
  auto x = randomVector<T>(rows * cols, 10, -3.0, 3.0);
  auto gamma = randomVector<T>(cols, 11);
  const double eps = 1e-6;
  std::vector<double> expOut(rows * cols), expRstd(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c)
      ms += double(x[r * cols + c]) * x[r * cols + c];
    expRstd[r] = 1.0 / std::sqrt(ms / cols + eps);
    for (int64_t c = 0; c < cols; ++c)
      expOut[r * cols + c] = x[r * cols + c] * expRstd[r] * gamma[c];
  }
  std::vector<T> out(rows * cols), rstd(rows);
  cpu::rmsnorm_forward<T>(x.data(), gamma.data(), out.data(), rstd.data(), rows,
                          cols, eps);
  EXPECT_TRUE(allClose(out, expOut));
  EXPECT_TRUE(allClose(rstd, expRstd));
}

TYPED_TEST(CpuKernels, SoftmaxIsStableForLargeLogits) {
  using T = TypeParam;
  const int64_t rows = 7, cols = 13;
  // exp(1000) overflows without the max subtraction.
  auto x = randomVector<T>(rows * cols, 12, 990.0, 1000.0);
  std::vector<double> expected(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mx =
        *std::max_element(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(x[r * cols + c] - mx);
    for (int64_t c = 0; c < cols; ++c)
      expected[r * cols + c] = std::exp(x[r * cols + c] - mx) / sum;
  }
  cpu::softmax_lastdim<T>(x.data(), x.data(), rows, cols);
  EXPECT_TRUE(allClose(x, expected));
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

template <class T>
std::vector<double> naiveRope(const std::vector<T> &x, int64_t B, int64_t S,
                              int64_t H, int64_t D, double theta,
                              int64_t offset) {
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < D / 2; ++i) {
          double angle = double(s + offset) * std::pow(theta, -2.0 * i / D);
          int64_t base = ((b * S + s) * H + h) * D;
          double lo = x[base + i], hi = x[base + i + D / 2];
          out[base + i] = lo * std::cos(angle) - hi * std::sin(angle);
          out[base + i + D / 2] = hi * std::cos(angle) + lo * std::sin(angle);
        }
  return out;
}

TYPED_TEST(CpuKernels, RopeRotateHalf) {
  using T = TypeParam;
  const int64_t B = 2, S = 7, H = 3, D = 10;
  auto x = randomVector<T>(B * S * H * D, 13);
  for (int64_t offset : {0, 37}) {
    std::vector<T> out(x.size());
    cpu::rope<T>(x.data(), out.data(), B, S, H, D, 10000.0, offset);
    EXPECT_TRUE(allClose(out, naiveRope(x, B, S, H, D, 10000.0, offset)))
        << "offset " << offset;
  }
}

TYPED_TEST(CpuKernels, RopeOffsetMatchesSequenceShard) {
  using T = TypeParam;
  // The second half of a sequence rotated with positionOffset = S/2 equals the
  // second half of the whole sequence: what a sequence-parallel shard does.
  const int64_t S = 8, H = 2, D = 4;
  auto x = randomVector<T>(S * H * D, 14);
  std::vector<T> whole(x.size()), half(x.size() / 2);
  cpu::rope<T>(x.data(), whole.data(), 1, S, H, D, 500000.0, 0);
  cpu::rope<T>(x.data() + x.size() / 2, half.data(), 1, S / 2, H, D, 500000.0,
               S / 2);
  EXPECT_TRUE(
      std::equal(half.begin(), half.end(), whole.begin() + whole.size() / 2));
}

TEST(CpuKernelErrors, RopeRejectsOddHeadDim) {
  std::vector<float> x(6), out(6);
  EXPECT_TRUE(throwsErrorWith(
      [&] { cpu::rope<float>(x.data(), out.data(), 1, 2, 1, 3, 1e4, 0); },
      {"head dimension 3"}));
}

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

TYPED_TEST(CpuKernels, DropoutRateZeroIsIdentity) {
  using T = TypeParam;
  auto x = randomVector<T>(1001, 15);
  std::vector<T> out(x.size());
  cpu::dropout<T>(x.data(), out.data(), int64_t(x.size()), 0.0, 1, 2, 3, 0);
  EXPECT_EQ(out, x);
}

TYPED_TEST(CpuKernels, DropoutDropsRateAndScalesKept) {
  using T = TypeParam;
  const int64_t n = 100000;
  const double rate = 0.3;
  auto x = randomVector<T>(n, 16, 0.5, 1.5); // never exactly 0
  std::vector<T> out(n);
  cpu::dropout<T>(x.data(), out.data(), n, rate, 1234, 7, 42, 0);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] == T(0)) {
      ++dropped;
      continue;
    }
    ASSERT_EQ(out[i], x[i] * T(1.0 / (1.0 - rate))) << "element " << i;
  }
  // Binomial std of the fraction is 0.0014; 0.01 is a 7-sigma band.
  EXPECT_NEAR(double(dropped) / n, rate, 0.01);
}

TYPED_TEST(CpuKernels, DropoutMaskIndependentOfSplitAndThreads) {
  using T = TypeParam;
  const int64_t n = 50001, cut = 20011;
  auto x = randomVector<T>(n, 17, 0.5, 1.5);
  std::vector<T> whole(n), split(n), serial(n);
  cpu::dropout<T>(x.data(), whole.data(), n, 0.5, 99, 3, 11, 0);
  cpu::dropout<T>(x.data(), split.data(), cut, 0.5, 99, 3, 11, 0);
  cpu::dropout<T>(x.data() + cut, split.data() + cut, n - cut, 0.5, 99, 3, 11,
                  cut);
  EXPECT_EQ(split, whole);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu::dropout<T>(x.data(), serial.data(), n, 0.5, 99, 3, 11, 0);
  omp_set_num_threads(threads);
  EXPECT_EQ(serial, whole);
}

TYPED_TEST(CpuKernels, DropoutMaskChangesWithStepAndOp) {
  using T = TypeParam;
  const int64_t n = 4096;
  std::vector<T> ones(n, T(1)), a(n), b(n), c(n);
  cpu::dropout<T>(ones.data(), a.data(), n, 0.5, 5, 1, 8, 0);
  cpu::dropout<T>(ones.data(), b.data(), n, 0.5, 5, 2, 8, 0);
  cpu::dropout<T>(ones.data(), c.data(), n, 0.5, 5, 1, 9, 0);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

TYPED_TEST(CpuKernels, DropoutRateOneZeroesAndBadRateThrows) {
  using T = TypeParam;
  std::vector<T> x(10, T(3)), out(10, T(7));
  cpu::dropout<T>(x.data(), out.data(), 10, 1.0, 0, 0, 0, 0);
  EXPECT_EQ(out, std::vector<T>(10, T(0)));
  EXPECT_TRUE(throwsErrorWith(
      [&] { cpu::dropout<T>(x.data(), out.data(), 10, 1.5, 0, 0, 0, 0); },
      {"rate"}));
}

TYPED_TEST(CpuKernels, DropoutBlocksAssembleToTheWholeMask) {
  using T = TypeParam;
  // A [4, 6, 10] tensor cut into 2 x 1 x 2 blocks (dims 0 and 2 split, as a
  // tensor split over two mesh axes), and the whole as a 1-d dropout.
  const std::vector<int64_t> global = {4, 6, 10}, block = {2, 6, 5};
  const int64_t n = 240;
  auto x = randomVector<T>(n, 19, 0.5, 1.5);
  std::vector<T> whole(n), flat(n), assembled(n, T(-1));
  cpu::dropout_block<T>(x.data(), whole.data(), global, {0, 0, 0}, global, 0.4,
                        7, 2, 5);
  cpu::dropout<T>(x.data(), flat.data(), n, 0.4, 7, 2, 5, 0);
  EXPECT_EQ(whole, flat);
  for (int64_t b0 = 0; b0 < 2; ++b0)
    for (int64_t b2 = 0; b2 < 2; ++b2) {
      std::vector<T> in(60), out(60);
      auto at = [&](int64_t i, int64_t j, int64_t k) {
        return ((b0 * 2 + i) * 6 + j) * 10 + b2 * 5 + k;
      };
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t k = 0; k < 5; ++k)
            in[(i * 6 + j) * 5 + k] = x[at(i, j, k)];
      cpu::dropout_block<T>(in.data(), out.data(), block, {b0 * 2, 0, b2 * 5},
                            global, 0.4, 7, 2, 5);
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t k = 0; k < 5; ++k)
            assembled[at(i, j, k)] = out[(i * 6 + j) * 5 + k];
    }
  EXPECT_EQ(assembled, whole);
  // Some elements dropped, some kept: the comparison tests something.
  EXPECT_NE(std::count(whole.begin(), whole.end(), T(0)), 0);
  EXPECT_NE(std::count(whole.begin(), whole.end(), T(0)), n);
}

TYPED_TEST(CpuKernels, DropoutBlockIndependentOfThreadsAndZeroDim) {
  using T = TypeParam;
  const std::vector<int64_t> shape = {3, 7001}, global = {9, 7001};
  auto x = randomVector<T>(3 * 7001, 20, 0.5, 1.5);
  std::vector<T> a(x.size()), b(x.size());
  cpu::dropout_block<T>(x.data(), a.data(), shape, {3, 0}, global, 0.5, 1, 2,
                        3);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu::dropout_block<T>(x.data(), b.data(), shape, {3, 0}, global, 0.5, 1, 2,
                        3);
  omp_set_num_threads(threads);
  EXPECT_EQ(a, b);
  // Rows 3..5 of the global tensor are its elements [3 * 7001, 6 * 7001).
  std::vector<T> flat(x.size());
  cpu::dropout<T>(x.data(), flat.data(), int64_t(x.size()), 0.5, 1, 2, 3,
                  3 * 7001);
  EXPECT_EQ(a, flat);
  // A 0-d tensor is element 0.
  T one = T(1), scalar = T(-1), first = T(-1);
  cpu::dropout_block<T>(&one, &scalar, {}, {}, {}, 0.5, 1, 2, 3);
  cpu::dropout<T>(&one, &first, 1, 0.5, 1, 2, 3, 0);
  EXPECT_EQ(scalar, first);
}

TEST(CpuKernelErrors, DropoutBlockOutsideTheTensorThrows) {
  std::vector<float> x(8), out(8);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::dropout_block<float>(x.data(), out.data(), {2, 4}, {1, 0}, {2, 4},
                                  0.5, 0, 0, 0);
      },
      {"dropout", "[2, 4]", "[1, 0]"}));
}

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

TYPED_TEST(CpuKernels, EmbeddingGathersRows) {
  using T = TypeParam;
  const int64_t vocab = 11, dim = 5;
  auto table = randomVector<T>(vocab * dim, 18);
  std::vector<int32_t> ids = {3, 0, 10, 3, 7, 1, 9};
  std::vector<T> out(ids.size() * dim);
  cpu::embedding<T>(table.data(), ids.data(), out.data(), int64_t(ids.size()),
                    vocab, dim);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t d = 0; d < dim; ++d)
      ASSERT_EQ(out[i * dim + d], table[ids[i] * dim + d]);
}

TYPED_TEST(CpuKernels, EmbeddingOutOfRangeIdThrows) {
  using T = TypeParam;
  std::vector<T> table(4 * 2), out(3 * 2);
  std::vector<int32_t> ids = {1, 4, 0};
  EXPECT_TRUE(throwsErrorWith(
      [&] { cpu::embedding<T>(table.data(), ids.data(), out.data(), 3, 4, 2); },
      {"token id 4", "position 1", "[0, 4)"}));
  ids = {-1, 0, 0};
  EXPECT_TRUE(throwsErrorWith(
      [&] { cpu::embedding<T>(table.data(), ids.data(), out.data(), 3, 4, 2); },
      {"token id -1", "position 0"}));
}

TYPED_TEST(CpuKernels, EmbeddingBlocksSumToTheWholeTable) {
  using T = TypeParam;
  // Vocabulary 10 cut into row blocks [0, 4), [4, 7), [7, 10).
  const int64_t vocab = 10, dim = 3;
  auto table = randomVector<T>(vocab * dim, 21);
  std::vector<int32_t> ids = {9, 0, 4, 6, 7, 3, 4};
  const int64_t nIds = int64_t(ids.size());
  std::vector<T> whole(nIds * dim), sum(nIds * dim, T(0));
  cpu::embedding<T>(table.data(), ids.data(), whole.data(), nIds, vocab, dim);
  for (auto [begin, rows] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 4}, {4, 3}, {7, 3}}) {
    std::vector<T> out(nIds * dim, T(NAN));
    cpu::embedding_block<T>(table.data() + begin * dim, ids.data(), out.data(),
                            nIds, vocab, begin, rows, dim);
    for (int64_t i = 0; i < nIds; ++i) {
      bool inside = ids[i] >= begin && ids[i] < begin + rows;
      for (int64_t d = 0; d < dim; ++d) {
        // Rows outside the block are exact zeros, rows inside exact copies.
        ASSERT_EQ(out[i * dim + d], inside ? whole[i * dim + d] : T(0))
            << "block " << begin << " id " << ids[i];
        sum[i * dim + d] += out[i * dim + d];
      }
    }
  }
  EXPECT_EQ(sum, whole);
}

TYPED_TEST(CpuKernels, EmbeddingBlockChecksIdsAgainstTheWholeVocabulary) {
  using T = TypeParam;
  std::vector<T> block(2 * 2), out(3 * 2);
  std::vector<int32_t> ids = {1, 8, 0};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::embedding_block<T>(block.data(), ids.data(), out.data(), 3, 8, 2,
                                2, 2);
      },
      {"embedding", "token id 8", "position 1", "[0, 8)"}));
  ids = {1, 7, 0};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::embedding_block<T>(block.data(), ids.data(), out.data(), 3, 8, 7,
                                2, 2);
      },
      {"embedding", "rows [7, 9)", "[0, 8)"}));
}

} // namespace
