//===- SafetensorsTest.cpp - safetensors reader and writer tests ----------===//
//
// Every corruption the reader must reject is built byte by byte here, so each
// test shows the exact file it feeds in.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/Error.h"
#include "runtime/checkpoint/Crc32c.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace shardc::ckpt;
using shardc::rt::Error;
namespace fs = std::filesystem;

namespace {

class SafetensorsTest : public testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "shardc-safetensors-XXXXXX").string();
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

  /// Writes raw bytes to "corrupt.safetensors" and returns the path.
  std::string writeRaw(const std::string &bytes) const {
    std::string p = path("corrupt.safetensors");
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return p;
  }

  /// A file with the given header text and data buffer.
  std::string writeFile(const std::string &header,
                        const std::string &data) const {
    return writeRaw(lengthField(header.size()) + header + data);
  }

  static std::string lengthField(uint64_t n) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>(n >> (8 * i));
    return bytes;
  }

  /// Expects reading `p` to throw Error naming the file and containing
  /// `what`.
  void expectReadError(const std::string &p, const std::string &what) const {
    try {
      read_safetensors(p);
      ADD_FAILURE() << "no shardc::rt::Error for " << what;
    } catch (const Error &e) {
      std::string message = e.what();
      EXPECT_NE(message.find(p), std::string::npos) << message;
      EXPECT_NE(message.find(what), std::string::npos)
          << "message '" << message << "' lacks '" << what << "'";
    }
  }

  /// One F32 tensor "t" of shape [n] at the given offsets.
  static std::string f32Header(int n, const std::string &offsets) {
    return "{\"t\": {\"dtype\": \"F32\", \"shape\": [" + std::to_string(n) +
           "], \"data_offsets\": " + offsets + "}}";
  }

  std::string dir;
};

TensorData randomTensor(const std::string &dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng) {
  size_t count = 1;
  for (int64_t d : shape)
    count *= size_t(d);
  TensorData t{dtype, shape, {}};
  t.bytes.resize(count * safetensors_dtype_size(dtype));
  for (uint8_t &b : t.bytes)
    b = static_cast<uint8_t>(rng());
  return t;
}

} // namespace

TEST_F(SafetensorsTest, RoundTripsEveryDtypeWithMetadata) {
  std::mt19937 rng(7);
  std::map<std::string, TensorData> tensors = {
      {"wte", randomTensor("F32", {5, 3}, rng)},
      {"f64", randomTensor("F64", {2, 2}, rng)},
      {"bf16", randomTensor("BF16", {7}, rng)},
      {"f16", randomTensor("F16", {3, 1, 2}, rng)},
      {"i32", randomTensor("I32", {4}, rng)},
      {"i64", randomTensor("I64", {1}, rng)},
      {"u16", randomTensor("U16", {9}, rng)},
      {"u8", randomTensor("U8", {13}, rng)},
      {"scalar", randomTensor("F32", {}, rng)},
      {"empty", randomTensor("F32", {0, 4}, rng)}};
  std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                 {"step", "1200"}};
  std::string p = path("model.safetensors");
  write_safetensors(p, tensors, metadata);

  std::map<std::string, std::string> readMetadata;
  std::map<std::string, TensorData> read = read_safetensors(p, &readMetadata);
  EXPECT_EQ(readMetadata, metadata);
  ASSERT_EQ(read.size(), tensors.size());
  for (const auto &[name, tensor] : tensors) {
    ASSERT_TRUE(read.count(name)) << name;
    EXPECT_EQ(read[name].dtype, tensor.dtype) << name;
    EXPECT_EQ(read[name].shape, tensor.shape) << name;
    EXPECT_EQ(read[name].bytes, tensor.bytes) << name;
  }

  // Header padded to 8 bytes; data laid out in name order; no temp file left.
  std::string bytes = readBytes(p);
  uint64_t headerBytes = 0;
  for (int i = 0; i < 8; ++i)
    headerBytes |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  EXPECT_EQ(headerBytes % 8, 0u);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, headerBytes));
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    EXPECT_EQ(header[name]["data_offsets"][0].get<uint64_t>(), offset) << name;
    offset += tensor.bytes.size();
  }
  EXPECT_EQ(bytes.size(), 8 + headerBytes + offset);
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST_F(SafetensorsTest, WriteReplacesAnExistingFile) {
  std::mt19937 rng(1);
  std::string p = path("ckpt.safetensors");
  write_safetensors(p, {{"a", randomTensor("F32", {100}, rng)}});
  std::map<std::string, TensorData> second = {
      {"b", randomTensor("U8", {3}, rng)}};
  write_safetensors(p, second);
  std::map<std::string, TensorData> read = read_safetensors(p);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read["b"].bytes, second["b"].bytes);
}

TEST_F(SafetensorsTest, WriteRejectsInconsistentTensors) {
  std::string p = path("bad.safetensors");
  TensorData wrongSize{"F32", {2, 3}, std::vector<uint8_t>(20)};
  try {
    write_safetensors(p, {{"w", wrongSize}});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'w'"), std::string::npos) << message;
    EXPECT_NE(message.find("needs 24"), std::string::npos) << message;
  }
  TensorData unknown{"Q4", {1}, std::vector<uint8_t>(1)};
  EXPECT_THROW(write_safetensors(p, {{"q", unknown}}), Error);
  TensorData reserved{"U8", {1}, std::vector<uint8_t>(1)};
  EXPECT_THROW(write_safetensors(p, {{"__metadata__", reserved}}), Error);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(SafetensorsTest, MissingFile) {
  expectReadError(path("absent.safetensors"), "cannot open");
}

//===----------------------------------------------------------------------===//
// Corrupt files
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, ShorterThanTheLengthField) {
  expectReadError(writeRaw(""), "fewer than the 8-byte");
  expectReadError(writeRaw(std::string("\x10\0\0", 3)),
                  "fewer than the 8-byte");
}

TEST_F(SafetensorsTest, HeaderLengthPastTheEnd) {
  expectReadError(writeRaw(lengthField(100) + "{}"), "header length is 100");
  // A length that would overflow any size computation.
  expectReadError(writeRaw(lengthField(~uint64_t(0)) + "{}"),
                  "header length is 18446744073709551615");
}

TEST_F(SafetensorsTest, HeaderNotJson) {
  expectReadError(writeFile("{\"t\": {\"dtype\": ", ""), "not valid JSON");
  expectReadError(writeFile("\xff\xfe", ""), "not valid JSON");
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  expectReadError(writeFile("[1, 2]", ""), "not a JSON object");
  expectReadError(writeFile("{\"t\": 3}", ""), "tensor 't': its entry");
}

TEST_F(SafetensorsTest, MissingField) {
  expectReadError(
      writeFile("{\"t\": {\"dtype\": \"U8\", \"shape\": [1]}}", "x"),
      "no \"data_offsets\"");
}

TEST_F(SafetensorsTest, UnknownDtype) {
  expectReadError(writeFile("{\"t\": {\"dtype\": \"F31\", \"shape\": [1], "
                            "\"data_offsets\": [0, 4]}}",
                            "abcd"),
                  "unknown dtype \"F31\"");
  expectReadError(writeFile("{\"t\": {\"dtype\": 4, \"shape\": [1], "
                            "\"data_offsets\": [0, 4]}}",
                            "abcd"),
                  "\"dtype\" is not a string");
}

TEST_F(SafetensorsTest, ShapeNotIntegers) {
  for (const char *shape :
       {"[1.5]", "[\"2\"]", "[-1]", "2", "[null]", "[9223372036854775808]"}) {
    expectReadError(writeFile("{\"t\": {\"dtype\": \"U8\", \"shape\": " +
                                  std::string(shape) +
                                  ", \"data_offsets\": [0, 2]}}",
                              "ab"),
                    "tensor 't'");
  }
}

TEST_F(SafetensorsTest, OffsetsNotIntegers) {
  for (const char *offsets :
       {"[0.0, 8]", "[\"0\", 8]", "[0]", "[0, 8, 8]", "[-8, 0]", "{}"}) {
    expectReadError(writeFile(f32Header(2, offsets), std::string(8, 'x')),
                    "is not a pair of non-negative integers");
  }
}

TEST_F(SafetensorsTest, ByteSizeDisagreesWithShape) {
  expectReadError(writeFile(f32Header(3, "[0, 8]"), std::string(8, 'x')),
                  "hold 8 bytes but F32 [3] needs 12");
  // product(shape) overflows 64 bits: still an error, not a wrap-around.
  expectReadError(
      writeFile("{\"t\": {\"dtype\": \"F64\", \"shape\": "
                "[4294967296, 4294967296], \"data_offsets\": [0, 8]}}",
                std::string(8, 'x')),
      "needs more than 2^64");
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  expectReadError(writeFile(f32Header(2, "[0, 16]"), std::string(8, 'x')),
                  "out of range of the 8-byte data buffer");
  expectReadError(writeFile(f32Header(0, "[8, 0]"), std::string(8, 'x')),
                  "out of range");
  expectReadError(
      writeFile(f32Header(2, "[18446744073709551615, 8]"), std::string(8, 'x')),
      "out of range");
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  expectReadError(writeFile("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
                            "\"data_offsets\": [0, 8]}, "
                            "\"b\": {\"dtype\": \"F32\", \"shape\": [2], "
                            "\"data_offsets\": [4, 12]}}",
                            std::string(12, 'x')),
                  "tensor 'b' [4, 12) overlaps tensor 'a'");
  // Two tensors sharing bytes exactly is an overlap too.
  expectReadError(writeFile("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], "
                            "\"data_offsets\": [0, 4]}, "
                            "\"b\": {\"dtype\": \"U8\", \"shape\": [4], "
                            "\"data_offsets\": [0, 4]}}",
                            std::string(4, 'x')),
                  "overlaps");
}

TEST_F(SafetensorsTest, HoleBetweenTensors) {
  expectReadError(writeFile("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                            "\"data_offsets\": [0, 4]}, "
                            "\"b\": {\"dtype\": \"F32\", \"shape\": [1], "
                            "\"data_offsets\": [8, 12]}}",
                            std::string(12, 'x')),
                  "bytes [4, 8) of the data buffer belong to no tensor");
}

TEST_F(SafetensorsTest, UncoveredTail) {
  expectReadError(writeFile(f32Header(1, "[0, 4]"), std::string(8, 'x')),
                  "bytes [4, 8) of the data buffer belong to no tensor");
  expectReadError(writeFile("{}", "x"), "bytes [0, 1)");
}

TEST_F(SafetensorsTest, BadMetadata) {
  expectReadError(writeFile("{\"__metadata__\": [1]}", ""),
                  "\"__metadata__\" is not an object");
  expectReadError(writeFile("{\"__metadata__\": {\"step\": 3}}", ""),
                  "metadata \"step\" is not a string");
}

TEST_F(SafetensorsTest, EmptyFileIsValid) {
  // Header "{}" with no tensors, as written for an empty map.
  std::string p = path("empty.safetensors");
  write_safetensors(p, {});
  EXPECT_TRUE(read_safetensors(p).empty());
}

TEST_F(SafetensorsTest, EveryTruncationAndByteFlipIsAnErrorOrValid) {
  // No prefix of a valid file and no single corrupted byte may crash the
  // reader (run under valgrind or ASan to see out-of-bounds reads too).
  std::mt19937 rng(3);
  std::string p = path("good.safetensors");
  write_safetensors(p,
                    {{"a", randomTensor("F32", {2, 3}, rng)},
                     {"b", randomTensor("I64", {2}, rng)}},
                    {{"k", "v"}});
  const std::string good = readBytes(p);
  int errors = 0;
  auto attempt = [&](const std::string &bytes) {
    try {
      read_safetensors(writeRaw(bytes));
    } catch (const Error &) {
      ++errors;
    }
  };
  for (size_t n = 0; n < good.size(); ++n)
    attempt(good.substr(0, n));
  EXPECT_EQ(errors, int(good.size()));
  for (size_t i = 0; i < good.size(); ++i) {
    for (char c : {'\0', '9', '"', '[', '\xff'}) {
      std::string bytes = good;
      bytes[i] = c;
      attempt(bytes);
    }
  }
}

//===----------------------------------------------------------------------===//
// Checksums
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, WritesTheCrc32cOfEveryTensor) {
  std::mt19937 rng(5);
  std::map<std::string, TensorData> tensors = {
      {"a", randomTensor("F32", {3, 5}, rng)},
      {"empty", randomTensor("BF16", {0}, rng)}};
  std::string p = path("sums.safetensors");
  write_safetensors(p, tensors, {{"format", "pt"}});
  std::string bytes = readBytes(p);
  uint64_t headerBytes = 0;
  for (int i = 0; i < 8; ++i)
    headerBytes |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, headerBytes));
  const nlohmann::json &meta = header.at("__metadata__");
  char expected[9];
  std::snprintf(expected, sizeof expected, "%08x",
                crc32c(tensors["a"].bytes.data(), tensors["a"].bytes.size()));
  EXPECT_EQ(meta.at("crc32c:a"), expected);
  EXPECT_EQ(meta.at("crc32c:empty"), "00000000");
  EXPECT_EQ(meta.at("format"), "pt");

  // The reader returns the caller's metadata only.
  std::map<std::string, std::string> readMetadata;
  read_safetensors(p, &readMetadata, Checksums::Require);
  EXPECT_EQ(readMetadata,
            (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST_F(SafetensorsTest, EveryFlippedDataBitIsAnError) {
  // One flipped bit anywhere in a tensor's bytes, whatever value it makes
  // (most are ordinary finite numbers), names the file and the tensor.
  std::mt19937 rng(9);
  std::string p = path("good.safetensors");
  write_safetensors(p, {{"a", randomTensor("F32", {2, 3}, rng)},
                        {"b", randomTensor("BF16", {5}, rng)}});
  const std::string good = readBytes(p);
  const size_t dataStart = good.size() - (6 * 4 + 5 * 2);
  for (size_t i = dataStart; i < good.size(); ++i) {
    for (int bit : {0, 3, 7}) {
      std::string bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ (1 << bit));
      std::string tensor = i < dataStart + 24 ? "tensor 'a'" : "tensor 'b'";
      expectReadError(writeRaw(bytes),
                      tensor + " fails its CRC32C check (stored ");
      expectReadError(writeRaw(bytes), "): the file is damaged");
    }
  }
}

TEST_F(SafetensorsTest, ChecksumsAreVerifiedWhenPresentAndRequiredOnRequest) {
  // A file without checksums (as Hugging Face writes them) loads...
  std::string header = f32Header(2, "[0, 8]");
  std::string data(8, '\0');
  std::string p = writeFile(header, data);
  EXPECT_EQ(read_safetensors(p).at("t").bytes.size(), 8u);
  // ...unless every tensor must have one.
  try {
    read_safetensors(p, nullptr, Checksums::Require);
    ADD_FAILURE() << "no error for a tensor without a checksum";
  } catch (const Error &e) {
    EXPECT_NE(
        std::string(e.what()).find(p + ": tensor 't' has no CRC32C checksum"),
        std::string::npos)
        << e.what();
  }

  // CRC-32C of 8 zero bytes, in either case of hex digits.
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(data.data(), data.size()));
  auto withChecksum = [&](const std::string &key, const std::string &value) {
    return writeFile("{\"__metadata__\": {\"" + key + "\": \"" + value +
                         "\"}, " + header.substr(1),
                     data);
  };
  EXPECT_NO_THROW(read_safetensors(withChecksum("crc32c:t", crc), nullptr,
                                   Checksums::Require));
  std::string upper = crc;
  for (char &c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_NO_THROW(read_safetensors(withChecksum("crc32c:t", upper)));

  expectReadError(
      withChecksum("crc32c:t", "00000000"),
      "tensor 't' fails its CRC32C check (stored 00000000, computed " +
          std::string(crc) + "): the file is damaged");
  expectReadError(
      withChecksum("crc32c:t", "xyz"),
      "metadata \"crc32c:t\" is \"xyz\", not a CRC32C of 8 hex digits");
  expectReadError(withChecksum("crc32c:t", std::string(crc) + "0"),
                  "not a CRC32C of 8 hex digits");
  expectReadError(withChecksum("crc32c:u", crc),
                  "metadata \"crc32c:u\" is the checksum of a tensor the file "
                  "does not have");
}

TEST_F(SafetensorsTest, ChecksumKeysAreReservedOnWrite) {
  std::mt19937 rng(2);
  try {
    write_safetensors(path("x.safetensors"),
                      {{"a", randomTensor("F32", {1}, rng)}},
                      {{"crc32c:a", "00000000"}});
    ADD_FAILURE() << "a checksum key was accepted as caller metadata";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("\"crc32c:a\" is reserved"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("x.safetensors")));
}
