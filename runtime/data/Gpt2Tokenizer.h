//===- Gpt2Tokenizer.h - GPT-2 byte-level BPE tokenizer ---------*- C++ -*-===//
//
// The tokenizer of OpenAI's GPT-2 (encoder.py, tiktoken's "gpt2"), loaded from
// the original encoder.json and vocab.bpe. Text is split by GPT-2's
// pre-tokenisation regex, each piece's UTF-8 bytes are mapped to the byte
// alphabet of bytes_to_unicode() and merged by rank-ordered BPE.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_DATA_GPT2TOKENIZER_H
#define SHARDC_RUNTIME_DATA_GPT2TOKENIZER_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardc::data {

/// GPT-2's byte-level BPE tokenizer.
///
/// encode() accepts any byte string: bytes that are not valid UTF-8 are kept
/// (each as a one-byte punctuation piece), so decode(encode(s)) == s always.
/// "<|endoftext|>" in the text is encoded as ordinary text, as GPT-2's own
/// encoder does; documents are separated by appending eot() to the id stream.
///
/// encode() memoises the BPE of each distinct piece in a cache owned by the
/// tokenizer, so it is not safe to call concurrently on one instance: give
/// each thread its own copy.
class Gpt2Tokenizer {
public:
  /// Loads encoder.json (token string -> id) and vocab.bpe (merges, one pair
  /// per line, ranked by line order after the "#version" line). Throws
  /// rt::Error naming the file if it is missing or malformed.
  static Gpt2Tokenizer load(const std::string &encoderJson,
                            const std::string &vocabBpe);

  /// Token ids of UTF-8 text.
  std::vector<int32_t> encode(std::string_view utf8) const;

  /// The bytes of the tokens, concatenated. Throws rt::Error on an id
  /// outside [0, vocab_size()).
  std::string decode(const std::vector<int32_t> &ids) const;

  /// The id of "<|endoftext|>" (50256 for GPT-2).
  int32_t eot() const { return eotId; }

  /// Number of tokens in encoder.json (50257 for GPT-2).
  int32_t vocab_size() const { return static_cast<int32_t>(idToBytes.size()); }

  /// Splits text as GPT-2's pre-tokenisation regex
  ///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
  ///   \s+(?!\S)|\s+
  /// does (implemented by hand over code points); the pieces are views into
  /// `utf8` and concatenate to it.
  static std::vector<std::string_view> split_words(std::string_view utf8);

private:
  Gpt2Tokenizer() = default;

  /// Appends the BPE tokens of one pre-tokenised piece to `out`.
  void encodeWord(std::string_view word, std::vector<int32_t> &out) const;

  /// Rank of a merge and the id of the token it produces.
  struct Merge {
    int32_t rank;
    int32_t result;
  };

  std::vector<std::string> idToBytes;
  std::array<int32_t, 256> byteToId{};
  /// Keyed by (left id << 32 | right id).
  std::unordered_map<uint64_t, Merge> merges;
  int32_t eotId = -1;
  mutable std::unordered_map<std::string, std::vector<int32_t>> wordCache;
};

} // namespace shardc::data

#endif // SHARDC_RUNTIME_DATA_GPT2TOKENIZER_H
