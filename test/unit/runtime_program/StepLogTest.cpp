//===- StepLogTest.cpp - the step log's schema and its figures ------------===//
//
// One schema for `shardc train --log-json` and a compiled step's
// --log-file (runtime/program/StepLog.h): the keys, optional fields only
// when known, doubles at full precision; the MFU's FLOPs per token, the ETA's
// text and the table of known peaks.
//
//===----------------------------------------------------------------------===//

#include "runtime/program/StepLog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace shardc::rt;

namespace {

TEST(StepLog, OneSchemaOptionalFieldsOnlyWhenKnown) {
  StepRecord r;
  r.step = 3;
  r.loss = 10.123456789012345;
  r.lr = 1.5e-4;
  r.gradNorm = 2.5;
  r.tokensPerS = 1000;
  r.stepMs = 12.5;
  r.etaS = 30;
  nlohmann::json j = stepJson(r);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it)
    keys.insert(it.key());
  EXPECT_EQ(keys, (std::set<std::string>{"step", "loss", "lr", "grad_norm", "skipped",
                                         "tokens_per_s", "step_ms", "eta_s"}));
  // Full precision: the loss round-trips through the text.
  EXPECT_EQ(nlohmann::json::parse(j.dump())["loss"].get<double>(), r.loss);
  r.mfu = 0.25;
  r.lossScale = 65536;
  r.rssMib = 100;
  r.plannedMib = 50;
  r.plannedActivationsMib = 20;
  j = stepJson(r);
  for (const char *k : {"mfu", "loss_scale", "rss_mib", "planned_mib", "planned_activations_mib"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["mfu"].get<double>(), 0.25);
}

TEST(StepLog, FlopsPerTokenIsSixNPlusSixLht) {
  // GPT-2 124M at T = 1024: 6 * 124,475,904 + 6 * 12 * 768 * 1024.
  EXPECT_DOUBLE_EQ(flopsPerToken(124475904, 12, 768, 1024), 6.0 * 124475904 + 6.0 * 12 * 768 * 1024);
  EXPECT_DOUBLE_EQ(flopsPerToken(1000, 0, 0, 1024), 6000.0);
}

TEST(StepLog, DurationsAndPeaks) {
  EXPECT_EQ(formatDuration(12.4), "12s");
  EXPECT_EQ(formatDuration(185), "3m05s");
  EXPECT_EQ(formatDuration(3725), "1h02m");
  EXPECT_EQ(formatDuration(-1), "?");
  EXPECT_EQ(knownPeakFlops("cuda: GPU 0 NVIDIA H100 80GB HBM3", "bf16"), 989e12);
  EXPECT_EQ(knownPeakFlops("NVIDIA H100 80GB HBM3", "fp32"), 67e12);
  EXPECT_EQ(knownPeakFlops("NVIDIA A100-SXM4-80GB", "fp16"), 312e12);
  EXPECT_FALSE(knownPeakFlops("cpu: 2 threads", "fp32").has_value());
}

} // namespace
