//===- BackwardTest.cpp - backward kernels against finite differences -----===//
//
// Every backward kernel is checked in double against central differences of
// its forward kernel for the loss L = sum(r * y) with a random r, i.e. with
// dy = r. Float kernels are then checked against the double ones.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <omp.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

using namespace shardc;
using namespace shardc::test;

namespace {

using Vec = std::vector<double>;

constexpr int64_t kIgnore = -100;

double dot(const Vec &a, const Vec &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Runs fn with `threads` OpenMP threads, then restores the previous count.
template <class Fn> void withThreads(int threads, Fn fn) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  fn();
  omp_set_num_threads(saved);
}

/// Central differences of loss() with respect to every element of p. The
/// thousands of small forward calls run on one thread: waking an OpenMP team
/// for each is slow on a loaded machine.
Vec numericGrad(Vec &p, const std::function<double()> &loss, double h = 1e-5) {
  Vec g(p.size());
  withThreads(1, [&] {
    for (size_t i = 0; i < p.size(); ++i) {
      double saved = p[i];
      p[i] = saved + h;
      double plus = loss();
      p[i] = saved - h;
      double minus = loss();
      p[i] = saved;
      g[i] = (plus - minus) / (2 * h);
    }
  });
  return g;
}

/// |actual - numeric| <= rtol * max(|numeric|, 1% of the largest |numeric|),
/// element-wise. Fails on an all-zero reference, which would test nothing.
::testing::AssertionResult gradClose(const Vec &actual, const Vec &numeric,
                                     double rtol = 1e-6) {
  if (actual.size() != numeric.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << numeric.size();
  double maxAbs = 0;
  for (double n : numeric)
    maxAbs = std::max(maxAbs, std::fabs(n));
  if (maxAbs == 0)
    return ::testing::AssertionFailure() << "numeric gradient is all zero";
  int bad = 0;
  double worst = 0;
  std::string msg;
  for (size_t i = 0; i < numeric.size(); ++i) {
    double err = std::fabs(actual[i] - numeric[i]) /
                 std::max(std::fabs(numeric[i]), 1e-2 * maxAbs);
    worst = std::max(worst, err);
    if (err <= rtol)
      continue;
    if (++bad <= 5)
      msg += "\n  [" + std::to_string(i) + "] got " +
             std::to_string(actual[i]) + ", numeric " +
             std::to_string(numeric[i]);
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << numeric.size()
         << " elements differ, worst relative error " << worst << ":" << msg;
}

template <class T> std::vector<T> cast(const Vec &v) {
  return std::vector<T>(v.begin(), v.end());
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

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

TEST(CpuBackward, GeluTanhMatchesFiniteDifferences) {
  const int64_t n = 301;
  Vec x = randomVector<double>(n, 1, -6.0, 6.0), r = randomVector<double>(n, 2);
  Vec y(n);
  auto loss = [&] {
    cpu::gelu_tanh<double>(x.data(), y.data(), n);
    return dot(r, y);
  };
  Vec dx(n);
  cpu::gelu_tanh_backward<double>(r.data(), x.data(), dx.data(), n);
  EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
  // Saturated inputs: gelu' is 0 far left and 1 far right, without NaN.
  Vec big = {-60.0, 60.0, -1e4, 1e4}, ones(4, 1.0), dbig(4);
  cpu::gelu_tanh_backward<double>(ones.data(), big.data(), dbig.data(), 4);
  EXPECT_EQ(dbig, (Vec{0.0, 1.0, 0.0, 1.0}));
}

TEST(CpuBackward, SwigluMatchesFiniteDifferences) {
  const int64_t n = 257;
  Vec gate = randomVector<double>(n, 3, -6.0, 6.0);
  Vec up = randomVector<double>(n, 4), r = randomVector<double>(n, 5);
  Vec y(n);
  auto loss = [&] {
    cpu::swiglu<double>(gate.data(), up.data(), y.data(), n);
    return dot(r, y);
  };
  Vec dgate(n), dup(n);
  cpu::swiglu_backward<double>(r.data(), gate.data(), up.data(), dgate.data(),
                               dup.data(), n);
  EXPECT_TRUE(gradClose(dgate, numericGrad(gate, loss)));
  EXPECT_TRUE(gradClose(dup, numericGrad(up, loss)));
}

//===----------------------------------------------------------------------===//
// Softmax and norms
//===----------------------------------------------------------------------===//

TEST(CpuBackward, SoftmaxMatchesFiniteDifferencesInPlace) {
  const int64_t rows = 6, cols = 17;
  Vec x = randomVector<double>(rows * cols, 6, -4.0, 4.0);
  Vec r = randomVector<double>(rows * cols, 7), y(rows * cols);
  auto loss = [&] {
    cpu::softmax_lastdim<double>(x.data(), y.data(), rows, cols);
    return dot(r, y);
  };
  loss();
  Vec dx(rows * cols);
  cpu::softmax_lastdim_backward<double>(r.data(), y.data(), dx.data(), rows,
                                        cols);
  EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
  // dx may alias dy (numericGrad left a perturbed y behind: recompute it).
  loss();
  Vec inPlace = r;
  cpu::softmax_lastdim_backward<double>(inPlace.data(), y.data(),
                                        inPlace.data(), rows, cols);
  EXPECT_EQ(inPlace, dx);
}

TEST(CpuBackward, LayerNormMatchesFiniteDifferences) {
  const int64_t rows = 5, cols = 19;
  const double eps = 1e-5;
  // An offset mean: the recomputed statistics must match the forward's.
  Vec x = randomVector<double>(rows * cols, 8, 2.0, 4.0);
  Vec gamma = randomVector<double>(cols, 9),
      beta = randomVector<double>(cols, 10);
  Vec r = randomVector<double>(rows * cols, 11), y(rows * cols);
  auto loss = [&] {
    cpu::layernorm_forward<double>(x.data(), gamma.data(), beta.data(),
                                   y.data(), nullptr, nullptr, rows, cols, eps);
    return dot(r, y);
  };
  Vec dx(rows * cols), dgamma(cols, NAN), dbeta(cols, NAN);
  cpu::layernorm_backward<double>(r.data(), x.data(), gamma.data(), dx.data(),
                                  dgamma.data(), dbeta.data(), rows, cols, eps);
  EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
  EXPECT_TRUE(gradClose(dgamma, numericGrad(gamma, loss)));
  EXPECT_TRUE(gradClose(dbeta, numericGrad(beta, loss)));
  // dx may alias dy and the parameter gradients are unchanged by it.
  Vec inPlace = r, dgamma2(cols), dbeta2(cols);
  cpu::layernorm_backward<double>(inPlace.data(), x.data(), gamma.data(),
                                  inPlace.data(), dgamma2.data(), dbeta2.data(),
                                  rows, cols, eps);
  EXPECT_EQ(inPlace, dx);
  EXPECT_EQ(dgamma2, dgamma);
  EXPECT_EQ(dbeta2, dbeta);
}

TEST(CpuBackward, RmsNormMatchesFiniteDifferences) {
  const int64_t rows = 6, cols = 13;
  const double eps = 1e-6;
  Vec x = randomVector<double>(rows * cols, 12, -2.0, 2.0);
  Vec gamma = randomVector<double>(cols, 13, 0.5, 1.5);
  Vec r = randomVector<double>(rows * cols, 14), y(rows * cols);
  auto loss = [&] {
    cpu::rmsnorm_forward<double>(x.data(), gamma.data(), y.data(), nullptr,
                                 rows, cols, eps);
    return dot(r, y);
  };
  Vec dx(rows * cols), dgamma(cols, NAN);
  cpu::rmsnorm_backward<double>(r.data(), x.data(), gamma.data(), dx.data(),
                                dgamma.data(), rows, cols, eps);
  EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
  EXPECT_TRUE(gradClose(dgamma, numericGrad(gamma, loss)));
}

TEST(CpuBackward, NormParameterGradientsIndependentOfThreads) {
  // Large enough for the parallel paths; 700 columns span three blocks.
  const int64_t rows = 97, cols = 700;
  Vec x = randomVector<double>(rows * cols, 15);
  Vec gamma = randomVector<double>(cols, 16),
      r = randomVector<double>(rows * cols, 17);
  auto run = [&](int threads) {
    std::vector<Vec> res = {Vec(rows * cols), Vec(cols), Vec(cols),
                            Vec(rows * cols), Vec(cols)};
    withThreads(threads, [&] {
      cpu::layernorm_backward<double>(r.data(), x.data(), gamma.data(),
                                      res[0].data(), res[1].data(),
                                      res[2].data(), rows, cols, 1e-5);
      cpu::rmsnorm_backward<double>(r.data(), x.data(), gamma.data(),
                                    res[3].data(), res[4].data(), rows, cols,
                                    1e-5);
    });
    return res;
  };
  auto serial = run(1), parallel = run(3);
  for (size_t i = 0; i < serial.size(); ++i)
    EXPECT_EQ(serial[i], parallel[i]) << "output " << i;
  // And dbeta is the plain column sum.
  Vec colSum(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c)
      colSum[c] += r[i * cols + c];
  EXPECT_TRUE(allClose(serial[2], colSum));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttnCase {
  int64_t B, S, Hq, Hkv, D;
};

std::string describe(const AttnCase &c, bool causal) {
  return "B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) +
         " Hq=" + std::to_string(c.Hq) + " Hkv=" + std::to_string(c.Hkv) +
         " D=" + std::to_string(c.D) + " causal=" + std::to_string(causal);
}

TEST(CpuBackward, AttentionMatchesFiniteDifferences) {
  // Multi-head, grouped-query (Hq = 4, Hkv = 2), multi-query (Hkv = 1), and
  // S = 70 spanning two 64-row query and key blocks.
  std::vector<AttnCase> cases = {
      {2, 5, 2, 2, 4}, {1, 6, 4, 2, 3}, {2, 5, 4, 1, 4}, {1, 70, 2, 1, 4}};
  for (const AttnCase &c : cases)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(describe(c, causal));
      int64_t nq = c.B * c.S * c.Hq * c.D, nkv = c.B * c.S * c.Hkv * c.D;
      Vec q = randomVector<double>(nq, 18, -1.5, 1.5);
      Vec k = randomVector<double>(nkv, 19, -1.5, 1.5);
      Vec v = randomVector<double>(nkv, 20);
      Vec r = randomVector<double>(nq, 21), out(nq);
      double scale = 1.0 / std::sqrt(double(c.D));
      auto loss = [&] {
        cpu::attention_forward<double>(q.data(), k.data(), v.data(), out.data(),
                                       nullptr, c.B, c.S, c.Hq, c.Hkv, c.D,
                                       causal, scale);
        return dot(r, out);
      };
      loss();
      Vec dq(nq), dk(nkv, NAN), dv(nkv, NAN);
      cpu::attention_backward<double>(
          r.data(), q.data(), k.data(), v.data(), out.data(), dq.data(),
          dk.data(), dv.data(), c.B, c.S, c.Hq, c.Hkv, c.D, causal, scale);
      EXPECT_TRUE(gradClose(dq, numericGrad(q, loss)));
      EXPECT_TRUE(gradClose(dk, numericGrad(k, loss)));
      EXPECT_TRUE(gradClose(dv, numericGrad(v, loss)));
    }
}

TEST(CpuBackward, AttentionCausalLastKeyGetsOnlyLastQuery) {
  // Under the causal mask the last key is seen only by the last query, with
  // probability p: dv[last] = p * dout[last] for every head.
  const int64_t S = 6, H = 2, D = 3;
  Vec q = randomVector<double>(S * H * D, 22),
      k = randomVector<double>(S * H * D, 23);
  Vec v = randomVector<double>(S * H * D, 24),
      r = randomVector<double>(S * H * D, 25);
  Vec out(S * H * D), lse(H * S), dq(S * H * D), dk(S * H * D), dv(S * H * D);
  cpu::attention_forward<double>(q.data(), k.data(), v.data(), out.data(),
                                 lse.data(), 1, S, H, H, D, true, 0.7);
  cpu::attention_backward<double>(r.data(), q.data(), k.data(), v.data(),
                                  out.data(), dq.data(), dk.data(), dv.data(),
                                  1, S, H, H, D, true, 0.7);
  for (int64_t h = 0; h < H; ++h) {
    const double *qi = &q[((S - 1) * H + h) * D],
                 *kj = &k[((S - 1) * H + h) * D];
    double s = 0;
    for (int64_t d = 0; d < D; ++d)
      s += qi[d] * kj[d];
    double p = std::exp(0.7 * s - lse[h * S + S - 1]);
    for (int64_t d = 0; d < D; ++d)
      EXPECT_NEAR(dv[((S - 1) * H + h) * D + d],
                  p * r[((S - 1) * H + h) * D + d], 1e-12);
  }
}

TEST(CpuBackward, AttentionIndependentOfThreads) {
  const AttnCase c{2, 150, 4, 2, 16};
  int64_t nq = c.B * c.S * c.Hq * c.D, nkv = c.B * c.S * c.Hkv * c.D;
  auto q = randomVector<float>(nq, 26, -2.0, 2.0);
  auto k = randomVector<float>(nkv, 27, -2.0, 2.0);
  auto v = randomVector<float>(nkv, 28), r = randomVector<float>(nq, 29);
  std::vector<float> out(nq);
  cpu::attention_forward<float>(q.data(), k.data(), v.data(), out.data(),
                                nullptr, c.B, c.S, c.Hq, c.Hkv, c.D, true,
                                0.25);
  auto run = [&](int threads) {
    std::vector<std::vector<float>> g = {std::vector<float>(nq),
                                         std::vector<float>(nkv),
                                         std::vector<float>(nkv)};
    withThreads(threads, [&] {
      cpu::attention_backward<float>(
          r.data(), q.data(), k.data(), v.data(), out.data(), g[0].data(),
          g[1].data(), g[2].data(), c.B, c.S, c.Hq, c.Hkv, c.D, true, 0.25);
    });
    return g;
  };
  EXPECT_EQ(run(1), run(3));
}

TEST(CpuBackward, AttentionOverQueryRowBlocksEqualsTheWholeSequence) {
  // The query rows split into blocks (attention split over an axis its heads
  // do not divide): each block's output and dq rows equal the whole
  // sequence's, and the blocks' dk and dv sum to the whole's. S = 150 spans
  // several 64-row blocks; a block boundary inside a kernel block (40) and
  // blocks that start past the first key block; causal and not; grouped heads.
  const AttnCase c{2, 150, 4, 2, 8};
  int64_t nq = c.B * c.S * c.Hq * c.D, nkv = c.B * c.S * c.Hkv * c.D;
  Vec q = randomVector<double>(nq, 40, -2.0, 2.0);
  Vec k = randomVector<double>(nkv, 41, -2.0, 2.0);
  Vec v = randomVector<double>(nkv, 42), r = randomVector<double>(nq, 43);
  double scale = 0.3;
  for (bool causal : {false, true})
    for (std::vector<int64_t> cuts : {std::vector<int64_t>{0, 75, 150},
                                      std::vector<int64_t>{0, 40, 100, 150}}) {
      SCOPED_TRACE(describe(c, causal) + " blocks " + std::to_string(cuts.size() - 1));
      Vec out(nq), dq(nq), dk(nkv), dv(nkv);
      cpu::attention_forward<double>(q.data(), k.data(), v.data(), out.data(), nullptr, c.B, c.S,
                                     c.Hq, c.Hkv, c.D, causal, scale);
      cpu::attention_backward<double>(r.data(), q.data(), k.data(), v.data(), out.data(),
                                      dq.data(), dk.data(), dv.data(), c.B, c.S, c.Hq, c.Hkv,
                                      c.D, causal, scale);
      Vec dkSum(nkv, 0.0), dvSum(nkv, 0.0);
      int64_t row = c.Hq * c.D;
      for (size_t blk = 0; blk + 1 < cuts.size(); ++blk) {
        int64_t off = cuts[blk], rows = cuts[blk + 1] - off;
        // The block's rows of q, out and the output gradient, per batch.
        auto block = [&](const Vec &whole) {
          Vec part(c.B * rows * row);
          for (int64_t b = 0; b < c.B; ++b)
            std::copy_n(whole.begin() + (b * c.S + off) * row, rows * row,
                        part.begin() + b * rows * row);
          return part;
        };
        Vec qb = block(q), rb = block(r), ob(qb.size(), NAN), dqb(qb.size(), NAN);
        Vec dkb(nkv, NAN), dvb(nkv, NAN);
        cpu::attention_forward<double>(qb.data(), k.data(), v.data(), ob.data(), nullptr, c.B,
                                       rows, c.Hq, c.Hkv, c.D, causal, scale, c.S, off);
        cpu::attention_backward<double>(rb.data(), qb.data(), k.data(), v.data(), ob.data(),
                                        dqb.data(), dkb.data(), dvb.data(), c.B, rows, c.Hq,
                                        c.Hkv, c.D, causal, scale, c.S, off);
        Vec wantOut = block(out), wantDq = block(dq);
        for (size_t i = 0; i < ob.size(); ++i) {
          ASSERT_NEAR(ob[i], wantOut[i], 1e-12) << "out element " << i;
          ASSERT_NEAR(dqb[i], wantDq[i], 1e-12) << "dq element " << i;
        }
        for (int64_t i = 0; i < nkv; ++i) {
          ASSERT_TRUE(std::isfinite(dkb[i]) && std::isfinite(dvb[i])) << "element " << i;
          dkSum[i] += dkb[i];
          dvSum[i] += dvb[i];
        }
      }
      for (int64_t i = 0; i < nkv; ++i) {
        EXPECT_NEAR(dkSum[i], dk[i], 1e-12) << "dk element " << i;
        EXPECT_NEAR(dvSum[i], dv[i], 1e-12) << "dv element " << i;
      }
    }
}

TEST(CpuBackward, AttentionRejectsARowBlockPastTheKeys) {
  std::vector<float> buf(256);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::attention_forward<float>(buf.data(), buf.data(), buf.data(), buf.data(), nullptr, 1,
                                      4, 2, 2, 4, true, 1.0, 6, 3);
      },
      {"attention_forward", "Skv=6", "query offset 3"}));
}

TEST(CpuBackward, AttentionRejectsHeadsNotDivisible) {
  std::vector<float> buf(64);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::attention_backward<float>(
            buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
            buf.data(), buf.data(), buf.data(), 1, 2, 3, 2, 4, false, 1.0);
      },
      {"attention_backward", "Hq=3", "Hkv=2"}));
}

template <class T> class CpuAttentionLayout : public ::testing::Test {};
TYPED_TEST_SUITE(CpuAttentionLayout, FloatTypes);

TYPED_TEST(CpuAttentionLayout, PackedQkvGradientsAreTheDenseOnesBitForBit) {
  // The backward on one [B, S, Hkv, G + 2, D] qkv writes dq, dk and dv into
  // the slots of one dqkv (NaN before: every element is written) equal bit
  // for bit to the dense kernel's on the unpacked q, k, v, packed. Ragged
  // S = 37, S past one and two 64-row blocks, G = 1 and 2, causal and not.
  using T = TypeParam;
  for (const PackedCase &c : packedCases())
    for (bool causal : {false, true}) {
      SCOPED_TRACE(describe(c, causal));
      PackedQkv<T> p = makePackedQkv<T>(c, 50);
      const cpu::AttentionLayout &packed = p.layout;
      const int64_t rows = p.rows, Hq = p.Hq;
      const std::vector<T> &qkv = p.qkv, &q = p.q, &k = p.k, &v = p.v;
      auto dout = randomVector<T>(q.size(), 51);
      const double scale = 0.3;
      std::vector<T> out(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
      cpu::attention_forward<T>(q.data(), k.data(), v.data(), out.data(), nullptr, c.B, c.S, Hq,
                                c.Hkv, c.D, causal, scale);
      cpu::attention_backward<T>(dout.data(), q.data(), k.data(), v.data(), out.data(), dq.data(),
                                 dk.data(), dv.data(), c.B, c.S, Hq, c.Hkv, c.D, causal, scale);
      std::vector<T> want(qkv.size(), T(NAN));
      scatterHeads(dq, want.data(), packed.q, rows, Hq, c.D);
      scatterHeads(dk, want.data(), packed.k, rows, c.Hkv, c.D);
      scatterHeads(dv, want.data(), packed.v, rows, c.Hkv, c.D);
      std::vector<T> dqkv(qkv.size(), T(NAN));
      cpu::attention_backward<T>(dout.data(), qkv.data(), qkv.data(), qkv.data(), out.data(),
                                 dqkv.data(), dqkv.data(), dqkv.data(), c.B, c.S, Hq, c.Hkv, c.D,
                                 causal, scale, 0, 0, packed);
      EXPECT_EQ(dqkv, want);
    }
}

TEST(CpuAttentionLayout, StridedGradientsTouchOnlyTheirSlots) {
  // Rows padded around the heads (q: 2 elements before, 1 after; k and v
  // interleaved per kv head in one buffer, one element before, between and
  // after them, and one more at the end of the row) with blocks of
  // the query rows: a causal block before most keys zero-fills their dk and
  // dv rows, and a block of no rows zero-fills all of them. Results equal the
  // dense kernel's bit for bit; the padding keeps its sentinel.
  const int64_t B = 2, Skv = 150, Hq = 4, Hkv = 2, D = 8;
  const double kSentinel = 7.25;
  cpu::AttentionLayout layout;
  layout.q = {Hq * D + 3, 2, 1, D};
  layout.k = {Hkv * (2 * D + 3) + 1, 1, 1, 2 * D + 3};
  layout.v = {Hkv * (2 * D + 3) + 1, D + 2, 1, 2 * D + 3};
  Vec k = randomVector<double>(B * Skv * Hkv * D, 60, -2.0, 2.0);
  Vec v = randomVector<double>(k.size(), 61);
  Vec kv(B * Skv * layout.k.rowStride, kSentinel);
  scatterHeads(k, kv.data(), layout.k, B * Skv, Hkv, D);
  scatterHeads(v, kv.data(), layout.v, B * Skv, Hkv, D);
  struct Block {
    int64_t rows, offset;
  };
  for (bool causal : {false, true})
    for (Block blk : {Block{20, 0}, Block{40, 100}, Block{0, 0}}) {
      SCOPED_TRACE(testing::Message() << "rows " << blk.rows << " at " << blk.offset
                                      << " causal=" << causal);
      const int64_t nq = B * blk.rows * Hq * D;
      Vec q = randomVector<double>(nq, 62, -2.0, 2.0), dout = randomVector<double>(nq, 63);
      Vec qs(B * blk.rows * layout.q.rowStride, kSentinel);
      scatterHeads(q, qs.data(), layout.q, B * blk.rows, Hq, D);
      Vec out(nq), dq(nq), dk(k.size()), dv(k.size());
      cpu::attention_forward<double>(q.data(), k.data(), v.data(), out.data(), nullptr, B,
                                     blk.rows, Hq, Hkv, D, causal, 0.3, Skv, blk.offset);
      cpu::attention_backward<double>(dout.data(), q.data(), k.data(), v.data(), out.data(),
                                      dq.data(), dk.data(), dv.data(), B, blk.rows, Hq, Hkv, D,
                                      causal, 0.3, Skv, blk.offset);
      Vec outStrided(nq);
      cpu::attention_forward<double>(qs.data(), kv.data(), kv.data(), outStrided.data(), nullptr,
                                     B, blk.rows, Hq, Hkv, D, causal, 0.3, Skv, blk.offset,
                                     layout);
      EXPECT_EQ(outStrided, out);
      Vec dqs(qs.size(), kSentinel), dkv(kv.size(), kSentinel);
      cpu::attention_backward<double>(dout.data(), qs.data(), kv.data(), kv.data(), out.data(),
                                      dqs.data(), dkv.data(), dkv.data(), B, blk.rows, Hq, Hkv,
                                      D, causal, 0.3, Skv, blk.offset, layout);
      Vec wantDq(qs.size(), kSentinel), wantDkv(kv.size(), kSentinel);
      scatterHeads(dq, wantDq.data(), layout.q, B * blk.rows, Hq, D);
      scatterHeads(dk, wantDkv.data(), layout.k, B * Skv, Hkv, D);
      scatterHeads(dv, wantDkv.data(), layout.v, B * Skv, Hkv, D);
      EXPECT_EQ(dqs, wantDq);
      EXPECT_EQ(dkv, wantDkv);
    }
}

//===----------------------------------------------------------------------===//
// Rope and embedding
//===----------------------------------------------------------------------===//

TEST(CpuBackward, RopeMatchesFiniteDifferencesInPlace) {
  const int64_t B = 2, S = 5, H = 3, D = 8;
  for (int64_t offset : {0, 29}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    Vec x = randomVector<double>(B * S * H * D, 30);
    Vec r = randomVector<double>(x.size(), 31), y(x.size());
    auto loss = [&] {
      cpu::rope<double>(x.data(), y.data(), B, S, H, D, 10000.0, offset);
      return dot(r, y);
    };
    Vec dx(x.size());
    cpu::rope_backward<double>(r.data(), dx.data(), B, S, H, D, 10000.0,
                               offset);
    EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
    // The backward undoes the forward rotation, also in place.
    loss();
    Vec back = y;
    cpu::rope_backward<double>(back.data(), back.data(), B, S, H, D, 10000.0,
                               offset);
    EXPECT_TRUE(allClose(back, x));
  }
  std::vector<float> odd(6);
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::rope_backward<float>(odd.data(), odd.data(), 1, 2, 1, 3, 1e4, 0);
      },
      {"rope_backward", "head dimension 3"}));
}

TEST(CpuBackward, EmbeddingMatchesFiniteDifferencesWithRepeatedIds) {
  const int64_t vocab = 9, dim = 4;
  // Ids 3 and 0 repeat; 1, 4, 6 and 8 are unused.
  std::vector<int32_t> ids = {3, 0, 7, 3, 2, 0, 3, 5};
  int64_t nIds = int64_t(ids.size());
  Vec table = randomVector<double>(vocab * dim, 32);
  Vec r = randomVector<double>(nIds * dim, 33), y(nIds * dim);
  auto loss = [&] {
    cpu::embedding<double>(table.data(), ids.data(), y.data(), nIds, vocab,
                           dim);
    return dot(r, y);
  };
  Vec dtable(vocab * dim, NAN);
  cpu::embedding_backward<double>(r.data(), ids.data(), dtable.data(), nIds,
                                  vocab, dim);
  EXPECT_TRUE(gradClose(dtable, numericGrad(table, loss)));
  Vec expected(vocab * dim, 0.0);
  for (int64_t i = 0; i < nIds; ++i)
    for (int64_t d = 0; d < dim; ++d)
      expected[ids[i] * dim + d] += r[i * dim + d];
  EXPECT_TRUE(allClose(dtable, expected));
}

TEST(CpuBackward, EmbeddingIndependentOfThreads) {
  const int64_t vocab = 300, dim = 64, nIds = 2000;
  std::mt19937 gen(34);
  std::vector<int32_t> ids(nIds);
  for (int32_t &id : ids)
    id = int32_t(gen() % 40); // many repeats
  auto dy = randomVector<float>(nIds * dim, 35);
  auto run = [&](int threads) {
    std::vector<float> dtable(vocab * dim, NAN);
    withThreads(threads, [&] {
      cpu::embedding_backward<float>(dy.data(), ids.data(), dtable.data(), nIds,
                                     vocab, dim);
    });
    return dtable;
  };
  auto serial = run(1);
  EXPECT_EQ(serial, run(3));
  Vec expected(vocab * dim, 0.0);
  for (int64_t i = 0; i < nIds; ++i)
    for (int64_t d = 0; d < dim; ++d)
      expected[ids[i] * dim + d] += dy[i * dim + d];
  EXPECT_TRUE(allClose(serial, expected));
}

TEST(CpuBackward, EmbeddingBadIdThrows) {
  std::vector<float> dy(3 * 2), dtable(4 * 2);
  std::vector<int32_t> ids = {1, 4, 0};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::embedding_backward<float>(dy.data(), ids.data(), dtable.data(), 3,
                                       4, 2);
      },
      {"embedding_backward", "token id 4", "position 1", "[0, 4)"}));
  ids = {0, 0, -2};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::embedding_backward<float>(dy.data(), ids.data(), dtable.data(), 3,
                                       4, 2);
      },
      {"token id -2", "position 2"}));
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// Sums over `dims` with one loop over every element of x.
Vec naiveReduceSum(const Vec &x, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &dims) {
  int64_t rank = int64_t(shape.size()), outN = 1;
  std::vector<bool> red(rank, false);
  for (int64_t d : dims)
    red[d] = true;
  for (int64_t i = 0; i < rank; ++i)
    if (!red[i])
      outN *= shape[i];
  Vec out(outN, 0.0);
  std::vector<int64_t> idx(rank, 0);
  for (size_t flat = 0; flat < x.size(); ++flat) {
    int64_t rem = int64_t(flat);
    for (int64_t i = rank - 1; i >= 0; --i) {
      idx[i] = rem % shape[i];
      rem /= shape[i];
    }
    int64_t o = 0;
    for (int64_t i = 0; i < rank; ++i)
      if (!red[i])
        o = o * shape[i] + idx[i];
    out[o] += x[flat];
  }
  return out;
}

template <class T> class CpuBackwardTyped : public ::testing::Test {};
TYPED_TEST_SUITE(CpuBackwardTyped, FloatTypes);

TYPED_TEST(CpuBackwardTyped, ReduceSumMatchesNaiveLoop) {
  using T = TypeParam;
  struct Case {
    std::vector<int64_t> shape, dims;
  };
  std::vector<Case> cases = {{{2, 3, 4, 5}, {}},
                             {{2, 3, 4, 5}, {0}},
                             {{2, 3, 4, 5}, {1}},
                             {{2, 3, 4, 5}, {3}},
                             {{2, 3, 4, 5}, {0, 1}},
                             {{2, 3, 4, 5}, {0, 2}},
                             {{2, 3, 4, 5}, {1, 3}},
                             {{2, 3, 4, 5}, {0, 3}},
                             {{2, 3, 4, 5}, {1, 2}},
                             {{2, 3, 4, 5}, {2, 3}},
                             {{2, 3, 4, 5}, {0, 1, 2, 3}},
                             {{3, 1, 4, 1, 2}, {1, 2}},
                             {{3, 1, 4, 1, 2}, {0, 4}},
                             {{3, 1, 4, 1, 2}, {3}},
                             {{37, 600}, {0}},
                             {{600, 37}, {1}},
                             {{20, 30, 40}, {0, 2}},
                             {{7, 0, 3}, {1}},
                             {{5}, {0}},
                             {{}, {}}};
  for (const Case &c : cases) {
    std::string name = "shape [";
    for (int64_t s : c.shape)
      name += std::to_string(s) + " ";
    name += "] dims [";
    for (int64_t d : c.dims)
      name += std::to_string(d) + " ";
    SCOPED_TRACE(name + "]");
    int64_t n = 1;
    for (int64_t s : c.shape)
      n *= s;
    auto x = randomVector<T>(n, 36);
    Vec expected = naiveReduceSum(toDouble(x), c.shape, c.dims);
    std::vector<T> out(expected.size(), T(NAN));
    cpu::reduce_sum<T>(x.data(), out.data(), c.shape, c.dims);
    EXPECT_TRUE(allClose(out, expected));
  }
}

TYPED_TEST(CpuBackwardTyped, ReduceSumIndependentOfThreads) {
  using T = TypeParam;
  std::vector<int64_t> shape = {64, 33, 700};
  auto x = randomVector<T>(64 * 33 * 700, 37);
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{0, 1}, std::vector<int64_t>{2},
        std::vector<int64_t>{0, 2}}) {
    int64_t outN = 64 * 33 * 700;
    for (int64_t d : dims)
      outN /= shape[d];
    std::vector<T> serial(outN), parallel(outN);
    withThreads(
        1, [&] { cpu::reduce_sum<T>(x.data(), serial.data(), shape, dims); });
    withThreads(
        3, [&] { cpu::reduce_sum<T>(x.data(), parallel.data(), shape, dims); });
    EXPECT_EQ(serial, parallel);
  }
}

TEST(CpuBackward, ReduceSumRejectsBadDims) {
  std::vector<float> x(24), out(24);
  std::vector<int64_t> shape = {2, 3, 4};
  EXPECT_TRUE(throwsErrorWith(
      [&] { cpu::reduce_sum<float>(x.data(), out.data(), shape, {3}); },
      {"reduce_sum", "dim 3"}));
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::reduce_sum<float>(x.data(), out.data(), shape, {2, 0});
      },
      {"reduce_sum", "sorted"}));
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::reduce_sum<float>(x.data(), out.data(), shape, {1, 1});
      },
      {"reduce_sum", "unique"}));
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

TEST(CpuBackward, CrossEntropyMatchesFiniteDifferences) {
  const int64_t rows = 23, vocab = 7;
  const double dloss = 1.7;
  Vec logits = randomVector<double>(rows * vocab, 38, -3.0, 3.0);
  auto targets = randomTargets(rows, vocab, 39, 0.2);
  auto mask = randomMask<double>(rows, 40);
  for (const double *m : std::vector<const double *>{nullptr, mask.data()}) {
    SCOPED_TRACE(m ? "with mask" : "without mask");
    auto loss = [&] {
      return dloss * cpu::cross_entropy<double>(logits.data(), targets.data(),
                                                m, rows, vocab, kIgnore,
                                                nullptr);
    };
    Vec dlogits(rows * vocab, NAN);
    cpu::cross_entropy_backward<double>(dloss, logits.data(), targets.data(), m,
                                        dlogits.data(), rows, vocab, kIgnore);
    EXPECT_TRUE(gradClose(dlogits, numericGrad(logits, loss)));
    // Ignored and masked rows get exact zeros.
    for (int64_t r = 0; r < rows; ++r) {
      if (targets[r] == kIgnore || (m && m[r] == 0)) {
        for (int64_t j = 0; j < vocab; ++j)
          ASSERT_EQ(dlogits[r * vocab + j], 0.0) << "row " << r;
      }
    }
  }
}

TEST(CpuBackward, CrossEntropyNothingCountedAndBadTarget) {
  std::vector<float> logits(3 * 4, 1.0f), dlogits(3 * 4, NAN);
  std::vector<int32_t> targets = {kIgnore, 2, kIgnore};
  std::vector<float> mask = {1, 0, 1};
  cpu::cross_entropy_backward<float>(1.0, logits.data(), targets.data(),
                                     mask.data(), dlogits.data(), 3, 4,
                                     kIgnore);
  EXPECT_EQ(dlogits, std::vector<float>(12, 0.0f));
  targets = {0, 4, kIgnore};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy_backward<float>(1.0, logits.data(), targets.data(),
                                           nullptr, dlogits.data(), 3, 4,
                                           kIgnore);
      },
      {"cross_entropy_backward", "target 4", "row 1"}));
}

TEST(CpuBackward, LinearCrossEntropyMatchesFiniteDifferences) {
  const int64_t rows = 9, hidden = 4, vocab = 6;
  const double dloss = 0.8;
  Vec x = randomVector<double>(rows * hidden, 41);
  auto targets = randomTargets(rows, vocab, 42, 0.2);
  for (bool vocabMajor : {true, false}) {
    SCOPED_TRACE(vocabMajor ? "vocab-major" : "hidden-major");
    Vec w = randomVector<double>(vocab * hidden, 43);
    auto loss = [&] {
      return dloss * cpu::linear_cross_entropy<double>(
                         x.data(), w.data(), vocabMajor, targets.data(),
                         nullptr, rows, hidden, vocab, kIgnore, nullptr);
    };
    Vec dx(x.size(), NAN), dw(w.size(), NAN);
    cpu::linear_cross_entropy_backward<double>(
        dloss, x.data(), w.data(), vocabMajor, targets.data(), nullptr,
        dx.data(), dw.data(), rows, hidden, vocab, kIgnore);
    EXPECT_TRUE(gradClose(dx, numericGrad(x, loss)));
    EXPECT_TRUE(gradClose(dw, numericGrad(w, loss)));
  }
}

TYPED_TEST(CpuBackwardTyped, LinearCrossEntropyEqualsMaterialisedLogits) {
  using T = TypeParam;
  // 300 rows with a vocabulary of 11 is two chunks of 256 rows.
  const int64_t rows = 300, hidden = 7, vocab = 11;
  const double dloss = 1.3;
  auto x = randomVector<T>(rows * hidden, 44);
  auto targets = randomTargets(rows, vocab, 45, 0.1);
  auto mask = randomMask<T>(rows, 46);
  // A first chunk with no counted row contributes nothing; an all-masked
  // batch gives zero gradients.
  auto sparseMask = mask;
  std::fill(sparseMask.begin(), sparseMask.begin() + 256, T(0));
  std::vector<T> noRows(rows, T(0));
  for (bool vocabMajor : {true, false})
    for (const T *m : std::vector<const T *>{
             nullptr, mask.data(), sparseMask.data(), noRows.data()}) {
      SCOPED_TRACE(testing::Message()
                   << "vocabMajor=" << vocabMajor << " mask="
                   << (m == nullptr             ? "none"
                       : m == mask.data()       ? "random"
                       : m == sparseMask.data() ? "sparse"
                                                : "all zero"));
      auto w = randomVector<T>(vocab * hidden, 47);
      int64_t ldw = vocabMajor ? hidden : vocab;
      std::vector<T> logits(rows * vocab), dlogits(rows * vocab);
      cpu::gemm<T>(false, vocabMajor, rows, vocab, hidden, T(1), x.data(),
                   hidden, w.data(), ldw, T(0), logits.data(), vocab);
      cpu::cross_entropy_backward<T>(dloss, logits.data(), targets.data(), m,
                                     dlogits.data(), rows, vocab, kIgnore);
      Vec expDx(rows * hidden, 0.0), expDw(vocab * hidden, 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < vocab; ++j)
          for (int64_t p = 0; p < hidden; ++p) {
            double g = dlogits[r * vocab + j];
            int64_t wi = vocabMajor ? j * hidden + p : p * vocab + j;
            expDx[r * hidden + p] += g * double(w[wi]);
            expDw[wi] += g * double(x[r * hidden + p]);
          }
      std::vector<T> dx(x.size(), T(NAN)), dw(w.size(), T(NAN));
      cpu::linear_cross_entropy_backward<T>(
          dloss, x.data(), w.data(), vocabMajor, targets.data(), m, dx.data(),
          dw.data(), rows, hidden, vocab, kIgnore);
      EXPECT_TRUE(allClose(dx, expDx));
      EXPECT_TRUE(allClose(dw, expDw));
      if (m == sparseMask.data()) {
        for (int64_t i = 0; i < 256 * hidden; ++i)
          ASSERT_EQ(dx[i], T(0)) << "element " << i;
      }
      if (m == noRows.data()) {
        EXPECT_EQ(dx, std::vector<T>(dx.size(), T(0)));
        EXPECT_EQ(dw, std::vector<T>(dw.size(), T(0)));
      }
    }
}

TEST(CpuBackward, LinearCrossEntropyBadTargetThrows) {
  std::vector<float> x(2 * 3), w(3 * 5), dx(2 * 3), dw(3 * 5);
  std::vector<int32_t> targets = {1, 5};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::linear_cross_entropy_backward<float>(
            1.0, x.data(), w.data(), true, targets.data(), nullptr, dx.data(),
            dw.data(), 2, 3, 5, kIgnore);
      },
      {"linear_cross_entropy_backward", "target 5", "row 1"}));
}

//===----------------------------------------------------------------------===//
// Vocabulary blocks
//===----------------------------------------------------------------------===//

TEST(CpuBackward, EmbeddingBackwardBlocksAreRowsOfTheWhole) {
  const int64_t vocab = 10, dim = 3;
  std::vector<int32_t> ids = {9, 0, 4, 6, 7, 3, 4, 4, 9};
  const int64_t nIds = int64_t(ids.size());
  auto dy = randomVector<float>(nIds * dim, 51);
  std::vector<float> whole(vocab * dim, NAN);
  cpu::embedding_backward<float>(dy.data(), ids.data(), whole.data(), nIds,
                                 vocab, dim);
  for (auto [begin, rows] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 4}, {4, 3}, {7, 3}}) {
    std::vector<float> block(rows * dim, NAN);
    cpu::embedding_backward_block<float>(dy.data(), ids.data(), block.data(),
                                         nIds, vocab, begin, rows, dim);
    EXPECT_TRUE(std::equal(block.begin(), block.end(),
                           whole.begin() + begin * dim))
        << "block [" << begin << ", " << begin + rows << ")";
  }
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        std::vector<float> block(3 * dim);
        cpu::embedding_backward_block<float>(dy.data(), ids.data(),
                                             block.data(), nIds, 9, 7, 3, dim);
      },
      {"embedding_backward", "[0, 9)"}));
}

/// Uneven vocabulary blocks [begin, begin + size) covering a vocabulary of 11.
const std::vector<std::pair<int64_t, int64_t>> kVocabBlocks = {
    {0, 4}, {4, 3}, {7, 4}};

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

/// Combines per-block row statistics (max and sum of exps) in block order.
void combine(const std::vector<Vec> &mx, const std::vector<Vec> &sumExp,
             Vec &gm, Vec &gs) {
  std::vector<const double *> m, s;
  for (size_t b = 0; b < mx.size(); ++b) {
    m.push_back(mx[b].data());
    s.push_back(sumExp[b].data());
  }
  gm.resize(mx[0].size());
  gs.resize(mx[0].size());
  cpu::cross_entropy_combine_stats(int64_t(mx.size()), m.data(), s.data(),
                                   nullptr, int64_t(gm.size()), gm.data(),
                                   gs.data(), nullptr);
}

TYPED_TEST(CpuBackwardTyped, CrossEntropyVocabularyBlocksEqualTheWhole) {
  using T = TypeParam;
  const int64_t rows = 37, vocab = 11;
  const double dloss = 1.3;
  auto logits = randomVector<T>(rows * vocab, 52, -30.0, 30.0);
  auto targets = randomTargets(rows, vocab, 53, 0.2);
  auto mask = randomMask<T>(rows, 54);
  for (const T *m : std::vector<const T *>{nullptr, mask.data()}) {
    SCOPED_TRACE(m ? "with mask" : "without mask");
    std::vector<T> whole(rows * vocab);
    cpu::cross_entropy_backward<T>(dloss, logits.data(), targets.data(), m,
                                   whole.data(), rows, vocab, kIgnore);
    std::vector<Vec> mx(kVocabBlocks.size(), Vec(rows)), se(mx), tl(mx);
    for (size_t b = 0; b < kVocabBlocks.size(); ++b) {
      auto [begin, n] = kVocabBlocks[b];
      auto block = columns(logits, rows, vocab, begin, n);
      cpu::cross_entropy_block_stats<T>(block.data(), targets.data(), m, rows,
                                        vocab, begin, n, kIgnore,
                                        mx[b].data(), se[b].data(),
                                        tl[b].data());
    }
    Vec gm, gs;
    combine(mx, se, gm, gs);
    for (size_t b = 0; b < kVocabBlocks.size(); ++b) {
      auto [begin, n] = kVocabBlocks[b];
      auto block = columns(logits, rows, vocab, begin, n);
      std::vector<T> dblock(rows * n, T(NAN));
      cpu::cross_entropy_block_backward<T>(dloss, block.data(), targets.data(),
                                           m, gm.data(), gs.data(),
                                           dblock.data(), rows, vocab, begin, n,
                                           kIgnore);
      EXPECT_TRUE(
          allClose(dblock, toDouble(columns(whole, rows, vocab, begin, n))))
          << "block [" << begin << ", " << begin + n << ")";
    }
  }
}

TYPED_TEST(CpuBackwardTyped, LinearCrossEntropyVocabularyBlocksEqualTheWhole) {
  using T = TypeParam;
  const int64_t rows = 300, hidden = 7, vocab = 11;
  const double dloss = 0.9;
  auto x = randomVector<T>(rows * hidden, 55);
  auto targets = randomTargets(rows, vocab, 56, 0.1);
  auto mask = randomMask<T>(rows, 57);
  for (bool vocabMajor : {true, false})
    for (const T *m : std::vector<const T *>{nullptr, mask.data()}) {
      SCOPED_TRACE(testing::Message() << "vocabMajor=" << vocabMajor
                                      << (m ? " with mask" : ""));
      auto w = randomVector<T>(vocab * hidden, 58, -2.0, 2.0);
      auto blockOf = [&](int64_t begin, int64_t n) {
        return vocabMajor ? std::vector<T>(w.begin() + begin * hidden,
                                           w.begin() + (begin + n) * hidden)
                          : columns(w, hidden, vocab, begin, n);
      };
      std::vector<T> dx(rows * hidden), dw(vocab * hidden);
      cpu::linear_cross_entropy_backward<T>(dloss, x.data(), w.data(),
                                            vocabMajor, targets.data(), m,
                                            dx.data(), dw.data(), rows, hidden,
                                            vocab, kIgnore);
      std::vector<Vec> mx(kVocabBlocks.size(), Vec(rows)), se(mx), tl(mx);
      for (size_t b = 0; b < kVocabBlocks.size(); ++b) {
        auto [begin, n] = kVocabBlocks[b];
        auto wb = blockOf(begin, n);
        cpu::linear_cross_entropy_block_stats<T>(
            x.data(), wb.data(), vocabMajor, targets.data(), m, rows, hidden,
            vocab, begin, n, kIgnore, mx[b].data(), se[b].data(),
            tl[b].data());
      }
      Vec gm, gs, dxSum(rows * hidden, 0.0);
      combine(mx, se, gm, gs);
      for (size_t b = 0; b < kVocabBlocks.size(); ++b) {
        auto [begin, n] = kVocabBlocks[b];
        auto wb = blockOf(begin, n);
        std::vector<T> dxb(rows * hidden, T(NAN)), dwb(n * hidden, T(NAN));
        cpu::linear_cross_entropy_block_backward<T>(
            dloss, x.data(), wb.data(), vocabMajor, targets.data(), m,
            gm.data(), gs.data(), dxb.data(), dwb.data(), rows, hidden, vocab,
            begin, n, kIgnore);
        for (size_t i = 0; i < dxb.size(); ++i)
          dxSum[i] += double(dxb[i]);
        auto expected = vocabMajor
                            ? std::vector<T>(dw.begin() + begin * hidden,
                                             dw.begin() + (begin + n) * hidden)
                            : columns(dw, hidden, vocab, begin, n);
        EXPECT_TRUE(allClose(dwb, toDouble(expected)))
            << "block [" << begin << ", " << begin + n << ")";
      }
      // The blocks' dx are shares of the whole dx.
      EXPECT_TRUE(allClose(dx, dxSum));
    }
}

/// A padded vocabulary (xf's `classes`): 8 classes in 12 allocated columns,
/// split as one block, 2 blocks of 6 (the second holds 2 classes) and 3
/// blocks of 4 (the third all padding). Every split's loss and gradients equal
/// the unpadded [rows, 8] problem; the padding's gradient is exactly zero,
/// whatever the padding holds.
const int64_t kClasses = 8, kPadded = 12;
const std::vector<std::vector<int64_t>> kPaddedSplits = {{12}, {6, 6}, {4, 4, 4}};

/// (offset, class columns) of each block of a split of the padded vocabulary.
std::vector<std::pair<int64_t, int64_t>> paddedBlocks(const std::vector<int64_t> &split) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t begin = 0;
  for (int64_t n : split) {
    out.push_back({begin, std::clamp<int64_t>(kClasses - begin, 0, n)});
    begin += n;
  }
  return out;
}

/// The loss of combined per-block statistics (max, sum of exps, target).
double lossOfBlocks(const std::vector<Vec> &mx, const std::vector<Vec> &se,
                    const std::vector<Vec> &tl, const std::vector<int32_t> &targets,
                    const double *mask, Vec &gm, Vec &gs) {
  std::vector<const double *> m, s, t;
  for (size_t b = 0; b < mx.size(); ++b) {
    m.push_back(mx[b].data());
    s.push_back(se[b].data());
    t.push_back(tl[b].data());
  }
  int64_t rows = int64_t(targets.size());
  Vec gt(rows);
  gm.resize(rows);
  gs.resize(rows);
  cpu::cross_entropy_combine_stats(int64_t(mx.size()), m.data(), s.data(), t.data(), rows,
                                   gm.data(), gs.data(), gt.data());
  return cpu::cross_entropy_from_stats<double>(gm.data(), gs.data(), gt.data(), targets.data(),
                                               mask, rows, kIgnore, nullptr);
}

TEST(CpuBackward, PaddedVocabularyIsTheTrueVocabulary) {
  const int64_t rows = 29;
  const double dloss = 1.7;
  // Padding logits far above the classes': counted, they would dominate.
  Vec logits = randomVector<double>(rows * kPadded, 70, -5.0, 5.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = kClasses; j < kPadded; ++j)
      logits[r * kPadded + j] = 40.0 + double(j);
  auto targets = randomTargets(rows, kClasses, 71, 0.2);
  auto mask = randomMask<double>(rows, 72);
  Vec trueLogits = columns(logits, rows, kPadded, 0, kClasses);
  for (const double *m : std::vector<const double *>{nullptr, mask.data()}) {
    int64_t count = 0;
    double whole = cpu::cross_entropy<double>(trueLogits.data(), targets.data(), m, rows,
                                              kClasses, kIgnore, &count);
    Vec wholeGrad(rows * kClasses);
    cpu::cross_entropy_backward<double>(dloss, trueLogits.data(), targets.data(), m,
                                        wholeGrad.data(), rows, kClasses, kIgnore);
    for (const std::vector<int64_t> &split : kPaddedSplits) {
      SCOPED_TRACE(testing::Message() << split.size() << " block(s)" << (m ? ", mask" : ""));
      auto blocks = paddedBlocks(split);
      std::vector<Vec> mx(blocks.size(), Vec(rows)), se(mx), tl(mx);
      for (size_t b = 0; b < blocks.size(); ++b) {
        auto [begin, cols] = blocks[b];
        Vec block = columns(logits, rows, kPadded, begin, split[b]);
        EXPECT_EQ(cpu::cross_entropy_block_stats<double>(
                      block.data(), targets.data(), m, rows, kClasses, begin, cols, kIgnore,
                      mx[b].data(), se[b].data(), tl[b].data(), split[b]),
                  count);
      }
      Vec gm, gs;
      EXPECT_NEAR(lossOfBlocks(mx, se, tl, targets, m, gm, gs), whole, 1e-12 * std::fabs(whole));
      for (size_t b = 0; b < blocks.size(); ++b) {
        auto [begin, cols] = blocks[b];
        Vec block = columns(logits, rows, kPadded, begin, split[b]);
        Vec dblock(rows * split[b], NAN);
        cpu::cross_entropy_block_backward<double>(dloss, block.data(), targets.data(), m,
                                                  gm.data(), gs.data(), dblock.data(), rows,
                                                  kClasses, begin, cols, kIgnore, split[b]);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < split[b]; ++j) {
            double got = dblock[r * split[b] + j];
            if (j < cols)
              EXPECT_NEAR(got, wholeGrad[r * kClasses + begin + j], 1e-12) << r << " " << j;
            else
              EXPECT_EQ(got, 0.0) << "padding column " << begin + j << " row " << r;
          }
      }
    }
  }
}

TEST(CpuBackward, PaddedVocabularyLinearLossIsTheTrueVocabulary) {
  const int64_t rows = 41, hidden = 5;
  const double dloss = 0.8;
  Vec x = randomVector<double>(rows * hidden, 73);
  auto targets = randomTargets(rows, kClasses, 74, 0.1);
  for (bool vocabMajor : {true, false}) {
    SCOPED_TRACE(vocabMajor ? "[vocab, hidden]" : "[hidden, vocab]");
    // The padded weight: padding rows/columns large (they would dominate).
    Vec w = randomVector<double>(kPadded * hidden, 75, -1.0, 1.0);
    for (int64_t v = kClasses; v < kPadded; ++v)
      for (int64_t h = 0; h < hidden; ++h)
        (vocabMajor ? w[v * hidden + h] : w[h * kPadded + v]) = 9.0;
    Vec trueW = vocabMajor ? Vec(w.begin(), w.begin() + kClasses * hidden)
                           : columns(w, hidden, kPadded, 0, kClasses);
    Vec dx(rows * hidden), dw(kClasses * hidden);
    double whole = cpu::linear_cross_entropy<double>(x.data(), trueW.data(), vocabMajor,
                                                     targets.data(), nullptr, rows, hidden,
                                                     kClasses, kIgnore, nullptr);
    cpu::linear_cross_entropy_backward<double>(dloss, x.data(), trueW.data(), vocabMajor,
                                               targets.data(), nullptr, dx.data(), dw.data(),
                                               rows, hidden, kClasses, kIgnore);
    for (const std::vector<int64_t> &split : kPaddedSplits) {
      SCOPED_TRACE(testing::Message() << split.size() << " block(s)");
      auto blocks = paddedBlocks(split);
      auto blockOf = [&](size_t b) {
        int64_t begin = blocks[b].first, n = split[b];
        return vocabMajor ? Vec(w.begin() + begin * hidden, w.begin() + (begin + n) * hidden)
                          : columns(w, hidden, kPadded, begin, n);
      };
      std::vector<Vec> mx(blocks.size(), Vec(rows)), se(mx), tl(mx);
      for (size_t b = 0; b < blocks.size(); ++b) {
        Vec wb = blockOf(b);
        cpu::linear_cross_entropy_block_stats<double>(
            x.data(), wb.data(), vocabMajor, targets.data(), nullptr, rows, hidden, kClasses,
            blocks[b].first, blocks[b].second, kIgnore, mx[b].data(), se[b].data(),
            tl[b].data(), split[b]);
      }
      Vec gm, gs, dxSum(rows * hidden, 0.0);
      EXPECT_NEAR(lossOfBlocks(mx, se, tl, targets, nullptr, gm, gs), whole,
                  1e-12 * std::fabs(whole));
      for (size_t b = 0; b < blocks.size(); ++b) {
        auto [begin, cols] = blocks[b];
        int64_t n = split[b];
        Vec wb = blockOf(b), dxb(rows * hidden, NAN), dwb(n * hidden, NAN);
        cpu::linear_cross_entropy_block_backward<double>(
            dloss, x.data(), wb.data(), vocabMajor, targets.data(), nullptr, gm.data(),
            gs.data(), dxb.data(), dwb.data(), rows, hidden, kClasses, begin, cols, kIgnore, n);
        for (size_t i = 0; i < dxb.size(); ++i)
          dxSum[i] += dxb[i];
        for (int64_t v = 0; v < n; ++v)
          for (int64_t h = 0; h < hidden; ++h) {
            double got = vocabMajor ? dwb[v * hidden + h] : dwb[h * n + v];
            if (v < cols)
              EXPECT_NEAR(got,
                          vocabMajor ? dw[(begin + v) * hidden + h]
                                     : dw[h * kClasses + begin + v],
                          1e-12)
                  << "class " << begin + v;
            else
              EXPECT_EQ(got, 0.0) << "padding row " << begin + v;
          }
      }
      for (size_t i = 0; i < dx.size(); ++i)
        EXPECT_NEAR(dxSum[i], dx[i], 1e-12) << i;
    }
  }
}

TEST(CpuBackward, PaddedVocabularyBlockChecks) {
  std::vector<double> logits(2 * 4), mx(2), se(2), tl(2);
  std::vector<int32_t> targets = {1, 9};
  // A target among the padding is an error naming the classes.
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy_block_stats<double>(logits.data(), targets.data(), nullptr, 2, 8, 4,
                                               4, kIgnore, mx.data(), se.data(), tl.data(), 4);
      },
      {"cross_entropy", "target 9", "[0, 8)"}));
  targets = {1, 2};
  // Padding only after the last class; an empty block only past it.
  for (auto [begin, cols, ld] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 3, 4}, {4, 0, 4}, {2, 6, 4}})
    EXPECT_TRUE(throwsErrorWith(
        [&] {
          cpu::cross_entropy_block_stats<double>(logits.data(), targets.data(), nullptr, 2, 8,
                                                 begin, cols, kIgnore, mx.data(), se.data(),
                                                 tl.data(), ld);
        },
        {"cross_entropy", "vocabulary block"}))
        << begin << " " << cols << " " << ld;
}

TEST(CpuBackward, VocabularyBlockNeedsCombinedStatistics) {
  std::vector<float> logits(2 * 3), dlogits(2 * 3);
  std::vector<int32_t> targets = {1, 4};
  EXPECT_TRUE(throwsErrorWith(
      [&] {
        cpu::cross_entropy_block_backward<float>(
            1.0, logits.data(), targets.data(), nullptr, nullptr, nullptr,
            dlogits.data(), 2, 6, 3, 3, kIgnore);
      },
      {"cross_entropy_backward", "[3, 6)", "combined row statistics"}));
}

//===----------------------------------------------------------------------===//
// Float against double
//===----------------------------------------------------------------------===//

TEST(CpuBackward, FloatMatchesDouble) {
  // Inputs representable in float, so both runs see the same values.
  auto xf = randomVector<float>(8 * 40, 48, -2.0, 2.0);
  auto gf = randomVector<float>(40, 49), rf = randomVector<float>(8 * 40, 50);
  Vec xd = toDouble(xf), gd = toDouble(gf), rd = toDouble(rf);
  {
    SCOPED_TRACE("layernorm_backward");
    std::vector<float> dx(xf.size()), dg(40), db(40);
    Vec dxd(xd.size()), dgd(40), dbd(40);
    cpu::layernorm_backward<float>(rf.data(), xf.data(), gf.data(), dx.data(),
                                   dg.data(), db.data(), 8, 40, 1e-5);
    cpu::layernorm_backward<double>(rd.data(), xd.data(), gd.data(), dxd.data(),
                                    dgd.data(), dbd.data(), 8, 40, 1e-5);
    EXPECT_TRUE(allClose(dx, dxd));
    EXPECT_TRUE(allClose(dg, dgd));
    EXPECT_TRUE(allClose(db, dbd));
  }
  {
    SCOPED_TRACE("attention_backward");
    const AttnCase c{2, 70, 4, 2, 5};
    int64_t nq = c.B * c.S * c.Hq * c.D, nkv = c.B * c.S * c.Hkv * c.D;
    auto q = randomVector<float>(nq, 51, -1.0, 1.0);
    auto k = randomVector<float>(nkv, 52, -1.0, 1.0);
    auto v = randomVector<float>(nkv, 53), r = randomVector<float>(nq, 54);
    std::vector<float> out(nq), dq(nq), dk(nkv), dv(nkv);
    Vec qd = toDouble(q), kd = toDouble(k), vd = toDouble(v), rd2 = toDouble(r);
    Vec outd(nq), dqd(nq), dkd(nkv), dvd(nkv);
    for (bool causal : {false, true}) {
      cpu::attention_forward<float>(q.data(), k.data(), v.data(), out.data(),
                                    nullptr, c.B, c.S, c.Hq, c.Hkv, c.D, causal,
                                    0.4);
      cpu::attention_backward<float>(
          r.data(), q.data(), k.data(), v.data(), out.data(), dq.data(),
          dk.data(), dv.data(), c.B, c.S, c.Hq, c.Hkv, c.D, causal, 0.4);
      cpu::attention_forward<double>(qd.data(), kd.data(), vd.data(),
                                     outd.data(), nullptr, c.B, c.S, c.Hq,
                                     c.Hkv, c.D, causal, 0.4);
      cpu::attention_backward<double>(
          rd2.data(), qd.data(), kd.data(), vd.data(), outd.data(), dqd.data(),
          dkd.data(), dvd.data(), c.B, c.S, c.Hq, c.Hkv, c.D, causal, 0.4);
      EXPECT_TRUE(allClose(dq, dqd)) << "causal=" << causal;
      EXPECT_TRUE(allClose(dk, dkd)) << "causal=" << causal;
      EXPECT_TRUE(allClose(dv, dvd)) << "causal=" << causal;
    }
  }
  {
    SCOPED_TRACE("gelu_tanh_backward and swiglu_backward");
    std::vector<float> a(xf.size()), b(xf.size()), c(xf.size());
    Vec ad(xd.size()), bd(xd.size()), cd(xd.size());
    cpu::gelu_tanh_backward<float>(rf.data(), xf.data(), a.data(),
                                   int64_t(xf.size()));
    cpu::gelu_tanh_backward<double>(rd.data(), xd.data(), ad.data(),
                                    int64_t(xd.size()));
    EXPECT_TRUE(allClose(a, ad));
    cpu::swiglu_backward<float>(rf.data(), xf.data(), rf.data(), b.data(),
                                c.data(), int64_t(xf.size()));
    cpu::swiglu_backward<double>(rd.data(), xd.data(), rd.data(), bd.data(),
                                 cd.data(), int64_t(xd.size()));
    EXPECT_TRUE(allClose(b, bd));
    EXPECT_TRUE(allClose(c, cd));
  }
}

} // namespace
