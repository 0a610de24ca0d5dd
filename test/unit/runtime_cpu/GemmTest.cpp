//===- GemmTest.cpp - gemm, gemm_batched, transpose, iota -----------------===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <limits>
#include <numeric>

using namespace shardc;
using namespace shardc::test;

namespace {

/// C (with its ldc padding) after C = alpha op(A) op(B) + beta C, triple loop.
template <class T>
std::vector<double>
naiveGemm(bool tA, bool tB, int64_t M, int64_t N, int64_t K, double alpha,
          const std::vector<T> &A, int64_t lda, const std::vector<T> &B,
          int64_t ldb, double beta, const std::vector<T> &C, int64_t ldc) {
  std::vector<double> out = toDouble(C);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < K; ++p) {
        double a = tA ? A[p * lda + i] : A[i * lda + p];
        double b = tB ? B[j * ldb + p] : B[p * ldb + j];
        acc += a * b;
      }
      double c = beta == 0.0 ? 0.0 : beta * double(C[i * ldc + j]);
      out[i * ldc + j] = alpha * acc + c;
    }
  return out;
}

template <class T> class CpuGemm : public ::testing::Test {};
TYPED_TEST_SUITE(CpuGemm, FloatTypes);

TYPED_TEST(CpuGemm, AllTransposesWithLeadingDims) {
  using T = TypeParam;
  const int64_t M = 7, N = 13, K = 5;
  for (bool tA : {false, true})
    for (bool tB : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transA=" << tA << " transB=" << tB);
      // Padded leading dimensions; the padding of C must stay untouched.
      int64_t lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 2, ldc = N + 4;
      auto A = randomVector<T>((tA ? K : M) * lda, 1);
      auto B = randomVector<T>((tB ? N : K) * ldb, 2);
      auto C = randomVector<T>(M * ldc, 3);
      auto expected =
          naiveGemm(tA, tB, M, N, K, 0.7, A, lda, B, ldb, -1.3, C, ldc);
      cpu::gemm<T>(tA, tB, M, N, K, T(0.7), A.data(), lda, B.data(), ldb,
                   T(-1.3), C.data(), ldc);
      EXPECT_TRUE(allClose(C, expected));
    }
}

TYPED_TEST(CpuGemm, BetaZeroDoesNotReadC) {
  using T = TypeParam;
  const int64_t M = 4, N = 3, K = 6;
  auto A = randomVector<T>(M * K, 4);
  auto B = randomVector<T>(K * N, 5);
  std::vector<T> C(M * N, std::numeric_limits<T>::quiet_NaN());
  auto expected = naiveGemm(false, false, M, N, K, 1.0, A, K, B, N, 0.0, C, N);
  cpu::gemm<T>(false, false, M, N, K, T(1), A.data(), K, B.data(), N, T(0),
               C.data(), N);
  EXPECT_TRUE(allClose(C, expected));
}

TYPED_TEST(CpuGemm, EmptyInnerDimensionScalesC) {
  using T = TypeParam;
  std::vector<T> A(1), B(1);
  auto C = randomVector<T>(3 * 2, 6);
  std::vector<double> expected;
  for (T c : C)
    expected.push_back(2.0 * double(c));
  cpu::gemm<T>(false, false, 3, 2, 0, T(1), A.data(), 1, B.data(), 2, T(2),
               C.data(), 2);
  EXPECT_TRUE(allClose(C, expected));
}

TYPED_TEST(CpuGemm, ShortLeadingDimensionThrows) {
  using T = TypeParam;
  std::vector<T> A(20), B(20), C(20);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::gemm<T>(false, false, 4, 4, 5, T(1), A.data(), 4, B.data(), 4,
                     T(0), C.data(), 4);
      },
      {"gemm", "lda = 4"}));
}

TYPED_TEST(CpuGemm, BatchedMatchesLoopIncludingBroadcastB) {
  using T = TypeParam;
  const int64_t M = 5, N = 7, K = 3;
  // batch 1 takes the sequential path, batch 5 the one-GEMM-per-thread path.
  for (int64_t batch : {1, 5})
    for (bool broadcastB : {false, true})
      for (bool tA : {false, true})
        for (bool tB : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << "batch=" << batch << " broadcastB=" << broadcastB
                       << " transA=" << tA << " transB=" << tB);
          int64_t lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 2, ldc = N + 1;
          int64_t strideA = (tA ? K : M) * lda + 5;
          int64_t strideB = broadcastB ? 0 : (tB ? N : K) * ldb + 3;
          int64_t strideC = M * ldc + 2;
          auto A = randomVector<T>(batch * strideA, 7);
          auto B = randomVector<T>(
              broadcastB ? (tB ? N : K) * ldb : batch * strideB, 8);
          auto C = randomVector<T>(batch * strideC, 9);
          std::vector<double> expected = toDouble(C);
          for (int64_t i = 0; i < batch; ++i) {
            std::vector<T> a(A.begin() + i * strideA,
                             A.begin() + i * strideA + (tA ? K : M) * lda);
            std::vector<T> b(B.begin() + i * strideB,
                             B.begin() + i * strideB + (tB ? N : K) * ldb);
            std::vector<T> c(C.begin() + i * strideC,
                             C.begin() + i * strideC + M * ldc);
            auto r =
                naiveGemm(tA, tB, M, N, K, 1.5, a, lda, b, ldb, 0.5, c, ldc);
            std::copy(r.begin(), r.end(), expected.begin() + i * strideC);
          }
          cpu::gemm_batched<T>(batch, tA, tB, M, N, K, T(1.5), A.data(), lda,
                               strideA, B.data(), ldb, strideB, T(0.5),
                               C.data(), ldc, strideC);
          EXPECT_TRUE(allClose(C, expected));
        }
}

TYPED_TEST(CpuGemm, BatchedRejectsAliasedOutputs) {
  using T = TypeParam;
  std::vector<T> A(4), B(4), C(4);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::gemm_batched<T>(2, false, false, 2, 2, 2, T(1), A.data(), 2, 4,
                             B.data(), 2, 4, T(0), C.data(), 2, 0);
      },
      {"strideC = 0"}));
}

//===----------------------------------------------------------------------===//
// transpose / iota
//===----------------------------------------------------------------------===//

/// numpy.transpose by explicit multi-indices.
template <class T>
std::vector<T> naiveTranspose(const std::vector<T> &in,
                              const std::vector<int64_t> &shape,
                              const std::vector<int64_t> &perm) {
  size_t rank = shape.size();
  std::vector<int64_t> outShape(rank);
  for (size_t i = 0; i < rank; ++i)
    outShape[i] = shape[perm[i]];
  std::vector<T> out(in.size());
  std::vector<int64_t> idx(rank, 0); // output multi-index
  for (size_t flat = 0; flat < in.size(); ++flat) {
    std::vector<int64_t> src(rank);
    for (size_t i = 0; i < rank; ++i)
      src[perm[i]] = idx[i];
    int64_t s = 0;
    for (size_t d = 0; d < rank; ++d)
      s = s * shape[d] + src[d];
    out[flat] = in[s];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

template <class T> class CpuTranspose : public ::testing::Test {};
using TransposeTypes = ::testing::Types<float, double, int32_t, uint16_t>;
TYPED_TEST_SUITE(CpuTranspose, TransposeTypes);

TYPED_TEST(CpuTranspose, MatchesNaive) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  // Row copies (last dim kept), tiled copies crossing 32-wide tiles, rank 1
  // and size-1 dimensions.
  std::vector<Case> cases = {
      {{2, 7, 3, 5}, {0, 2, 1, 3}}, {{3, 37, 5, 41}, {0, 3, 2, 1}},
      {{70, 45}, {1, 0}},           {{7, 13, 5}, {2, 0, 1}},
      {{7, 13, 5}, {1, 2, 0}},      {{9}, {0}},
      {{4, 1, 6}, {2, 1, 0}},       {{5, 6, 1}, {2, 0, 1}}};
  for (const Case &c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    std::vector<T> in(n);
    for (int64_t i = 0; i < n; ++i)
      in[i] = T(i % 60000);
    std::vector<T> out(n);
    cpu::transpose<T>(in.data(), out.data(), c.shape, c.perm);
    EXPECT_EQ(out, naiveTranspose(in, c.shape, c.perm))
        << "shape rank " << c.shape.size() << ", perm[0] = " << c.perm[0];
  }
}

TEST(CpuLayout, TransposeRejectsBadPermutation) {
  std::vector<float> in(6), out(6);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::transpose<float>(in.data(), out.data(), {2, 3}, {0, 0});
      },
      {"[0, 0]", "[2, 3]"}));
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::transpose<float>(in.data(), out.data(), {2, 3}, {1});
      },
      {"permutation"}));
}

TEST(CpuLayout, IotaAlongEachDimension) {
  std::vector<int64_t> shape = {3, 4, 5};
  std::vector<int32_t> out(60);
  for (int64_t dim = 0; dim < 3; ++dim) {
    cpu::iota(out.data(), shape, dim);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 5; ++k) {
          int64_t idx[3] = {i, j, k};
          ASSERT_EQ(out[(i * 4 + j) * 5 + k], idx[dim]) << "dim " << dim;
        }
  }
  EXPECT_TRUE(throwsErrorWith([&] { cpu::iota(out.data(), shape, 3); },
                              {"dimension 3"}));
}

TEST(CpuLayout, IotaOffsetIsTheBlockOfALargerIota) {
  // The block [:, 4:8, :] of a [3, 12, 5] iota along dim 1.
  std::vector<int64_t> whole = {3, 12, 5}, block = {3, 4, 5};
  std::vector<int32_t> all(180), part(60);
  cpu::iota(all.data(), whole, 1);
  cpu::iota(part.data(), block, 1, 4);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k)
        ASSERT_EQ(part[(i * 4 + j) * 5 + k], all[(i * 12 + j + 4) * 5 + k]);
  // An offset along another dim shifts nothing but that dim's values.
  cpu::iota(part.data(), block, 0, 7);
  EXPECT_EQ(part[0], 7);
  EXPECT_EQ(part[59], 9);
}

} // namespace
