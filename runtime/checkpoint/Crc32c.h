//===- Crc32c.h - CRC-32C checksums -----------------------------*- C++ -*-===//
//
// CRC-32C (Castagnoli; the reflected polynomial 0x82F63B78, as in iSCSI, ext4
// and Btrfs), the checksum safetensors files written by shardc carry per
// tensor. It detects every single flipped bit and every damaged run of up to
// 32 bits; other damage goes unnoticed with probability 2^-32.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CHECKPOINT_CRC32C_H
#define SHARDC_RUNTIME_CHECKPOINT_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace shardc::ckpt {

/// CRC-32C of `size` bytes at `data`, continuing from the CRC `crc` of the
/// bytes before them (0 for none): crc32c(b, m, crc32c(a, n)) is the CRC of
/// the n + m bytes a, b. Uses the SSE4.2 crc32 instruction where the CPU has
/// it, the table-driven code elsewhere; both give the same result.
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

namespace detail {
/// The portable slicing-by-8 implementation crc32c() falls back to; exposed
/// so that tests can check the hardware path against it.
uint32_t crc32cSoftware(const void *data, size_t size, uint32_t crc = 0);
} // namespace detail

} // namespace shardc::ckpt

#endif // SHARDC_RUNTIME_CHECKPOINT_CRC32C_H
