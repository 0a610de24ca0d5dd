//===- StepLog.cpp - one step's record, as logs and progress lines --------===//

#include "runtime/program/StepLog.h"

#include <cmath>
#include <cstdio>

namespace shardc::rt {

StepRecord stepRecord(int64_t step, double loss, double lr, double gradNorm, bool skipped,
                      std::optional<double> lossScale, double tokens, double secs,
                      double elapsedSecs, int64_t stepsRun, int64_t stepsLeft) {
  StepRecord r;
  r.step = step;
  r.loss = loss;
  r.lr = lr;
  r.gradNorm = gradNorm;
  r.skipped = skipped;
  r.lossScale = lossScale;
  r.tokensPerS = tokens / secs;
  r.stepMs = secs * 1e3;
  r.etaS = stepsRun > 0 ? elapsedSecs / static_cast<double>(stepsRun) *
                              static_cast<double>(stepsLeft)
                        : 0.0;
  return r;
}

nlohmann::json stepJson(const StepRecord &r) {
  nlohmann::json j = {{"step", r.step},
                      {"loss", r.loss},
                      {"lr", r.lr},
                      {"grad_norm", r.gradNorm},
                      {"skipped", r.skipped},
                      {"tokens_per_s", r.tokensPerS},
                      {"step_ms", r.stepMs},
                      {"eta_s", r.etaS}};
  auto put = [&](const char *key, const std::optional<double> &v) {
    if (v)
      j[key] = *v;
  };
  put("mfu", r.mfu);
  put("loss_scale", r.lossScale);
  put("rss_mib", r.rssMib);
  put("planned_mib", r.plannedMib);
  put("planned_activations_mib", r.plannedActivationsMib);
  put("planned_host_mib", r.plannedHostMib);
  return j;
}

double flopsPerToken(double parameters, int64_t layers, int64_t hidden, int64_t seq) {
  return 6.0 * parameters + 6.0 * static_cast<double>(layers) * static_cast<double>(hidden) *
                                static_cast<double>(seq);
}

std::optional<double> modelFlopsUtilization(double tokensPerS, double tokenFlops,
                                            std::optional<double> peakFlops, int64_t devices) {
  if (!peakFlops)
    return std::nullopt;
  return tokenFlops * tokensPerS / (*peakFlops * static_cast<double>(devices));
}

bool validPeakTflops(double tflops) { return tflops > 0 && tflops <= 1e6; }

std::string progressBar(int64_t done, int64_t total, int width) {
  int fill = total > 0 ? static_cast<int>(width * done / total) : width;
  return "[" + std::string(fill, '#') + std::string(width - fill, '.') + "]";
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  long long s = std::llround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

std::optional<double> knownPeakFlops(const std::string &deviceName, const std::string &precision) {
  // The figures of compiler/cost/hardware's H100 and A100 files (their
  // sources there); the runtime reads no hardware file, so they are restated.
  const bool low = precision == "bf16" || precision == "fp16";
  struct Peak {
    const char *part;
    double low, f32;
  };
  // Dense tensor-core peaks of the SXM parts (NVIDIA data sheets); f32
  // without TF32 (shardc's f32 GEMMs do not use TF32).
  static const Peak kPeaks[] = {
      {"H100", 989e12, 67e12}, {"H200", 989e12, 67e12}, {"A100", 312e12, 19.5e12}};
  for (const Peak &p : kPeaks)
    if (deviceName.find(p.part) != std::string::npos)
      return low ? p.low : p.f32;
  return std::nullopt;
}

} // namespace shardc::rt
