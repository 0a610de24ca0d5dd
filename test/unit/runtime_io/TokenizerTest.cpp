//===- TokenizerTest.cpp - GPT-2 tokenizer tests --------------------------===//
//
// The pre-tokeniser and the BPE rules are tested on their own with a small
// vocabulary built here. The real GPT-2 vocabulary comes from
// $SHARDC_GPT2_VOCAB_DIR (scripts/fetch_gpt2_vocab.sh; set by CMake); tests
// that need it, and the cross-check that runs the npm encoder under node, are
// skipped when it is missing.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Gpt2Tokenizer.h"

#include "runtime/Error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace std::string_literals;
using shardc::data::Gpt2Tokenizer;
using shardc::rt::Error;
namespace fs = std::filesystem;

namespace {

std::string vocabDir() {
  const char *dir = std::getenv("SHARDC_GPT2_VOCAB_DIR");
  return dir ? dir : "";
}

bool haveVocab() {
  std::string dir = vocabDir();
  return !dir.empty() && fs::exists(fs::path(dir) / "encoder.json") &&
         fs::exists(fs::path(dir) / "vocab.bpe");
}

#define SKIP_WITHOUT_VOCAB()                                                   \
  if (!haveVocab())                                                            \
  GTEST_SKIP() << "GPT-2 vocabulary not found in SHARDC_GPT2_VOCAB_DIR='"      \
               << vocabDir() << "'; run scripts/fetch_gpt2_vocab.sh"

/// The real GPT-2 tokenizer, loaded once.
const Gpt2Tokenizer &gpt2() {
  static const Gpt2Tokenizer tok = Gpt2Tokenizer::load(
      vocabDir() + "/encoder.json", vocabDir() + "/vocab.bpe");
  return tok;
}

/// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "shardc-tokenizer-XXXXXX").string();
    path = mkdtemp(pattern.data()) ? pattern : "";
    if (path.empty())
      throw std::runtime_error("mkdtemp failed");
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string &name, const std::string &contents) {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string path;
};

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view piece : Gpt2Tokenizer::split_words(text))
    out.emplace_back(piece);
  return out;
}

using Pieces = std::vector<std::string>;

} // namespace

//===----------------------------------------------------------------------===//
// Pre-tokenisation (no vocabulary needed)
//===----------------------------------------------------------------------===//

TEST(Gpt2SplitWords, WordsTakeOneLeadingSpace) {
  EXPECT_EQ(split("Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(split("   x"), (Pieces{"  ", " x"}));
  EXPECT_EQ(split("abc123 456 +-*/"), (Pieces{"abc", "123", " 456", " +-*/"}));
}

TEST(Gpt2SplitWords, Contractions) {
  EXPECT_EQ(split("don't we'll they've I'm"),
            (Pieces{"don", "'t", " we", "'ll", " they", "'ve", " I", "'m"}));
  // The regex is case-sensitive and 's matches even inside a word.
  EXPECT_EQ(split("DON'T 'sup"), (Pieces{"DON", "'", "T", " '", "sup"}));
  EXPECT_EQ(split("x''s"), (Pieces{"x", "''", "s"}));
  EXPECT_EQ(split("'s's"), (Pieces{"'s", "'s"}));
}

TEST(Gpt2SplitWords, Whitespace) {
  // Only ' ' prefixes a word; a run keeps its last space for the next word
  // unless the run is a single character or ends the text.
  EXPECT_EQ(split("\t\tx"), (Pieces{"\t", "\t", "x"}));
  EXPECT_EQ(split("a \n\n b"), (Pieces{"a", " \n\n", " b"}));
  EXPECT_EQ(split("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("end   "), (Pieces{"end", "   "}));
  EXPECT_EQ(split(" "), (Pieces{" "}));
  EXPECT_EQ(split(""), (Pieces{}));
}

TEST(Gpt2SplitWords, UnicodeClasses) {
  // \u00a0 and \u3000 are \s; ² ½ Ⅻ ٣ are \p{N}; 中文 and é are \p{L}.
  EXPECT_EQ(split("a\u00a0.\u3000,x"),
            (Pieces{"a", "\u00a0", ".", "\u3000", ",", "x"}));
  EXPECT_EQ(split("x² ½Ⅻ ٣"), (Pieces{"x", "²", " ½Ⅻ", " ٣"}));
  EXPECT_EQ(split("中文，é!"), (Pieces{"中文", "，", "é", "!"}));
  EXPECT_EQ(split("a 😀👍"), (Pieces{"a", " 😀👍"}));
}

TEST(Gpt2SplitWords, InvalidUtf8IsPunctuation) {
  // A stray continuation byte, a truncated sequence, an overlong '/' and an
  // encoded surrogate are each one punctuation byte per byte.
  EXPECT_EQ(split(std::string("a\x80") + "b"), (Pieces{"a", "\x80", "b"}));
  EXPECT_EQ(split("a \xE4\xB8"), (Pieces{"a", " \xE4\xB8"}));
  EXPECT_EQ(split(std::string("\xC0\xAF") + "x"), (Pieces{"\xC0\xAF", "x"}));
  EXPECT_EQ(split("\xED\xA0\x80"), (Pieces{"\xED\xA0\x80"}));
}

//===----------------------------------------------------------------------===//
// BPE on a small hand-made vocabulary (no GPT-2 files needed)
//===----------------------------------------------------------------------===//

namespace {

/// GPT-2's printable alias of byte b, written independently of the library.
std::string byteAlias(int b) {
  static std::vector<std::string> aliases = [] {
    std::vector<std::string> table(256);
    int next = 256;
    for (int i = 0; i < 256; ++i) {
      bool printable = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) ||
                       (i >= 174 && i <= 255);
      int cp = printable ? i : next++;
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      table[i] = s;
    }
    return table;
  }();
  return aliases[b];
}

/// A vocabulary of the 256 bytes (ids 0..255), the merge results in order
/// (256...), and <|endoftext|> last.
struct MiniVocab {
  std::string encoderJson, vocabBpe;
};

MiniVocab
writeMiniVocab(TempDir &dir,
               const std::vector<std::pair<std::string, std::string>> &merges) {
  std::string json = "{";
  int id = 0;
  auto add = [&](const std::string &token) {
    std::string escaped;
    for (char c : token) {
      if (c == '"' || c == '\\')
        escaped += '\\';
      escaped += c;
    }
    json += id ? ", \"" : "\"";
    json += escaped + "\": " + std::to_string(id);
    ++id;
  };
  for (int b = 0; b < 256; ++b)
    add(byteAlias(b));
  std::string bpe = "#version: 0.2\n";
  for (const auto &[left, right] : merges) {
    add(left + right);
    bpe += left + " " + right + "\n";
  }
  add("<|endoftext|>");
  json += "}";
  return {dir.file("encoder.json", json), dir.file("vocab.bpe", bpe)};
}

} // namespace

TEST(Gpt2Bpe, MergesApplyInRankOrder) {
  TempDir dir;
  // "b c" outranks "a b", so "abc" becomes a + bc, not ab + c.
  MiniVocab v = writeMiniVocab(dir, {{"b", "c"}, {"a", "b"}, {"a", "bc"}});
  Gpt2Tokenizer tok = Gpt2Tokenizer::load(v.encoderJson, v.vocabBpe);
  EXPECT_EQ(tok.vocab_size(), 256 + 3 + 1);
  EXPECT_EQ(tok.eot(), 259);
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok.encode("abd"), (std::vector<int32_t>{257, 'd'}));
  EXPECT_EQ(tok.decode({258, 257, 'd'}), "abcabd");
}

TEST(Gpt2Bpe, RepeatedPairMergesLeftToRight) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {{"a", "a"}});
  Gpt2Tokenizer tok = Gpt2Tokenizer::load(v.encoderJson, v.vocabBpe);
  // "aaa" -> aa + a (not a + aa); "aaaa" -> aa + aa.
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<int32_t>{256, 256}));
  // Cached words give the same answer a second time.
  EXPECT_EQ(tok.encode("aaa aaa"),
            (std::vector<int32_t>{256, 'a', ' ', 256, 'a'}));
}

TEST(Gpt2Bpe, SpaceIsItsAlias) {
  TempDir dir;
  // Merges name bytes by their printable alias: ' ' is "Ġ" (U+0120).
  MiniVocab v = writeMiniVocab(dir, {{"Ġ", "x"}});
  Gpt2Tokenizer tok = Gpt2Tokenizer::load(v.encoderJson, v.vocabBpe);
  EXPECT_EQ(tok.encode(" x"), (std::vector<int32_t>{256}));
  EXPECT_EQ(tok.decode({256}), " x");
}

TEST(Gpt2Bpe, EveryByteStringRoundTrips) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {{"a", "b"}});
  Gpt2Tokenizer tok = Gpt2Tokenizer::load(v.encoderJson, v.vocabBpe);
  std::string all;
  for (int b = 0; b < 256; ++b)
    all += static_cast<char>(b);
  std::vector<int32_t> ids = tok.encode(all);
  // One id per byte, except that "ab" merges.
  EXPECT_EQ(ids.size(), 255u);
  EXPECT_EQ(tok.decode(ids), all);
}

//===----------------------------------------------------------------------===//
// Load and decode errors
//===----------------------------------------------------------------------===//

TEST(Gpt2Load, MissingFilesNameThePath) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {});
  expectError([&] { Gpt2Tokenizer::load(dir.path + "/nope.json", v.vocabBpe); },
              {"nope.json", "GPT-2 encoder file"});
  expectError([&] { Gpt2Tokenizer::load(v.encoderJson, dir.path + "/no.bpe"); },
              {"no.bpe", "GPT-2 merges file"});
}

TEST(Gpt2Load, CorruptEncoderJson) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {});
  auto load = [&](const std::string &json) {
    return [&, json] {
      Gpt2Tokenizer::load(dir.file("bad.json", json), v.vocabBpe);
    };
  };
  expectError(load("{\"a\": 0,"), {"bad.json", "not valid JSON"});
  expectError(load("[1, 2]"), {"bad.json", "object"});
  expectError(load("{\"a\": 1}"), {"bad.json", "ids must be integers"});
  expectError(load("{\"a\": \"0\"}"), {"bad.json", "ids must be integers"});
  expectError(load("{\"a\": 0, \"b\": 0}"), {"bad.json", "used twice"});
  expectError(load("{\"a\": 0}"), {"bad.json", "no token for byte"});
  // U+4E2D is outside the byte alphabet.
  expectError(load("{\"中\": 0}"), {"bad.json", "byte alphabet"});
  // The real alphabet but no <|endoftext|>.
  std::string json = readText(v.encoderJson);
  json = json.substr(0, json.rfind(", \"<|endoftext|>\"")) + "}";
  expectError(load(json), {"bad.json", "<|endoftext|>"});
}

TEST(Gpt2Load, CorruptMerges) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {{"a", "b"}});
  auto load = [&](const std::string &bpe) {
    return [&, bpe] {
      Gpt2Tokenizer::load(v.encoderJson, dir.file("bad.bpe", bpe));
    };
  };
  expectError(load("#version: 0.2\na b\nab\n"), {"bad.bpe", "line 3"});
  expectError(load("#version: 0.2\na  b\n"), {"bad.bpe", "line 2"});
  // "c d" is a valid pair of tokens but "cd" is not in the vocabulary.
  expectError(load("#version: 0.2\na b\nc d\n"),
              {"bad.bpe", "line 3", "not in"});
}

TEST(Gpt2Load, DecodeRejectsUnknownIds) {
  TempDir dir;
  MiniVocab v = writeMiniVocab(dir, {});
  Gpt2Tokenizer tok = Gpt2Tokenizer::load(v.encoderJson, v.vocabBpe);
  expectError([&] { tok.decode({1, 257}); }, {"257", "[0, 257)"});
  expectError([&] { tok.decode({-1}); }, {"-1"});
}

//===----------------------------------------------------------------------===//
// The real GPT-2 vocabulary
//===----------------------------------------------------------------------===//

TEST(Gpt2Tokenizer, VocabularyShape) {
  SKIP_WITHOUT_VOCAB();
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().eot(), 50256);
  EXPECT_EQ(gpt2().decode({gpt2().eot()}), "<|endoftext|>");
}

TEST(Gpt2Tokenizer, KnownIds) {
  SKIP_WITHOUT_VOCAB();
  // Expected ids from the npm package gpt-3-encoder@1.1.4, produced with
  //   test/unit/runtime_io/gpt2_reference_ids.js --json < strings.json
  // (the first two are also the ids quoted throughout GPT-2 literature).
  const std::pair<std::string, std::vector<int32_t>> cases[] = {
      {"Hello world", {15496, 995}},
      {"Hello, world!", {15496, 11, 995, 0}},
      {"I'm sure they'll say it's what we've done, isn't it? They'd know. "
       "We're here.",
       {40,   1101, 1654, 484, 1183, 910,  340, 338, 644, 356, 1053, 1760, 11,
        2125, 470,  340,  30,  1119, 1549, 760, 13,  775, 821, 994,  13}},
      {"DON'T SHOUT, it'S 'quoted' ''s",
       {41173, 6, 51, 6006, 12425, 11, 340, 6, 50, 705, 421, 5191, 6, 10148,
        82}},
      {"In 2024, 3.14159 and 1,000,000 people paid $12.50 (x2) for 42nd",
       {818, 48609, 11,  513,  13, 1415, 19707, 290, 352, 11, 830, 11,   830,
        661, 3432,  720, 1065, 13, 1120, 357,   87,  17,  8,  329, 5433, 358}},
      {"multiple   spaces    here  ",
       {48101, 220, 220, 9029, 220, 220, 220, 994, 220, 220}},
      {"line one\nline two\n\n\nindented\n\tcode\r\nwindows \n",
       {1370, 530, 198, 1370, 734, 628, 198, 521, 4714, 198, 197, 8189, 201,
        198, 28457, 220, 198}},
      {"café résumé naïve é",
       {66, 1878, 2634, 40560, 16345, 2634, 41492, 38251}},
      {"中文分词测试，你好世界。",
       {40792, 23877, 229,   26344, 228,   46237, 235,   38184,
        233,   46237, 243,   171,   120,   234,   19526, 254,
        25001, 121,   10310, 244,   45911, 234,   16764}},
      {"emoji 😀👍🏽 and 🇫🇷 flags",
       {368, 31370, 30325, 222, 41840, 235, 8582, 237, 121, 290, 12520, 229,
        104, 8582, 229, 115, 9701}},
      // Not special in encode(): the text, not eot().
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
      {"Ünïcödé ² ½ Ⅻ ٣ digits",
       {127, 250, 77, 26884, 66, 9101, 67, 2634, 1587, 110, 25208, 2343, 227,
        104, 18923, 96, 19561}},
      {"\u00a0nbsp\u3000ideographic space",
       {1849, 77, 24145, 5099, 222, 485, 6826, 2272}},
      {"   leading spaces", {220, 220, 3756, 9029}},
      {"", {}},
  };
  for (const auto &[text, ids] : cases) {
    EXPECT_EQ(gpt2().encode(text), ids) << "text: " << text;
    EXPECT_EQ(gpt2().decode(ids), text);
  }
}

TEST(Gpt2Tokenizer, RoundTripsArbitraryBytes) {
  SKIP_WITHOUT_VOCAB();
  const std::string texts[] = {
      "Mixed: Grüße, Привет, مرحبا, नमस्ते, こんにちは "
      "🤖\n\n\t "
      "end ",
      "nul \0 inside, invalid \xff\xfe and \xe4\xb8 cut"s,
      "     \n  \r\n\v\f  trailing   "};
  for (const std::string &text : texts)
    EXPECT_EQ(gpt2().decode(gpt2().encode(text)), text);
}

//===----------------------------------------------------------------------===//
// Cross-check against the npm encoder on real text
//===----------------------------------------------------------------------===//

namespace {

std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs gpt2_reference_ids.js in `mode` (--json: ids, --split: pieces) on
/// `texts` and returns its JSON answer.
nlohmann::json runReference(const std::string &mode,
                            const std::vector<std::string> &texts,
                            TempDir &dir) {
  std::string input = dir.file("texts.json", nlohmann::json(texts).dump());
  std::string command = shellQuote(SHARDC_NODE_EXECUTABLE) + " " +
                        shellQuote(SHARDC_GPT2_REFERENCE_SCRIPT) +
                        " --vocab-dir " + shellQuote(vocabDir()) + " " + mode +
                        " " + shellQuote(input);
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    throw std::runtime_error("cannot run " + command);
  std::string output;
  char buffer[1 << 16];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe))
    output.append(buffer, n);
  if (pclose(pipe) != 0)
    throw std::runtime_error(command + " failed");
  return nlohmann::json::parse(output);
}

/// The longest prefix of `text` of at most `limit` bytes that does not cut a
/// UTF-8 sequence.
std::string utf8Prefix(const std::string &text, size_t limit) {
  if (text.size() <= limit)
    return text;
  size_t end = limit;
  while (end > 0 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80)
    --end;
  return text.substr(0, end);
}

class Gpt2CrossCheck : public testing::Test {
protected:
  void SetUp() override {
    SKIP_WITHOUT_VOCAB();
    if (std::string(SHARDC_NODE_EXECUTABLE).empty())
      GTEST_SKIP() << "node not found at configure time";
  }

  /// Requires the same pre-tokenisation pieces and the same ids from the
  /// C++ tokenizer and the npm encoder for each of `texts`.
  void expectSameAsNpm(const std::vector<std::string> &texts) {
    auto pieces =
        runReference("--split", texts, dir).get<std::vector<Pieces>>();
    auto ids = runReference("--json", texts, dir)
                   .get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(pieces.size(), texts.size());
    ASSERT_EQ(ids.size(), texts.size());
    for (size_t t = 0; t < texts.size(); ++t) {
      Pieces actualPieces = split(texts[t]);
      for (size_t i = 0; i < actualPieces.size() && i < pieces[t].size(); ++i)
        ASSERT_EQ(actualPieces[i], pieces[t][i])
            << "text " << t << ": first different piece is " << i;
      ASSERT_EQ(actualPieces.size(), pieces[t].size()) << "text " << t;

      std::vector<int32_t> actual = gpt2().encode(texts[t]);
      ASSERT_FALSE(ids[t].empty());
      for (size_t i = 0; i < actual.size() && i < ids[t].size(); ++i)
        ASSERT_EQ(actual[i], ids[t][i])
            << "text " << t << ": first different token is " << i
            << ", expected '" << gpt2().decode({ids[t][i]}) << "'";
      ASSERT_EQ(actual.size(), ids[t].size()) << "text " << t;
      EXPECT_EQ(gpt2().decode(actual), texts[t]);
    }
  }

  TempDir dir;
};

} // namespace

TEST_F(Gpt2CrossCheck, Gpl3) {
  // Shipped by base-files on every Debian system.
  const char *path = "/usr/share/common-licenses/GPL-3";
  if (!fs::exists(path))
    GTEST_SKIP() << path << " not found";
  expectSameAsNpm({readText(path)});
}

TEST_F(Gpt2CrossCheck, Fortunes) {
  const char *path = "/usr/share/games/fortunes/fortunes";
  if (!fs::exists(path))
    GTEST_SKIP() << path << " not found (Debian package fortunes-min)";
  expectSameAsNpm({utf8Prefix(readText(path), 20000)});
}

TEST_F(Gpt2CrossCheck, EveryUnicodeClassBoundary) {
  // Every BMP code point and a sample of the other planes, in groups of 7
  // separated by spaces and newlines, so that each letter/number/space/other
  // boundary meets both pre-tokenisers. Chunks of 1400 code points keep the
  // npm encoder (quadratic in its output) fast.
  std::vector<std::string> chunks(1);
  int count = 0;
  auto append = [&](char32_t cp) {
    std::string &text = chunks.back();
    if (cp < 0x80) {
      text += static_cast<char>(cp);
    } else if (cp < 0x800) {
      text += static_cast<char>(0xC0 | (cp >> 6));
      text += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      text += static_cast<char>(0xE0 | (cp >> 12));
      text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      text += static_cast<char>(0xF0 | (cp >> 18));
      text += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (cp & 0x3F));
    }
    if (++count % 7 == 0)
      text += count % 140 == 0 ? '\n' : ' ';
    if (count % 1400 == 0)
      chunks.emplace_back();
  };
  for (char32_t cp = 1; cp < 0x10000; ++cp)
    if (cp < 0xD800 || cp > 0xDFFF)
      append(cp);
  for (char32_t cp = 0x10000; cp <= 0x10FFFF; cp += 61)
    append(cp);
  if (chunks.back().empty())
    chunks.pop_back();
  expectSameAsNpm(chunks);
}
