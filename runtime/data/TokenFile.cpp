//===- TokenFile.cpp - llm.c token files ----------------------------------===//
//
// Integers are converted to and from little-endian explicitly, so files are
// portable whatever the host's byte order.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenFile.h"

#include "runtime/Error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

using namespace shardc;
using namespace shardc::data;

namespace {

void storeLE32(uint8_t *p, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(u >> (8 * i));
}

int32_t loadLE32(const uint8_t *p) {
  uint32_t u = 0;
  for (int i = 0; i < 4; ++i)
    u |= static_cast<uint32_t>(p[i]) << (8 * i);
  return static_cast<int32_t>(u);
}

} // namespace

void shardc::data::write_token_file(const std::string &path,
                                    const std::vector<int32_t> &tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw rt::Error("cannot write token file '" + path +
                    "': " + std::to_string(tokens.size()) +
                    " tokens do not fit the int32 count of the header");
  std::vector<uint8_t> bytes(kTokenFileHeaderBytes + 2 * tokens.size(), 0);
  storeLE32(&bytes[0], kTokenFileMagic);
  storeLE32(&bytes[4], kTokenFileVersion);
  storeLE32(&bytes[8], static_cast<int32_t>(tokens.size()));
  uint8_t *out = bytes.data() + kTokenFileHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int32_t id = tokens[i];
    if (id < 0 || id > 0xFFFF)
      throw rt::Error("cannot write token file '" + path + "': token " +
                      std::to_string(i) + " has id " + std::to_string(id) +
                      ", outside the uint16 range [0, 65535]");
    out[2 * i] = static_cast<uint8_t>(id);
    out[2 * i + 1] = static_cast<uint8_t>(id >> 8);
  }

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    throw rt::Error("cannot create token file '" + path +
                    "': " + std::strerror(errno));
  file.write(reinterpret_cast<const char *>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file)
    throw rt::Error("cannot write token file '" + path + "'");
}

TokenFile TokenFile::open(const std::string &path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    throw rt::Error("cannot open token file '" + path +
                    "': " + std::strerror(errno));
  const int64_t fileBytes = static_cast<int64_t>(file.tellg());
  file.seekg(0);
  if (fileBytes < 0 || !file)
    throw rt::Error("cannot read token file '" + path + "'");
  if (fileBytes < kTokenFileHeaderBytes)
    throw rt::Error("token file '" + path + "' is truncated: " +
                    std::to_string(fileBytes) + " bytes, shorter than the " +
                    std::to_string(kTokenFileHeaderBytes) + "-byte header");

  uint8_t header[kTokenFileHeaderBytes];
  if (!file.read(reinterpret_cast<char *>(header), sizeof(header)))
    throw rt::Error("cannot read the header of token file '" + path + "'");
  int32_t magic = loadLE32(header);
  int32_t version = loadLE32(header + 4);
  int32_t count = loadLE32(header + 8);
  if (magic != kTokenFileMagic)
    throw rt::Error("'" + path + "' is not a token file: magic " +
                    std::to_string(magic) + ", expected " +
                    std::to_string(kTokenFileMagic));
  if (version != kTokenFileVersion)
    throw rt::Error("token file '" + path + "' has version " +
                    std::to_string(version) + "; only version " +
                    std::to_string(kTokenFileVersion) + " is supported");
  if (count < 0)
    throw rt::Error("token file '" + path + "' is corrupt: token count " +
                    std::to_string(count));
  const int64_t expectedBytes = kTokenFileHeaderBytes + 2 * int64_t(count);
  if (fileBytes != expectedBytes)
    throw rt::Error("token file '" + path + "' is " +
                    (fileBytes < expectedBytes ? "truncated" : "corrupt") +
                    ": its header says " + std::to_string(count) +
                    " tokens, so " + std::to_string(expectedBytes) +
                    " bytes are expected, but the file has " +
                    std::to_string(fileBytes));

  std::vector<uint8_t> raw(2 * static_cast<size_t>(count));
  if (!file.read(reinterpret_cast<char *>(raw.data()),
                 static_cast<std::streamsize>(raw.size())))
    throw rt::Error("cannot read the tokens of token file '" + path + "'");
  TokenFile tokens;
  tokens.filePath = path;
  tokens.tokenIds.resize(count);
  for (int32_t i = 0; i < count; ++i)
    tokens.tokenIds[i] =
        static_cast<uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
  return tokens;
}

void TokenFile::batch(int64_t position, int64_t B, int64_t T, int32_t *inputs,
                      int32_t *targets) const {
  if (B < 1 || T < 1)
    throw rt::Error("batch from token file '" + filePath +
                    "': B and T must be positive, got B=" + std::to_string(B) +
                    " T=" + std::to_string(T));
  if (position < 0)
    throw rt::Error("batch from token file '" + filePath +
                    "': negative position " + std::to_string(position));
  // Checked as T > size() / B first so that B*T is only formed when it
  // cannot overflow.
  if (T > size() / B || B * T + 1 > size()) {
    bool representable = T <= std::numeric_limits<int64_t>::max() / B;
    throw rt::Error("token file '" + filePath + "' has " +
                    std::to_string(size()) + " tokens; a batch of " +
                    std::to_string(B) + "x" + std::to_string(T) + " needs " +
                    (representable
                         ? std::to_string(static_cast<uint64_t>(B * T) + 1)
                         : std::string("more than 2^63")));
  }
  const int64_t n = B * T;
  const int64_t start = position % (size() - n);
  const uint16_t *window = tokenIds.data() + start;
  for (int64_t i = 0; i < n; ++i) {
    inputs[i] = window[i];
    targets[i] = window[i + 1];
  }
}
