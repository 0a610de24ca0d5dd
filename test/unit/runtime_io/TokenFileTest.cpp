//===- TokenFileTest.cpp - llm.c token file tests -------------------------===//

#include "runtime/data/TokenFile.h"

#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace shardc::data;
using shardc::rt::Error;
namespace fs = std::filesystem;

namespace {

class TokenFileTest : public testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "shardc-tokens-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir = pattern;
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string readBytes(const std::string &p) const {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void writeBytes(const std::string &p, const std::string &bytes) const {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }

  /// A file holding the tokens 0, 1, ..., n-1.
  std::string iotaFile(int n) const {
    std::vector<int32_t> tokens(n);
    std::iota(tokens.begin(), tokens.end(), 0);
    std::string p = path("iota.bin");
    write_token_file(p, tokens);
    return p;
  }

  std::string dir;
};

/// Expects `fn` to throw Error whose message contains every one of `parts`.
template <typename Fn>
void expectError(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no shardc::rt::Error thrown";
  } catch (const Error &e) {
    for (const std::string &part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' lacks '" << part << "'";
  }
}

int32_t le32(const std::string &bytes, size_t offset) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(uint8_t(bytes[offset + i])) << (8 * i);
  return int32_t(v);
}

} // namespace

TEST_F(TokenFileTest, RoundTripInLlmcLayout) {
  std::vector<int32_t> tokens = {50256, 0, 15496, 995, 65535, 1, 258};
  std::string p = path("round.bin");
  write_token_file(p, tokens);

  std::string bytes = readBytes(p);
  ASSERT_EQ(bytes.size(), 1024 + 2 * tokens.size());
  EXPECT_EQ(le32(bytes, 0), 20240520);
  EXPECT_EQ(le32(bytes, 4), 1);
  EXPECT_EQ(le32(bytes, 8), int32_t(tokens.size()));
  for (size_t i = 12; i < 1024; ++i)
    ASSERT_EQ(bytes[i], 0) << "header byte " << i;
  // 15496 = 0x3C88, stored little-endian.
  EXPECT_EQ(uint8_t(bytes[1024 + 4]), 0x88);
  EXPECT_EQ(uint8_t(bytes[1024 + 5]), 0x3C);

  TokenFile file = TokenFile::open(p);
  EXPECT_EQ(file.size(), int64_t(tokens.size()));
  EXPECT_EQ(file.path(), p);
  ASSERT_EQ(file.tokens().size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    EXPECT_EQ(file.tokens()[i], tokens[i]);
}

TEST_F(TokenFileTest, EmptyFileRoundTrips) {
  std::string p = path("empty.bin");
  write_token_file(p, {});
  EXPECT_EQ(TokenFile::open(p).size(), 0);
}

TEST_F(TokenFileTest, WriteRejectsIdsOutsideUint16) {
  std::string p = path("bad.bin");
  std::vector<int32_t> tooLarge = {1, 2, 65536};
  expectError([&] { write_token_file(p, tooLarge); }, {p, "token 2", "65536"});
  expectError([&] { write_token_file(p, {-1}); }, {p, "-1"});
  EXPECT_FALSE(fs::exists(p));
}

TEST_F(TokenFileTest, MissingFile) {
  expectError([&] { TokenFile::open(path("none.bin")); }, {"none.bin"});
}

TEST_F(TokenFileTest, TruncatedFile) {
  std::string p = iotaFile(10);
  std::string bytes = readBytes(p);
  writeBytes(p, bytes.substr(0, bytes.size() - 1));
  expectError([&] { TokenFile::open(p); },
              {p, "truncated", "10 tokens", "1044 bytes", "1043"});
  writeBytes(p, bytes.substr(0, 100));
  expectError([&] { TokenFile::open(p); }, {p, "truncated", "100 bytes"});
}

TEST_F(TokenFileTest, TrailingBytes) {
  std::string p = iotaFile(10);
  writeBytes(p, readBytes(p) + "xx");
  expectError([&] { TokenFile::open(p); }, {p, "1044 bytes", "1046"});
}

TEST_F(TokenFileTest, BadMagicAndVersion) {
  std::string p = iotaFile(10);
  std::string bytes = readBytes(p);
  std::string badMagic = bytes;
  badMagic[0] ^= 1;
  writeBytes(p, badMagic);
  expectError([&] { TokenFile::open(p); }, {p, "magic", "20240520"});
  std::string badVersion = bytes;
  badVersion[4] = 2;
  writeBytes(p, badVersion);
  expectError([&] { TokenFile::open(p); }, {p, "version 2"});
  std::string negative = bytes;
  negative[11] = char(0x80);
  writeBytes(p, negative);
  expectError([&] { TokenFile::open(p); }, {p, "token count"});
}

TEST_F(TokenFileTest, BatchRowsAndShiftedTargets) {
  TokenFile file = TokenFile::open(iotaFile(100));
  const int B = 2, T = 4;
  std::vector<int32_t> inputs(B * T), targets(B * T);
  file.batch(10, B, T, inputs.data(), targets.data());
  // Row b starts at position + b*T; targets are the next tokens.
  EXPECT_EQ(inputs, (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(targets, (std::vector<int32_t>{11, 12, 13, 14, 15, 16, 17, 18}));
  // The last position at which a batch fits reads the final token.
  file.batch(91, B, T, inputs.data(), targets.data());
  EXPECT_EQ(inputs.front(), 91);
  EXPECT_EQ(targets.back(), 99);
}

TEST_F(TokenFileTest, BatchWrapsPastTheEnd) {
  TokenFile file = TokenFile::open(iotaFile(100));
  const int B = 2, T = 4;
  std::vector<int32_t> inputs(B * T), targets(B * T);
  // 100 - 8 = 92 start offsets: position 92 wraps to 0, 95 to 3.
  file.batch(92, B, T, inputs.data(), targets.data());
  EXPECT_EQ(inputs.front(), 0);
  file.batch(95 + 92 * 1000, B, T, inputs.data(), targets.data());
  EXPECT_EQ(inputs.front(), 3);
  EXPECT_EQ(targets.back(), 11);
}

TEST_F(TokenFileTest, BatchNeedsBTPlusOneTokens) {
  std::string p = iotaFile(8);
  TokenFile file = TokenFile::open(p);
  std::vector<int32_t> inputs(8), targets(8);
  expectError([&] { file.batch(0, 2, 4, inputs.data(), targets.data()); },
              {p, "has 8 tokens", "2x4", "needs 9"});
  // Exactly B*T+1 tokens: one batch, at every position.
  TokenFile nine = TokenFile::open(iotaFile(9));
  nine.batch(5, 2, 4, inputs.data(), targets.data());
  EXPECT_EQ(inputs.front(), 0);
  EXPECT_EQ(targets.back(), 8);
}

TEST_F(TokenFileTest, BatchRejectsBadArguments) {
  TokenFile file = TokenFile::open(iotaFile(100));
  int32_t buffer[8];
  expectError([&] { file.batch(-1, 2, 4, buffer, buffer); }, {"negative"});
  expectError([&] { file.batch(0, 0, 4, buffer, buffer); }, {"B=0"});
  expectError([&] { file.batch(0, 2, -4, buffer, buffer); }, {"T=-4"});
  // A product that overflows int64 is an error, not a wrapped size.
  const int64_t huge = int64_t(1) << 40;
  expectError([&] { file.batch(0, huge, huge, buffer, buffer); },
              {"has 100 tokens", "more than 2^63"});
}
