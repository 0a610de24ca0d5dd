//===- Options.h - command line of a compiled step --------------*- C++ -*-===//
//
// The flags of the executable that `shardc compile` links (runtime/main):
// `--name value` or `--name=value`; a bad value, an unknown flag or a missing
// value is a UsageError naming the flag (exit status 2).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_MAIN_OPTIONS_H
#define SHARDC_RUNTIME_MAIN_OPTIONS_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardc::rt {

/// A bad command line; what() names the flag.
struct UsageError : std::runtime_error {
  explicit UsageError(const std::string &msg) : std::runtime_error(msg) {}
};

struct StepOptions {
  std::string data;               ///< --data: llm.c token file
  int64_t steps = 0;              ///< --steps: the run ends after step `steps`
  std::optional<int64_t> position; ///< --position: first token (default 0)
  std::optional<uint64_t> seed;   ///< --seed (default 1234, or the checkpoint's)
  std::optional<int64_t> maskToken; ///< --mask-token: masked-LM mask id (BERT)
  std::string checkpointDir;      ///< --checkpoint-dir
  int64_t checkpointEvery = 0;    ///< --checkpoint-every (0: only at the end)
  bool resume = false;            ///< --resume
  std::string initFrom;           ///< --init-from: starting weights (safetensors)
  std::optional<double> peakTflops; ///< --peak-tflops: one device's peak, for MFU
  std::string logFile;            ///< --log-file (JSONL)
  std::string valData;            ///< --val-data: validation token file
  int64_t evalEvery = 0;          ///< --eval-every (0: only after the last step)
  int64_t evalBatches = 1;        ///< --eval-batches: batches per evaluation
  bool describe = false;          ///< --describe
  bool profile = false;           ///< --profile: time kernels and collectives
  bool help = false;              ///< --help
  std::string device = "cpu";     ///< --device: cpu | cuda
  std::string comm = "auto";      ///< --comm: auto | nccl | mpi (GPU collectives)
  bool noGraph = false;           ///< --no-graph: run the GPU step eagerly
};

/// The default --seed, as `shardc train`'s.
constexpr uint64_t kDefaultSeed = 1234;

/// Parses the arguments after argv[0]. Throws UsageError.
StepOptions parseStepOptions(const std::vector<std::string> &args);

/// The --help text.
std::string stepUsage(const std::string &argv0);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_MAIN_OPTIONS_H
