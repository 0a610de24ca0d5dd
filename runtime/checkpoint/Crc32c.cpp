//===- Crc32c.cpp - CRC-32C checksums -------------------------------------===//
//
// Two implementations of one function: SSE4.2's crc32 instruction (8 bytes
// per instruction, several GB/s, so checksumming a checkpoint costs little
// next to writing it), chosen at run time by cpuid, and slicing-by-8 (eight
// 256-entry tables, 8 bytes per step) for every other CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHARDC_CRC32C_SSE42 1
#include <nmmintrin.h>
#endif

using namespace shardc::ckpt;

namespace {

/// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82F63B78u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

/// tables[0][b] is the CRC of byte b; tables[k][b] that of byte b followed by
/// k zero bytes, so eight lookups advance the CRC over eight bytes.
constexpr Tables makeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    t[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k)
    for (size_t b = 0; b < 256; ++b)
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}

constexpr Tables kTables = makeTables();

/// Eight bytes as a little-endian integer, whatever the host's byte order.
uint64_t loadLittleEndian64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

#ifdef SHARDC_CRC32C_SSE42
__attribute__((target("sse4.2"))) uint32_t crc32cSse42(const uint8_t *p, size_t size,
                                                       uint32_t crc) {
  uint64_t c = ~crc;
  for (; size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; --size)
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  for (; size > 0; --size)
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

bool haveSse42() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

} // namespace

uint32_t shardc::ckpt::detail::crc32cSoftware(const void *data, size_t size, uint32_t crc) {
  const auto *p = static_cast<const uint8_t *>(data);
  const Tables &t = kTables;
  crc = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word = loadLittleEndian64(p) ^ crc;
    crc = t[7][word & 0xFF] ^ t[6][(word >> 8) & 0xFF] ^ t[5][(word >> 16) & 0xFF] ^
          t[4][(word >> 24) & 0xFF] ^ t[3][(word >> 32) & 0xFF] ^ t[2][(word >> 40) & 0xFF] ^
          t[1][(word >> 48) & 0xFF] ^ t[0][word >> 56];
  }
  for (; size > 0; --size)
    crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t shardc::ckpt::crc32c(const void *data, size_t size, uint32_t crc) {
#ifdef SHARDC_CRC32C_SSE42
  if (haveSse42())
    return crc32cSse42(static_cast<const uint8_t *>(data), size, crc);
#endif
  return detail::crc32cSoftware(data, size, crc);
}
