//===- Options.cpp - command line of a compiled step ----------------------===//

#include "runtime/main/Options.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/program/StepLog.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace shardc::rt {

namespace {

enum class Kind { String, Count, Seed, Flag };

struct Flag {
  const char *name;
  Kind kind;
};

constexpr Flag kFlags[] = {
    {"data", Kind::String},         {"steps", Kind::Count},
    {"position", Kind::Count},      {"seed", Kind::Seed},
    {"checkpoint-dir", Kind::String}, {"checkpoint-every", Kind::Count},
    {"resume", Kind::Flag},         {"log-file", Kind::String},
    {"describe", Kind::Flag},       {"help", Kind::Flag},
    {"profile", Kind::Flag},        {"val-data", Kind::String},
    {"eval-every", Kind::Count},    {"eval-batches", Kind::Count},
    {"device", Kind::String},       {"comm", Kind::String},
    {"no-graph", Kind::Flag},       {"init-from", Kind::String},
    {"peak-tflops", Kind::String},  {"mask-token", Kind::Count},
};

/// A non-negative decimal integer that fits `max`.
uint64_t parseCount(const std::string &flag, const std::string &value, uint64_t max) {
  if (!value.empty() && value[0] == '-')
    throw UsageError("option '--" + flag + "' must not be negative, got '" + value + "'");
  bool digits = !value.empty();
  for (char c : value)
    digits &= c >= '0' && c <= '9';
  if (!digits)
    throw UsageError("option '--" + flag + "' expects a non-negative integer, got '" + value +
                     "'");
  errno = 0;
  unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max)
    throw UsageError("option '--" + flag + "' is out of range: '" + value + "' (at most " +
                     std::to_string(max) + ")");
  return v;
}

} // namespace

StepOptions parseStepOptions(const std::vector<std::string> &args) {
  StepOptions o;
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
      throw UsageError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Flag *flag = nullptr;
    for (const Flag &f : kFlags)
      if (name == f.name)
        flag = &f;
    if (!flag)
      throw UsageError("unknown option '--" + name + "'");
    for (const std::string &s : seen)
      if (s == name)
        throw UsageError("option '--" + name + "' is given twice");
    seen.push_back(name);
    if (flag->kind == Kind::Flag) {
      if (value)
        throw UsageError("option '--" + name + "' takes no value");
      if (name == "resume")
        o.resume = true;
      else if (name == "describe")
        o.describe = true;
      else if (name == "profile")
        o.profile = true;
      else if (name == "no-graph")
        o.noGraph = true;
      else
        o.help = true;
      continue;
    }
    if (!value) {
      if (i + 1 == args.size())
        throw UsageError("option '--" + name + "' expects a value");
      value = args[++i];
    }
    if (value->empty())
      throw UsageError("option '--" + name + "' expects a value");
    const uint64_t maxCount = static_cast<uint64_t>(INT64_MAX);
    // Checkpoints record the step and the data position.
    const uint64_t maxRecorded = static_cast<uint64_t>(ckpt::kMaxManifestCount);
    if (name == "data")
      o.data = *value;
    else if (name == "steps")
      o.steps = static_cast<int64_t>(parseCount(name, *value, maxRecorded));
    else if (name == "position")
      o.position = static_cast<int64_t>(parseCount(name, *value, maxRecorded));
    else if (name == "seed")
      o.seed = parseCount(name, *value, UINT64_MAX);
    else if (name == "mask-token")
      o.maskToken = static_cast<int64_t>(parseCount(name, *value, INT32_MAX));
    else if (name == "checkpoint-dir")
      o.checkpointDir = *value;
    else if (name == "checkpoint-every")
      o.checkpointEvery = static_cast<int64_t>(parseCount(name, *value, maxCount));
    else if (name == "log-file")
      o.logFile = *value;
    else if (name == "init-from")
      o.initFrom = *value;
    else if (name == "peak-tflops") {
      char *end = nullptr;
      errno = 0;
      double v = std::strtod(value->c_str(), &end);
      if (end == value->c_str() || *end || errno == ERANGE || !validPeakTflops(v))
        throw UsageError("option '--peak-tflops' expects a positive number of TFLOP/s, got '" +
                         *value + "'");
      o.peakTflops = v;
    }
    else if (name == "val-data")
      o.valData = *value;
    else if (name == "eval-every")
      o.evalEvery = static_cast<int64_t>(parseCount(name, *value, maxCount));
    else if (name == "eval-batches")
      o.evalBatches = static_cast<int64_t>(parseCount(name, *value, maxCount));
    else if (name == "device") {
      if (*value != "cpu" && *value != "cuda")
        throw UsageError("option '--device' must be 'cpu' or 'cuda', got '" + *value + "'");
      o.device = *value;
    } else if (name == "comm") {
      if (*value != "auto" && *value != "nccl" && *value != "mpi")
        throw UsageError("option '--comm' must be 'auto', 'nccl' or 'mpi', got '" + *value +
                         "'");
      o.comm = *value;
    }
  }
  if (o.device == "cpu")
    for (const char *flag : {"comm", "no-graph"})
      if (std::find(seen.begin(), seen.end(), flag) != seen.end())
        throw UsageError(std::string("option '--") + flag + "' needs '--device cuda'");
  if (o.help || o.describe)
    return o;
  if (o.data.empty())
    throw UsageError("missing required option '--data'");
  if (o.steps == 0)
    throw UsageError(seen.end() == std::find(seen.begin(), seen.end(), "steps")
                         ? "missing required option '--steps'"
                         : "option '--steps' must be at least 1");
  if (o.checkpointEvery && o.checkpointDir.empty())
    throw UsageError("option '--checkpoint-every' needs '--checkpoint-dir'");
  for (const char *flag : {"eval-every", "eval-batches"})
    if (o.valData.empty() && std::find(seen.begin(), seen.end(), flag) != seen.end())
      throw UsageError(std::string("option '--") + flag + "' needs '--val-data'");
  if (o.evalBatches < 1)
    throw UsageError("option '--eval-batches' must be at least 1");
  if (o.resume && o.checkpointDir.empty())
    throw UsageError("option '--resume' needs '--checkpoint-dir'");
  if (o.resume && !o.initFrom.empty())
    throw UsageError("option '--init-from' cannot be combined with '--resume' (the checkpoint "
                     "holds the weights)");
  if (o.resume && o.position)
    throw UsageError("option '--position' cannot be combined with '--resume' (the "
                     "checkpoint records the data position)");
  return o;
}

std::string stepUsage(const std::string &argv0) {
  return "usage: mpirun -np <ranks> " + argv0 +
         " --data <tokens.bin> --steps <n> [options]\n"
         "\n"
         "Trains with the step compiled into this binary (`shardc compile`), one MPI rank\n"
         "per device of its mesh. Step i, micro-batch j reads the global batch at\n"
         "position + (i*k + j)*B*T; rank 0 prints loss, lr, gradient norm and tokens/s.\n"
         "\n"
         "options:\n"
         "  --data <file>             token file (llm.c format, see `shardc tokenize`)\n"
         "  --steps <n>               train until step n (with --resume: n in total)\n"
         "  --position <n>            first token of the first batch (default 0)\n"
         "  --seed <n>                parameter-init, dropout and masked-LM seed (default\n"
         "                            1234; with --resume: the checkpoint's)\n"
         "  --mask-token <id>         masked LM (BERT): the id masked tokens become\n"
         "                            (default: the token table's last row)\n"
         "  --init-from <file>        start from these weights (safetensors: Hugging Face\n"
         "                            GPT-2, `shardc export`); each rank keeps its blocks,\n"
         "                            moments start at zero\n"
         "  --checkpoint-dir <dir>    save checkpoints here (at the end, and every\n"
         "                            --checkpoint-every steps)\n"
         "  --checkpoint-every <n>    save every n steps\n"
         "  --resume                  continue from the latest checkpoint in\n"
         "                            --checkpoint-dir (any mesh: blocks are resharded)\n"
         "  --log-file <file>         one JSON object per step (JSONL): loss, lr, grad_norm,\n"
         "                            tokens_per_s, step_ms, eta_s, mfu, rss and planned MiB\n"
         "  --peak-tflops <x>         peak dense TFLOP/s of one device, for the MFU (default:\n"
         "                            known GPUs: H100/H200 989 bf16, 67 fp32; none on CPUs)\n"
         "  --val-data <file>         validation tokens: the loss without an update after\n"
         "                            every --eval-every steps and after the last\n"
         "  --eval-every <n>          evaluate every n steps (default: after the last)\n"
         "  --eval-batches <n>        batches per evaluation, from the file's start (1)\n"
         "  --device <cpu|cuda>       run the step on the CPU (default) or on one GPU per\n"
         "                            rank (local rank modulo the GPUs of the node)\n"
         "  --comm <auto|nccl|mpi>    GPU collectives: NCCL, or host-staged MPI, which lets\n"
         "                            several ranks share one GPU (auto: NCCL unless the\n"
         "                            node has more ranks than GPUs)\n"
         "  --no-graph                GPU: launch every kernel each step instead of\n"
         "                            replaying the step captured as a CUDA graph\n"
         "  --describe                print the mesh, arenas and state shardings; exit\n"
         "  --profile                 time every kernel and collective; print the step time\n"
         "                            against their sum (the runtime's overhead)\n"
         "  --help                    print this help\n"
         "\n"
         "Test hook: SHARDC_FAULT_KILL=RANK:STEP makes rank RANK kill itself (SIGKILL)\n"
         "just before step STEP (1-based), to test that the job goes down cleanly.\n";
}

} // namespace shardc::rt
