//===- NormTest.cpp - Norm.cu against the CPU kernels ---------------------===//
//
// softmax, layernorm, rmsnorm (with the fused residual add) and their
// backward passes, and rope, against runtime/cpu on random inputs, for f32
// and bf16 activations (with f32 or bf16 parameters), and the mixed storage
// of bf16 activations (f32 input, bf16 result and dy). The column counts walk
// every row schedule of Norm.cu: warp rows (<= 1024), block rows with the row
// in registers (<= 16384 forward, <= 8192 backward) and the uncached path.
//
// Metric: relError = max |gpu - cpu| / max(max |cpu|, 1e-30) per tensor
// (dgamma and dbeta each as one tensor), within tolFor(dtype): f32 1e-5,
// bf16 1e-2. The stored residual sum h = x + residual must match the CPU's
// rounded add bit for bit, and the backward passes must be bitwise
// deterministic across launches.
//
//===----------------------------------------------------------------------===//
#include "test/cuda/DeviceBuffer.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceKernels.h"

#include <gtest/gtest.h>

using namespace shardc;
using namespace shardc::test;
using rt::DType;

namespace {

/// Row widths that cover each (values per thread, team size) of Norm.cu.
const std::vector<int64_t> kCols = {1,    7,    100,  128,  129,  300,  512,  513,
                                    1000, 1024, 1500, 4096, 5000, 9000, 17000};
/// Widths added later (GPT-2 124M's 768 and the forward's M = 24 bracket),
/// kept apart so the seeds of the kCols cases stay as they were: RMSNorm's
/// gradient at one column, rs * g * eps / (x^2 + eps), is ill-conditioned in
/// f32 (relative condition x^2 / eps), so its check depends on the data.
const std::vector<int64_t> kMoreCols = {768, 769, 1025};

int64_t rowsFor(int64_t cols) {
  // Enough rows that backward slots take several rows each (1024 warp slots
  // for cols <= 512, at most 264 block slots above).
  return cols <= 128 ? 1100 : cols <= 512 ? 300 : 290;
}

class Norm : public ::testing::TestWithParam<DType> {};

std::string dtypeParamName(const ::testing::TestParamInfo<DType> &info) {
  return dtypeName(info.param);
}

INSTANTIATE_TEST_SUITE_P(DTypes, Norm, ::testing::Values(DType::F32, DType::BF16),
                         dtypeParamName);

const double kEps = 1e-5;

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

TEST_P(Norm, Softmax) {
  const DType t = GetParam();
  for (int64_t cols : kCols) {
    SCOPED_TRACE(testing::Message() << "cols " << cols);
    const int64_t rows = std::min<int64_t>(rowsFor(cols), 64);
    auto x = randomIn(t, rows * cols, 1, -5.0, 5.0);
    std::vector<float> ref(rows * cols);
    cpu::softmax_lastdim(x.data(), ref.data(), rows, cols);
    ref = roundTo(t, ref);
    DeviceTensor dx(x, t), out(t, rows * cols);
    cuda::softmax(dx.view(), out.view(), rows, cols, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
    cuda::softmax(dx.view(), dx.view(), rows, cols, nullptr); // in place
    deviceSync();
    EXPECT_TRUE(closeTo(dx.get(), ref, tolFor(t)));
  }
}

TEST_P(Norm, SoftmaxGrad) {
  const DType t = GetParam();
  for (int64_t cols : kCols) {
    SCOPED_TRACE(testing::Message() << "cols " << cols);
    const int64_t rows = std::min<int64_t>(rowsFor(cols), 64);
    auto logits = randomFloats(rows * cols, 2, -3.0, 3.0);
    std::vector<float> y(rows * cols);
    cpu::softmax_lastdim(logits.data(), y.data(), rows, cols);
    y = roundTo(t, y);
    auto dy = randomIn(t, rows * cols, 3, -1.0, 1.0);
    std::vector<float> ref(rows * cols);
    cpu::softmax_lastdim_backward(dy.data(), y.data(), ref.data(), rows, cols);
    ref = roundTo(t, ref);
    DeviceTensor ddy(dy, t), dyv(y, t), out(t, rows * cols);
    cuda::softmax_grad(ddy.view(), dyv.view(), out.view(), rows, cols, nullptr);
    deviceSync();
    EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
    cuda::softmax_grad(ddy.view(), dyv.view(), ddy.view(), rows, cols, nullptr); // dx == dy
    deviceSync();
    EXPECT_TRUE(closeTo(ddy.get(), ref, tolFor(t)));
  }
}

//===----------------------------------------------------------------------===//
// layernorm / rmsnorm forward
//===----------------------------------------------------------------------===//

enum class Residual { None, Fused, FusedStored, FusedInPlace };

/// One forward check: x (and residual) of dtype t, gamma/beta of dtype pt.
void checkNormForward(bool rms, DType t, DType pt, int64_t rows, int64_t cols, Residual mode,
                      uint32_t seed) {
  SCOPED_TRACE(testing::Message() << (rms ? "rmsnorm" : "layernorm") << " " << dtypeName(t)
                                  << " params " << dtypeName(pt) << " cols " << cols
                                  << " residual mode " << int(mode));
  const int64_t n = rows * cols;
  // A mean offset exercises the two-pass variance.
  auto x = randomIn(t, n, seed, 1.0, 5.0);
  auto res = randomIn(t, n, seed + 1, -1.0, 1.0);
  auto gamma = randomIn(pt, cols, seed + 2, 0.5, 1.5);
  auto beta = randomIn(pt, cols, seed + 3, -0.5, 0.5);
  std::vector<float> h = x;
  if (mode != Residual::None) {
    cpu::add(x.data(), res.data(), h.data(), n);
    h = roundTo(t, h);
  }
  std::vector<float> ref(n);
  if (rms)
    cpu::rmsnorm_forward<float>(h.data(), gamma.data(), ref.data(), nullptr, rows, cols, kEps);
  else
    cpu::layernorm_forward<float>(h.data(), gamma.data(), beta.data(), ref.data(), nullptr, nullptr,
                           rows, cols, kEps);
  ref = roundTo(t, ref);

  DeviceTensor dx(x, t), dres(res, t), dg(gamma, pt), db(beta, pt), out(t, n), hOut(t, n);
  cuda::TView resV{}, resOutV{}, outV = out.view();
  switch (mode) {
  case Residual::None:
    outV = dx.view(); // in place
    break;
  case Residual::Fused:
    resV = dres.view();
    break;
  case Residual::FusedStored:
    resV = dres.view();
    resOutV = hOut.view();
    break;
  case Residual::FusedInPlace: // out over x, h over the residual stream
    resV = dres.view();
    resOutV = dres.view();
    outV = dx.view();
    break;
  }
  if (rms)
    cuda::rmsnorm(dx.view(), resV, dg.view(), outV, resOutV, rows, cols, kEps, nullptr);
  else
    cuda::layernorm(dx.view(), resV, dg.view(), db.view(), outV, resOutV, rows, cols, kEps,
                    nullptr);
  deviceSync();
  const DeviceTensor &outT = outV.p == dx.view().p ? dx : out;
  EXPECT_TRUE(closeTo(outT.get(), ref, tolFor(t)));
  if (mode == Residual::FusedStored) {
    EXPECT_TRUE(sameValues(hOut.get(), h));
  }
  if (mode == Residual::FusedInPlace) {
    EXPECT_TRUE(sameValues(dres.get(), h));
  }
}

TEST_P(Norm, LayerNormAndRmsNorm) {
  const DType t = GetParam();
  uint32_t seed = 10;
  for (const auto *widths : {&kCols, &kMoreCols})
    for (bool rms : {false, true})
      for (int64_t cols : *widths) {
        const int64_t rows = std::min<int64_t>(rowsFor(cols), 48);
        checkNormForward(rms, t, t, rows, cols, Residual::None, seed++);
        checkNormForward(rms, t, DType::F32, rows, cols, Residual::FusedStored, seed++);
        checkNormForward(rms, t, t, rows, cols, Residual::Fused, seed++);
        checkNormForward(rms, t, t, rows, cols, Residual::FusedInPlace, seed++);
      }
}

//===----------------------------------------------------------------------===//
// layernorm / rmsnorm backward
//===----------------------------------------------------------------------===//

void checkNormBackward(bool rms, DType t, DType pt, int64_t rows, int64_t cols, bool inPlace,
                       uint32_t seed) {
  SCOPED_TRACE(testing::Message() << (rms ? "rmsnorm_grad" : "layernorm_grad") << " "
                                  << dtypeName(t) << " params " << dtypeName(pt) << " rows "
                                  << rows << " cols " << cols << (inPlace ? " in place" : ""));
  const int64_t n = rows * cols;
  auto x = randomIn(t, n, seed, -1.0, 3.0);
  auto dy = randomIn(t, n, seed + 1);
  auto gamma = randomIn(pt, cols, seed + 2, 0.5, 1.5);
  std::vector<float> refDx(n), refDg(cols), refDb(cols);
  if (rms)
    cpu::rmsnorm_backward(dy.data(), x.data(), gamma.data(), refDx.data(), refDg.data(), rows,
                          cols, kEps);
  else
    cpu::layernorm_backward(dy.data(), x.data(), gamma.data(), refDx.data(), refDg.data(),
                            refDb.data(), rows, cols, kEps);
  refDx = roundTo(t, refDx);
  refDg = roundTo(pt, refDg);
  refDb = roundTo(pt, refDb);

  const int64_t ws = rms ? cuda::rmsnorm_grad_workspace_bytes(rows, cols)
                         : cuda::layernorm_grad_workspace_bytes(rows, cols);
  DeviceBuffer work(size_t(std::max<int64_t>(ws, 1)));
  DeviceTensor ddy(dy, t), dx(x, t), dg(gamma, pt), out(t, n), dgam(pt, cols), dbet(pt, cols);
  std::vector<uint8_t> firstDx, firstDg;
  for (int run = 0; run < 2; ++run) {
    if (inPlace)
      ddy.set(dy);
    cuda::TView dxV = inPlace ? ddy.view() : out.view();
    if (rms)
      cuda::rmsnorm_grad(ddy.view(), dx.view(), dg.view(), dxV, dgam.view(), rows, cols, kEps,
                         work.get(), nullptr);
    else
      cuda::layernorm_grad(ddy.view(), dx.view(), dg.view(), dxV, dgam.view(), dbet.view(),
                           rows, cols, kEps, work.get(), nullptr);
    deviceSync();
    const DeviceTensor &dxT = inPlace ? ddy : out;
    if (run == 0) {
      EXPECT_TRUE(closeTo(dxT.get(), refDx, tolFor(t))) << "dx";
      EXPECT_TRUE(closeTo(dgam.get(), refDg, tolFor(pt))) << "dgamma";
      if (!rms) {
        EXPECT_TRUE(closeTo(dbet.get(), refDb, tolFor(pt))) << "dbeta";
      }
      firstDx = dxT.bytes();
      firstDg = dgam.bytes();
    } else {
      EXPECT_EQ(dxT.bytes(), firstDx) << "dx is not deterministic";
      EXPECT_EQ(dgam.bytes(), firstDg) << "dgamma is not deterministic";
    }
  }
}

TEST_P(Norm, LayerNormGradAndRmsNormGrad) {
  const DType t = GetParam();
  uint32_t seed = 100;
  for (const auto *widths : {&kCols, &kMoreCols})
    for (bool rms : {false, true})
      for (int64_t cols : *widths) {
        checkNormBackward(rms, t, t, rowsFor(cols), cols, false, seed++);
        checkNormBackward(rms, t, DType::F32, 33, cols, true, seed++);
      }
}

// The residual stream's gradient added as dx is written (xf.layernorm_grad
// / xf.rmsnorm_grad with `plus`, -xf-fuse-epilogues): f32 bit-identical to
// the gradient followed by the add kernel, out of place and written over the
// residual gradient (in place), over the narrow and the wide kernels.
TEST(NormGradPlus, IsTheGradThenTheAddBitForBit) {
  uint32_t seed = 700;
  for (bool rms : {false, true})
    for (int64_t cols : {1, 64, 768, 1600, 9000})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(testing::Message() << (rms ? "rmsnorm_grad" : "layernorm_grad") << " cols "
                                        << cols << (inPlace ? " in place" : ""));
        const int64_t rows = 37, n = rows * cols;
        const DType t = DType::F32;
        auto x = randomIn(t, n, seed++, -1.0, 3.0), dy = randomIn(t, n, seed++),
             gamma = randomIn(t, cols, seed++, 0.5, 1.5), res = randomIn(t, n, seed++);
        const int64_t ws = rms ? cuda::rmsnorm_grad_workspace_bytes(rows, cols)
                               : cuda::layernorm_grad_workspace_bytes(rows, cols);
        DeviceBuffer work(size_t(std::max<int64_t>(ws, 1)));
        DeviceTensor ddy(dy, t), dx(x, t), dg(gamma, t), dres(res, t), plain(t, n), sum(t, n),
            fused(t, n), dgam(t, cols), dbet(t, cols);
        auto grad = [&](cuda::TView out, cuda::TView plus) {
          if (rms)
            cuda::rmsnorm_grad(ddy.view(), dx.view(), dg.view(), out, dgam.view(), rows, cols,
                               kEps, work.get(), nullptr, plus);
          else
            cuda::layernorm_grad(ddy.view(), dx.view(), dg.view(), out, dgam.view(), dbet.view(),
                                 rows, cols, kEps, work.get(), nullptr, plus);
        };
        grad(plain.view(), cuda::TView{});
        cuda::add(dres.view(), plain.view(), sum.view(), n, nullptr);
        grad(inPlace ? dres.view() : fused.view(), dres.view());
        deviceSync();
        EXPECT_EQ((inPlace ? dres : fused).bytes(), sum.bytes());
      }
}

// The mixed storage of bf16 activations (-xf-mixed-precision): an f32
// residual stream normalized into a bf16 result, and the gradient reading a
// bf16 dy against the f32 x, returning an f32 dx.
TEST(NormMixed, F32InputBf16ResultAndBf16Dy) {
  uint32_t seed = 500;
  for (bool rms : {false, true})
    for (int64_t cols : {64, 768, 1600, 9000}) {
      SCOPED_TRACE(testing::Message() << (rms ? "rmsnorm" : "layernorm") << " cols " << cols);
      const int64_t rows = 40, n = rows * cols;
      auto x = randomIn(DType::F32, n, seed++, 1.0, 5.0);
      auto gamma = randomIn(DType::F32, cols, seed++, 0.5, 1.5);
      auto beta = randomIn(DType::F32, cols, seed++, -0.5, 0.5);
      auto dy = randomIn(DType::BF16, n, seed++);
      std::vector<float> ref(n), refDx(n), refDg(cols), refDb(cols);
      if (rms) {
        cpu::rmsnorm_forward<float>(x.data(), gamma.data(), ref.data(), nullptr, rows, cols, kEps);
        cpu::rmsnorm_backward(dy.data(), x.data(), gamma.data(), refDx.data(), refDg.data(), rows,
                              cols, kEps);
      } else {
        cpu::layernorm_forward<float>(x.data(), gamma.data(), beta.data(), ref.data(), nullptr,
                                      nullptr, rows, cols, kEps);
        cpu::layernorm_backward(dy.data(), x.data(), gamma.data(), refDx.data(), refDg.data(),
                                refDb.data(), rows, cols, kEps);
      }
      ref = roundTo(DType::BF16, ref);
      DeviceTensor dx(x, DType::F32), dg(gamma, DType::F32), db(beta, DType::F32),
          out(DType::BF16, n), ddy(dy, DType::BF16), gx(DType::F32, n), gg(DType::F32, cols),
          gb(DType::F32, cols);
      if (rms)
        cuda::rmsnorm(dx.view(), {}, dg.view(), out.view(), {}, rows, cols, kEps, nullptr);
      else
        cuda::layernorm(dx.view(), {}, dg.view(), db.view(), out.view(), {}, rows, cols, kEps,
                        nullptr);
      const int64_t ws = rms ? cuda::rmsnorm_grad_workspace_bytes(rows, cols)
                             : cuda::layernorm_grad_workspace_bytes(rows, cols);
      DeviceBuffer work(size_t(std::max<int64_t>(ws, 1)));
      if (rms)
        cuda::rmsnorm_grad(ddy.view(), dx.view(), dg.view(), gx.view(), gg.view(), rows, cols,
                           kEps, work.get(), nullptr);
      else
        cuda::layernorm_grad(ddy.view(), dx.view(), dg.view(), gx.view(), gg.view(), gb.view(),
                             rows, cols, kEps, work.get(), nullptr);
      deviceSync();
      EXPECT_TRUE(closeTo(out.get(), ref, tolFor(DType::BF16))) << "bf16 result";
      EXPECT_TRUE(closeTo(gx.get(), refDx, tolFor(DType::F32))) << "f32 dx";
      EXPECT_TRUE(closeTo(gg.get(), refDg, tolFor(DType::F32))) << "dgamma";
      if (!rms) {
        EXPECT_TRUE(closeTo(gb.get(), refDb, tolFor(DType::F32))) << "dbeta";
      }
    }
}

TEST(NormEdge, GradOfNoRowsZeroesParameterGradients) {
  const int64_t cols = 40;
  DeviceTensor dgam(std::vector<float>(cols, 1.0f), DType::F32),
      dbet(std::vector<float>(cols, 1.0f), DType::F32), dummy(DType::F32, 1);
  cuda::layernorm_grad(dummy.view(), dummy.view(), dummy.view(), dummy.view(), dgam.view(),
                       dbet.view(), 0, cols, kEps, nullptr, nullptr);
  deviceSync();
  EXPECT_TRUE(sameValues(dgam.get(), std::vector<float>(cols, 0.0f)));
  EXPECT_TRUE(sameValues(dbet.get(), std::vector<float>(cols, 0.0f)));
  EXPECT_EQ(cuda::layernorm_grad_workspace_bytes(0, cols), 0);
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

TEST_P(Norm, Rope) {
  const DType t = GetParam();
  struct Case {
    int64_t B, S, H, D;
    double theta;
    int64_t offset;
  };
  for (const Case &c : std::vector<Case>{{2, 17, 3, 64, 10000.0, 0},
                                         {2, 17, 3, 6, 10000.0, 5},
                                         {1, 40, 2, 128, 500000.0, 100000},
                                         {3, 1, 50, 32, 10000.0, 4095}})
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(testing::Message() << "B" << c.B << " S" << c.S << " H" << c.H << " D" << c.D
                                      << " offset " << c.offset << (inverse ? " inverse" : ""));
      const int64_t n = c.B * c.S * c.H * c.D;
      auto x = randomIn(t, n, 30);
      std::vector<float> ref(n);
      if (inverse)
        cpu::rope_backward(x.data(), ref.data(), c.B, c.S, c.H, c.D, c.theta, c.offset);
      else
        cpu::rope(x.data(), ref.data(), c.B, c.S, c.H, c.D, c.theta, c.offset);
      ref = roundTo(t, ref);
      DeviceTensor dx(x, t), out(t, n);
      cuda::rope(dx.view(), out.view(), c.B, c.S, c.H, c.D, c.theta, c.offset, inverse, nullptr);
      deviceSync();
      EXPECT_TRUE(closeTo(out.get(), ref, tolFor(t)));
      // In place, then back: the inverse undoes the forward.
      cuda::rope(dx.view(), dx.view(), c.B, c.S, c.H, c.D, c.theta, c.offset, inverse, nullptr);
      cuda::rope(dx.view(), dx.view(), c.B, c.S, c.H, c.D, c.theta, c.offset, !inverse, nullptr);
      deviceSync();
      EXPECT_TRUE(closeTo(dx.get(), x, 4 * tolFor(t)));
    }
  DeviceTensor d(DType::F32, 8);
  EXPECT_THROW(cuda::rope(d.view(), d.view(), 1, 1, 1, 7, 10000.0, 0, false, nullptr), rt::Error);
}

} // namespace
