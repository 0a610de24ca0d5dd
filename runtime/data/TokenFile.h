//===- TokenFile.h - llm.c token files --------------------------*- C++ -*-===//
//
// Tokenised datasets in llm.c's format, so its prepared data (e.g.
// fineweb_train_*.bin, tinyshakespeare_val.bin) can be used as is: a header of
// 256 little-endian int32 {20240520 magic, 1 version, token count, 0...}
// followed by the tokens as little-endian uint16.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_DATA_TOKENFILE_H
#define SHARDC_RUNTIME_DATA_TOKENFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::data {

constexpr int32_t kTokenFileMagic = 20240520;
constexpr int32_t kTokenFileVersion = 1;
/// Header size in bytes: 256 int32.
constexpr int64_t kTokenFileHeaderBytes = 256 * 4;

/// Writes `tokens` as an llm.c token file. Throws rt::Error naming the file if
/// an id is outside [0, 65535], there are more than 2^31-1 tokens, or the
/// file cannot be written.
void write_token_file(const std::string &path,
                      const std::vector<int32_t> &tokens);

/// An llm.c token file read into memory.
class TokenFile {
public:
  /// Reads and validates a token file: magic, version, and a size of exactly
  /// 1024 + 2 * count bytes. Throws rt::Error naming the file otherwise.
  static TokenFile open(const std::string &path);

  /// Number of tokens.
  int64_t size() const { return static_cast<int64_t>(tokenIds.size()); }
  const std::vector<uint16_t> &tokens() const { return tokenIds; }
  const std::string &path() const { return filePath; }

  /// Fills inputs[B*T] and targets[B*T] as llm.c's DataLoader does: row b is
  /// the T tokens from start + b*T, and targets are the inputs shifted by one
  /// token, so the batch reads B*T+1 consecutive tokens from `start`.
  ///
  /// Wrapping: start = position mod (size() - B*T), the number of offsets at
  /// which a whole batch fits. Positions below that are used as they are;
  /// a caller that advances position by B*T every step keeps getting full
  /// batches and, past the end, starts again near the beginning (shifted,
  /// where llm.c restarts at exactly 0, so later epochs see new windows).
  ///
  /// Throws rt::Error if position < 0, B or T < 1, or the file has fewer than
  /// B*T+1 tokens.
  void batch(int64_t position, int64_t B, int64_t T, int32_t *inputs,
             int32_t *targets) const;

private:
  TokenFile() = default;

  std::string filePath;
  std::vector<uint16_t> tokenIds;
};

} // namespace shardc::data

#endif // SHARDC_RUNTIME_DATA_TOKENFILE_H
