//===- OptionsTest.cpp - command line of a compiled step ------------------===//

#include "runtime/main/Options.h"

#include <gtest/gtest.h>

using namespace shardc::rt;

namespace {

/// The UsageError message of a command line ("" if it parses).
std::string usageError(const std::vector<std::string> &args) {
  try {
    parseStepOptions(args);
  } catch (const UsageError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(StepOptionsTest, ParsesEveryFlag) {
  StepOptions o = parseStepOptions(
      {"--data", "t.bin", "--steps=20", "--position", "64", "--seed", "18446744073709551615",
       "--checkpoint-dir", "ck", "--checkpoint-every", "5", "--log-file", "log.jsonl"});
  EXPECT_EQ(o.data, "t.bin");
  EXPECT_EQ(o.steps, 20);
  EXPECT_EQ(o.position, 64);
  EXPECT_EQ(o.seed, UINT64_MAX);
  EXPECT_EQ(o.checkpointDir, "ck");
  EXPECT_EQ(o.checkpointEvery, 5);
  EXPECT_EQ(o.logFile, "log.jsonl");
  EXPECT_FALSE(o.resume);
  EXPECT_TRUE(parseStepOptions({"--describe"}).describe);
  EXPECT_TRUE(parseStepOptions({"--help"}).help);
  EXPECT_TRUE(parseStepOptions({"--data", "t", "--steps", "3", "--checkpoint-dir", "d",
                                "--resume"})
                  .resume);
  StepOptions init = parseStepOptions(
      {"--data", "t", "--steps", "3", "--init-from", "w.safetensors", "--peak-tflops", "989"});
  EXPECT_EQ(init.initFrom, "w.safetensors");
  EXPECT_EQ(init.peakTflops, 989.0);
}

TEST(StepOptionsTest, InitFromAndPeakAreChecked) {
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--init-from", "w", "--checkpoint-dir",
                        "d", "--resume"})
                .find("'--init-from' cannot be combined with '--resume'"),
            std::string::npos);
  for (const char *bad : {"0", "-1", "abc", "1e9", "2x"})
    EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--peak-tflops", bad})
                  .find("'--peak-tflops' expects a positive number"),
              std::string::npos)
        << bad;
}

TEST(StepOptionsTest, BadCommandLinesNameTheFlag) {
  EXPECT_NE(usageError({"--steps", "3"}).find("--data"), std::string::npos);
  EXPECT_NE(usageError({"--data", "t"}).find("--steps"), std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "abc"}).find("--steps"), std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "-3"}).find("negative"), std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "0"}).find("--steps"), std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--seed"}).find("--seed"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--bogus", "1"}).find("--bogus"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "extra"}).find("extra"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--position", "1e3"}).find("--position"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "99999999999999999999"}).find("--steps"),
            std::string::npos);
  // Checkpoints record steps and data positions, up to 2^53.
  EXPECT_NE(usageError({"--data", "t", "--steps", "9007199254740993"})
                .find("option '--steps' is out of range: '9007199254740993' (at most "
                      "9007199254740992)"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--position", "1000000000000000000"})
                .find("--position"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--resume=yes"}).find("--resume"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--resume"}).find("--checkpoint-dir"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--checkpoint-every", "2"})
                .find("--checkpoint-dir"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--steps", "1", "--checkpoint-dir", "d", "--resume",
                        "--position", "5"})
                .find("--position"),
            std::string::npos);
  EXPECT_NE(usageError({"--data", "t", "--data", "u", "--steps", "1"}).find("--data"),
            std::string::npos);
}
