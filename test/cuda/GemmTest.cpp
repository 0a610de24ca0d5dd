//===- GemmTest.cpp - cuBLASLt GEMMs against cpu::gemm_batched ------------===//
//
// Row-major GEMMs with every transpose combination, padded leading
// dimensions, strided and broadcast batches and alpha/beta, in f32 (CUBLAS_
// COMPUTE_32F, no TF32: within 1e-5 of OpenBLAS) and bf16/f16 (1e-2), and each
// epilogue against the CPU kernels it fuses (bias_add, gelu_tanh,
// gelu_tanh_backward, reduce_sum). Errors: measured as max |gpu - cpu| /
// max |cpu| over the tensor.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Gemm.h"
#include "runtime/Error.h"
#include "runtime/cpu/Kernels.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace shardc;
using shardc::cuda::Epilogue;
using shardc::cuda::Gemm;
using shardc::cuda::GemmArgs;
using shardc::cuda::TView;
using shardc::rt::DType;

namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// f32 -> storage bits of `t` and back (the CPU reference sees the rounded
/// values the GPU sees).
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

std::vector<uint8_t> encode(DType t, const std::vector<float> &v) {
  std::vector<uint8_t> bytes(v.size() * rt::dtype_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(bytes.data() + 4 * i, &v[i], 4);
    } else {
      uint16_t h = t == DType::BF16 ? cpu::f32_to_bf16(v[i]) : cpu::f32_to_f16(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(DType t, const std::vector<uint8_t> &bytes) {
  size_t n = bytes.size() / rt::dtype_size(t);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&v[i], bytes.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = t == DType::BF16 ? cpu::bf16_to_f32(h) : cpu::f16_to_f32(h);
    }
  }
  return v;
}

/// A device tensor of `n` elements of dtype t (plus `pad` spare bytes).
struct DevTensor {
  DType dtype = DType::F32;
  size_t n = 0;
  void *p = nullptr;
  DevTensor(DType t, size_t count, size_t padBytes = 0) : dtype(t), n(count) {
    EXPECT_EQ(cudaMalloc(&p, n * rt::dtype_size(t) + padBytes + 16), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0, n * rt::dtype_size(t) + padBytes + 16), cudaSuccess);
  }
  DevTensor(DType t, const std::vector<float> &v) : DevTensor(t, v.size()) { upload(v); }
  ~DevTensor() { cudaFree(p); }
  DevTensor(const DevTensor &) = delete;
  DevTensor &operator=(const DevTensor &) = delete;
  void upload(const std::vector<float> &v) {
    auto bytes = encode(dtype, v);
    EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<float> download() const {
    std::vector<uint8_t> bytes(n * rt::dtype_size(dtype));
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return decode(dtype, bytes);
  }
  TView view() const { return {p, dtype}; }
};

/// Uniform [-1, 1) values already rounded to `t`.
std::vector<float> randomValues(size_t n, DType t, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = roundTo(t, scale * u(gen));
  return v;
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

/// The elements a row-major [rows, ld] matrix occupies.
size_t span(int64_t rows, int64_t cols, int64_t ld) { return sz((rows - 1) * ld + cols); }

struct Case {
  int64_t batch;
  bool transA, transB;
  int64_t m, n, k, padA, padB, padC;
  bool broadcastB;
  float alpha, beta;
};

std::string name(const Case &c) {
  return "batch " + std::to_string(c.batch) + " tA " + std::to_string(c.transA) + " tB " +
         std::to_string(c.transB) + " " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + " alpha " + std::to_string(c.alpha) + " beta " +
         std::to_string(c.beta);
}

/// Runs one case on the GPU with A/B of dtype ab and C of dtype ct, and on
/// the CPU in f32 from the same (rounded) values; returns the relative error.
double runCase(Gemm &gemm, const Case &c, DType ab, DType ct, uint32_t seed) {
  const int64_t aRows = c.transA ? c.k : c.m, aCols = c.transA ? c.m : c.k;
  const int64_t bRows = c.transB ? c.n : c.k, bCols = c.transB ? c.k : c.n;
  const int64_t lda = aCols + c.padA, ldb = bCols + c.padB, ldc = c.n + c.padC;
  const int64_t strideA = int64_t(span(aRows, aCols, lda)) + 5;
  const int64_t strideB = c.broadcastB ? 0 : int64_t(span(bRows, bCols, ldb)) + 3;
  const int64_t strideC = int64_t(span(c.m, c.n, ldc)) + 8;
  const size_t nA = sz((c.batch - 1) * strideA) + span(aRows, aCols, lda);
  const size_t nB = sz((c.batch - 1) * strideB) + span(bRows, bCols, ldb);
  const size_t nC = sz((c.batch - 1) * strideC) + span(c.m, c.n, ldc);
  std::vector<float> a = randomValues(nA, ab, seed), b = randomValues(nB, ab, seed + 1),
                     c0 = randomValues(nC, ct, seed + 2);
  DevTensor da(ab, a), db(ab, b), dc(ct, c0);

  GemmArgs g;
  g.batch = c.batch;
  g.transA = c.transA;
  g.transB = c.transB;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.alpha = c.alpha;
  g.beta = c.beta;
  g.a = da.view();
  g.b = db.view();
  g.c = dc.view();
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.strideA = strideA;
  g.strideB = strideB;
  g.strideC = strideC;
  gemm.run(g, nullptr);
  std::vector<float> got = dc.download();

  std::vector<float> want = c0;
  cpu::gemm_batched<float>(c.batch, c.transA, c.transB, c.m, c.n, c.k, c.alpha, a.data(), lda,
                           strideA, b.data(), ldb, strideB, c.beta, want.data(), ldc, strideC);
  // Compare the matrices only (the gaps between batch matrices and the
  // padding of ldc are not written by either).
  std::vector<float> gotM, wantM;
  for (int64_t i = 0; i < c.batch; ++i)
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t col = 0; col < c.n; ++col) {
        size_t idx = sz(i * strideC + r * ldc + col);
        gotM.push_back(got[idx]);
        wantM.push_back(want[idx]);
      }
  return relError(gotM, wantM);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool tA : {false, true})
    for (bool tB : {false, true}) {
      out.push_back({1, tA, tB, 37, 53, 29, 0, 0, 0, false, 1.0f, 0.0f});
      out.push_back({1, tA, tB, 128, 96, 64, 3, 5, 7, false, 1.5f, 0.5f});
      out.push_back({3, tA, tB, 33, 17, 45, 2, 0, 1, false, 1.0f, 0.0f});
      out.push_back({4, tA, tB, 16, 40, 24, 0, 1, 0, true, 0.5f, 1.0f});
    }
  return out;
}

TEST(CudaGemm, F32MatchesCpuGemmBatched) {
  Gemm gemm;
  uint32_t seed = 1;
  for (const Case &c : cases())
    EXPECT_LE(runCase(gemm, c, DType::F32, DType::F32, seed += 10), 1e-5) << name(c);
}

TEST(CudaGemm, Bf16AndF16MatchCpuGemmBatched) {
  Gemm gemm;
  uint32_t seed = 100;
  for (const Case &c : cases()) {
    EXPECT_LE(runCase(gemm, c, DType::BF16, DType::BF16, seed += 10), 1e-2) << "bf16 " << name(c);
    EXPECT_LE(runCase(gemm, c, DType::BF16, DType::F32, seed += 10), 1e-2)
        << "bf16->f32 " << name(c);
    EXPECT_LE(runCase(gemm, c, DType::F16, DType::F16, seed += 10), 1e-2) << "f16 " << name(c);
  }
}

TEST(CudaGemm, LargeKAndPlanReuse) {
  Gemm gemm;
  Case c{1, false, false, 256, 384, 1024, 0, 0, 0, false, 1.0f, 0.0f};
  // The same key twice (cached plan), then a different shape, then the first.
  EXPECT_LE(runCase(gemm, c, DType::F32, DType::F32, 7), 1e-5);
  EXPECT_LE(runCase(gemm, c, DType::F32, DType::F32, 8), 1e-5);
  EXPECT_LE(runCase(gemm, c, DType::BF16, DType::F32, 9), 1e-2);
  EXPECT_LE(runCase(gemm, c, DType::F32, DType::F32, 10), 1e-5);
}

TEST(CudaGemm, MisalignedOperands) {
  // A starts one element into its buffer (4-byte alignment): the plan must
  // not assume 16- or 256-byte alignment.
  Gemm gemm;
  const int64_t m = 19, n = 23, k = 31;
  std::vector<float> a = randomValues(sz(m * k) + 1, DType::F32, 3),
                     b = randomValues(sz(k * n), DType::F32, 4);
  DevTensor da(DType::F32, a), db(DType::F32, b), dc(DType::F32, sz(m * n));
  GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = {static_cast<float *>(da.p) + 1, DType::F32};
  g.b = db.view();
  g.c = dc.view();
  g.lda = k;
  g.ldb = n;
  g.ldc = n;
  gemm.run(g, nullptr);
  std::vector<float> want(sz(m * n));
  cpu::gemm<float>(false, false, m, n, k, 1.0f, a.data() + 1, k, b.data(), n, 0.0f, want.data(), n);
  EXPECT_LE(relError(dc.download(), want), 1e-5);
}

TEST(CudaGemm, BadArgumentsThrowWithTheShape) {
  Gemm gemm;
  DevTensor a(DType::BF16, 64 * 64), b(DType::F32, 64 * 64), c(DType::F32, 64 * 64);
  GemmArgs g;
  g.m = 37;
  g.n = 64;
  g.k = 64;
  g.a = a.view();
  g.b = b.view();
  g.c = c.view();
  g.lda = g.ldb = g.ldc = 64;
  try {
    gemm.run(g, nullptr);
    FAIL() << "mixed A/B dtypes accepted";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("m 37"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(gemm.supports(g));
  g.b = {b.p, DType::BF16};
  g.ldc = 32; // shorter than n
  EXPECT_THROW(gemm.run(g, nullptr), rt::Error);
  g.ldc = 64;
  EXPECT_TRUE(gemm.supports(g));
  // The bias-gradient epilogue needs an untransposed B.
  g.c = {c.p, DType::BF16};
  g.epilogue = Epilogue::BGrad;
  g.bias = {c.p, DType::BF16};
  g.transB = true;
  EXPECT_THROW(gemm.run(g, nullptr), rt::Error);
  // Epilogues with batch > 1 are refused.
  g.transB = false;
  g.batch = 2;
  g.strideA = g.strideB = 0;
  g.strideC = 64 * 64;
  EXPECT_THROW(gemm.run(g, nullptr), rt::Error);
}

//===----------------------------------------------------------------------===//
// Epilogues
//===----------------------------------------------------------------------===//

struct DtypePair {
  DType ab, c;
  double tol;
  bool mustSupport; ///< the training path relies on it
};

const DtypePair kEpiloguePairs[] = {{DType::BF16, DType::BF16, 2e-2, true},
                                    {DType::BF16, DType::F32, 1e-2, false},
                                    {DType::F16, DType::F16, 2e-2, false},
                                    {DType::F32, DType::F32, 1e-5, false}};

bool checkSupported(Epilogue e, const DtypePair &p, const char *what) {
  if (Gemm::epilogueSupported(e, p.ab, p.c))
    return true;
  if (p.mustSupport)
    ADD_FAILURE() << what << " is not supported for " << rt::dtype_name(p.ab) << " -> "
                  << rt::dtype_name(p.c);
  else
    std::printf("note: %s not supported for %s -> %s (skipped)\n", what, rt::dtype_name(p.ab),
                rt::dtype_name(p.c));
  return false;
}

/// C [m, n] = A [m, k] B [k, n] on the CPU, from rounded values.
std::vector<float> cpuProduct(const std::vector<float> &a, const std::vector<float> &b, int64_t m,
                              int64_t n, int64_t k) {
  std::vector<float> c(sz(m * n));
  cpu::gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  return c;
}

TEST(CudaGemm, BiasEpilogue) {
  Gemm gemm;
  const int64_t m = 64, n = 96, k = 48;
  for (const DtypePair &p : kEpiloguePairs) {
    if (!checkSupported(Epilogue::Bias, p, "bias"))
      continue;
    auto a = randomValues(sz(m * k), p.ab, 11), b = randomValues(sz(k * n), p.ab, 12),
         bias = randomValues(sz(n), p.c, 13);
    DevTensor da(p.ab, a), db(p.ab, b), dbias(p.c, bias), dc(p.c, sz(m * n));
    GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = da.view();
    g.b = db.view();
    g.c = dc.view();
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    g.epilogue = Epilogue::Bias;
    g.bias = dbias.view();
    gemm.run(g, nullptr);
    auto want = cpuProduct(a, b, m, n, k);
    cpu::bias_add<float>(want.data(), bias.data(), want.data(), m, n);
    EXPECT_LE(relError(dc.download(), want), p.tol) << rt::dtype_name(p.ab);
  }
}

TEST(CudaGemm, BiasGeluAuxEpilogue) {
  Gemm gemm;
  const int64_t m = 64, n = 96, k = 48;
  for (const DtypePair &p : kEpiloguePairs) {
    if (!checkSupported(Epilogue::BiasGeluAux, p, "bias+gelu(aux)"))
      continue;
    auto a = randomValues(sz(m * k), p.ab, 21), b = randomValues(sz(k * n), p.ab, 22),
         bias = randomValues(sz(n), p.c, 23);
    DevTensor da(p.ab, a), db(p.ab, b), dbias(p.c, bias), dc(p.c, sz(m * n)), daux(p.c, sz(m * n));
    GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = da.view();
    g.b = db.view();
    g.c = dc.view();
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    g.epilogue = Epilogue::BiasGeluAux;
    g.bias = dbias.view();
    g.aux = daux.view();
    gemm.run(g, nullptr);
    auto pre = cpuProduct(a, b, m, n, k);
    cpu::bias_add<float>(pre.data(), bias.data(), pre.data(), m, n);
    std::vector<float> act(pre.size());
    cpu::gelu_tanh<float>(pre.data(), act.data(), int64_t(pre.size()));
    EXPECT_LE(relError(daux.download(), pre), p.tol) << "aux " << rt::dtype_name(p.ab);
    EXPECT_LE(relError(dc.download(), act), p.tol) << "gelu " << rt::dtype_name(p.ab);
  }
}

TEST(CudaGemm, DGeluEpilogue) {
  Gemm gemm;
  const int64_t m = 64, n = 96, k = 48;
  for (const DtypePair &p : kEpiloguePairs) {
    if (!checkSupported(Epilogue::DGelu, p, "dgelu(aux)"))
      continue;
    auto a = randomValues(sz(m * k), p.ab, 31), b = randomValues(sz(k * n), p.ab, 32),
         aux = randomValues(sz(m * n), p.c, 33, 3.0f);
    DevTensor da(p.ab, a), db(p.ab, b), daux(p.c, aux), dc(p.c, sz(m * n));
    GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = da.view();
    g.b = db.view();
    g.c = dc.view();
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    g.epilogue = Epilogue::DGelu;
    g.aux = daux.view();
    gemm.run(g, nullptr);
    auto dy = cpuProduct(a, b, m, n, k);
    std::vector<float> want(dy.size());
    cpu::gelu_tanh_backward<float>(dy.data(), aux.data(), want.data(), int64_t(dy.size()));
    EXPECT_LE(relError(dc.download(), want), p.tol) << rt::dtype_name(p.ab);
  }
}

TEST(CudaGemm, BGradEpilogueSumsTheColumnsOfDy) {
  // dW [in, out] = X^T dY with X [tokens, in], dY [tokens, out]: A = X
  // (transposed), B = dY; the bias gradient is the column sums of dY.
  Gemm gemm;
  const int64_t tokens = 80, in = 48, out = 64;
  for (const DtypePair &p : kEpiloguePairs) {
    if (!checkSupported(Epilogue::BGrad, p, "bgrad"))
      continue;
    auto x = randomValues(sz(tokens * in), p.ab, 41), dy = randomValues(sz(tokens * out), p.ab, 42);
    DevTensor dx(p.ab, x), ddy(p.ab, dy), dw(p.c, sz(in * out)), db(p.c, sz(out));
    GemmArgs g;
    g.transA = true;
    g.m = in;
    g.n = out;
    g.k = tokens;
    g.a = dx.view();
    g.b = ddy.view();
    g.c = dw.view();
    g.lda = in;
    g.ldb = out;
    g.ldc = out;
    g.epilogue = Epilogue::BGrad;
    g.bias = db.view();
    gemm.run(g, nullptr);
    std::vector<float> wantW(sz(in * out)), wantB(sz(out));
    cpu::gemm<float>(true, false, in, out, tokens, 1.0f, x.data(), in, dy.data(), out, 0.0f,
                     wantW.data(), out);
    cpu::reduce_sum<float>(dy.data(), wantB.data(), {tokens, out}, {0});
    EXPECT_LE(relError(dw.download(), wantW), p.tol) << "dW " << rt::dtype_name(p.ab);
    EXPECT_LE(relError(db.download(), wantB), p.tol) << "dbias " << rt::dtype_name(p.ab);
  }
}

TEST(CudaGemm, EpilogueSupportFollowsTheDtypeRules) {
  EXPECT_FALSE(Gemm::epilogueSupported(Epilogue::Bias, DType::F32, DType::BF16));
  EXPECT_FALSE(Gemm::epilogueSupported(Epilogue::None, DType::BF16, DType::F16));
  EXPECT_FALSE(Gemm::epilogueSupported(Epilogue::None, DType::F64, DType::F64));
  EXPECT_TRUE(Gemm::epilogueSupported(Epilogue::None, DType::BF16, DType::F32));
  EXPECT_TRUE(Gemm::epilogueSupported(Epilogue::Bias, DType::BF16, DType::BF16));
}

} // namespace
