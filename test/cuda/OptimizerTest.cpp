//===- OptimizerTest.cpp - Optimizer.cu against the CPU kernels -----------===//
//
// sum_squares(_multi) and adamw_multi (per-tensor weight decay, bf16
// copies) against runtime/cpu/Optimizer.cpp, and the
// step-scalar kernels against KernelRunner's formulas (restated here, in
// double, as KernelRunner::runKernel computes them), with scalar operands of
// several dtypes (f32, bf16, i32).
//
// Metric: relError = max |gpu - cpu| / max(max |cpu|, 1e-30) per tensor
// (param, m and v each), within tolFor(dtype): f32 1e-5, bf16 1e-2; the
// scalar kernels within 1e-6 relative (they compute in double and round
// once); sum_squares within 1e-5 relative and bitwise deterministic.
//
//===----------------------------------------------------------------------===//
#include "test/cuda/DeviceBuffer.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceKernels.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace shardc;
using namespace shardc::test;
using rt::DType;

namespace {

//===----------------------------------------------------------------------===//
// sum_squares
//===----------------------------------------------------------------------===//

class SumSquares : public ::testing::TestWithParam<DType> {};

std::string dtypeParamName(const ::testing::TestParamInfo<DType> &info) {
  return dtypeName(info.param);
}

INSTANTIATE_TEST_SUITE_P(DTypes, SumSquares,
                         ::testing::Values(DType::F32, DType::BF16, DType::F16), dtypeParamName);

TEST_P(SumSquares, MatchesCpuAndIsDeterministic) {
  const DType t = GetParam();
  for (int64_t n : {0, 1, 7, 4096, 100003, 3000001})
    for (bool misalign : {false, true}) {
      SCOPED_TRACE(testing::Message() << "n " << n << (misalign ? " misaligned" : ""));
      auto x = randomIn(t, size_t(n) + 1, 40, -2.0, 2.0);
      x[0] = 0.0f;
      const size_t off = misalign ? 1 : 0;
      const double ref = cpu::sum_squares(x.data() + off, n);
      DeviceTensor dx(x, t);
      const int64_t ws = cuda::sum_squares_workspace_bytes(n);
      DeviceBuffer work(size_t(std::max<int64_t>(ws, 1))), out(sizeof(float));
      float got[2];
      for (int run = 0; run < 2; ++run) {
        cuda::sum_squares(dx.viewAt(off), n, out.as<float>(), work.get(), nullptr);
        deviceSync();
        out.download(&got[run], sizeof(float));
      }
      EXPECT_NEAR(got[0], ref, 1e-5 * std::max(ref, 1e-30));
      EXPECT_EQ(0, std::memcmp(&got[0], &got[1], sizeof(float))) << "not deterministic";
    }
}

TEST(SumSquaresMulti, MatchesCpuOverMixedTensors) {
  // One call over tensors of several dtypes and sizes (one empty, one
  // misaligned): the total of the CPU sums, rounded once.
  const std::vector<std::pair<DType, int64_t>> parts = {
      {DType::F32, 100003}, {DType::BF16, 777}, {DType::F32, 0}, {DType::F16, 4096}, {DType::F32, 5}};
  std::vector<DeviceTensor> tensors;
  std::vector<cuda::TView> xs;
  std::vector<int64_t> ns;
  double ref = 0.0;
  uint32_t seed = 70;
  for (auto [t, n] : parts) {
    auto x = randomIn(t, size_t(n) + 1, seed++, -2.0, 2.0);
    ref += cpu::sum_squares(x.data() + 1, n);
    tensors.emplace_back(x, t);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    xs.push_back(tensors[i].viewAt(1));
    ns.push_back(parts[i].second);
  }
  const int count = int(parts.size());
  DeviceBuffer work(size_t(cuda::sum_squares_multi_workspace_bytes(ns.data(), count))),
      out(sizeof(float));
  float got[2];
  for (int run = 0; run < 2; ++run) {
    cuda::sum_squares_multi(xs.data(), ns.data(), count, out.as<float>(), work.get(), nullptr);
    deviceSync();
    out.download(&got[run], sizeof(float));
  }
  EXPECT_NEAR(got[0], ref, 1e-5 * ref);
  EXPECT_EQ(0, std::memcmp(&got[0], &got[1], sizeof(float))) << "not deterministic";
}

//===----------------------------------------------------------------------===//
// adamw_multi
//===----------------------------------------------------------------------===//

struct AdamWCase {
  int64_t n;
  DType param, grad, m, v;
  bool decays = true;
  bool copy = false; ///< a bf16 copy of the new parameter
};

/// A device scalar of dtype t.
DeviceTensor scalar(double value, DType t) {
  return DeviceTensor(std::vector<float>{float(value)}, t);
}

TEST(AdamW, MultiTensorMatchesCpu) {
  const std::vector<AdamWCase> cases = {
      {1000, DType::F32, DType::F32, DType::F32, DType::F32, true, true},
      {777, DType::BF16, DType::F32, DType::BF16, DType::BF16},
      {5, DType::F32, DType::BF16, DType::F32, DType::F32, false, true},
      {100003, DType::BF16, DType::BF16, DType::F32, DType::F32},
      {1, DType::F16, DType::F16, DType::F32, DType::F32},
  };
  const double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1;
  const double lr = 3e-3, gradScale = 0.5;
  const int32_t step = 4; // t = 5
  struct State {
    std::vector<float> p, g, m, v;
    DeviceTensor dp, dg, dm, dv, dcopy;
  };
  std::vector<State> st;
  std::vector<cuda::AdamWTensor> desc;
  uint32_t seed = 50;
  int64_t maxN = 0;
  for (const AdamWCase &c : cases) {
    State s;
    s.p = randomIn(c.param, c.n, seed++);
    s.g = randomIn(c.grad, c.n, seed++, -2.0, 2.0);
    s.m = randomIn(c.m, c.n, seed++, -0.1, 0.1);
    s.v = randomIn(c.v, c.n, seed++, 0.0, 0.01);
    s.dp = DeviceTensor(s.p, c.param);
    s.dg = DeviceTensor(s.g, c.grad);
    s.dm = DeviceTensor(s.m, c.m);
    s.dv = DeviceTensor(s.v, c.v);
    if (c.copy)
      s.dcopy = DeviceTensor(std::vector<float>(size_t(c.n), 7.0f), DType::BF16);
    desc.push_back({s.dp.buf.get(), s.dg.buf.get(), s.dm.buf.get(), s.dv.buf.get(), c.n, c.param,
                    c.grad, c.m, c.v, c.decays ? 1 : 0, DType::BF16,
                    c.copy ? s.dcopy.buf.get() : nullptr});
    maxN = std::max(maxN, c.n);
    st.push_back(std::move(s));
  }
  DeviceBuffer ddesc = DeviceBuffer::of(desc);
  // Scalars of mixed dtypes: lr f32, grad scale bf16 (0.5 is exact), step
  // i32, skip i32.
  DeviceTensor dlr = scalar(lr, DType::F32), dgs = scalar(gradScale, DType::BF16),
               dstep = scalar(step, DType::I32), dskip = scalar(1, DType::I32);
  cuda::AdamWScalars sc{dlr.view(), dgs.view(), dstep.view(), dskip.view()};

  // A skipped step changes nothing; the copies are the parameters rounded.
  cuda::adamw_multi(ddesc.as<cuda::AdamWTensor>(), int(desc.size()), maxN, sc, beta1, beta2,
                    eps, wd, nullptr);
  deviceSync();
  for (size_t i = 0; i < st.size(); ++i) {
    EXPECT_TRUE(sameValues(st[i].dp.get(), st[i].p));
    EXPECT_TRUE(sameValues(st[i].dm.get(), st[i].m));
    EXPECT_TRUE(sameValues(st[i].dv.get(), st[i].v));
    if (cases[i].copy)
      EXPECT_TRUE(sameValues(st[i].dcopy.get(), roundTo(DType::BF16, st[i].p))) << "copy";
  }

  dskip.set({0.0f});
  cuda::adamw_multi(ddesc.as<cuda::AdamWTensor>(), int(desc.size()), maxN, sc, beta1, beta2,
                    eps, wd, nullptr);
  deviceSync();
  for (size_t i = 0; i < st.size(); ++i) {
    const AdamWCase &c = cases[i];
    SCOPED_TRACE(testing::Message() << "tensor " << i << " n " << c.n);
    std::vector<float> p = st[i].p, m = st[i].m, v = st[i].v;
    cpu::adamw(p.data(), st[i].g.data(), m.data(), v.data(), c.n, double(float(lr)), beta1, beta2,
               eps, c.decays ? wd : 0.0, int64_t(step) + 1, gradScale);
    EXPECT_TRUE(closeTo(st[i].dp.get(), roundTo(c.param, p), tolFor(c.param))) << "param";
    // The copy: the new parameter the kernel stored, rounded to bf16.
    if (c.copy)
      EXPECT_TRUE(sameValues(st[i].dcopy.get(), roundTo(DType::BF16, st[i].dp.get()))) << "copy";
    EXPECT_TRUE(closeTo(st[i].dm.get(), roundTo(c.m, m), tolFor(c.m))) << "m";
    EXPECT_TRUE(closeTo(st[i].dv.get(), roundTo(c.v, v), tolFor(c.v))) << "v";
    // The update itself (p - p0), f32 parameters: the step must be right,
    // not only small against the weights.
    if (c.param == DType::F32) {
      std::vector<float> got = st[i].dp.get(), du(c.n), ru(c.n);
      for (int64_t j = 0; j < c.n; ++j) {
        du[j] = got[j] - st[i].p[j];
        ru[j] = p[j] - st[i].p[j];
      }
      EXPECT_TRUE(closeTo(du, ru, 1e-3)) << "update";
    }
  }
}

TEST(AdamW, NoSkipScalarAndFloatStep) {
  const int64_t n = 300;
  auto p0 = randomFloats(n, 60), g = randomFloats(n, 61), m0 = randomFloats(n, 62, -0.1, 0.1),
       v0 = randomFloats(n, 63, 0.0, 0.01);
  DeviceTensor dp(p0, DType::F32), dg(g, DType::F32), dm(m0, DType::F32), dv(v0, DType::F32);
  std::vector<cuda::AdamWTensor> desc = {
      {dp.buf.get(), dg.buf.get(), dm.buf.get(), dv.buf.get(), n, DType::F32, DType::F32,
       DType::F32, DType::F32, 1, DType::BF16, nullptr}};
  DeviceBuffer ddesc = DeviceBuffer::of(desc);
  DeviceTensor dlr = scalar(1e-3, DType::F32), dgs = scalar(1.0, DType::F32),
               dstep = scalar(0.0, DType::F32);
  cuda::AdamWScalars sc{dlr.view(), dgs.view(), dstep.view(), cuda::TView{}};
  cuda::adamw_multi(ddesc.as<cuda::AdamWTensor>(), 1, n, sc, 0.9, 0.999, 1e-8, 0.0, nullptr);
  deviceSync();
  std::vector<float> p = p0, m = m0, v = v0;
  cpu::adamw(p.data(), g.data(), m.data(), v.data(), n, double(1e-3f), 0.9, 0.999, 1e-8, 0.0, 1,
             1.0);
  EXPECT_TRUE(closeTo(dp.get(), p, 1e-5));
  EXPECT_TRUE(closeTo(dm.get(), m, 1e-5));
  EXPECT_TRUE(closeTo(dv.get(), v, 1e-5));
}

//===----------------------------------------------------------------------===//
// Step scalars
//===----------------------------------------------------------------------===//

float readF32(const DeviceBuffer &b) {
  float v;
  b.download(&v, sizeof(v));
  return v;
}

int32_t readI32(const DeviceBuffer &b) {
  int32_t v;
  b.download(&v, sizeof(v));
  return v;
}

void expectRel(double got, double want, double tol = 1e-6) {
  if (!std::isfinite(want)) {
    EXPECT_EQ(got, want);
    return;
  }
  EXPECT_NEAR(got, want, tol * std::max(std::fabs(want), 1e-30)) << "want " << want;
}

TEST(StepScalars, LrSchedule) {
  DeviceBuffer out(sizeof(float));
  struct Sched {
    double lr, minLr;
    int64_t warmup, decay;
  };
  for (const Sched &s : std::vector<Sched>{{3e-4, 3e-5, 10, 100}, {1e-3, 0.0, 0, 50},
                                           {1e-3, 1e-4, 20, 10}})
    for (int64_t step : {0, 1, 5, 9, 10, 11, 37, 50, 99, 100, 150})
      for (DType t : {DType::I32, DType::F32}) {
        SCOPED_TRACE(testing::Message() << "step " << step << " warmup " << s.warmup << " decay "
                                        << s.decay << " " << dtypeName(t));
        DeviceTensor dstep = scalar(double(step), t);
        cuda::lr_schedule(dstep.view(), out.as<float>(), s.lr, s.minLr, s.warmup, s.decay,
                          nullptr);
        deviceSync();
        expectRel(readF32(out), float(cpu::lr_schedule(step, s.lr, s.minLr, s.warmup, s.decay)));
      }
}

TEST(StepScalars, ClipGradNorm) {
  DeviceBuffer norm(sizeof(float)), coef(sizeof(float)), overflow(sizeof(float));
  struct Case {
    double sumsq, scale, maxNorm;
    bool hasScale;
  };
  for (const Case &c : std::vector<Case>{{16.0, 2.0, 1.0, true},
                                         {0.25, 1.0, 1.0, false},
                                         {1e6, 1024.0, 1.0, true},
                                         {16.0, 1.0, 0.0, true},
                                         {INFINITY, 4.0, 1.0, true},
                                         {NAN, 1.0, 1.0, false}}) {
    SCOPED_TRACE(testing::Message() << "sumsq " << c.sumsq << " scale " << c.scale);
    DeviceTensor dss = scalar(c.sumsq, DType::F32), dsc = scalar(c.scale, DType::BF16);
    cuda::clip_grad_norm(dss.view(), c.hasScale ? dsc.view() : cuda::TView{}, norm.as<float>(),
                         coef.as<float>(), overflow.as<float>(), c.maxNorm, nullptr);
    deviceSync();
    // KernelRunner's ClipGradNorm.
    double sumsq = double(float(c.sumsq)), scale = c.hasScale ? c.scale : 1.0;
    double n = std::sqrt(sumsq) / scale;
    double k = c.maxNorm > 0.0 ? std::min(1.0, c.maxNorm / (n + 1e-6)) : 1.0;
    bool inf = !std::isfinite(sumsq);
    float wantNorm = float(n), wantCoef = float(inf ? 0.0 : k / scale);
    if (std::isnan(wantNorm)) {
      EXPECT_TRUE(std::isnan(readF32(norm)));
    } else {
      expectRel(readF32(norm), wantNorm);
    }
    expectRel(readF32(coef), wantCoef);
    EXPECT_EQ(readF32(overflow), inf ? 1.0f : 0.0f);
  }
}

TEST(StepScalars, CountStep) {
  DeviceBuffer out(sizeof(int32_t));
  DeviceTensor dstep = scalar(7, DType::I32);
  for (int skip : {0, 1, -1}) {
    DeviceTensor dskip = scalar(skip, DType::F32);
    cuda::count_step(dstep.view(), skip >= 0 ? dskip.view() : cuda::TView{}, out.as<int32_t>(),
                     nullptr);
    deviceSync();
    EXPECT_EQ(readI32(out), skip == 1 ? 7 : 8) << "skip " << skip;
  }
}

TEST(StepScalars, LossScaleUpdate) {
  DeviceBuffer outScale(sizeof(float)), outGood(sizeof(int32_t));
  struct Case {
    double scale;
    int32_t good;
    float overflow;
    int64_t window;
    double factor, minScale;
  };
  for (const Case &c : std::vector<Case>{{1024.0, 1, 0.0f, 2, 2.0, 1.0},
                                         {1024.0, 0, 0.0f, 2, 2.0, 1.0},
                                         {1024.0, 5, 1.0f, 2, 2.0, 1.0},
                                         {1.0, 5, 1.0f, 2, 2.0, 1.0},
                                         {65536.0, 999, 0.0f, 1000, 2.0, 1.0}}) {
    SCOPED_TRACE(testing::Message() << "scale " << c.scale << " good " << c.good
                                    << " overflow " << c.overflow);
    DeviceTensor ds = scalar(c.scale, DType::F32), dg = scalar(c.good, DType::I32),
                 dov = scalar(c.overflow, DType::F32);
    cuda::loss_scale_update(ds.view(), dg.view(), dov.view(), outScale.as<float>(),
                            outGood.as<int32_t>(), c.window, c.factor, c.minScale, nullptr);
    deviceSync();
    // KernelRunner's LossScaleUpdate.
    double scale = c.scale;
    int64_t good = c.good;
    if (c.overflow != 0.0f) {
      scale = std::max(scale / c.factor, c.minScale);
      good = 0;
    } else if (++good >= c.window) {
      scale *= c.factor;
      good = 0;
    }
    EXPECT_EQ(readF32(outScale), float(scale));
    EXPECT_EQ(readI32(outGood), int32_t(good));
  }
}

} // namespace
