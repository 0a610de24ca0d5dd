//===- StepLog.h - one step's record, as logs and progress lines -*- C++ -*-===//
//
// `shardc train --log-json` and a compiled step's `--log-file` write one JSON
// object per step in one schema, built here:
//
//   {"step": 3, "loss": 10.72, "lr": 0.00015, "grad_norm": 2.79,
//    "skipped": false, "tokens_per_s": 216.4, "step_ms": 591.7,
//    "eta_s": 12.3, "mfu": 0.0012, "loss_scale": 65536,
//    "rss_mib": 229, "planned_mib": 34.5, "planned_activations_mib": 20.1,
//    "planned_host_mib": 2.1}
//
// Numbers are JSON doubles at full precision (round-trip). `mfu` is there
// when a peak FLOP/s is known, `loss_scale` for fp16 steps, the planned
// fields for compiled steps (planned_host_mib: offloaded activations, only
// with --offload-activations). A validation line is {"step", "val_loss"}. The
// progress bar and the ETA's text of both tools are here too.
//
// MFU is model FLOPs per token times tokens/s over the devices' peak, with
// 6N + 6·L·h·T FLOPs per token (N parameters, L layers of width h, T tokens
// per sequence): PaLM's 6N + 12·L·h·T with the attention term halved for the
// causal mask (half the score and value products are masked). So it reads
// ~7% lower than PaLM's or nanoGPT's count on GPT-2 124M at T = 1024.
// Recomputation and vocabulary padding are not counted.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_STEPLOG_H
#define SHARDC_RUNTIME_PROGRAM_STEPLOG_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace shardc::rt {

struct StepRecord {
  int64_t step = 0;
  double loss = 0, lr = 0, gradNorm = 0;
  bool skipped = false;
  double tokensPerS = 0, stepMs = 0;
  double etaS = 0; ///< the remaining steps at the mean step time so far
  std::optional<double> mfu, lossScale, rssMib, plannedMib, plannedActivationsMib,
      plannedHostMib;
};

/// The fields every step has: tokens/s and ms from its `secs`, the ETA from
/// the mean time of the `stepsRun` steps so far (`elapsedSecs`) times the
/// `stepsLeft`.
StepRecord stepRecord(int64_t step, double loss, double lr, double gradNorm, bool skipped,
                      std::optional<double> lossScale, double tokens, double secs,
                      double elapsedSecs, int64_t stepsRun, int64_t stepsLeft);

/// The record as the log's JSON object.
nlohmann::json stepJson(const StepRecord &r);

/// Model FLOPs per token: 6N + 6·L·h·T (L or h 0: 6N).
double flopsPerToken(double parameters, int64_t layers, int64_t hidden, int64_t seq);

/// The MFU of `tokensPerS` on `devices` devices of `peakFlops` each; nullopt
/// without a peak.
std::optional<double> modelFlopsUtilization(double tokensPerS, double tokenFlops,
                                            std::optional<double> peakFlops, int64_t devices);

/// Whether `tflops` is a usable --peak-tflops: positive and at most 1e6.
bool validPeakTflops(double tflops);

/// "[#########.....]": `done` of `total` steps on a terminal.
std::string progressBar(int64_t done, int64_t total, int width = 30);

/// "1h02m", "3m05s", "12s".
std::string formatDuration(double seconds);

/// The peak dense FLOP/s of one device whose name contains a known part
/// (H100, H200: 989e12 bf16/fp16, 67e12 fp32 without TF32; A100 312e12 /
/// 19.5e12), for the step's precision ("bf16", "fp16", "fp32"); nullopt
/// when unknown (the CPU: give --peak-tflops).
std::optional<double> knownPeakFlops(const std::string &deviceName, const std::string &precision);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_STEPLOG_H
