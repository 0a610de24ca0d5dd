//===- AttentionTest.cpp - attention_forward against a naive reference ----===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <cblas.h>

#include <algorithm>

using namespace shardc;
using namespace shardc::test;

namespace {

struct AttnRef {
  std::vector<double> out, lse;
};

/// Per (b, h, i): scores over visible keys, softmax, weighted sum of values.
template <class T>
AttnRef naiveAttention(const std::vector<T> &q, const std::vector<T> &k,
                       const std::vector<T> &v, int64_t B, int64_t S,
                       int64_t Hq, int64_t Hkv, int64_t D, bool causal,
                       double scale) {
  AttnRef ref{std::vector<double>(q.size()), std::vector<double>(B * Hq * S)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t g = h / (Hq / Hkv);
      for (int64_t i = 0; i < S; ++i) {
        int64_t nKeys = causal ? i + 1 : S;
        std::vector<double> s(nKeys);
        for (int64_t j = 0; j < nKeys; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(q[((b * S + i) * Hq + h) * D + d]) *
                   double(k[((b * S + j) * Hkv + g) * D + d]);
          s[j] = dot * scale;
        }
        double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double x : s)
          sum += std::exp(x - mx);
        ref.lse[(b * Hq + h) * S + i] = mx + std::log(sum);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < nKeys; ++j)
            acc += std::exp(s[j] - mx) / sum *
                   double(v[((b * S + j) * Hkv + g) * D + d]);
          ref.out[((b * S + i) * Hq + h) * D + d] = acc;
        }
      }
    }
  return ref;
}

template <class T> class CpuAttention : public ::testing::Test {};
TYPED_TEST_SUITE(CpuAttention, FloatTypes);

TYPED_TEST(CpuAttention, MatchesNaiveReference) {
  using T = TypeParam;
  struct Case {
    int64_t B, S, Hq, Hkv, D;
  };
  // S = 70 spans two 64-query blocks; Hkv < Hq exercises grouped-query heads.
  std::vector<Case> cases = {
      {2, 7, 4, 2, 5}, {2, 70, 4, 2, 8}, {1, 13, 3, 3, 6}, {1, 66, 4, 1, 4}};
  for (const Case &c : cases)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "B=" << c.B << " S=" << c.S << " Hq=" << c.Hq
                   << " Hkv=" << c.Hkv << " D=" << c.D << " causal=" << causal);
      // Wide logits so the softmax is far from uniform.
      auto q = randomVector<T>(c.B * c.S * c.Hq * c.D, 1, -2.0, 2.0);
      auto k = randomVector<T>(c.B * c.S * c.Hkv * c.D, 2, -2.0, 2.0);
      auto v = randomVector<T>(c.B * c.S * c.Hkv * c.D, 3);
      double scale = 1.0 / std::sqrt(double(c.D));
      AttnRef ref =
          naiveAttention(q, k, v, c.B, c.S, c.Hq, c.Hkv, c.D, causal, scale);
      std::vector<T> out(q.size()), lse(c.B * c.Hq * c.S);
      cpu::attention_forward<T>(q.data(), k.data(), v.data(), out.data(),
                                lse.data(), c.B, c.S, c.Hq, c.Hkv, c.D, causal,
                                scale);
      EXPECT_TRUE(allClose(out, ref.out));
      EXPECT_TRUE(allClose(lse, ref.lse));
      // lse is optional and does not change the output.
      std::vector<T> out2(q.size());
      cpu::attention_forward<T>(q.data(), k.data(), v.data(), out2.data(),
                                nullptr, c.B, c.S, c.Hq, c.Hkv, c.D, causal,
                                scale);
      EXPECT_EQ(out, out2);
    }
}

TYPED_TEST(CpuAttention, CausalFirstQueryCopiesFirstValue) {
  using T = TypeParam;
  const int64_t S = 5, H = 2, D = 3;
  auto q = randomVector<T>(S * H * D, 4);
  auto k = randomVector<T>(S * H * D, 5);
  auto v = randomVector<T>(S * H * D, 6);
  std::vector<T> out(q.size());
  cpu::attention_forward<T>(q.data(), k.data(), v.data(), out.data(), nullptr,
                            1, S, H, H, D, true, 0.5);
  // Query 0 sees only key 0, so its output is value row 0 for every head.
  for (int64_t i = 0; i < H * D; ++i)
    EXPECT_NEAR(double(out[i]), double(v[i]), 1e-6);
}

TYPED_TEST(CpuAttention, PackedQkvIsTheDenseKernelBitForBit) {
  // q, k, v read in place from one [B, S, Hkv, G + 2, D] qkv (Megatron's
  // grouped layout, xf.packed_attention) give the dense kernel's output and
  // lse on the unpacked copies bit for bit: the same GEMMs, other leading
  // dimensions. Ragged S = 37, S past one and two 64-row blocks, G = 1 and 2.
  using T = TypeParam;
  for (const PackedCase &c : packedCases())
    for (bool causal : {false, true}) {
      SCOPED_TRACE(describe(c, causal));
      PackedQkv<T> p = makePackedQkv<T>(c, 8);
      const cpu::AttentionLayout &packed = p.layout;
      const int64_t Hq = p.Hq;
      const std::vector<T> &qkv = p.qkv, &q = p.q, &k = p.k, &v = p.v;
      const double scale = 1.0 / std::sqrt(double(c.D));
      std::vector<T> out(q.size()), lse(c.B * Hq * c.S);
      cpu::attention_forward<T>(q.data(), k.data(), v.data(), out.data(), lse.data(), c.B, c.S,
                                Hq, c.Hkv, c.D, causal, scale);
      std::vector<T> outPacked(q.size(), T(NAN)), lsePacked(lse.size(), T(NAN));
      cpu::attention_forward<T>(qkv.data(), qkv.data(), qkv.data(), outPacked.data(),
                                lsePacked.data(), c.B, c.S, Hq, c.Hkv, c.D, causal, scale, 0, 0,
                                packed);
      EXPECT_EQ(outPacked, out);
      EXPECT_EQ(lsePacked, lse);
    }
}

TEST(CpuAttentionErrors, RejectsHeadsNotDivisible) {
  std::vector<float> buf(64);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::attention_forward<float>(buf.data(), buf.data(), buf.data(),
                                      buf.data(), nullptr, 1, 2, 3, 2, 4, false,
                                      1.0);
      },
      {"Hq=3", "Hkv=2"}));
}

TEST(CpuAttentionThreads, RestoresBlasThreadCount) {
  int before = openblas_get_num_threads();
  auto x = randomVector<float>(2 * 8 * 2 * 4, 7);
  std::vector<float> out(x.size());
  cpu::attention_forward<float>(x.data(), x.data(), x.data(), out.data(),
                                nullptr, 2, 8, 2, 2, 4, true, 0.5);
  EXPECT_EQ(openblas_get_num_threads(), before);
}

} // namespace
