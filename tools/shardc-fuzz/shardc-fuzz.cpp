//===- shardc-fuzz.cpp - structure-aware fuzzing of the compile pipeline --===//
//
// Generates small models (GPT-2, LLaMA, BERT), runs them through the compile
// pipeline and keeps the IR after every stage (model, train step, sharded,
// partitioned, scheduled, planned, rt). Each case takes one snapshot, applies
// a few mutations that know MLIR's text (numbers, element types, shapes,
// einsum and other strings, attribute entries, grid shapes and axis arrays,
// swapped operands, deleted / duplicated / moved lines) and runs the rest of
// the pipeline on it in a child process. Every case must end in success or
// in an error diagnostic; a signal is a crash, the per-case time limit a
// hang, and a failure without any diagnostic a silent failure. Each of those
// is written to --crash-dir with the pipeline that reproduces it.
//
// Cases are numbered; case i depends only on (--seed, i), so `--case i
// --print` replays one exactly.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/executor/Executor.h"
#include "compiler/executor/Params.h"
#include "models/ModelGen.h"
#include "runtime/Error.h"
#include "runtime/data/TokenFile.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
namespace models = shardc::models;

namespace {

//===----------------------------------------------------------------------===//
// Corpus: every stage of a few small configurations
//===----------------------------------------------------------------------===//

/// One pipeline configuration: a model and the passes that compile it.
struct Config {
  std::string name;
  models::ModelConfig model;
  /// Pass elements, in order (each a textual pipeline element on the module).
  std::vector<std::string> passes;
  /// Index into `passes` of the first pass after sharding propagation: the
  /// snapshot before it also goes through -xf-report-sharding.
  size_t reportBefore = 0;
};

models::ModelConfig tinyModel(models::Family family, std::string dtype) {
  models::ModelConfig c;
  c.family = family;
  c.name = std::string("fuzz-") + models::familyName(family);
  c.vocab = 64;
  c.vocabPadMultiple = 64;
  c.positions = 8;
  c.hidden = 16;
  c.layers = 1;
  c.heads = family == models::Family::LLAMA ? 4 : 2;
  c.kvHeads = family == models::Family::LLAMA ? 2 : 0;
  c.batch = 4;
  c.seq = 8;
  c.dtype = std::move(dtype);
  return c;
}

std::vector<Config> configs() {
  auto lowering = [](bool overlap) {
    std::vector<std::string> p;
    if (overlap)
      p.push_back("func.func(xf-schedule)");
    p.insert(p.end(), {"xf-plan-memory", "xf-lower-to-rt", "func.func(rt-bucket-all-reduces{bucket-bytes=256})",
                       std::string("func.func(rt-schedule-collectives{overlap=") + (overlap ? "1" : "0") + "})",
                       "rt-to-llvm"});
    return p;
  };
  auto config = [&](std::string name, models::ModelConfig model, std::vector<std::string> train,
                    std::string mesh, std::string strategy, bool overlap) {
    Config c{std::move(name), std::move(model), std::move(train), 0};
    c.passes.push_back("xf-grid{mesh=" + mesh + "}");
    c.passes.push_back("func.func(xf-propagate-sharding{strategy=" + strategy + "})");
    c.reportBefore = c.passes.size();
    c.passes.push_back("func.func(xf-partition)");
    for (std::string &p : lowering(overlap))
      c.passes.push_back(std::move(p));
    return c;
  };
  using models::Family;
  std::vector<Config> out;
  out.push_back(config("gpt2-fp32-zero1+tp", tinyModel(Family::GPT2, "f32"),
                       {"xf-autodiff{micro-batches=2}", "func.func(xf-adamw)", "func.func(xf-recompute{policy=full})"},
                       "dp=2,tp=2", "zero1+tp",
                       true));
  out.push_back(config("llama-bf16-dp+sp", tinyModel(Family::LLAMA, "f32"),
                       {"func.func(xf-mixed-precision{compute=bf16 residual=compute})", "xf-autodiff", "func.func(xf-adamw)",
                        "func.func(xf-recompute{policy=selective every=2})"},
                       "dp=2,tp=2", "dp+sp", false));
  out.push_back(config("gpt2-fusedce-fp16-zero3", tinyModel(Family::GPT2, "f32"),
                       {"func.func(xf-fuse-linear-cross-entropy)",
                        "func.func(xf-mixed-precision{compute=f16})", "xf-autodiff{loss-scale=1}",
                        "func.func(xf-adamw)"},
                       "dp=4", "zero3", true));
  out.push_back(config("bert-fp32-mics+tp", tinyModel(Family::BERT, "f32"),
                       {"xf-autodiff", "func.func(xf-adamw)"}, "dp=2,fsdp=2,tp=2", "mics+tp", false));
  out.push_back(config("gpt2-fp32-fsdp", tinyModel(Family::GPT2, "f32"),
                       {"xf-autodiff", "func.func(xf-adamw)"}, "dp=2", "fsdp", true));
  return out;
}

/// IR after some prefix of a configuration's passes; `rest` runs it on.
struct Snapshot {
  std::string label; ///< "<config>@<stage>"
  std::string text;
  std::vector<std::string> rest;
  bool report = false;  ///< also run -xf-report-sharding on it
  bool execute = false; ///< also run @forward in the reference executor
};

std::string printModule(ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  return s;
}

std::string pipelineText(const std::vector<std::string> &passes) {
  return "builtin.module(" + llvm::join(passes, ",") + ")";
}

/// Runs every configuration pass by pass, keeping the IR at each stage.
/// A configuration that fails part-way (BERT stops at lowering: compiled
/// steps take no masked-LM inputs) contributes the stages before.
std::vector<Snapshot> buildCorpus(MLIRContext &ctx) {
  std::vector<Snapshot> corpus;
  for (const Config &c : configs()) {
    OwningOpRef<ModuleOp> module = models::buildModel(ctx, c.model);
    for (size_t i = 0; i <= c.passes.size(); ++i) {
      Snapshot s;
      s.label = c.name + "@" + (i == 0 ? std::string("model") : c.passes[i - 1]);
      s.text = printModule(*module);
      s.rest.assign(c.passes.begin() + i, c.passes.end());
      s.report = i == c.reportBefore;
      s.execute = i == 0;
      corpus.push_back(std::move(s));
      if (i == c.passes.size())
        break;
      PassManager pm(&ctx);
      if (failed(parsePassPipeline(c.passes[i], pm)) || failed(pm.run(*module)))
        break;
    }
  }
  return corpus;
}

//===----------------------------------------------------------------------===//
// Mutations on MLIR text
//===----------------------------------------------------------------------===//

class Mutator {
public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  /// Applies 1-3 mutations; `log` says which.
  std::string mutate(std::string text, std::string &log) {
    int n = 1 + pick(3);
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> lines = split(text);
      if (lines.empty())
        break;
      static const char *kinds[] = {"number", "type",   "shape",  "string", "delete",
                                    "dup",    "move",   "swap",   "axes",   "partial",
                                    "grid",   "attr",   "operand"};
      int k = pick(13);
      log += std::string(log.empty() ? "" : ",") + kinds[k];
      switch (k) {
      case 0: mutateToken(lines, isNumberStart, interestingNumber()); break;
      case 1: mutateType(lines); break;
      case 2: mutateShape(lines); break;
      case 3: mutateString(lines); break;
      case 4: lines.erase(lines.begin() + pick(lines.size())); break;
      case 5: { size_t j = pick(lines.size()); lines.insert(lines.begin() + pick(lines.size()), lines[j]); break; }
      case 6: std::swap(lines[pick(lines.size())], lines[pick(lines.size())]); break;
      case 7: swapOperands(lines); break;
      case 8: mutateAxes(lines); break;
      case 9: addPartial(lines); break;
      case 10: mutateGrid(lines); break;
      case 11: dropAttribute(lines); break;
      case 12: replaceOperand(lines); break;
      }
      text = llvm::join(lines, "\n");
    }
    return text;
  }

private:
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  static std::vector<std::string> split(const std::string &text) {
    std::vector<std::string> lines;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(text).split(parts, '\n');
    for (llvm::StringRef p : parts)
      lines.push_back(p.str());
    return lines;
  }

  std::string interestingNumber() {
    static const char *values[] = {"0", "1", "-1", "2", "3", "5", "7", "16", "64", "128", "1024",
                                   "32767", "65536", "2147483647", "-2147483648", "4294967296",
                                   "9223372036854775807", "1.0e+30", "0.0", "-0.5", "1.0e-30",
                                   "0x7FC00000"};
    return values[pick(sizeof(values) / sizeof(values[0]))];
  }

  static bool isNumberStart(const std::string &s, size_t i) {
    return std::isdigit(static_cast<unsigned char>(s[i])) &&
           (i == 0 || !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_' ||
                        s[i - 1] == '%' || s[i - 1] == '#' || s[i - 1] == '.'));
  }

  /// Positions in `lines` where `starts` holds, as (line, column).
  template <typename Pred>
  std::vector<std::pair<size_t, size_t>> find(const std::vector<std::string> &lines, Pred starts) {
    std::vector<std::pair<size_t, size_t>> at;
    for (size_t l = 0; l < lines.size(); ++l)
      for (size_t i = 0; i < lines[l].size(); ++i)
        if (starts(lines[l], i))
          at.emplace_back(l, i);
    return at;
  }

  /// Replaces one number token with `value`.
  template <typename Pred>
  void mutateToken(std::vector<std::string> &lines, Pred starts, const std::string &value) {
    auto at = find(lines, starts);
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    std::string &s = lines[l];
    size_t j = i;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                            s[j] == '+' || s[j] == '-'))
      ++j;
    s.replace(i, j - i, value);
  }

  /// Replaces the run of digits at one of the positions `at` with `value`.
  void replaceDigitsAt(std::vector<std::string> &lines,
                       const std::vector<std::pair<size_t, size_t>> &at, const char *value) {
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    size_t j = i;
    while (j < lines[l].size() && std::isdigit(static_cast<unsigned char>(lines[l][j])))
      ++j;
    lines[l].replace(i, j - i, value);
  }

  void mutateType(std::vector<std::string> &lines) {
    static const char *types[] = {"f32", "bf16", "f16", "f64", "i32", "i64", "i16", "i1", "index"};
    auto at = find(lines, [](const std::string &s, size_t i) {
      for (const char *t : {"f32", "bf16", "f16", "i32"})
        if (s.compare(i, std::strlen(t), t) == 0 && i > 0 && (s[i - 1] == 'x' || s[i - 1] == '<' || s[i - 1] == ' '))
          return true;
      return false;
    });
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    size_t j = i;
    while (j < lines[l].size() && std::isalnum(static_cast<unsigned char>(lines[l][j])))
      ++j;
    lines[l].replace(i, j - i, types[pick(sizeof(types) / sizeof(types[0]))]);
  }

  void mutateShape(std::vector<std::string> &lines) {
    static const char *dims[] = {"0", "1", "3", "7", "?", "2x2", "4096", "4294967296"};
    auto at = find(lines, [](const std::string &s, size_t i) {
      return std::isdigit(static_cast<unsigned char>(s[i])) && i > 0 &&
             (s[i - 1] == '<' || s[i - 1] == 'x') && s.rfind("tensor<", i) != std::string::npos;
    });
    replaceDigitsAt(lines, at, dims[pick(sizeof(dims) / sizeof(dims[0]))]);
  }

  /// Einsum equations, names, xf.state / xf.input values: swap, drop or
  /// insert a character, or swap for another quoted string of the file.
  void mutateString(std::vector<std::string> &lines) {
    auto at = find(lines, [](const std::string &s, size_t i) {
      return s[i] == '"' && i + 1 < s.size() && s[i + 1] != '"' &&
             std::count(s.begin(), s.begin() + i, '"') % 2 == 0;
    });
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    std::string &s = lines[l];
    size_t end = s.find('"', i + 1);
    if (end == std::string::npos)
      return;
    std::string body = s.substr(i + 1, end - i - 1);
    switch (pick(4)) {
    case 0:
      if (body.size() >= 2)
        std::swap(body[pick(body.size())], body[pick(body.size())]);
      break;
    case 1:
      if (!body.empty())
        body.erase(pick(body.size()), 1);
      break;
    case 2: body.insert(pick(body.size() + 1), 1, "bshkvz,->+@"[pick(11)]); break;
    case 3: {
      auto other = at[pick(at.size())];
      size_t e = lines[other.first].find('"', other.second + 1);
      if (e != std::string::npos)
        body = lines[other.first].substr(other.second + 1, e - other.second - 1);
      break;
    }
    }
    s.replace(i + 1, end - i - 1, body);
  }

  /// Swaps two SSA operands of one op.
  void swapOperands(std::vector<std::string> &lines) {
    auto at = find(lines, [](const std::string &s, size_t i) {
      return s[i] == '=' && s.find('%', i) != std::string::npos;
    });
    if (at.empty())
      return;
    std::string &s = lines[at[pick(at.size())].first];
    std::vector<std::pair<size_t, size_t>> uses;
    for (size_t i = s.find('='); i < s.size(); ++i)
      if (s[i] == '%') {
        size_t j = i + 1;
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '#'))
          ++j;
        uses.emplace_back(i, j - i);
        i = j;
      }
    if (uses.size() < 2)
      return;
    size_t a = pick(uses.size()), b = pick(uses.size());
    if (a == b)
      return;
    if (a > b)
      std::swap(a, b);
    std::string ua = s.substr(uses[a].first, uses[a].second);
    std::string ub = s.substr(uses[b].first, uses[b].second);
    s.replace(uses[b].first, uses[b].second, ua);
    s.replace(uses[a].first, uses[a].second, ub);
  }

  /// Replaces one SSA use by a value defined elsewhere (a type mismatch, a
  /// use before its definition, or a well-typed wrong value).
  void replaceOperand(std::vector<std::string> &lines) {
    std::vector<std::string> defs;
    for (const std::string &s : lines) {
      size_t p = s.find_first_not_of(' ');
      if (p != std::string::npos && s[p] == '%') {
        size_t e = s.find_first_of(" :=", p);
        defs.push_back(s.substr(p, e - p));
      }
    }
    if (defs.empty())
      return;
    auto at = find(lines, [](const std::string &s, size_t i) {
      return s[i] == '%' && s.rfind('=', i) != std::string::npos;
    });
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    std::string &s = lines[l];
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '#'))
      ++j;
    s.replace(i, j - i, defs[pick(defs.size())]);
  }

  /// Grid axis numbers in array<i16: ...> (xf.factor_axes, xf.partial,
  /// grid_axes, buffer axes) and #shard<axisarray> split axes.
  void mutateAxes(std::vector<std::string> &lines) {
    static const char *values[] = {"0", "1", "2", "5", "-1", "0, 0", "1, 0", "32767", "7"};
    auto at = find(lines, [](const std::string &s, size_t i) {
      return std::isdigit(static_cast<unsigned char>(s[i])) && i >= 2 &&
             (s.compare(i - 2, 2, ": ") == 0 || s.compare(i - 2, 2, ", ") == 0 || s[i - 1] == '[') &&
             (s.rfind("array<i16", i) != std::string::npos || s.rfind("[[", i) != std::string::npos);
    });
    replaceDigitsAt(lines, at, values[pick(sizeof(values) / sizeof(values[0]))]);
  }

  /// A bogus pending sum on a sharding annotation.
  void addPartial(std::vector<std::string> &lines) {
    std::vector<size_t> anns;
    for (size_t l = 0; l < lines.size(); ++l)
      if (lines[l].find("shard.shard ") != std::string::npos)
        anns.push_back(l);
    if (anns.empty())
      return;
    std::string &s = lines[anns[pick(anns.size())]];
    size_t colon = s.rfind(" : ");
    if (colon == std::string::npos)
      return;
    static const char *values[] = {"array<i16: 5>", "array<i16: 0, 0>", "array<i16: -1>",
                                   "array<i16: 1>", "[1]", "7"};
    std::string attr = std::string(" {xf.partial = ") + values[pick(6)] + "}";
    if (s.find("{xf.partial") != std::string::npos)
      return;
    s.insert(colon, attr);
  }

  /// The grid's shape and axis names.
  void mutateGrid(std::vector<std::string> &lines) {
    static const char *shapes[] = {"0", "1", "2x0", "4294967296x4294967296", "3", "2x2x2", "?", "65536x65536"};
    static const char *names[] = {"[\"dp\"]", "[\"dp\", \"dp\"]", "[\"1x\", \"tp\"]", "[]",
                                  "[1, 2]", "[\"dp\", \"tp\", \"pp\"]"};
    for (std::string &s : lines) {
      size_t g = s.find("shard.grid @");
      if (g == std::string::npos)
        continue;
      if (pick(2)) {
        size_t a = s.find("shape = ");
        size_t e = s.find(')', a);
        if (a != std::string::npos && e != std::string::npos)
          s.replace(a + 8, e - a - 8, shapes[pick(8)]);
      } else {
        size_t a = s.find("xf.axis_names = ");
        size_t e = s.find(']', a);
        if (a != std::string::npos && e != std::string::npos)
          s.replace(a + 16, e - a - 15, names[pick(6)]);
      }
      return;
    }
  }

  /// Drops one `name = value` entry of an attribute dictionary.
  void dropAttribute(std::vector<std::string> &lines) {
    auto at = find(lines, [](const std::string &s, size_t i) {
      return i > 0 && (s[i - 1] == '{' || (i > 1 && s.compare(i - 2, 2, ", ") == 0)) &&
             std::isalpha(static_cast<unsigned char>(s[i])) && s.find(" = ", i) != std::string::npos;
    });
    if (at.empty())
      return;
    auto [l, i] = at[pick(at.size())];
    std::string &s = lines[l];
    // The entry ends at the next top-level ", " or "}".
    int depth = 0;
    size_t j = i;
    for (; j < s.size(); ++j) {
      char c = s[j];
      if (c == '<' || c == '[' || c == '{' || c == '(')
        ++depth;
      else if (c == '>' || c == ']' || c == '}' || c == ')') {
        if (depth == 0)
          break;
        --depth;
      } else if (c == ',' && depth == 0)
        break;
    }
    s.erase(i, j - i);
  }

  std::mt19937_64 rng_;
};

//===----------------------------------------------------------------------===//
// Running one case
//===----------------------------------------------------------------------===//

enum Outcome { Accepted = 0, Rejected = 1, Silent = 3 };

/// In the child: parse, verify and run the rest of the pipeline. Exits with
/// an Outcome; a signal or the alarm means a crash or a hang.
[[noreturn]] void runCase(MLIRContext &ctx, const std::string &text, const Snapshot &s,
                          const shardc::data::TokenFile *tokens) {
  int errors = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return success();
  });
  auto finish = [&](bool ok) {
    std::fflush(stdout);
    _exit(ok ? Accepted : errors ? Rejected : Silent);
  };
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, ParserConfig(&ctx));
  if (!module)
    finish(false);
  // The model stage also runs in the reference executor (`shardc run`): the
  // tool reports rt::Error as an error, so those count as rejections; any
  // other exception escapes and is a crash.
  if (s.execute && tokens) {
    if (auto forward = module->lookupSymbol<func::FuncOp>("forward")) {
      try {
        shardc::exec::ParamValues params = shardc::exec::initParams(forward, 1);
        std::vector<shardc::rt::HostTensor> args =
            shardc::exec::buildArguments(forward, params, *tokens, 0, 1);
        std::vector<shardc::rt::HostTensor> results;
        shardc::exec::Executor exec(forward);
        if (failed(exec.run(std::move(args), results)))
          finish(false);
      } catch (const shardc::rt::Error &e) {
        _exit(e.what()[0] ? Rejected : Silent);
      }
    }
  }
  if (s.report) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(&ctx);
    if (failed(parsePassPipeline("func.func(xf-report-sharding{output=/dev/null})", pm)))
      _exit(Silent);
    if (failed(pm.run(*copy)))
      finish(false);
  }
  PassManager pm(&ctx);
  if (failed(parsePassPipeline(llvm::join(s.rest, ","), pm)))
    _exit(Silent);
  finish(succeeded(pm.run(*module)));
}

struct Options {
  uint64_t seed = 1;
  int64_t cases = 1000;
  double timeLimit = 0; ///< seconds for the whole run (0: none)
  int caseTimeout = 20; ///< seconds per case
  int jobs = 1;
  int64_t only = -1; ///< --case
  bool print = false;
  bool inProcess = false; ///< --case I --in-process: no fork (for a debugger)
  std::string crashDir = "fuzz-crashes";
};

[[noreturn]] void usage(const char *msg) {
  std::cerr << "shardc-fuzz: " << msg
            << "\nusage: shardc-fuzz [--seed S] [--cases N] [--time-limit SEC] [--case-timeout SEC]"
               " [--jobs J] [--crash-dir DIR] [--case I [--print | --in-process]] [--list-corpus]\n";
  std::exit(2);
}

int64_t parseInt(const char *flag, const char *value, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (!value || llvm::StringRef(value).getAsInteger(10, v) || v < lo || v > hi)
    usage((std::string("option '") + flag + "' expects an integer in [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]")
              .c_str());
  return v;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  bool listCorpus = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--seed")
      o.seed = parseInt("--seed", next, 0, INT64_MAX), ++i;
    else if (a == "--cases")
      o.cases = parseInt("--cases", next, 0, INT64_MAX), ++i;
    else if (a == "--time-limit")
      o.timeLimit = static_cast<double>(parseInt("--time-limit", next, 0, 1 << 30)), ++i;
    else if (a == "--case-timeout")
      o.caseTimeout = static_cast<int>(parseInt("--case-timeout", next, 1, 3600)), ++i;
    else if (a == "--jobs")
      o.jobs = static_cast<int>(parseInt("--jobs", next, 1, 256)), ++i;
    else if (a == "--case")
      o.only = parseInt("--case", next, 0, INT64_MAX), ++i;
    else if (a == "--crash-dir" && next)
      o.crashDir = next, ++i;
    else if (a == "--print")
      o.print = true;
    else if (a == "--in-process")
      o.inProcess = true;
    else if (a == "--list-corpus")
      listCorpus = true;
    else
      usage(("unknown argument '" + a + "'").c_str());
  }

  DialectRegistry registry;
  shardc::registerShardcDialects(registry);
  shardc::registerShardcPasses();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Children are forked from this process: no worker threads may exist.
  ctx.disableMultithreading();
  // The corpus is built quietly; a configuration that stops early is expected.
  std::vector<Snapshot> corpus;
  {
    ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
    corpus = buildCorpus(ctx);
  }
  // Tokens for the executor (ids below every generated vocabulary).
  std::unique_ptr<shardc::data::TokenFile> tokens;
  {
    llvm::SmallString<128> path;
    if (!llvm::sys::fs::createTemporaryFile("shardc-fuzz", "bin", path)) {
      std::vector<int32_t> ids(4096);
      for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<int32_t>((i * 2654435761u) % 61);
      try {
        shardc::data::write_token_file(path.str().str(), ids);
        tokens = std::make_unique<shardc::data::TokenFile>(
            shardc::data::TokenFile::open(path.str().str()));
      } catch (const shardc::rt::Error &e) {
        std::cerr << "shardc-fuzz: no executor cases: " << e.what() << "\n";
      }
      llvm::sys::fs::remove(path);
    }
  }
  if (listCorpus) {
    for (const Snapshot &s : corpus)
      std::cout << s.label << "  (" << s.text.size() << " bytes; then " << pipelineText(s.rest)
                << ")\n";
    return 0;
  }

  auto makeCase = [&](int64_t index, std::string &log) -> std::pair<std::string, const Snapshot *> {
    std::seed_seq seq{static_cast<uint32_t>(o.seed), static_cast<uint32_t>(o.seed >> 32),
                      static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32)};
    std::mt19937_64 rng(seq);
    const Snapshot &s = corpus[rng() % corpus.size()];
    Mutator m(rng());
    return {m.mutate(s.text, log), &s};
  };
  auto header = [&](int64_t index, const Snapshot &s, const std::string &log) {
    return "// shardc-fuzz --seed " + std::to_string(o.seed) + " --case " + std::to_string(index) +
           ": " + s.label + ", mutations " + log + "\n// reproduce: shardc-opt FILE " +
           (s.report ? "-xf-report-sharding=output=/dev/null; shardc-opt FILE " : "") +
           "--pass-pipeline='" + pipelineText(s.rest) + "'\n";
  };

  if (o.only >= 0 && o.inProcess) {
    std::string log;
    auto [text, s] = makeCase(o.only, log);
    runCase(ctx, text, *s, tokens.get()); // exits with the outcome; a crash shows in the debugger
  }
  if (o.only >= 0 && o.print) {
    std::string log;
    auto [text, s] = makeCase(o.only, log);
    std::cout << header(o.only, *s, log) << text << "\n";
    return 0;
  }

  std::map<std::string, int64_t> counts; // accepted, rejected, crash, hang, silent
  auto start = std::chrono::steady_clock::now();
  struct Running {
    int64_t index;
    std::string text, log;
    const Snapshot *snap;
  };
  std::map<pid_t, Running> running;
  auto record = [&](const Running &r, int status) {
    std::string kind;
    if (WIFEXITED(status) && WEXITSTATUS(status) == Accepted)
      kind = "accepted";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == Rejected)
      kind = "rejected";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == Silent)
      kind = "silent";
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      kind = "hang";
    else
      kind = "crash";
    ++counts[kind];
    if (kind == "accepted" || kind == "rejected")
      return;
    std::string detail = WIFSIGNALED(status) ? std::string(strsignal(WTERMSIG(status)))
                                             : "exit " + std::to_string(WEXITSTATUS(status));
    std::string path = o.crashDir + "/" + kind + "-" + std::to_string(o.seed) + "-" +
                       std::to_string(r.index) + ".mlir";
    std::error_code ec;
    llvm::sys::fs::create_directories(o.crashDir);
    std::ofstream(path) << header(r.index, *r.snap, r.log) << "// " << kind << ": " << detail
                        << "\n"
                        << r.text << "\n";
    std::cerr << "shardc-fuzz: case " << r.index << " (" << r.snap->label << "; " << r.log
              << "): " << kind << " (" << detail << "), input written to " << path << "\n";
  };
  auto reap = [&](bool block) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
    if (pid <= 0)
      return false;
    auto it = running.find(pid);
    if (it != running.end()) {
      record(it->second, status);
      running.erase(it);
    }
    return true;
  };

  int64_t first = o.only >= 0 ? o.only : 0;
  int64_t last = o.only >= 0 ? o.only + 1 : o.cases;
  int64_t done = 0;
  for (int64_t index = first; index < last; ++index) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.timeLimit > 0 && elapsed >= o.timeLimit)
      break;
    while (static_cast<int>(running.size()) >= o.jobs)
      reap(true);
    Running r;
    r.index = index;
    auto made = makeCase(index, r.log);
    r.text = std::move(made.first);
    r.snap = made.second;
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("shardc-fuzz: fork");
      return 2;
    }
    if (pid == 0) {
      // Quiet child: its diagnostics are counted, not printed.
      if (FILE *null = std::fopen("/dev/null", "w")) {
        dup2(fileno(null), STDOUT_FILENO);
        dup2(fileno(null), STDERR_FILENO);
      }
      alarm(static_cast<unsigned>(o.caseTimeout));
      runCase(ctx, r.text, *r.snap, tokens.get());
    }
    running.emplace(pid, std::move(r));
    ++done;
  }
  while (!running.empty())
    reap(true);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t bad = counts["crash"] + counts["hang"] + counts["silent"];
  llvm::outs() << "shardc-fuzz: seed " << o.seed << ", " << done << " cases in "
            << llvm::format("%.1f", seconds) << " s over " << corpus.size()
            << " snapshots: " << counts["accepted"] << " accepted, " << counts["rejected"]
            << " rejected with a diagnostic, " << counts["crash"] << " crashes, "
            << counts["hang"] << " hangs, " << counts["silent"]
            << " failures without a diagnostic\n";
  return bad ? 1 : 0;
}
