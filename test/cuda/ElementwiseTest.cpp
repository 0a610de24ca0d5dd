//===- ElementwiseTest.cpp - Elementwise.cu against the CPU kernels -------===//
//
// Every launcher of runtime/cuda/Elementwise.cu on random inputs against the
// CPU kernel it mirrors (runtime/cpu), per storage dtype (f32, bf16, f16).
// Inputs are generated as values of the dtype, the CPU reference runs in f32
// and is rounded once into the dtype, exactly as the CPU backend does.
//
// Metric: relError = max |gpu - cpu| / max(max |cpu|, 1e-30) per tensor,
// within tolFor(dtype) (f32 1e-5, f16 2e-3, bf16 1e-2). Ops whose f32
// arithmetic is the same operation sequence on both sides (add, bias_add,
// scale, fill, cast, dropout, iota, transpose, embedding) must match bit
// for bit.
//
//===----------------------------------------------------------------------===//
#include "test/cuda/DeviceBuffer.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>

using namespace shardc;
using namespace shardc::test;
using rt::DType;

namespace {

class Elt : public ::testing::TestWithParam<DType> {};

std::string dtypeParamName(const ::testing::TestParamInfo<DType> &info) {
  return dtypeName(info.param);
}

INSTANTIATE_TEST_SUITE_P(DTypes, Elt, ::testing::Values(DType::F32, DType::BF16, DType::F16),
                         dtypeParamName);

const std::vector<int64_t> kSizes = {1, 7, 8, 1000, 100003};

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

TEST_P(Elt, Add) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto a = randomIn(t, n, 1), b = randomIn(t, n, 2);
    std::vector<float> ref(n);
    cpu::add(a.data(), b.data(), ref.data(), n);
    ref = roundTo(t, ref);
    DeviceTensor da(a, t), db(b, t), out(t, n);
    cuda::add(da.view(), db.view(), out.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(sameValues(out.get(), ref));
    // In place (out == a).
    cuda::add(da.view(), db.view(), da.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(sameValues(da.get(), ref));
  }
}

TEST(EltMixed, AddMixedDTypesAndMisaligned) {
  const int64_t n = 1001;
  auto a = randomIn(DType::BF16, n, 3), b = randomFloats(n, 4);
  std::vector<float> ref(n);
  cpu::add(a.data(), b.data(), ref.data(), n);
  DeviceTensor da(a, DType::BF16), db(b, DType::F32), out(DType::F32, n);
  cuda::add(da.view(), db.view(), out.view(), n, nullptr);
  deviceSync();
  EXPECT_TRUE(sameValues(out.get(), ref));

  // Mixed and aligned (the 8-element pack path) at every tail length, both
  // ways round, and a cast each way: bit-identical to the CPU.
  for (int64_t m : {1, 7, 8, 9, 16, 1001, 4099}) {
    SCOPED_TRACE(testing::Message() << "n " << m);
    std::vector<float> x(a.begin(), a.begin() + std::min(m, n));
    std::vector<float> y(b.begin(), b.begin() + std::min(m, n));
    x.resize(size_t(m), 0.5f);
    y.resize(size_t(m), -0.25f);
    std::vector<float> r(static_cast<size_t>(m));
    cpu::add(x.data(), y.data(), r.data(), m);
    DeviceTensor dx(x, DType::BF16), dy(y, DType::F32), o32(DType::F32, m), o16(DType::BF16, m);
    cuda::add(dy.view(), dx.view(), o32.view(), m, nullptr);
    cuda::add(dx.view(), dy.view(), o16.view(), m, nullptr);
    deviceSync();
    EXPECT_TRUE(sameValues(o32.get(), r));
    EXPECT_TRUE(sameValues(o16.get(), roundTo(DType::BF16, r)));
    cuda::cast(dy.view(), o16.view(), m, nullptr); // f32 -> bf16
    cuda::cast(dx.view(), o32.view(), m, nullptr); // bf16 -> f32
    deviceSync();
    EXPECT_TRUE(sameValues(o16.get(), roundTo(DType::BF16, y)));
    EXPECT_TRUE(sameValues(o32.get(), x));
  }

  // Same dtypes but not 16-byte aligned: the scalar path.
  std::vector<float> a1(n + 1, 0.0f), b1(n + 1, 0.0f);
  std::copy(a.begin(), a.end(), a1.begin() + 1);
  std::copy(b.begin(), b.end(), b1.begin() + 1);
  DeviceTensor ma(a1, DType::F32), mb(b1, DType::F32), mo(DType::F32, n + 1);
  cuda::add(ma.viewAt(1), mb.viewAt(1), mo.viewAt(1), n, nullptr);
  deviceSync();
  auto got = mo.get();
  EXPECT_TRUE(sameValues(std::vector<float>(got.begin() + 1, got.end()), ref));
}

TEST_P(Elt, BiasAdd) {
  const DType t = GetParam();
  for (int64_t cols : {96, 33, 8, 1}) {
    for (DType biasType : {t, DType::F32}) {
      SCOPED_TRACE(testing::Message() << "cols=" << cols << " bias " << dtypeName(biasType));
      const int64_t rows = 37;
      auto x = randomIn(t, rows * cols, 5), bias = randomIn(biasType, cols, 6);
      std::vector<float> ref(rows * cols);
      cpu::bias_add(x.data(), bias.data(), ref.data(), rows, cols);
      ref = roundTo(t, ref);
      DeviceTensor dx(x, t), db(bias, biasType), out(t, rows * cols);
      cuda::bias_add(dx.view(), db.view(), out.view(), rows, cols, nullptr);
      deviceSync();
      EXPECT_TRUE(sameValues(out.get(), ref));
      cuda::bias_add(dx.view(), db.view(), dx.view(), rows, cols, nullptr); // in place
      deviceSync();
      EXPECT_TRUE(sameValues(dx.get(), ref));
    }
  }
}

TEST_P(Elt, Gelu) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto x = randomIn(t, n, 7, -6.0, 6.0);
    std::vector<float> ref(n);
    cpu::gelu_tanh(x.data(), ref.data(), n);
    ref = roundTo(t, ref);
    DeviceTensor dx(x, t), out(t, n);
    cuda::gelu(dx.view(), out.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
    cuda::gelu(dx.view(), dx.view(), n, nullptr); // in place
    deviceSync();
    EXPECT_TRUE(closeTo(dx.get(), ref, tolFor(t)));
  }
}

TEST_P(Elt, GeluGrad) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto dy = randomIn(t, n, 8), x = randomIn(t, n, 9, -6.0, 6.0);
    std::vector<float> ref(n);
    cpu::gelu_tanh_backward(dy.data(), x.data(), ref.data(), n);
    ref = roundTo(t, ref);
    DeviceTensor ddy(dy, t), dx(x, t), out(t, n);
    cuda::gelu_grad(ddy.view(), dx.view(), out.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
    cuda::gelu_grad(ddy.view(), dx.view(), ddy.view(), n, nullptr); // dx == dy
    deviceSync();
    EXPECT_TRUE(closeTo(ddy.get(), ref, tolFor(t)));
  }
}

TEST_P(Elt, Swiglu) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto g = randomIn(t, n, 10, -8.0, 8.0), u = randomIn(t, n, 11, -2.0, 2.0);
    std::vector<float> ref(n);
    cpu::swiglu(g.data(), u.data(), ref.data(), n);
    ref = roundTo(t, ref);
    DeviceTensor dg(g, t), du(u, t), out(t, n);
    cuda::swiglu(dg.view(), du.view(), out.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
  }
}

TEST_P(Elt, SwigluGrad) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto dy = randomIn(t, n, 12), g = randomIn(t, n, 13, -8.0, 8.0),
         u = randomIn(t, n, 14, -2.0, 2.0);
    std::vector<float> refG(n), refU(n);
    cpu::swiglu_backward(dy.data(), g.data(), u.data(), refG.data(), refU.data(), n);
    refG = roundTo(t, refG);
    refU = roundTo(t, refU);
    DeviceTensor ddy(dy, t), dg(g, t), du(u, t), outG(t, n), outU(t, n);
    cuda::swiglu_grad(ddy.view(), dg.view(), du.view(), outG.view(), outU.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(outG.get(), refG, tolFor(t)));
    EXPECT_TRUE(closeTo(outU.get(), refU, tolFor(t)));
    // dgate in place of dy.
    cuda::swiglu_grad(ddy.view(), dg.view(), du.view(), ddy.view(), outU.view(), n, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(ddy.get(), refG, tolFor(t)));
  }
}

TEST_P(Elt, Scale) {
  const DType t = GetParam();
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    auto x = randomIn(t, n, 15, -100.0, 100.0);
    std::vector<float> ref(n);
    cpu::scale(x.data(), ref.data(), n, 0.3719);
    ref = roundTo(t, ref);
    DeviceTensor dx(x, t), out(t, n);
    cuda::scale(dx.view(), out.view(), n, 0.3719, nullptr);
    deviceSync();
    EXPECT_TRUE(sameValues(out.get(), ref));
    cuda::scale(dx.view(), dx.view(), n, 0.3719, nullptr);
    deviceSync();
    EXPECT_TRUE(sameValues(dx.get(), ref));
  }
}

TEST_P(Elt, Fill) {
  const DType t = GetParam();
  for (double value : {1.5, 0.0, 0.1, -3.25, 1e-3}) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(testing::Message() << "value=" << value << " n=" << n);
      DeviceTensor out(std::vector<float>(n, 7.0f), t);
      cuda::fill(out.view(), n, value, nullptr);
      deviceSync();
      // As the CPU backend: static_cast<float>(value), then rounded.
      EXPECT_TRUE(sameValues(out.get(), std::vector<float>(n, roundTo(t, float(value)))));
    }
  }
}

/// Values that exercise round-to-nearest-even, subnormals, overflow and
/// non-finite inputs of every conversion.
std::vector<float> castEdgeValues() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          1.0f + 0x1p-8f,      // bf16 tie -> even (1)
                          1.0f + 3 * 0x1p-8f,  // bf16 tie -> even (up)
                          1.0f + 0x1p-11f,     // f16 tie -> even (1)
                          1.0f + 3 * 0x1p-11f, // f16 tie -> even (up)
                          65504.0f,
                          65519.0f,
                          65520.0f, // f16: ties to infinity
                          1e5f,
                          3.0e38f,
                          3.3895e38f, // bf16 overflow
                          0x1p-14f,   // smallest normal f16
                          0x1p-24f,   // smallest subnormal f16
                          0x1p-25f,   // tie between 0 and 2^-24 -> 0
                          3 * 0x1p-26f,
                          1e-40f, // f32 subnormal
                          -5e-39f,
                          INFINITY,
                          -INFINITY,
                          NAN};
  auto r = randomFloats(4000, 16, -1.0, 1.0);
  std::mt19937 gen(17);
  std::uniform_int_distribution<int> e(-40, 40);
  for (float &x : r)
    x = std::ldexp(x, e(gen));
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

TEST(EltCast, AllPairsBitExact) {
  const std::vector<float> base = castEdgeValues();
  const int64_t n = int64_t(base.size());
  for (DType src : {DType::F32, DType::BF16, DType::F16})
    for (DType dst : {DType::F32, DType::BF16, DType::F16}) {
      SCOPED_TRACE(testing::Message() << dtypeName(src) << " -> " << dtypeName(dst));
      const std::vector<float> in = roundTo(src, base);
      DeviceTensor x(in, src), out(dst, n);
      cuda::cast(x.view(), out.view(), n, nullptr);
      deviceSync();
      EXPECT_TRUE(sameValues(out.get(), roundTo(dst, in)));
    }
}

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

struct DropCase {
  std::vector<int64_t> global, shape, offset;
};

const std::vector<DropCase> kDropCases = {
    {{4, 6, 10}, {2, 3, 10}, {1, 3, 0}},      // rows of a sharded middle dim
    {{4, 6, 10}, {4, 6, 4}, {0, 0, 3}},       // innermost dim sharded
    {{4, 6, 10}, {1, 1, 10}, {3, 5, 0}},      // unit dims
    {{4, 6, 10}, {4, 1, 1}, {0, 2, 7}},       // strided single column
    {{7, 1, 5, 33}, {3, 1, 5, 17}, {2, 0, 0, 9}},
    {{1000}, {1000}, {0}},                    // a whole tensor
    {{3, 50000}, {2, 25000}, {1, 12345}},     // large
    {{}, {}, {}},                             // a scalar
};

TEST_P(Elt, DropoutMatchesCpuBlockBitForBit) {
  const DType t = GetParam();
  const uint64_t seed = 0x1234'5678'9abcull, opKey = 0xABCDEF;
  for (const DropCase &c : kDropCases)
    for (double rate : {0.1, 0.5, 0.9}) {
      SCOPED_TRACE(testing::Message() << "block " << rt::shape_str(c.shape) << " at "
                                      << rt::shape_str(c.offset) << " of "
                                      << rt::shape_str(c.global) << " rate " << rate);
      const int64_t n = numel(c.shape);
      auto x = randomIn(t, n, 18, 0.5, 1.5); // nonzero: zeros are the mask
      DeviceTensor dx(x, t), out(t, n);
      std::vector<cuda::StepScalars> sc(1);
      sc[0].seed = seed;
      sc[0].step = 7;
      DeviceBuffer dsc = DeviceBuffer::of(sc);
      auto run = [&](uint64_t step) {
        sc[0].step = step;
        dsc.upload(sc.data(), sizeof(cuda::StepScalars)); // as a graph replay would see it
        cuda::dropout(dx.view(), out.view(), dims(c.shape), dims(c.offset), dims(c.global), rate,
                      dsc.as<cuda::StepScalars>(), opKey, nullptr);
        deviceSync();
        std::vector<float> ref(n);
        cpu::dropout_block(x.data(), ref.data(), c.shape, c.offset, c.global, rate, seed, step,
                           opKey);
        return std::make_pair(out.get(), roundTo(t, ref));
      };
      auto [got7, ref7] = run(7);
      EXPECT_TRUE(sameValues(got7, ref7));
      auto [got8, ref8] = run(8);
      EXPECT_TRUE(sameValues(got8, ref8));
      if (n >= 1000) {
        EXPECT_NE(got7, got8) << "the step must change the mask";
      }
      // In place.
      cuda::dropout(dx.view(), dx.view(), dims(c.shape), dims(c.offset), dims(c.global), rate,
                    dsc.as<cuda::StepScalars>(), opKey, nullptr);
      deviceSync();
      EXPECT_TRUE(sameValues(dx.get(), ref8));
    }
}

TEST_P(Elt, DropoutRateZeroCopiesRateOneZeroes) {
  const DType t = GetParam();
  const int64_t n = 999;
  auto x = randomIn(t, n, 19);
  DeviceTensor dx(x, t), out(t, n);
  std::vector<cuda::StepScalars> sc(1);
  DeviceBuffer dsc = DeviceBuffer::of(sc);
  cuda::dropout(dx.view(), out.view(), dims({n}), dims({0}), dims({n}), 0.0,
                dsc.as<cuda::StepScalars>(), 1, nullptr);
  deviceSync();
  EXPECT_TRUE(sameValues(out.get(), x));
  cuda::dropout(dx.view(), out.view(), dims({n}), dims({0}), dims({n}), 1.0,
                dsc.as<cuda::StepScalars>(), 1, nullptr);
  deviceSync();
  EXPECT_TRUE(sameValues(out.get(), std::vector<float>(n, 0.0f)));
  EXPECT_THROW(cuda::dropout(dx.view(), out.view(), dims({n}), dims({0}), dims({n}), 1.5,
                             dsc.as<cuda::StepScalars>(), 1, nullptr),
               rt::Error);
}

//===----------------------------------------------------------------------===//
// iota, transpose
//===----------------------------------------------------------------------===//

TEST(EltLayout, Iota) {
  struct Case {
    std::vector<int64_t> shape;
    int dim;
    int64_t offset;
  };
  for (const Case &c : std::vector<Case>{{{3, 4, 5}, 1, 7}, {{3, 4, 5}, 0, 0},
                                         {{3, 4, 5}, 2, -2}, {{100000}, 0, 3},
                                         {{2, 1, 300}, 1, 9}}) {
    SCOPED_TRACE(rt::shape_str(c.shape) + " dim " + std::to_string(c.dim));
    const int64_t n = numel(c.shape);
    std::vector<int32_t> ref(n);
    cpu::iota(ref.data(), c.shape, c.dim, c.offset);
    DeviceBuffer out(n * sizeof(int32_t));
    cuda::iota(out.as<int32_t>(), dims(c.shape), c.dim, c.offset, nullptr);
    deviceSync();
    EXPECT_EQ(out.to<int32_t>(n), ref);
  }
}

template <class T>
void checkTranspose(const std::vector<int64_t> &shape, const std::vector<int64_t> &perm,
                    uint32_t seed, bool misalign) {
  SCOPED_TRACE(testing::Message() << rt::shape_str(shape) << " perm " << rt::shape_str(perm)
                                  << " elem " << sizeof(T) << (misalign ? " misaligned" : ""));
  const int64_t n = numel(shape);
  std::vector<T> in(n);
  std::mt19937_64 gen(seed);
  for (T &v : in) {
    uint64_t bits = gen();
    std::memcpy(&v, &bits, sizeof(T));
  }
  std::vector<T> ref(n);
  cpu::transpose(in.data(), ref.data(), shape, perm);
  const size_t off = misalign ? 1 : 0;
  DeviceBuffer din((n + 1) * sizeof(T)), dout((n + 1) * sizeof(T));
  if (n)
    din.upload(in.data(), n * sizeof(T), off * sizeof(T));
  cuda::transpose(din.as<T>() + off, dout.as<T>() + off, int64_t(sizeof(T)), dims(shape),
                  dims(perm), nullptr);
  deviceSync();
  std::vector<T> got(n);
  if (n)
    dout.download(got.data(), n * sizeof(T), off * sizeof(T));
  EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), n * sizeof(T)));
}

template <class T> void transposeCases(bool misalign) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> fixed = {
      {{64, 96}, {1, 0}},             // tiled
      {{33, 65}, {1, 0}},             // partial tiles
      {{2, 3, 4, 5}, {0, 2, 1, 3}},   // innermost kept: row copies
      {{2, 7, 3, 64}, {0, 2, 1, 3}},  // BSHD -> BHSD, 16-byte units
      {{5, 1, 7}, {2, 1, 0}},         // unit dim
      {{3, 40, 50}, {2, 0, 1}},       //
      {{4, 5, 6, 7, 3}, {4, 3, 2, 1, 0}},
      {{6, 1, 1, 9}, {3, 0, 2, 1}},
      {{1, 1}, {1, 0}},
      {{17}, {0}},
      {{}, {}},
      {{0, 5}, {1, 0}},
      {{2, 3, 4, 5, 6, 2, 3, 2}, {7, 5, 3, 1, 0, 2, 4, 6}}, // rank 8
  };
  uint32_t seed = 100;
  for (const auto &[shape, perm] : fixed)
    checkTranspose<T>(shape, perm, seed++, misalign);
  // Random shapes and permutations of rank 1..6.
  std::mt19937 gen(20);
  const int64_t sizes[] = {1, 2, 3, 5, 8, 17, 33, 64};
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + trial % 6;
    std::vector<int64_t> shape(rank), perm(rank);
    int64_t total = 1;
    for (int64_t &s : shape) {
      s = sizes[gen() % 8];
      if (total * s > 300000)
        s = 1;
      total *= s;
    }
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    checkTranspose<T>(shape, perm, seed++, misalign);
  }
}

TEST(EltLayout, Transpose) {
  for (bool misalign : {false, true}) {
    transposeCases<uint16_t>(misalign);
    transposeCases<float>(misalign);
    transposeCases<double>(misalign);
  }
}

TEST(EltLayout, TransposeRejectsBadArguments) {
  DeviceBuffer buf(64);
  EXPECT_THROW(cuda::transpose(buf.get(), buf.get(), 3, dims({2, 2}), dims({1, 0}), nullptr),
               rt::Error);
  EXPECT_THROW(cuda::transpose(buf.get(), buf.get(), 4, dims({2, 2}), dims({0, 0}), nullptr),
               rt::Error);
}

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

cuda::KernelError readError(const DeviceBuffer &err) {
  cuda::KernelError e;
  err.download(&e, sizeof(e));
  return e;
}

std::vector<int32_t> randomIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> d(0, vocab - 1);
  std::vector<int32_t> ids(n);
  for (int32_t &id : ids)
    id = int32_t(d(gen));
  return ids;
}

TEST_P(Elt, EmbeddingBlock) {
  const DType t = GetParam();
  const int64_t vocab = 50, nIds = 300;
  for (int64_t dim : {64, 13, 8})
    for (auto [rowBegin, rows] : {std::pair<int64_t, int64_t>{10, 20}, {0, 50}}) {
      SCOPED_TRACE(testing::Message() << "dim " << dim << " rows [" << rowBegin << ", "
                                      << rowBegin + rows << ")");
      auto block = randomIn(t, rows * dim, 21);
      auto ids = randomIds(nIds, vocab, 22);
      std::vector<float> ref(nIds * dim);
      cpu::embedding_block(block.data(), ids.data(), ref.data(), nIds, vocab, rowBegin, rows,
                           dim);
      DeviceTensor db(block, t), out(std::vector<float>(nIds * dim, 5.0f), t);
      DeviceBuffer dids = DeviceBuffer::of(ids), err(sizeof(cuda::KernelError));
      err.memset(0);
      cuda::embedding(db.view(), dids.as<int32_t>(), out.view(), nIds, vocab, rowBegin, rows,
                      dim, err.as<cuda::KernelError>(), nullptr);
      deviceSync();
      EXPECT_TRUE(sameValues(out.get(), ref));
      EXPECT_EQ(readError(err).code, cuda::kNoError);
    }
}

TEST(EltEmbedding, BadIdSetsKernelError) {
  const int64_t vocab = 50, nIds = 40, dim = 16;
  auto table = randomFloats(vocab * dim, 23);
  auto ids = randomIds(nIds, vocab, 24);
  ids[3] = -1;
  ids[7] = 50;
  DeviceTensor dt(table, DType::F32), out(DType::F32, nIds * dim);
  DeviceBuffer dids = DeviceBuffer::of(ids), err(sizeof(cuda::KernelError));
  err.memset(0);
  cuda::embedding(dt.view(), dids.as<int32_t>(), out.view(), nIds, vocab, 0, vocab, dim,
                  err.as<cuda::KernelError>(), nullptr);
  deviceSync();
  cuda::KernelError e = readError(err);
  EXPECT_EQ(e.code, cuda::kBadTokenId);
  EXPECT_TRUE((e.position == 3 && e.value == -1) || (e.position == 7 && e.value == 50))
      << "position " << e.position << " value " << e.value;
  EXPECT_EQ(e.limit, vocab);
  // Bad rows are zeros, the others gather as usual.
  auto sane = ids;
  sane[3] = sane[7] = 0;
  std::vector<float> ref(nIds * dim);
  cpu::embedding(table.data(), sane.data(), ref.data(), nIds, vocab, dim);
  std::fill(ref.begin() + 3 * dim, ref.begin() + 4 * dim, 0.0f);
  std::fill(ref.begin() + 7 * dim, ref.begin() + 8 * dim, 0.0f);
  EXPECT_TRUE(sameValues(out.get(), ref));

  // The gradient reports it too, and skips the bad positions.
  DeviceBuffer err2(sizeof(cuda::KernelError));
  err2.memset(0);
  DeviceTensor dy(randomFloats(nIds * dim, 25), DType::F32), dtab(DType::F32, vocab * dim);
  DeviceBuffer ws(size_t(cuda::embedding_grad_workspace_bytes(nIds, vocab)));
  cuda::embedding_grad(dy.view(), dids.as<int32_t>(), dtab.view(), nIds, vocab, 0, vocab, dim,
                       ws.get(), err2.as<cuda::KernelError>(), nullptr);
  deviceSync();
  e = readError(err2);
  EXPECT_EQ(e.code, cuda::kBadTokenId);
  EXPECT_EQ(e.limit, vocab);
}

TEST_P(Elt, EmbeddingGrad) {
  const DType t = GetParam();
  const int64_t vocab = 60, rowBegin = 15, rows = 30;
  // dim 300: a column tile of 256 and a tail. frequent: half of 3000 ids are
  // one row (a word like "the"), cut over all 16 warps of its CTA, unevenly.
  for (auto [dim, nIds, frequent] : {std::tuple<int64_t, int64_t, bool>{64, 500, false},
                                     {13, 500, false}, {300, 500, false}, {300, 3000, true}}) {
    SCOPED_TRACE(testing::Message() << "dim " << dim << " ids " << nIds << " frequent "
                                    << frequent);
    auto dy = randomIn(t, nIds * dim, 26);
    auto ids = randomIds(nIds, vocab, 27);
    if (frequent)
      for (int64_t i = 0; i < nIds; i += 2)
        ids[size_t(i)] = int32_t(rowBegin + 3);
    std::vector<float> ref(rows * dim);
    cpu::embedding_backward_block(dy.data(), ids.data(), ref.data(), nIds, vocab, rowBegin, rows,
                                  dim);
    ref = roundTo(t, ref);
    const int64_t ws = cuda::embedding_grad_workspace_bytes(nIds, rows);
    EXPECT_GT(ws, 0);
    DeviceBuffer scratch{size_t(ws)};
    DeviceTensor ddy(dy, t), dblock(std::vector<float>(rows * dim, 9.0f), t);
    DeviceBuffer dids = DeviceBuffer::of(ids), err(sizeof(cuda::KernelError));
    err.memset(0);
    std::vector<uint8_t> first;
    // Each row repeats ~17 times in the ids: float atomics would make the sums
    // order-dependent. Bitwise equal over runs (CUDA graphs replay the same
    // launches and compare bit for bit with eager ones).
    for (int run = 0; run < 3; ++run) {
      scratch.memset(run == 0 ? 0 : 0xff); // stale workspace contents must not matter
      cuda::embedding_grad(ddy.view(), dids.as<int32_t>(), dblock.view(), nIds, vocab, rowBegin,
                           rows, dim, scratch.get(), err.as<cuda::KernelError>(), nullptr);
      deviceSync();
      if (run == 0) {
        EXPECT_TRUE(closeTo(dblock.get(), ref, tolFor(t)));
        first = dblock.bytes();
      } else {
        EXPECT_EQ(dblock.bytes(), first) << "embedding_grad is not deterministic (run " << run
                                         << ")";
      }
    }
    EXPECT_EQ(readError(err).code, cuda::kNoError);
  }
}

TEST(EltEmbedding, GradOfNoIdsIsZero) {
  const int64_t rows = 7, dim = 5;
  DeviceTensor dblock(std::vector<float>(rows * dim, 9.0f), DType::BF16), dy(DType::BF16, 1);
  EXPECT_EQ(cuda::embedding_grad_workspace_bytes(0, rows), 0);
  cuda::embedding_grad(dy.view(), nullptr, dblock.view(), 0, rows, 0, rows, dim, nullptr, nullptr,
                       nullptr);
  deviceSync();
  EXPECT_TRUE(sameValues(dblock.get(), std::vector<float>(rows * dim, 0.0f)));
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

struct ReduceCase {
  std::vector<int64_t> shape, dims;
};

const std::vector<ReduceCase> kReduceCases = {
    {{4, 5, 6, 7}, {0}},       {{4, 5, 6, 7}, {1}},     {{4, 5, 6, 7}, {2}},
    {{4, 5, 6, 7}, {3}},       {{4, 5, 6, 7}, {0, 1}},  {{4, 5, 6, 7}, {1, 2}},
    {{4, 5, 6, 7}, {0, 3}},    {{4, 5, 6, 7}, {0, 2}},  {{4, 5, 6, 7}, {0, 1, 2, 3}},
    {{4, 5, 6, 7}, {}},        {{1, 5, 1, 7}, {0, 2}},  {{2, 5000}, {1}},
    {{3000, 64}, {0}},         {{8, 40, 1100}, {1}},    {{600, 1024}, {0}},
    {{3, 0, 4}, {1}},          {{100000}, {0}},         {{2, 3, 2, 3, 2, 3, 2, 3}, {0, 2, 5, 7}},
};

uint32_t maskOf(const std::vector<int64_t> &dims) {
  uint32_t m = 0;
  for (int64_t d : dims)
    m |= 1u << d;
  return m;
}

TEST_P(Elt, ReduceSum) {
  const DType t = GetParam();
  for (const ReduceCase &c : kReduceCases)
    for (DType outType : {t, DType::F32}) {
      SCOPED_TRACE(testing::Message() << rt::shape_str(c.shape) << " over "
                                      << rt::shape_str(c.dims) << " into "
                                      << dtypeName(outType));
      const int64_t n = numel(c.shape);
      int64_t kept = 1;
      for (size_t d = 0; d < c.shape.size(); ++d)
        if (std::find(c.dims.begin(), c.dims.end(), int64_t(d)) == c.dims.end())
          kept *= c.shape[d];
      auto x = randomIn(t, n, 28);
      std::vector<float> ref(kept);
      cpu::reduce_sum(x.data(), ref.data(), c.shape, c.dims);
      ref = roundTo(outType, ref);
      DeviceTensor dx(x, t), out(std::vector<float>(kept, 3.0f), outType);
      cuda::reduce_sum(dx.view(), out.view(), dims(c.shape), maskOf(c.dims), nullptr);
      deviceSync();
      EXPECT_TRUE(closeTo(out.get(), ref, tolFor(outType)));
    }
}

} // namespace
