//===- Cast.cpp - float <-> bfloat16 / binary16 ---------------------------===//
//
// Bit-exact conversions with round-to-nearest-even, written on the integer
// representation so they do not depend on the host's F16C/AVX512-BF16 support
// and agree with what a GPU's cvt.rn instructions produce.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/Parallel.h"

#include <cstring>

namespace shardc::cpu {

namespace {

uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

} // namespace

uint16_t f32_to_bf16(float x) {
  uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: truncate, force the quiet bit
    return uint16_t((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the lowest kept bit rounds ties to even; a carry out
  // of the mantissa bumps the exponent, up to infinity, as it should.
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t x) { return floatOf(uint32_t(x) << 16); }

uint16_t f32_to_f16(float x) {
  uint32_t u = bitsOf(x);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) // NaN: keep the top payload bits, force the quiet bit
    return uint16_t(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
  if (u >= 0x477ff000u) // >= 65520, the tie between 65504 and 2^16
    return uint16_t(sign | 0x7c00u);
  if (u >= 0x38800000u) {    // normal in binary16: >= 2^-14
    u -= (127u - 15u) << 23; // rebias the exponent
    u += 0xfffu + ((u >> 13) & 1u);
    return uint16_t(sign | (u >> 13));
  }
  if (u <= 0x33000000u) // <= 2^-25, half the smallest subnormal: ties to 0
    return sign;
  // Subnormal: the value is m * 2^(e - 150) with the implicit bit in m; in
  // units of 2^-24 that is m >> (126 - e), rounded to nearest even.
  uint32_t e = u >> 23;
  uint32_t m = (u & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u)))
    ++q; // may carry into the smallest normal, which is the right encoding
  return uint16_t(sign | q);
}

float f16_to_f32(uint16_t x) {
  uint32_t sign = uint32_t(x & 0x8000u) << 16;
  uint32_t exp = (x >> 10) & 0x1fu;
  uint32_t mant = x & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    float mag = float(mant) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  if (exp == 31)
    return floatOf(sign | 0x7f800000u | (mant << 13));
  return floatOf(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

void cast_f32_to_bf16(const float *in, uint16_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32_to_bf16(in[i]);
}

void cast_bf16_to_f32(const uint16_t *in, float *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16_to_f32(in[i]);
}

void cast_f32_to_f16(const float *in, uint16_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32_to_f16(in[i]);
}

void cast_f16_to_f32(const uint16_t *in, float *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    out[i] = f16_to_f32(in[i]);
}

} // namespace shardc::cpu
