//===- AttentionTest.cpp - CUDA attention against the CPU kernels ---------===//
//
// runtime/cuda/Attention.cu and AttentionTC.cu (attention_forward /
// attention_backward) against cpu::attention_forward / cpu::attention_backward
// in f32 on random inputs.
//
// Metric (per output tensor): max_i |gpu_i - ref_i| / max(max_i |ref_i|,
// 1e-3), i.e. the largest absolute error relative to the largest reference
// magnitude of that tensor (a non-finite GPU value fails). The 1e-3 floor
// only guards a tensor that is zero in exact arithmetic, where both sides
// hold rounding noise: S = 1 gives dq = dk = 0 (the f32 cases start at
// S = 2; the tensor-core cases include S = 1, where dq and dk are checked
// against that floor); every other tensor tested has max |ref| well above
// 1e-3.
// Bounds: 1e-5 for f32 storage;
// 1e-2 for bf16 and 2e-3 for f16, where the CPU reference runs in f32 on the
// very inputs the GPU gets (q, k, v, dout and, for the backward, out rounded
// to the storage dtype first), so the error is the GPU's single rounding of
// each result plus f32 noise. lse is f32 for every storage dtype: 1e-5.
//
// Cases on the tensor-core path (bf16/f16, D = 64 / 128, aligned:
// AttentionTC.cu, names ending in _tc) use 1e-2 for both dtypes: P and dS
// are rounded to the storage dtype as mma inputs.
//
// Every case also checks that the backward is bitwise deterministic (two runs
// agree), that every output element is written (outputs and workspace start
// as NaN bytes), and that lse = nullptr gives the same output.
//
//===----------------------------------------------------------------------===//
#include "runtime/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using namespace shardc;
using shardc::cuda::TView;
using shardc::rt::DType;

namespace {

/// A device allocation with 16 spare bytes so that a view can start one
/// element past a 16-byte boundary (to exercise the unaligned load path).
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) { SHARDC_CUDA(cudaMalloc(&p_, bytes + 16)); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *at(size_t offsetBytes) const { return static_cast<char *>(p_) + offsetBytes; }

private:
  void *p_ = nullptr;
};

/// Rounds x to the storage dtype (in place) and returns its device bytes.
std::vector<uint8_t> toStorage(std::vector<float> &x, DType t) {
  std::vector<uint8_t> bytes(x.size() * rt::dtype_size(t));
  for (size_t i = 0; i < x.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(bytes.data() + 4 * i, &x[i], 4);
      continue;
    }
    uint16_t h = t == DType::BF16 ? cpu::f32_to_bf16(x[i]) : cpu::f32_to_f16(x[i]);
    x[i] = t == DType::BF16 ? cpu::bf16_to_f32(h) : cpu::f16_to_f32(h);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<float> fromStorage(const std::vector<uint8_t> &bytes, DType t) {
  size_t n = bytes.size() / rt::dtype_size(t);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&x[i], bytes.data() + 4 * i, 4);
      continue;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    x[i] = t == DType::BF16 ? cpu::bf16_to_f32(h) : cpu::f16_to_f32(h);
  }
  return x;
}

std::vector<float> randomVector(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// max |gpu - ref| / max(max |ref|, 1e-3) (infinity if gpu has a
/// non-finite value).
double relMaxError(const std::vector<float> &gpu, const std::vector<float> &ref) {
  double maxRef = 1e-3, maxErr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(gpu[i]))
      return INFINITY;
    maxRef = std::max(maxRef, std::fabs(double(ref[i])));
    maxErr = std::max(maxErr, std::fabs(double(gpu[i]) - double(ref[i])));
  }
  return maxErr / maxRef;
}

struct Case {
  DType dtype;
  int64_t B, S, Hq, Hkv, D;
  bool causal;
  bool misaligned = false; ///< views start 1 element past a 16-byte boundary
  double scaleFactor = 1.0; ///< scale = scaleFactor / sqrt(D)
};

/// The cases attention_forward / attention_backward send to the tensor-core
/// kernels (AttentionTC.cu): bf16/f16, D = 64 or 128, 16-byte aligned views.
bool takesTensorCores(const Case &c) {
  return c.dtype != DType::F32 && (c.D == 64 || c.D == 128) && !c.misaligned;
}

std::string describe(const Case &c) {
  std::string n = std::string(rt::dtype_name(c.dtype)) + "_B" + std::to_string(c.B) + "_S" +
                  std::to_string(c.S) + "_Hq" + std::to_string(c.Hq) + "_Hkv" +
                  std::to_string(c.Hkv) + "_D" + std::to_string(c.D) +
                  (c.causal ? "_causal" : "_full");
  if (c.misaligned)
    n += "_misaligned";
  if (c.scaleFactor != 1.0)
    n += "_sharp";
  if (takesTensorCores(c))
    n += "_tc";
  return n;
}
std::string caseName(const ::testing::TestParamInfo<Case> &info) { return describe(info.param); }
// gtest prints a failing case's parameter with this.
void PrintTo(const Case &c, std::ostream *os) { *os << describe(c); }

double tolerance(DType t) {
  switch (t) {
  case DType::F32:
    return 1e-5;
  case DType::BF16:
    return 1e-2;
  default:
    return 2e-3;
  }
}

class CudaAttention : public ::testing::TestWithParam<Case> {};

TEST_P(CudaAttention, MatchesCpuReference) {
  const Case c = GetParam();
  const DType dt = c.dtype;
  const int64_t es = rt::dtype_size(dt);
  const size_t nQ = size_t(c.B * c.S * c.Hq * c.D), nKV = size_t(c.B * c.S * c.Hkv * c.D);
  const size_t nStats = size_t(c.B * c.Hq * c.S);
  const double scale = c.scaleFactor / std::sqrt(double(c.D));

  // Inputs, rounded to the storage dtype; the CPU reference sees the rounded
  // values in f32.
  std::vector<float> q = randomVector(nQ, 11, -2.f, 2.f), k = randomVector(nKV, 12, -2.f, 2.f),
                     v = randomVector(nKV, 13, -1.f, 1.f), dout = randomVector(nQ, 14, -1.f, 1.f);
  std::vector<uint8_t> qB = toStorage(q, dt), kB = toStorage(k, dt), vB = toStorage(v, dt),
                       doutB = toStorage(dout, dt);

  std::vector<float> outRef(nQ), lseRef(nStats);
  cpu::attention_forward<float>(q.data(), k.data(), v.data(), outRef.data(), lseRef.data(), c.B,
                                c.S, c.Hq, c.Hkv, c.D, c.causal, scale);
  // The backward's `out` input: the forward result in the storage dtype.
  std::vector<float> outIn = outRef;
  std::vector<uint8_t> outInB = toStorage(outIn, dt);
  std::vector<float> dqRef(nQ), dkRef(nKV), dvRef(nKV);
  cpu::attention_backward<float>(dout.data(), q.data(), k.data(), v.data(), outIn.data(),
                                 dqRef.data(), dkRef.data(), dvRef.data(), c.B, c.S, c.Hq,
                                 c.Hkv, c.D, c.causal, scale);

  const size_t off = c.misaligned ? size_t(es) : 0;
  DeviceBuffer dQ(nQ * es), dK(nKV * es), dV(nKV * es), dOut(nQ * es), dOutIn(nQ * es),
      dDout(nQ * es), dDq(nQ * es), dDk(nKV * es), dDv(nKV * es), dLse(nStats * 4);
  const int64_t wsBytes =
      cuda::attention_backward_workspace_bytes(c.B, c.S, c.Hq, c.Hkv, c.D);
  DeviceBuffer ws{size_t(wsBytes)};
  auto view = [&](DeviceBuffer &b) { return TView{b.at(off), dt}; };

  cudaStream_t s;
  SHARDC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  SHARDC_CUDA(cudaMemcpyAsync(view(dQ).p, qB.data(), qB.size(), cudaMemcpyHostToDevice, s));
  SHARDC_CUDA(cudaMemcpyAsync(view(dK).p, kB.data(), kB.size(), cudaMemcpyHostToDevice, s));
  SHARDC_CUDA(cudaMemcpyAsync(view(dV).p, vB.data(), vB.size(), cudaMemcpyHostToDevice, s));
  SHARDC_CUDA(
      cudaMemcpyAsync(view(dDout).p, doutB.data(), doutB.size(), cudaMemcpyHostToDevice, s));
  SHARDC_CUDA(
      cudaMemcpyAsync(view(dOutIn).p, outInB.data(), outInB.size(), cudaMemcpyHostToDevice, s));
  // NaN bytes everywhere an output or the workspace lives: every element
  // must be written, and the workspace needs no zeroing.
  auto poison = [&](DeviceBuffer &b, size_t n) {
    SHARDC_CUDA(cudaMemsetAsync(view(b).p, 0xff, n * es, s));
  };
  poison(dOut, nQ);
  poison(dDq, nQ);
  poison(dDk, nKV);
  poison(dDv, nKV);
  SHARDC_CUDA(cudaMemsetAsync(dLse.at(0), 0xff, nStats * 4, s));
  SHARDC_CUDA(cudaMemsetAsync(ws.at(0), 0xff, size_t(wsBytes), s));

  cuda::attention_forward(view(dQ), view(dK), view(dV), view(dOut),
                          static_cast<float *>(dLse.at(0)), c.B, c.S, c.Hq, c.Hkv, c.D, c.causal,
                          scale, s);
  cuda::attention_backward(view(dDout), view(dQ), view(dK), view(dV), view(dOutIn), view(dDq),
                           view(dDk), view(dDv), c.B, c.S, c.Hq, c.Hkv, c.D, c.causal, scale,
                           ws.at(0), s);

  auto download = [&](DeviceBuffer &b, size_t n) {
    std::vector<uint8_t> bytes(n * es);
    SHARDC_CUDA(cudaMemcpyAsync(bytes.data(), view(b).p, bytes.size(), cudaMemcpyDeviceToHost, s));
    SHARDC_CUDA(cudaStreamSynchronize(s));
    return bytes;
  };
  std::vector<uint8_t> outB = download(dOut, nQ), dqB = download(dDq, nQ),
                       dkB = download(dDk, nKV), dvB = download(dDv, nKV);
  std::vector<float> lse(nStats);
  SHARDC_CUDA(cudaMemcpyAsync(lse.data(), dLse.at(0), nStats * 4, cudaMemcpyDeviceToHost, s));
  SHARDC_CUDA(cudaStreamSynchronize(s));

  const double tol = takesTensorCores(c) ? 1e-2 : tolerance(dt);
  EXPECT_LE(relMaxError(fromStorage(outB, dt), outRef), tol) << "out";
  EXPECT_LE(relMaxError(lse, lseRef), 1e-5) << "lse";
  EXPECT_LE(relMaxError(fromStorage(dqB, dt), dqRef), tol) << "dq";
  EXPECT_LE(relMaxError(fromStorage(dkB, dt), dkRef), tol) << "dk";
  EXPECT_LE(relMaxError(fromStorage(dvB, dt), dvRef), tol) << "dv";

  // Deterministic: a second backward (workspace dirty from the first) gives
  // the same bits; the forward without lse gives the same output.
  poison(dOut, nQ);
  poison(dDq, nQ);
  poison(dDk, nKV);
  poison(dDv, nKV);
  cuda::attention_backward(view(dDout), view(dQ), view(dK), view(dV), view(dOutIn), view(dDq),
                           view(dDk), view(dDv), c.B, c.S, c.Hq, c.Hkv, c.D, c.causal, scale,
                           ws.at(0), s);
  cuda::attention_forward(view(dQ), view(dK), view(dV), view(dOut), nullptr, c.B, c.S, c.Hq,
                          c.Hkv, c.D, c.causal, scale, s);
  EXPECT_TRUE(download(dDq, nQ) == dqB) << "dq differs between two runs";
  EXPECT_TRUE(download(dDk, nKV) == dkB) << "dk differs between two runs";
  EXPECT_TRUE(download(dDv, nKV) == dvB) << "dv differs between two runs";
  EXPECT_TRUE(download(dOut, nQ) == outB) << "out differs with lse = nullptr";
  SHARDC_CUDA(cudaStreamDestroy(s));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaAttention,
    ::testing::Values(
        // f32: GQA and MHA, causal and bidirectional, D = 64 / 128 / 40 / 17
        // / 100, S = 77 (partial tile), 256, 2, 130.
        Case{DType::F32, 2, 77, 4, 2, 64, true}, Case{DType::F32, 1, 256, 4, 2, 128, false},
        Case{DType::F32, 2, 77, 2, 2, 40, true}, Case{DType::F32, 1, 256, 2, 2, 64, true},
        Case{DType::F32, 1, 77, 4, 1, 128, true}, Case{DType::F32, 2, 33, 2, 1, 17, false},
        Case{DType::F32, 1, 2, 2, 2, 64, true}, Case{DType::F32, 1, 130, 3, 3, 100, true},
        Case{DType::F32, 1, 77, 4, 2, 64, true, true},
        Case{DType::F32, 1, 200, 2, 1, 64, false, false, 4.0},
        // bf16
        Case{DType::BF16, 2, 256, 4, 2, 64, true}, Case{DType::BF16, 1, 77, 4, 4, 128, false},
        Case{DType::BF16, 2, 77, 4, 2, 40, true}, Case{DType::BF16, 1, 77, 2, 1, 100, false},
        Case{DType::BF16, 1, 256, 4, 2, 128, true, true},
        // f16
        Case{DType::F16, 1, 77, 4, 2, 64, true}, Case{DType::F16, 1, 100, 2, 2, 32, false}),
    caseName);

// The tensor-core path (AttentionTC.cu: bf16/f16, D = 64 / 128, aligned):
// every S below (1, a ragged 17, one whole tile, 127 = one row short of two
// tiles, 200, 1024), causal and not, with MHA (Hq = Hkv), GQA (8 query heads
// on 2 kv heads) and MQA (one kv head) in turn, B = 2. Bound 1e-2 for both
// storage dtypes (P and dS enter the mma rounded to the storage dtype).
std::vector<Case> tensorCoreCases() {
  struct Heads {
    int64_t Hq, Hkv;
  };
  const Heads heads[] = {{4, 4}, {8, 2}, {4, 1}};
  std::vector<Case> cases;
  int i = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t D : {64, 128})
      for (int64_t S : {1, 17, 64, 127, 200, 1024})
        for (bool causal : {true, false}) {
          const Heads h = heads[i++ % 3];
          cases.push_back(Case{dt, 2, S, h.Hq, h.Hkv, D, causal});
        }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TensorCore, CudaAttention, ::testing::ValuesIn(tensorCoreCases()),
                         caseName);

TEST(CudaAttentionArgs, RejectsBadArguments) {
  TView f32{nullptr, DType::F32}, b16{nullptr, DType::BF16}, i32{nullptr, DType::I32};
  cudaStream_t s = nullptr;
  // Mixed dtypes, unsupported dtypes, D > 128, Hq not a multiple of Hkv.
  EXPECT_THROW(cuda::attention_forward(f32, b16, f32, f32, nullptr, 1, 8, 2, 2, 64, true, 0.1, s),
               rt::Error);
  EXPECT_THROW(cuda::attention_forward(i32, i32, i32, i32, nullptr, 1, 8, 2, 2, 64, true, 0.1, s),
               rt::Error);
  EXPECT_THROW(cuda::attention_forward(f32, f32, f32, f32, nullptr, 1, 8, 2, 2, 129, true, 0.1, s),
               rt::Error);
  EXPECT_THROW(cuda::attention_forward(f32, f32, f32, f32, nullptr, 1, 8, 3, 2, 64, true, 0.1, s),
               rt::Error);
  EXPECT_THROW(cuda::attention_backward(b16, f32, f32, f32, f32, f32, f32, f32, 1, 8, 2, 2, 64,
                                        true, 0.1, nullptr, s),
               rt::Error);
  EXPECT_THROW(cuda::attention_backward(f32, f32, f32, f32, f32, f32, b16, f32, 1, 8, 2, 2, 64,
                                        true, 0.1, nullptr, s),
               rt::Error);
  // Empty shapes launch nothing.
  EXPECT_NO_THROW(
      cuda::attention_forward(f32, f32, f32, f32, nullptr, 0, 8, 2, 2, 64, true, 0.1, s));
  EXPECT_NO_THROW(
      cuda::attention_forward(f32, f32, f32, f32, nullptr, 1, 0, 2, 2, 64, true, 0.1, s));
  EXPECT_EQ(cuda::attention_backward_workspace_bytes(0, 8, 2, 2, 64), 0);
}

TEST(CudaAttentionArgs, NoQueryHeadsZeroesDkDv) {
  // As the CPU backward: with Hq = 0 no query reads k or v.
  const int64_t B = 1, S = 5, Hkv = 2, D = 8, n = B * S * Hkv * D;
  DeviceBuffer dk(n * 4), dv(n * 4);
  SHARDC_CUDA(cudaMemset(dk.at(0), 0xff, n * 4));
  SHARDC_CUDA(cudaMemset(dv.at(0), 0xff, n * 4));
  TView none{nullptr, DType::F32};
  cuda::attention_backward(none, none, none, none, none, none, TView{dk.at(0), DType::F32},
                           TView{dv.at(0), DType::F32}, B, S, 0, Hkv, D, true, 0.1, nullptr,
                           nullptr);
  std::vector<float> hk(n), hv(n);
  SHARDC_CUDA(cudaMemcpy(hk.data(), dk.at(0), n * 4, cudaMemcpyDeviceToHost));
  SHARDC_CUDA(cudaMemcpy(hv.data(), dv.at(0), n * 4, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(hk[i], 0.f) << i;
    EXPECT_EQ(hv[i], 0.f) << i;
  }
}

} // namespace
