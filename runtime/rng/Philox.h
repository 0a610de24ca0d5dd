//===- Philox.h - counter-based random numbers ------------------*- C++ -*-===//
//
// Every random number in shardc is a pure function of (seed, stream, index)
// through Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC'11). There is no generator state, so a shard that owns global
// elements [offset, offset + n) draws exactly the numbers the unsharded tensor
// would, whatever the mesh, thread count or order of evaluation.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_RNG_PHILOX_H
#define SHARDC_RUNTIME_RNG_PHILOX_H

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shardc::rng {

/// One Philox4x32-10 block: ten rounds of the 4x32 bijection keyed by `key`.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                      std::array<uint32_t, 2> key);

/// 64-bit FNV-1a of a parameter name: the stream of that parameter's init.
uint64_t name_key(std::string_view name);

/// The stream for a per-step random op (dropout): a mix of the training step
/// and the op's key, so every step and every op draw independent masks.
uint64_t stream_key(uint64_t step, uint64_t opKey);

/// Uniform in [0, 1) with 24 random bits. Key = seed, counter = (index lo,
/// index hi, stream lo, stream hi).
float uniform(uint64_t seed, uint64_t stream, uint64_t index);

/// Standard normal by Box-Muller from the first two words of the block at the
/// same counter as uniform(); one normal per index, so element i depends only
/// on its own counter.
double normal(uint64_t seed, uint64_t stream, uint64_t index);

/// out[i] = mean + std * normal(seed, name_key(name), globalOffset + i).
/// Instantiated for float and double.
template <class T>
void init_normal(T *out, int64_t n, int64_t globalOffset, uint64_t seed,
                 std::string_view name, double mean, double std);

/// out[i] = value. Instantiated for float and double.
template <class T> void init_constant(T *out, int64_t n, double value);

/// Fills the row-major slice [offsets, offsets + sliceShape) of a tensor of
/// shape fullShape exactly as init_normal fills the whole tensor: each element
/// draws at its global row-major index. This is what makes a shard initialise
/// as the corresponding slice of the unsharded parameter. Throws rt::Error if
/// the slice does not lie inside fullShape.
template <class T>
void init_normal_slice(T *out, const std::vector<int64_t> &fullShape,
                       const std::vector<int64_t> &offsets,
                       const std::vector<int64_t> &sliceShape, uint64_t seed,
                       std::string_view name, double mean, double std);

} // namespace shardc::rng

#endif // SHARDC_RUNTIME_RNG_PHILOX_H
