//===- RngTest.cpp - Philox, distributions and sharded init ---------------===//
#include "runtime/rng/Philox.h"
#include "test/unit/runtime_cpu/TestUtil.h"

#include <omp.h>

#include <cmath>
#include <cstring>

using namespace shardc;

namespace {

using Block = std::array<uint32_t, 4>;

TEST(RngPhilox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32-10.
  EXPECT_EQ(rng::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(rng::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                               {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(rng::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                               {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngPhilox, NameKeyIsFnv1a64) {
  EXPECT_EQ(rng::name_key(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(rng::name_key("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(rng::name_key("foobar"), 0x85944171f73967e8ull);
  EXPECT_NE(rng::name_key("h.0.attn.w_q"), rng::name_key("h.0.attn.w_k"));
}

TEST(RngPhilox, UniformUsesDocumentedCounter) {
  // Counter (index lo, index hi, stream lo, stream hi), key (seed lo, hi).
  uint64_t seed = 0x0123456789abcdefull, stream = 0xfedcba9876543210ull;
  uint64_t index = 0x1122334455667788ull;
  Block r = rng::philox4x32_10({0x55667788, 0x11223344, 0x76543210, 0xfedcba98},
                               {0x89abcdef, 0x01234567});
  EXPECT_EQ(rng::uniform(seed, stream, index), float(r[0] >> 8) * 0x1p-24f);
}

TEST(RngPhilox, StreamKeySeparatesStepsAndOps) {
  EXPECT_NE(rng::stream_key(1, 5), rng::stream_key(2, 5));
  EXPECT_NE(rng::stream_key(1, 5), rng::stream_key(1, 6));
  EXPECT_NE(rng::stream_key(1, 0), rng::stream_key(0, 1));
  EXPECT_EQ(rng::stream_key(3, 4), rng::stream_key(3, 4));
}

TEST(RngDistributions, UniformMoments) {
  const int n = 100000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    float u = rng::uniform(7, 11, uint64_t(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sq += double(u) * u;
  }
  double mean = sum / n;
  EXPECT_NEAR(mean, 0.5, 0.005); // std error 0.0009
  EXPECT_NEAR(sq / n - mean * mean, 1.0 / 12, 0.002);
}

TEST(RngDistributions, NormalMoments) {
  const int n = 100000;
  double sum = 0, sq = 0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    double z = rng::normal(1234, rng::name_key("w"), uint64_t(i));
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sq += z * z;
    beyond2 += std::fabs(z) > 2.0;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);                    // std error 0.0032
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.02);          // std error 0.0022
  EXPECT_NEAR(double(beyond2) / n, 0.0455, 0.005); // a Gaussian tail, not a box
}

TEST(RngInit, NormalScalesMeanAndStd) {
  const int64_t n = 100000;
  std::vector<float> w(n);
  rng::init_normal(w.data(), n, 0, 42, "wte", 3.0, 0.02);
  double sum = 0, sq = 0;
  for (float x : w) {
    sum += x;
    sq += double(x) * x;
  }
  double mean = sum / n;
  EXPECT_NEAR(mean, 3.0, 0.001);
  EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 0.02, 0.001);
  EXPECT_EQ(w[17],
            float(3.0 + 0.02 * rng::normal(42, rng::name_key("wte"), 17)));
}

TEST(RngInit, ConstantFills) {
  std::vector<double> v(1000, 1.0);
  rng::init_constant(v.data(), 1000, -0.25);
  EXPECT_EQ(v, std::vector<double>(1000, -0.25));
}

TEST(RngInit, OffsetHalvesMatchWhole) {
  const int64_t n = 70001, cut = 33333;
  std::vector<float> whole(n), split(n), serial(n);
  rng::init_normal(whole.data(), n, 0, 9, "h.3.mlp.c_fc.weight", 0.0, 0.02);
  rng::init_normal(split.data(), cut, 0, 9, "h.3.mlp.c_fc.weight", 0.0, 0.02);
  rng::init_normal(split.data() + cut, n - cut, cut, 9, "h.3.mlp.c_fc.weight",
                   0.0, 0.02);
  EXPECT_EQ(std::memcmp(whole.data(), split.data(), n * sizeof(float)), 0);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  rng::init_normal(serial.data(), n, 0, 9, "h.3.mlp.c_fc.weight", 0.0, 0.02);
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(whole.data(), serial.data(), n * sizeof(float)), 0);
}

template <class T> class RngSlice : public ::testing::Test {};
TYPED_TEST_SUITE(RngSlice, shardc::test::FloatTypes);

/// Bit-exact comparison of a slice against the same region of the whole.
template <class T>
::testing::AssertionResult
sliceMatchesWhole(const std::vector<int64_t> &full,
                  const std::vector<int64_t> &offsets,
                  const std::vector<int64_t> &slice, const char *name) {
  int64_t total = 1, sliceTotal = 1;
  for (size_t d = 0; d < full.size(); ++d) {
    total *= full[d];
    sliceTotal *= slice[d];
  }
  std::vector<T> whole(total), part(sliceTotal);
  rng::init_normal(whole.data(), total, 0, 2024, name, 0.5, 0.1);
  rng::init_normal_slice(part.data(), full, offsets, slice, 2024, name, 0.5,
                         0.1);
  std::vector<int64_t> idx(full.size(), 0);
  for (int64_t i = 0; i < sliceTotal; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < full.size(); ++d)
      g = g * full[d] + offsets[d] + idx[d];
    if (std::memcmp(&part[i], &whole[g], sizeof(T)) != 0)
      return ::testing::AssertionFailure()
             << "slice element " << i << " (global " << g << ") differs";
    for (size_t d = full.size(); d-- > 0;) {
      if (++idx[d] < slice[d])
        break;
      idx[d] = 0;
    }
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(RngSlice, ShardInitialisesAsSliceOfWhole) {
  using T = TypeParam;
  // Row shard, column shard, a block, and the whole tensor as a "slice".
  EXPECT_TRUE(sliceMatchesWhole<T>({6, 10}, {2, 5}, {2, 5}, "wq"));
  EXPECT_TRUE(sliceMatchesWhole<T>({6, 10}, {3, 0}, {3, 10}, "wq"));
  EXPECT_TRUE(sliceMatchesWhole<T>({6, 10}, {0, 4}, {6, 3}, "wq"));
  EXPECT_TRUE(sliceMatchesWhole<T>({6, 10}, {0, 0}, {6, 10}, "wq"));
  EXPECT_TRUE(sliceMatchesWhole<T>({4, 5, 6}, {1, 2, 3}, {2, 3, 2}, "qkv"));
  EXPECT_TRUE(sliceMatchesWhole<T>({37}, {11}, {20}, "bias"));
  // Large enough for the parallel path.
  EXPECT_TRUE(sliceMatchesWhole<T>({512, 96}, {128, 32}, {256, 48}, "wte"));
}

TYPED_TEST(RngSlice, ConcatenatedColumnShardsEqualWhole) {
  using T = TypeParam;
  // A [6, 10] weight split over a 2-way tensor-parallel column axis.
  std::vector<T> whole(60), left(30), right(30);
  rng::init_normal(whole.data(), 60, 0, 1, "c_attn", 0.0, 0.02);
  rng::init_normal_slice(left.data(), {6, 10}, {0, 0}, {6, 5}, 1, "c_attn", 0.0,
                         0.02);
  rng::init_normal_slice(right.data(), {6, 10}, {0, 5}, {6, 5}, 1, "c_attn",
                         0.0, 0.02);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 10; ++c)
      ASSERT_EQ(whole[r * 10 + c],
                c < 5 ? left[r * 5 + c] : right[r * 5 + c - 5])
          << "row " << r << " col " << c;
}

TEST(RngInit, NamesAndSeedsGiveDifferentValues) {
  std::vector<float> a(64), b(64), c(64);
  rng::init_normal(a.data(), 64, 0, 1, "h.0.attn.c_attn.weight", 0.0, 1.0);
  rng::init_normal(b.data(), 64, 0, 1, "h.1.attn.c_attn.weight", 0.0, 1.0);
  rng::init_normal(c.data(), 64, 0, 2, "h.0.attn.c_attn.weight", 0.0, 1.0);
  int sameAB = 0, sameAC = 0;
  for (int i = 0; i < 64; ++i) {
    sameAB += a[i] == b[i];
    sameAC += a[i] == c[i];
  }
  EXPECT_EQ(sameAB, 0);
  EXPECT_EQ(sameAC, 0);
}

TEST(RngInit, SliceOutsideTensorThrows) {
  std::vector<float> out(20);
  EXPECT_TRUE(shardc::test::throwsErrorWith(
      [&] {
        rng::init_normal_slice(out.data(), {6, 10}, {2, 6}, {2, 5}, 1, "wq",
                               0.0, 1.0);
      },
      {"wq", "[6, 11)", "dimension 1"}));
  EXPECT_TRUE(shardc::test::throwsErrorWith(
      [&] {
        rng::init_normal_slice(out.data(), {6, 10}, {2}, {2, 5}, 1, "wq", 0.0,
                               1.0);
      },
      {"rank 2"}));
}

} // namespace
