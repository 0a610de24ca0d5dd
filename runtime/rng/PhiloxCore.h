//===- PhiloxCore.h - Philox4x32-10 for host and device ---------*- C++ -*-===//
//
// The arithmetic behind every random number in shardc (Philox.h), as inline
// functions that compile for the host and, under nvcc, for the device: the
// CPU kernels and the CUDA backend's dropout call this one definition, so
// their masks are bit-identical by construction (the comparison with the
// rate is done in double on both).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_RNG_PHILOXCORE_H
#define SHARDC_RUNTIME_RNG_PHILOXCORE_H

#include <cstdint>

#if defined(__CUDACC__)
#define SHARDC_HD __host__ __device__ __forceinline__
#else
#define SHARDC_HD inline
#endif

namespace shardc::rng::core {

/// One Philox4x32-10 block, in place on ctr[4] with key[2] (copied).
SHARDC_HD void philox(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    uint64_t p0 = uint64_t(kM0) * ctr[0];
    uint64_t p1 = uint64_t(kM1) * ctr[2];
    uint32_t c0 = uint32_t(p1 >> 32) ^ ctr[1] ^ k0, c1 = uint32_t(p1);
    uint32_t c2 = uint32_t(p0 >> 32) ^ ctr[3] ^ k1, c3 = uint32_t(p0);
    ctr[0] = c0;
    ctr[1] = c1;
    ctr[2] = c2;
    ctr[3] = c3;
  }
}

/// SplitMix64's finaliser: a bijection with full avalanche.
SHARDC_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The stream of a per-step random op (dropout): step and op key mixed, so
/// (step, op) and (step + 1, op ^ 1) land on unrelated streams.
SHARDC_HD uint64_t stream_key(uint64_t step, uint64_t opKey) {
  return mix64(opKey ^ mix64(step + 0x9E3779B97F4A7C15ull));
}

/// The first word of the block at counter (index lo, index hi, stream lo,
/// stream hi) keyed by the seed.
SHARDC_HD uint32_t first_word(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t c[4] = {uint32_t(index), uint32_t(index >> 32), uint32_t(stream),
                   uint32_t(stream >> 32)};
  philox(c, uint32_t(seed), uint32_t(seed >> 32));
  return c[0];
}

/// Uniform in [0, 1) with 24 random bits (exact in a float mantissa).
SHARDC_HD float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return float(first_word(seed, stream, index) >> 8) * 0x1p-24f;
}

/// Whether dropout keeps element `index` (global row-major) at `rate`.
SHARDC_HD bool dropout_keep(uint64_t seed, uint64_t stream, uint64_t index, double rate) {
  return double(uniform(seed, stream, index)) >= rate;
}

} // namespace shardc::rng::core

#endif // SHARDC_RUNTIME_RNG_PHILOXCORE_H
