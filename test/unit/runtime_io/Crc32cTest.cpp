//===- Crc32cTest.cpp - CRC-32C against published vectors -----------------===//
//
// The check value of the CRC catalogue and the iSCSI vectors of RFC 3720
// (B.4), for both implementations, and the hardware path against the
// table-driven one on every length and alignment of a short buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace shardc::ckpt;

namespace {

struct Vector {
  const char *what;
  std::vector<uint8_t> bytes;
  uint32_t crc;
};

std::vector<Vector> knownVectors() {
  std::vector<uint8_t> ascending(32), descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  std::string check = "123456789";
  return {{"empty", {}, 0x00000000u},
          {"\"123456789\"", {check.begin(), check.end()}, 0xE3069283u},
          {"32 zero bytes", std::vector<uint8_t>(32, 0x00), 0x8A9136AAu},
          {"32 0xff bytes", std::vector<uint8_t>(32, 0xFF), 0x62A8AB43u},
          {"0..31", ascending, 0x46DD794Eu},
          {"31..0", descending, 0x113FDB5Cu}};
}

} // namespace

TEST(Crc32cTest, KnownVectors) {
  for (const Vector &v : knownVectors()) {
    EXPECT_EQ(crc32c(v.bytes.data(), v.bytes.size()), v.crc) << v.what;
    EXPECT_EQ(detail::crc32cSoftware(v.bytes.data(), v.bytes.size()), v.crc) << v.what;
  }
}

TEST(Crc32cTest, ContinuesAcrossPieces) {
  std::string text = "123456789";
  for (size_t split = 0; split <= text.size(); ++split) {
    uint32_t head = crc32c(text.data(), split);
    EXPECT_EQ(crc32c(text.data() + split, text.size() - split, head), 0xE3069283u) << split;
    head = detail::crc32cSoftware(text.data(), split);
    EXPECT_EQ(detail::crc32cSoftware(text.data() + split, text.size() - split, head), 0xE3069283u)
        << split;
  }
}

TEST(Crc32cTest, HardwareAndTablesAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buffer(4096 + 8);
  for (uint8_t &b : buffer)
    b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t size = 0; size <= 80; ++size)
      EXPECT_EQ(crc32c(buffer.data() + offset, size),
                detail::crc32cSoftware(buffer.data() + offset, size))
          << "offset " << offset << ", size " << size;
  EXPECT_EQ(crc32c(buffer.data() + 3, 4096), detail::crc32cSoftware(buffer.data() + 3, 4096));
}

TEST(Crc32cTest, EverySingleBitFlipChangesIt) {
  std::vector<uint8_t> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i * 37);
  const uint32_t good = crc32c(bytes.data(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      bytes[i] ^= static_cast<uint8_t>(1 << bit);
      EXPECT_NE(crc32c(bytes.data(), bytes.size()), good) << "byte " << i << " bit " << bit;
      bytes[i] ^= static_cast<uint8_t>(1 << bit);
    }
}
