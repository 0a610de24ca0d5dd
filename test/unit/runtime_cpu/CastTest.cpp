//===- CastTest.cpp - bfloat16 and binary16 conversions -------------------===//
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace shardc;

namespace {

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(CpuCast, Bf16KnownValues) {
  EXPECT_EQ(cpu::f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(cpu::f32_to_bf16(-2.5f), 0xC020);
  EXPECT_EQ(cpu::f32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(cpu::f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(cpu::f32_to_bf16(kInf), 0x7F80);
  EXPECT_EQ(cpu::f32_to_bf16(-kInf), 0xFF80);
  EXPECT_EQ(cpu::bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(cpu::bf16_to_f32(0xC020), -2.5f);
  // The largest float is past the last bf16 step: it rounds to infinity.
  EXPECT_EQ(cpu::f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
}

TEST(CpuCast, Bf16RoundsTiesToEven) {
  // 1 + 2^-8 is halfway between 0x3F80 and 0x3F81: to the even 0x3F80.
  EXPECT_EQ(cpu::f32_to_bf16(floatOf(0x3F808000)), 0x3F80);
  // Halfway between 0x3F81 and 0x3F82: to the even 0x3F82.
  EXPECT_EQ(cpu::f32_to_bf16(floatOf(0x3F818000)), 0x3F82);
  // Just past halfway rounds up; just below rounds down.
  EXPECT_EQ(cpu::f32_to_bf16(floatOf(0x3F808001)), 0x3F81);
  EXPECT_EQ(cpu::f32_to_bf16(floatOf(0x3F807FFF)), 0x3F80);
}

TEST(CpuCast, Bf16NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(cpu::bf16_to_f32(cpu::f32_to_bf16(kNaN))));
  // A NaN whose payload lies only in the low 16 bits must not become inf.
  float lowPayload = floatOf(0x7F800001);
  ASSERT_TRUE(std::isnan(lowPayload));
  EXPECT_TRUE(std::isnan(cpu::bf16_to_f32(cpu::f32_to_bf16(lowPayload))));
  EXPECT_TRUE(std::signbit(cpu::bf16_to_f32(cpu::f32_to_bf16(-kNaN))));
}

TEST(CpuCast, Bf16MatchesNearestOnSweep) {
  // Reference: pick the nearer of the two bf16 neighbours in double, ties to
  // the even one.
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) {
    float f = floatOf(uint32_t(u));
    if (std::isnan(f) || std::isinf(f))
      continue;
    uint32_t lo = uint32_t(u) & 0xFFFF0000u;
    double dLo = std::fabs(double(floatOf(lo)) - double(f));
    uint32_t hiBits = lo + 0x10000u;
    double hiVal = (hiBits & 0x7FFFFFFFu) >= 0x7F800000u
                       ? std::ldexp(1.0, 128) * (f < 0 ? -1 : 1)
                       : double(floatOf(hiBits));
    double dHi = std::fabs(hiVal - double(f));
    uint16_t expected = uint16_t(
        (dLo < dHi || (dLo == dHi && ((lo >> 16) & 1) == 0)) ? lo >> 16
                                                             : hiBits >> 16);
    ASSERT_EQ(cpu::f32_to_bf16(f), expected) << "bits 0x" << std::hex << u;
  }
}

TEST(CpuCast, Bf16RoundTripsEveryValue) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = cpu::bf16_to_f32(uint16_t(h));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(cpu::f32_to_bf16(f), h) << "bf16 0x" << std::hex << h;
  }
}

TEST(CpuCast, F16KnownValues) {
  EXPECT_EQ(cpu::f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(cpu::f32_to_f16(-2.5f), 0xC100);
  EXPECT_EQ(cpu::f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(cpu::f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(cpu::f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(cpu::f32_to_f16(kInf), 0x7C00);
  EXPECT_EQ(cpu::f32_to_f16(-kInf), 0xFC00);
  EXPECT_EQ(cpu::f16_to_f32(0x7C00), kInf);
  EXPECT_EQ(cpu::f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(cpu::f16_to_f32(0xC100), -2.5f);
}

TEST(CpuCast, F16OverflowRounding) {
  // 65519 is below the 65520 tie between 65504 and 2^16; 65520 rounds (to
  // even) to infinity, as does everything larger.
  EXPECT_EQ(cpu::f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(cpu::f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(cpu::f32_to_f16(-1e6f), 0xFC00);
  EXPECT_EQ(cpu::f32_to_f16(std::numeric_limits<float>::max()), 0x7C00);
}

TEST(CpuCast, F16Subnormals) {
  const float tiny = std::ldexp(1.0f, -24); // smallest binary16 subnormal
  EXPECT_EQ(cpu::f32_to_f16(tiny), 0x0001);
  EXPECT_EQ(cpu::f16_to_f32(0x0001), tiny);
  EXPECT_EQ(cpu::f16_to_f32(0x03FF), 1023 * tiny);
  EXPECT_EQ(cpu::f16_to_f32(0x8001), -tiny);
  EXPECT_EQ(cpu::f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);
  // 1e-7 is 1.68 units of 2^-24: rounds to 2 units.
  EXPECT_EQ(cpu::f32_to_f16(1e-7f), 0x0002);
  // 1e-8 is below half a unit: underflows to zero, keeping the sign.
  EXPECT_EQ(cpu::f32_to_f16(1e-8f), 0x0000);
  EXPECT_EQ(cpu::f32_to_f16(-1e-8f), 0x8000);
  // Ties: half a unit goes to 0 (even), 1.5 units to 2, 2.5 units to 2.
  EXPECT_EQ(cpu::f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(cpu::f32_to_f16(1.5f * tiny), 0x0002);
  EXPECT_EQ(cpu::f32_to_f16(2.5f * tiny), 0x0002);
  EXPECT_EQ(cpu::f32_to_f16(3.5f * tiny), 0x0004);
  // Just below 2^-14 rounds up into the smallest normal.
  EXPECT_EQ(cpu::f32_to_f16(floatOf(bitsOf(std::ldexp(1.0f, -14)) - 1)),
            0x0400);
}

TEST(CpuCast, F16RoundsTiesToEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to the even 1.
  EXPECT_EQ(cpu::f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 0x3C01 and 0x3C02: to 0x3C02.
  EXPECT_EQ(cpu::f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(cpu::f32_to_f16(floatOf(bitsOf(1.0f + std::ldexp(1.0f, -11)) + 1)),
            0x3C01);
}

TEST(CpuCast, F16NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(cpu::f16_to_f32(cpu::f32_to_f16(kNaN))));
  float lowPayload = floatOf(0x7F800001);
  EXPECT_TRUE(std::isnan(cpu::f16_to_f32(cpu::f32_to_f16(lowPayload))));
  EXPECT_TRUE(std::isnan(cpu::f16_to_f32(0x7E00)));
}

TEST(CpuCast, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = cpu::f16_to_f32(uint16_t(h));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(cpu::f32_to_f16(f), h) << "f16 0x" << std::hex << h;
  }
}

#ifdef __FLT16_MAX__
TEST(CpuCast, F16MatchesCompilerFloat16OnSweep) {
  // GCC's _Float16 conversion is an independent IEEE implementation.
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) {
    float f = floatOf(uint32_t(u));
    if (std::isnan(f))
      continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, sizeof(expected));
    ASSERT_EQ(cpu::f32_to_f16(f), expected) << "bits 0x" << std::hex << u;
    ASSERT_EQ(cpu::f16_to_f32(expected), static_cast<float>(h));
  }
}
#endif

TEST(CpuCast, ArrayCastsMatchScalar) {
  std::vector<float> in = {1.0f, -2.5f, 65504.0f, 1e-7f, 3.14159f, kInf, 1e30f};
  size_t n = in.size();
  std::vector<uint16_t> bf(n), hf(n);
  std::vector<float> back(n);
  cpu::cast_f32_to_bf16(in.data(), bf.data(), int64_t(n));
  cpu::cast_f32_to_f16(in.data(), hf.data(), int64_t(n));
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(bf[i], cpu::f32_to_bf16(in[i]));
    EXPECT_EQ(hf[i], cpu::f32_to_f16(in[i]));
  }
  cpu::cast_bf16_to_f32(bf.data(), back.data(), int64_t(n));
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(back[i], cpu::bf16_to_f32(bf[i]));
  cpu::cast_f16_to_f32(hf.data(), back.data(), int64_t(n));
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(back[i], cpu::f16_to_f32(hf[i]));
}

} // namespace
