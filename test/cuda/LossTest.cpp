//===- LossTest.cpp - GPU cross-entropy against the CPU kernels -----------===//
//
// The vocabulary-parallel cross-entropy kernels (Loss.cu) against
// cpu::cross_entropy / cross_entropy_backward and the block functions, with
// masks, ignore_index, two vocabulary blocks combined, group counts and bad
// targets; and the chunked linear cross-entropy (LinearCrossEntropy.cpp)
// against cpu::linear_cross_entropy / linear_cross_entropy_backward with
// small chunks forced along rows and along the vocabulary, both weight
// layouts, f32 (1e-5) and bf16 (1e-2), and a vocabulary split over two
// blocks. Errors are max |gpu - cpu| / max |cpu| over a tensor.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/LinearCrossEntropy.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace shardc;
using namespace shardc::cuda;
using shardc::rt::DType;

namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr int64_t kIgnore = -100;

float roundTo(DType t, float v) {
  switch (t) {
  case DType::BF16:
    return cpu::bf16_to_f32(cpu::f32_to_bf16(v));
  case DType::F16:
    return cpu::f16_to_f32(cpu::f32_to_f16(v));
  default:
    return v;
  }
}

/// A device buffer of n elements of dtype t (float dtypes or i32).
struct Dev {
  DType dtype = DType::F32;
  size_t n = 0;
  void *p = nullptr;
  Dev(DType t, size_t count) : dtype(t), n(count) {
    size_t bytes = std::max<size_t>(n * rt::dtype_size(t), 16);
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0, bytes), cudaSuccess);
  }
  Dev(DType t, const std::vector<float> &v) : Dev(t, v.size()) { upload(v); }
  explicit Dev(const std::vector<int32_t> &v) : Dev(DType::I32, v.size()) {
    EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;

  void upload(const std::vector<float> &v) {
    std::vector<uint8_t> bytes(v.size() * rt::dtype_size(dtype));
    for (size_t i = 0; i < v.size(); ++i) {
      if (dtype == DType::F32) {
        std::memcpy(bytes.data() + 4 * i, &v[i], 4);
      } else {
        uint16_t h = dtype == DType::BF16 ? cpu::f32_to_bf16(v[i]) : cpu::f32_to_f16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    }
    EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<float> download() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> bytes(n * rt::dtype_size(dtype));
    EXPECT_EQ(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
      if (dtype == DType::F32) {
        std::memcpy(&v[i], bytes.data() + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        v[i] = dtype == DType::BF16 ? cpu::bf16_to_f32(h) : cpu::f16_to_f32(h);
      }
    }
    return v;
  }
  template <class T> T *as() const { return static_cast<T *>(p); }
  TView view() const { return {p, dtype}; }
};

std::vector<float> randomValues(size_t n, DType t, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = roundTo(t, nd(gen));
  return v;
}

std::vector<int32_t> randomTargets(int64_t rows, int64_t vocab, uint32_t seed,
                                   double ignoreFraction) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int32_t> t(sz(rows));
  for (int32_t &x : t)
    x = u(gen) < ignoreFraction ? int32_t(kIgnore) : id(gen);
  return t;
}

std::vector<float> randomMask(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> m(sz(rows));
  for (float &x : m)
    x = gen() % 4 == 0 ? 0.0f : 1.0f;
  return m;
}

double relError(const std::vector<float> &got, const std::vector<float> &want) {
  EXPECT_EQ(got.size(), want.size());
  double maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(got[i]) - double(want[i])));
    maxRef = std::max(maxRef, std::fabs(double(want[i])));
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

double relError(double got, double want) {
  return std::fabs(got - want) / std::max(std::fabs(want), 1e-30);
}

std::vector<float> toFloat(const std::vector<double> &v) { return {v.begin(), v.end()}; }

float scalarOf(const Dev &d) { return d.download()[0]; }

/// Columns [c0, c0 + nc) of a row-major [rows, cols] matrix.
std::vector<float> columns(const std::vector<float> &m, int64_t rows, int64_t cols, int64_t c0,
                           int64_t nc) {
  std::vector<float> out(sz(rows * nc));
  for (int64_t r = 0; r < rows; ++r)
    std::copy(m.begin() + r * cols + c0, m.begin() + r * cols + c0 + nc, out.begin() + r * nc);
  return out;
}

//===----------------------------------------------------------------------===//
// Cross-entropy kernels
//===----------------------------------------------------------------------===//

struct CeCase {
  int64_t rows, vocab;
  DType logitsType, gradType;
  bool mask;
  double tol;
};

class CudaCrossEntropy : public ::testing::TestWithParam<CeCase> {};

TEST_P(CudaCrossEntropy, StatsLossAndGradMatchCpu) {
  const CeCase c = GetParam();
  auto logits = randomValues(sz(c.rows * c.vocab), c.logitsType, 1, 3.0f);
  auto targets = randomTargets(c.rows, c.vocab, 2, 0.2);
  auto mask = randomMask(c.rows, 3);
  const float *maskHost = c.mask ? mask.data() : nullptr;

  Dev dLogits(c.logitsType, logits), dTargets(targets), dMask(DType::F32, mask),
      dStats(DType::F32, sz(3 * c.rows)), dLoss(DType::F32, 1),
      dDloss(DType::F32, std::vector<float>{0.7f}), dGrad(c.gradType, sz(c.rows * c.vocab)),
      dCount(DType::I32, 1), dErr(DType::I32, sizeof(KernelError) / 4);
  TView mv = c.mask ? dMask.view() : TView{};
  float *st = dStats.as<float>();
  cross_entropy_block_stats(dLogits.view(), dTargets.as<int32_t>(), mv, c.rows, c.vocab, 0, c.vocab,
                            kIgnore, st, st + c.rows, st + 2 * c.rows, dErr.as<KernelError>(),
                            nullptr);
  cross_entropy_loss(st, dTargets.as<int32_t>(), mv, c.rows, kIgnore, nullptr, dLoss.view(),
                     nullptr);
  cross_entropy_block_grad(dDloss.view(), dLogits.view(), dTargets.as<int32_t>(), mv, st, nullptr,
                           dGrad.view(), c.rows, 0, c.vocab, kIgnore, nullptr);
  cross_entropy_count(dTargets.as<int32_t>(), mv, c.rows, kIgnore, dCount.as<int32_t>(), nullptr);

  std::vector<double> mx(sz(c.rows)), se(sz(c.rows)), tg(sz(c.rows));
  int64_t count = cpu::cross_entropy_block_stats<float>(logits.data(), targets.data(), maskHost,
                                                        c.rows, c.vocab, 0, c.vocab, kIgnore,
                                                        mx.data(), se.data(), tg.data());
  auto stats = dStats.download();
  std::vector<float> gotMx(stats.begin(), stats.begin() + c.rows),
      gotSe(stats.begin() + c.rows, stats.begin() + 2 * c.rows),
      gotTg(stats.begin() + 2 * c.rows, stats.end());
  EXPECT_LE(relError(gotMx, toFloat(mx)), 1e-6);
  EXPECT_LE(relError(gotSe, toFloat(se)), 1e-5);
  EXPECT_LE(relError(gotTg, toFloat(tg)), 1e-6);

  int64_t cpuCount = 0;
  double loss = cpu::cross_entropy<float>(logits.data(), targets.data(), maskHost, c.rows, c.vocab,
                                          kIgnore, &cpuCount);
  EXPECT_EQ(cpuCount, count);
  int32_t gpuCount = 0;
  ASSERT_EQ(cudaMemcpy(&gpuCount, dCount.p, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(int64_t(gpuCount), cpuCount);
  EXPECT_LE(relError(scalarOf(dLoss), loss), 1e-5);

  std::vector<float> grad(sz(c.rows * c.vocab));
  cpu::cross_entropy_backward<float>(0.7, logits.data(), targets.data(), maskHost, grad.data(),
                                     c.rows, c.vocab, kIgnore);
  EXPECT_LE(relError(dGrad.download(), grad), c.tol);

  KernelError err{};
  ASSERT_EQ(cudaMemcpy(&err, dErr.p, sizeof(err), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(err.code, kNoError);

  // In place (dlogits = logits), same dtype.
  if (c.gradType == c.logitsType) {
    cross_entropy_block_grad(dDloss.view(), dLogits.view(), dTargets.as<int32_t>(), mv, st, nullptr,
                             dLogits.view(), c.rows, 0, c.vocab, kIgnore, nullptr);
    EXPECT_LE(relError(dLogits.download(), grad), c.tol) << "in place";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaCrossEntropy,
                         ::testing::Values(CeCase{37, 1000, DType::F32, DType::F32, true, 1e-5},
                                           CeCase{37, 1000, DType::F32, DType::F32, false, 1e-5},
                                           // Odd row lengths: every row starts at a different
                                           // 16-byte offset (head / vector / tail paths).
                                           CeCase{29, 1001, DType::F32, DType::F32, true, 1e-5},
                                           CeCase{29, 50257, DType::F32, DType::F32, true, 1e-5},
                                           CeCase{31, 1003, DType::BF16, DType::F32, true, 1e-5},
                                           CeCase{31, 1003, DType::BF16, DType::BF16, true, 1e-2},
                                           CeCase{17, 777, DType::F16, DType::F16, false, 1e-2},
                                           CeCase{5, 3, DType::F32, DType::F32, true, 1e-5}));

TEST(CudaCrossEntropyBlocks, TwoVocabularyBlocksCombineToTheWholeVocabulary) {
  const int64_t rows = 41, vocab = 37, split = 35; // blocks [0, 35) and [35, 37)
  auto logits = randomValues(sz(rows * vocab), DType::F32, 11, 4.0f);
  auto targets = randomTargets(rows, vocab, 12, 0.15);
  auto mask = randomMask(rows, 13);
  Dev dTargets(targets), dMask(DType::F32, mask), dAll(DType::F32, sz(2 * 3 * rows)),
      dLoss(DType::F32, 1), dDloss(DType::F32, std::vector<float>{1.25f});
  const int64_t begins[2] = {0, split}, widths[2] = {split, vocab - split};
  for (int b = 0; b < 2; ++b) {
    Dev block(DType::F32, columns(logits, rows, vocab, begins[b], widths[b]));
    float *s = dAll.as<float>() + b * 3 * rows;
    cross_entropy_block_stats(block.view(), dTargets.as<int32_t>(), dMask.view(), rows, vocab,
                              begins[b], widths[b], kIgnore, s, s + rows, s + 2 * rows, nullptr,
                              nullptr);
  }
  // out aliases block 0.
  cross_entropy_combine_stats(dAll.as<float>(), 2, rows, dAll.as<float>(), nullptr);
  cross_entropy_loss(dAll.as<float>(), dTargets.as<int32_t>(), dMask.view(), rows, kIgnore, nullptr,
                     dLoss.view(), nullptr);

  std::vector<double> mx(sz(rows)), se(sz(rows)), tg(sz(rows));
  cpu::cross_entropy_block_stats<float>(logits.data(), targets.data(), mask.data(), rows, vocab, 0,
                                        vocab, kIgnore, mx.data(), se.data(), tg.data());
  auto all = dAll.download();
  EXPECT_LE(relError({all.begin(), all.begin() + rows}, toFloat(mx)), 1e-6);
  EXPECT_LE(relError({all.begin() + rows, all.begin() + 2 * rows}, toFloat(se)), 1e-5);
  EXPECT_LE(relError({all.begin() + 2 * rows, all.begin() + 3 * rows}, toFloat(tg)), 1e-6);
  double loss = cpu::cross_entropy<float>(logits.data(), targets.data(), mask.data(), rows, vocab,
                                          kIgnore, nullptr);
  EXPECT_LE(relError(scalarOf(dLoss), loss), 1e-5);

  std::vector<float> grad(sz(rows * vocab));
  cpu::cross_entropy_backward<float>(1.25, logits.data(), targets.data(), mask.data(), grad.data(),
                                     rows, vocab, kIgnore);
  for (int b = 0; b < 2; ++b) {
    Dev block(DType::F32, columns(logits, rows, vocab, begins[b], widths[b]));
    Dev dGrad(DType::F32, sz(rows * widths[b]));
    cross_entropy_block_grad(dDloss.view(), block.view(), dTargets.as<int32_t>(), dMask.view(),
                             dAll.as<float>(), nullptr, dGrad.view(), rows, begins[b], widths[b],
                             kIgnore, nullptr);
    EXPECT_LE(relError(dGrad.download(), columns(grad, rows, vocab, begins[b], widths[b])), 1e-5)
        << "block " << b;
  }
}

TEST(CudaCrossEntropyBlocks, GroupCountScalesLossAndGrad) {
  const int64_t rows = 23, vocab = 300;
  auto logits = randomValues(sz(rows * vocab), DType::F32, 21, 2.0f);
  auto targets = randomTargets(rows, vocab, 22, 0.1);
  Dev dLogits(DType::F32, logits), dTargets(targets), dStats(DType::F32, sz(3 * rows)),
      dLoss(DType::F32, 1), dDloss(DType::F32, std::vector<float>{1.0f}),
      dGrad(DType::F32, sz(rows * vocab)), dCount(DType::I32, 1);
  int64_t local = 0;
  double loss = cpu::cross_entropy<float>(logits.data(), targets.data(), nullptr, rows, vocab,
                                          kIgnore, &local);
  const int32_t group = int32_t(3 * local); // this rank holds a third of the group's rows
  ASSERT_EQ(cudaMemcpy(dCount.p, &group, 4, cudaMemcpyHostToDevice), cudaSuccess);
  float *st = dStats.as<float>();
  cross_entropy_block_stats(dLogits.view(), dTargets.as<int32_t>(), {}, rows, vocab, 0, vocab,
                            kIgnore, st, st + rows, st + 2 * rows, nullptr, nullptr);
  cross_entropy_loss(st, dTargets.as<int32_t>(), {}, rows, kIgnore, dCount.as<int32_t>(),
                     dLoss.view(), nullptr);
  cross_entropy_block_grad(dDloss.view(), dLogits.view(), dTargets.as<int32_t>(), {}, st,
                           dCount.as<int32_t>(), dGrad.view(), rows, 0, vocab, kIgnore, nullptr);
  EXPECT_LE(relError(scalarOf(dLoss), loss / 3.0), 1e-5);
  std::vector<float> grad(sz(rows * vocab));
  cpu::cross_entropy_backward<float>(1.0 / 3.0, logits.data(), targets.data(), nullptr, grad.data(),
                                     rows, vocab, kIgnore);
  EXPECT_LE(relError(dGrad.download(), grad), 1e-5);
}

TEST(CudaCrossEntropyBlocks, NothingCountedGivesZeros) {
  const int64_t rows = 9, vocab = 50;
  auto logits = randomValues(sz(rows * vocab), DType::F32, 31, 1.0f);
  std::vector<int32_t> targets(sz(rows), int32_t(kIgnore));
  Dev dLogits(DType::F32, logits), dTargets(targets), dStats(DType::F32, sz(3 * rows)),
      dLoss(DType::F32, std::vector<float>{5.0f}), dDloss(DType::F32, std::vector<float>{1.0f}),
      dGrad(DType::F32, std::vector<float>(sz(rows * vocab), 7.0f));
  float *st = dStats.as<float>();
  cross_entropy_block_stats(dLogits.view(), dTargets.as<int32_t>(), {}, rows, vocab, 0, vocab,
                            kIgnore, st, st + rows, st + 2 * rows, nullptr, nullptr);
  cross_entropy_loss(st, dTargets.as<int32_t>(), {}, rows, kIgnore, nullptr, dLoss.view(), nullptr);
  cross_entropy_block_grad(dDloss.view(), dLogits.view(), dTargets.as<int32_t>(), {}, st, nullptr,
                           dGrad.view(), rows, 0, vocab, kIgnore, nullptr);
  EXPECT_EQ(scalarOf(dLoss), 0.0f);
  for (float g : dGrad.download())
    ASSERT_EQ(g, 0.0f);
  for (float s : dStats.download())
    ASSERT_EQ(s, 0.0f);
}

TEST(CudaCrossEntropyBlocks, BadTargetSetsTheKernelError) {
  const int64_t rows = 8, vocab = 20;
  auto logits = randomValues(sz(rows * vocab), DType::F32, 41, 1.0f);
  for (int32_t bad : {int32_t(vocab + 5), int32_t(-1)}) {
    auto targets = randomTargets(rows, vocab, 42, 0.0);
    targets[3] = bad;
    std::vector<float> mask(sz(rows), 1.0f);
    mask[3] = 0.0f; // masked rows are checked too, as on the CPU
    Dev dLogits(DType::F32, logits), dTargets(targets), dMask(DType::F32, mask),
        dStats(DType::F32, sz(3 * rows)), dErr(DType::I32, sizeof(KernelError) / 4);
    float *st = dStats.as<float>();
    cross_entropy_block_stats(dLogits.view(), dTargets.as<int32_t>(), dMask.view(), rows, vocab, 0,
                              vocab, kIgnore, st, st + rows, st + 2 * rows, dErr.as<KernelError>(),
                              nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    KernelError err{};
    ASSERT_EQ(cudaMemcpy(&err, dErr.p, sizeof(err), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(err.code, kBadTarget);
    EXPECT_EQ(err.position, 3);
    EXPECT_EQ(err.value, bad);
    EXPECT_EQ(err.limit, vocab);
    // The CPU kernel rejects the same targets.
    std::vector<double> mx(sz(rows)), se(sz(rows)), tg(sz(rows));
    EXPECT_THROW(cpu::cross_entropy_block_stats<float>(logits.data(), targets.data(), mask.data(),
                                                       rows, vocab, 0, vocab, kIgnore, mx.data(),
                                                       se.data(), tg.data()),
                 rt::Error);
  }
}

//===----------------------------------------------------------------------===//
// Linear cross-entropy
//===----------------------------------------------------------------------===//

struct LceCase {
  bool vocabMajor;
  LinearCrossEntropyChunking chunking;
  DType type, dxType, dwType;
  double tol;
  /// A padded vocabulary: the first `classes` of the 300 columns are classes
  /// (0: all are).
  int64_t classes = 0;
};

std::string lceName(const ::testing::TestParamInfo<LceCase> &info) {
  const LceCase &c = info.param;
  std::string s = c.vocabMajor ? "VocabMajor" : "HiddenMajor";
  s += c.chunking == LinearCrossEntropyChunking::Rows ? "_RowChunks" : "_VocabChunks";
  s += std::string("_") + rt::dtype_name(c.type) + "_dx" + rt::dtype_name(c.dxType) + "_dw" +
       rt::dtype_name(c.dwType);
  if (c.classes > 0)
    s += "_classes" + std::to_string(c.classes);
  return s;
}

class CudaLinearCrossEntropy : public ::testing::TestWithParam<LceCase> {};

TEST_P(CudaLinearCrossEntropy, MatchesCpu) {
  const LceCase c = GetParam();
  const int64_t rows = 67, H = 40, V = 300;
  // With padding: V allocated columns, K classes (the GEMMs run over V).
  const int64_t K = c.classes > 0 ? c.classes : V;
  LinearCrossEntropyShape shape;
  shape.rows = rows;
  shape.hidden = H;
  shape.vocab = K;
  shape.blockVocab = V;
  shape.classCols = K;
  shape.ignoreIndex = kIgnore;
  shape.vocabMajor = c.vocabMajor;
  shape.chunking = c.chunking;
  // Chunks of 16 rows (5 chunks, the last short) or 64 columns (5, the last short).
  shape.chunkElems = c.chunking == LinearCrossEntropyChunking::Rows ? 16 * V : 64 * rows;
  if (c.chunking == LinearCrossEntropyChunking::Rows) {
    EXPECT_EQ(linear_cross_entropy_chunk_rows(shape), 16);
    EXPECT_EQ(linear_cross_entropy_chunk_vocab(shape), V);
  } else {
    EXPECT_EQ(linear_cross_entropy_chunk_rows(shape), rows);
    EXPECT_EQ(linear_cross_entropy_chunk_vocab(shape), 64);
  }
  const int64_t wsBytes = linear_cross_entropy_workspace_bytes(shape);
  EXPECT_LE(linear_cross_entropy_workspace_bytes(shape, c.type, c.dxType, c.dwType), wsBytes);

  auto x = randomValues(sz(rows * H), c.type, 51, 1.0f);
  auto w = randomValues(sz(V * H), c.type, 52, 0.3f);
  auto targets = randomTargets(rows, K, 53, 0.1);
  auto mask = randomMask(rows, 54);
  Dev dx_(c.type, x), dw_(c.type, w), dTargets(targets), dMask(DType::F32, mask),
      dStats(DType::F32, sz(3 * rows)), dLoss(DType::F32, 1),
      dDloss(DType::F32, std::vector<float>{1.3f}), dGx(c.dxType, sz(rows * H)),
      dGw(c.dwType, sz(V * H)), dWs(DType::I32, sz(wsBytes / 4)),
      dErr(DType::I32, sizeof(KernelError) / 4);
  Gemm gemm;
  linear_cross_entropy_stats(gemm, dx_.view(), dw_.view(), dTargets.as<int32_t>(), dMask.view(),
                             shape, dStats.as<float>(), dWs.p, dErr.as<KernelError>(), nullptr);
  cross_entropy_loss(dStats.as<float>(), dTargets.as<int32_t>(), dMask.view(), rows, kIgnore,
                     nullptr, dLoss.view(), nullptr);
  linear_cross_entropy_backward(gemm, dDloss.view(), dx_.view(), dw_.view(), dTargets.as<int32_t>(),
                                dMask.view(), shape, dStats.as<float>(), nullptr, dGx.view(),
                                dGw.view(), dWs.p, nullptr);

  // The CPU in f32 from the same (rounded) inputs (over the K classes of the
  // V columns: the CPU kernels' padded form, checked against the unpadded
  // problem by the CPU unit tests).
  std::vector<double> mx(sz(rows)), se(sz(rows)), tg(sz(rows));
  cpu::linear_cross_entropy_block_stats<float>(x.data(), w.data(), c.vocabMajor, targets.data(),
                                               mask.data(), rows, H, K, 0, K, kIgnore, mx.data(),
                                               se.data(), tg.data(), V);
  const double statTol = c.type == DType::F32 ? 1e-5 : 1e-4;
  auto stats = dStats.download();
  EXPECT_LE(relError({stats.begin(), stats.begin() + rows}, toFloat(mx)), statTol);
  EXPECT_LE(relError({stats.begin() + rows, stats.begin() + 2 * rows}, toFloat(se)), statTol);
  EXPECT_LE(relError({stats.begin() + 2 * rows, stats.end()}, toFloat(tg)), statTol);
  double loss = cpu::cross_entropy_from_stats<float>(mx.data(), se.data(), tg.data(),
                                                     targets.data(), mask.data(), rows, kIgnore,
                                                     nullptr);
  EXPECT_LE(relError(scalarOf(dLoss), loss), c.type == DType::F32 ? 1e-5 : 1e-4);

  std::vector<float> gx(sz(rows * H)), gw(sz(V * H));
  cpu::linear_cross_entropy_block_backward<float>(1.3, x.data(), w.data(), c.vocabMajor,
                                                  targets.data(), mask.data(), nullptr, nullptr,
                                                  gx.data(), gw.data(), rows, H, K, 0, K, kIgnore,
                                                  V);
  EXPECT_LE(relError(dGx.download(), gx), c.tol) << "dx";
  EXPECT_LE(relError(dGw.download(), gw), c.tol) << "dw";
  // The padding's weight gradient is zero (its dlogits are).
  std::vector<float> gotW = dGw.download();
  for (int64_t v = K; v < V; ++v)
    for (int64_t h = 0; h < H; ++h)
      ASSERT_EQ(gotW[sz(c.vocabMajor ? v * H + h : h * V + v)], 0.0f) << "padding " << v;

  KernelError err{};
  ASSERT_EQ(cudaMemcpy(&err, dErr.p, sizeof(err), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(err.code, kNoError);
}

using Ch = LinearCrossEntropyChunking;
INSTANTIATE_TEST_SUITE_P(
    Cases, CudaLinearCrossEntropy,
    ::testing::Values(LceCase{false, Ch::Rows, DType::F32, DType::F32, DType::F32, 1e-5},
                      LceCase{true, Ch::Rows, DType::F32, DType::F32, DType::F32, 1e-5},
                      LceCase{false, Ch::Vocab, DType::F32, DType::F32, DType::F32, 1e-5},
                      LceCase{true, Ch::Vocab, DType::F32, DType::F32, DType::F32, 1e-5},
                      // bf16: dlogits rounded to bf16; the accumulated
                      // gradient through the f32 copy + final cast.
                      LceCase{false, Ch::Rows, DType::BF16, DType::BF16, DType::BF16, 1e-2},
                      LceCase{true, Ch::Rows, DType::BF16, DType::BF16, DType::BF16, 1e-2},
                      LceCase{false, Ch::Vocab, DType::BF16, DType::BF16, DType::BF16, 1e-2},
                      LceCase{true, Ch::Vocab, DType::BF16, DType::BF16, DType::BF16, 1e-2},
                      // f32 gradients of bf16 operands: accumulated in place.
                      LceCase{true, Ch::Rows, DType::BF16, DType::F32, DType::F32, 1e-2},
                      LceCase{false, Ch::Vocab, DType::BF16, DType::F32, DType::F32, 1e-2},
                      // A padded vocabulary: 283 classes (the last column
                      // chunk part padding) or 250 (the last chunk all
                      // padding) of 300 columns.
                      LceCase{true, Ch::Vocab, DType::F32, DType::F32, DType::F32, 1e-5, 283},
                      LceCase{false, Ch::Vocab, DType::F32, DType::F32, DType::F32, 1e-5, 250},
                      LceCase{true, Ch::Rows, DType::BF16, DType::BF16, DType::BF16, 1e-2, 250},
                      LceCase{false, Ch::Rows, DType::BF16, DType::F32, DType::F32, 1e-2, 283}),
    lceName);

TEST(CudaLinearCrossEntropyBlocks, VocabularySplitOverTwoBlocks) {
  // W [H, V] hidden-major split into the column blocks [0, 180), [180, 300):
  // per-block statistics combined, then each block's backward; dx sums over
  // the blocks, dW of each block is its columns of the whole dW.
  const int64_t rows = 45, H = 24, V = 300, split = 180;
  auto x = randomValues(sz(rows * H), DType::F32, 61, 1.0f);
  auto w = randomValues(sz(H * V), DType::F32, 62, 0.3f);
  auto targets = randomTargets(rows, V, 63, 0.1);
  Dev dx_(DType::F32, x), dTargets(targets), dAll(DType::F32, sz(2 * 3 * rows)),
      dLoss(DType::F32, 1), dDloss(DType::F32, std::vector<float>{0.9f}),
      dErr(DType::I32, sizeof(KernelError) / 4);
  const int64_t begins[2] = {0, split}, widths[2] = {split, V - split};
  Gemm gemm;
  auto shapeOf = [&](int b, Ch chunking) {
    LinearCrossEntropyShape s;
    s.rows = rows;
    s.hidden = H;
    s.vocab = V;
    s.vocabBegin = begins[b];
    s.blockVocab = widths[b];
    s.ignoreIndex = kIgnore;
    s.vocabMajor = false;
    s.chunking = chunking;
    s.chunkElems = 2048;
    return s;
  };
  for (Ch chunking : {Ch::Rows, Ch::Vocab}) {
    std::vector<float> gotDx(sz(rows * H), 0.0f), wantDx(sz(rows * H));
    std::vector<float> wantDw(sz(H * V));
    cpu::linear_cross_entropy_backward<float>(0.9, x.data(), w.data(), false, targets.data(),
                                              nullptr, wantDx.data(), wantDw.data(), rows, H, V,
                                              kIgnore);
    for (int b = 0; b < 2; ++b) {
      auto s = shapeOf(b, chunking);
      Dev dW(DType::F32, columns(w, H, V, begins[b], widths[b]));
      Dev ws(DType::I32, sz(linear_cross_entropy_workspace_bytes(s) / 4));
      float *st = dAll.as<float>() + b * 3 * rows;
      linear_cross_entropy_stats(gemm, dx_.view(), dW.view(), dTargets.as<int32_t>(), {}, s, st,
                                 ws.p, dErr.as<KernelError>(), nullptr);
    }
    Dev combined(DType::F32, sz(3 * rows));
    cross_entropy_combine_stats(dAll.as<float>(), 2, rows, combined.as<float>(), nullptr);
    cross_entropy_loss(combined.as<float>(), dTargets.as<int32_t>(), {}, rows, kIgnore, nullptr,
                       dLoss.view(), nullptr);
    double loss = cpu::linear_cross_entropy<float>(x.data(), w.data(), false, targets.data(),
                                                   nullptr, rows, H, V, kIgnore, nullptr);
    EXPECT_LE(relError(scalarOf(dLoss), loss), 1e-5);
    for (int b = 0; b < 2; ++b) {
      auto s = shapeOf(b, chunking);
      Dev dW(DType::F32, columns(w, H, V, begins[b], widths[b]));
      Dev ws(DType::I32, sz(linear_cross_entropy_workspace_bytes(s) / 4));
      Dev gx(DType::F32, sz(rows * H)), gw(DType::F32, sz(H * widths[b]));
      linear_cross_entropy_backward(gemm, dDloss.view(), dx_.view(), dW.view(),
                                    dTargets.as<int32_t>(), {}, s, combined.as<float>(), nullptr,
                                    gx.view(), gw.view(), ws.p, nullptr);
      auto part = gx.download();
      for (size_t i = 0; i < part.size(); ++i)
        gotDx[i] += part[i];
      EXPECT_LE(relError(gw.download(), columns(wantDw, H, V, begins[b], widths[b])), 1e-5)
          << "dw block " << b;
    }
    EXPECT_LE(relError(gotDx, wantDx), 1e-5) << "dx";
  }
}

TEST(CudaLinearCrossEntropyBlocks, BadTargetSetsTheKernelError) {
  const int64_t rows = 40, H = 16, V = 64;
  auto x = randomValues(sz(rows * H), DType::F32, 71, 1.0f);
  auto w = randomValues(sz(V * H), DType::F32, 72, 0.3f);
  auto targets = randomTargets(rows, V, 73, 0.0);
  targets[37] = int32_t(V);
  LinearCrossEntropyShape s;
  s.rows = rows;
  s.hidden = H;
  s.vocab = V;
  s.blockVocab = V;
  s.vocabMajor = true;
  s.chunking = Ch::Rows;
  s.chunkElems = 16 * V; // row 37 lies in the third chunk
  Dev dx_(DType::F32, x), dw_(DType::F32, w), dTargets(targets), dStats(DType::F32, sz(3 * rows)),
      ws(DType::I32, sz(linear_cross_entropy_workspace_bytes(s) / 4)),
      dErr(DType::I32, sizeof(KernelError) / 4);
  Gemm gemm;
  linear_cross_entropy_stats(gemm, dx_.view(), dw_.view(), dTargets.as<int32_t>(), {}, s,
                             dStats.as<float>(), ws.p, dErr.as<KernelError>(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  KernelError err{};
  ASSERT_EQ(cudaMemcpy(&err, dErr.p, sizeof(err), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(err.code, kBadTarget);
  EXPECT_EQ(err.position, 37);
  EXPECT_EQ(err.value, V);
  EXPECT_EQ(err.limit, V);
}

TEST(CudaLinearCrossEntropyBlocks, ChunkingAndWorkspaceOfTheLmHead) {
  LinearCrossEntropyShape s;
  s.rows = 8192;
  s.hidden = 4096;
  s.vocab = s.blockVocab = 131072;
  s.vocabMajor = true;
  // By vocabulary: all rows x 32768 columns (256 Mi f32 logits = 1 GiB).
  EXPECT_EQ(linear_cross_entropy_chunk_rows(s), 8192);
  EXPECT_EQ(linear_cross_entropy_chunk_vocab(s), 32768);
  // 1 GiB logits + 512 MiB bf16 dlogits + 128 MiB f32 dx (+ 256 B).
  EXPECT_EQ(linear_cross_entropy_workspace_bytes(s, DType::BF16, DType::BF16, DType::BF16),
            (int64_t(1664) << 20) + 256);
  EXPECT_EQ(linear_cross_entropy_workspace_bytes(s, DType::BF16, DType::F32, DType::BF16),
            (int64_t(1536) << 20) + 256);
  // GPT-2 124M at B = 64: more tokens than vocabulary, so chunks of rows, as
  // many as fit 256 Mi logits in multiples of 128 (13 chunks).
  s.rows = 65536;
  s.hidden = 768;
  s.vocab = s.blockVocab = 50304;
  EXPECT_EQ(linear_cross_entropy_chunk_rows(s), 5248);
  EXPECT_EQ(linear_cross_entropy_chunk_vocab(s), 50304);
}

} // namespace
