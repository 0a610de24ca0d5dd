//===- Pipelines.h - shardc's pass pipelines, registered ---------*- C++ -*-===//
//
// Every pipeline shardc runs, built in one place as functions that read like
// the data flow (docs/design.md):
//
//   shardc-train-step   [fuse logit GEMM + loss] [mixed precision] autodiff AdamW
//   shardc-shard        propagate shardings (mesh, preset, cost), partition
//                       [pipeline stages and schedule (a `pp` component)],
//                       then the rank-local fusions (one optimizer call, GEMM
//                       epilogues; on one rank only these)
//   shardc-lower        [eval twin] [schedule] [offload activations] plan memory,
//                       lower to rt, bucket
//                       and place the collectives
//   shardc-compile      the three above: what `shardc compile` runs before codegen
//
// Each is registered, so `shardc-opt --pass-pipeline='builtin.module(
// shardc-compile{mesh=dp=2,tp=2 strategy=zero1+tp})'` produces exactly the
// module `shardc compile --emit-mlir` writes (test/lit/tools/compile-pipeline.test).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_PIPELINES_PIPELINES_H
#define SHARDC_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace shardc {

/// The options of every shardc pipeline (each reads the ones it needs).
struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions> {
  // The training step.
  Option<std::string> function{*this, "function", llvm::cl::desc("the forward + loss function"),
                               llvm::cl::init("forward")};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("fp32 | bf16 | fp16 (GEMMs, attention, activations)"),
                                llvm::cl::init("fp32")};
  Option<int64_t> microBatches{*this, "micro-batches",
                               llvm::cl::desc("gradient accumulation steps"), llvm::cl::init(1)};
  Option<bool> fuseLinearCE{*this, "fuse-linear-ce",
                            llvm::cl::desc("fuse the logit GEMM with the cross-entropy"),
                            llvm::cl::init(true)};
  Option<bool> fuseQKV{*this, "fuse-qkv",
                       llvm::cl::desc("one GEMM for Q, K and V (-xf-fuse-qkv)"),
                       llvm::cl::init(false)};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("activation recomputation: none | selective | full"),
                                llvm::cl::init("none")};
  Option<int64_t> recomputeEvery{*this, "recompute-every",
                                 llvm::cl::desc("recompute layers whose index is a multiple of this"),
                                 llvm::cl::init(1)};
  Option<bool> regather{*this, "regather-for-backward",
                        llvm::cl::desc("gather again in the backward what the forward "
                                       "gathered, without recomputing (-xf-recompute "
                                       "regather=1; implied by a recompute policy)"),
                        llvm::cl::init(false)};
  Option<bool> weightCopies{*this, "low-precision-copies",
                            llvm::cl::desc("bf16/fp16: the optimizer writes a low-precision "
                                           "copy of each weight the step casts"),
                            llvm::cl::init(true)};
  Option<bool> lowActivations{*this, "low-precision-activations",
                              llvm::cl::desc("bf16/fp16: store the values between ops in the "
                                             "compute type (autocast's policy); false: f32, "
                                             "only GEMM and attention operands cast"),
                              llvm::cl::init(true)};
  Option<bool> lowResidual{*this, "low-precision-residual",
                           llvm::cl::desc("bf16/fp16: store the residual stream in the compute "
                                          "type too (Megatron-LM's default); false: f32"),
                           llvm::cl::init(false)};
  Option<double> lr{*this, "lr", llvm::cl::desc("peak learning rate"), llvm::cl::init(1.5e-4)};
  Option<double> minLr{*this, "min-lr", llvm::cl::desc("floor of the cosine decay"),
                       llvm::cl::init(1e-5)};
  Option<int64_t> warmup{*this, "warmup", llvm::cl::desc("linear warm-up steps"),
                         llvm::cl::init(0)};
  Option<int64_t> decaySteps{*this, "decay-steps",
                             llvm::cl::desc("step where the cosine reaches min-lr"),
                             llvm::cl::init(1000)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("decoupled weight decay"),
                             llvm::cl::init(0.01)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"), llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"), llvm::cl::init(0.95)};
  Option<double> adamEps{*this, "adam-eps", llvm::cl::desc("Adam epsilon"), llvm::cl::init(1e-8)};
  Option<double> clipGrad{*this, "clip-grad", llvm::cl::desc("max global gradient norm"),
                          llvm::cl::init(1.0)};
  Option<double> lossScale{*this, "loss-scale", llvm::cl::desc("fp16: initial loss scale"),
                           llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleWindow{*this, "loss-scale-window",
                                  llvm::cl::desc("fp16: clean steps before the scale doubles"),
                                  llvm::cl::init(2000)};
  // Sharding (none without a mesh).
  Option<std::string> mesh{*this, "mesh", llvm::cl::desc("device mesh, e.g. dp=2,tp=2")};
  Option<std::string> strategy{*this, "strategy", llvm::cl::desc("preset, e.g. zero1+tp")};
  // Pipeline parallelism (a strategy with a `pp` component).
  Option<std::string> schedule{*this, "schedule",
                               llvm::cl::desc("pipeline schedule: gpipe | 1f1b | interleaved"),
                               llvm::cl::init("1f1b")};
  Option<int64_t> virtualStages{*this, "virtual-stages",
                                llvm::cl::desc("model chunks per pipeline stage (interleaved)"),
                                llvm::cl::init(1)};
  Option<std::string> pipelineCuts{
      *this, "pipeline-cuts",
      llvm::cl::desc("layer indices where pipeline chunks 1.. start (default: balanced)")};
  Option<std::string> hardware{*this, "hardware", llvm::cl::desc("cost model hardware"),
                               llvm::cl::init("h100-8x-nvlink-ib")};
  Option<double> memoryBudget{*this, "memory-budget",
                              llvm::cl::desc("bytes per device (0: the hardware's memory)"),
                              llvm::cl::init(0)};
  Option<bool> lowPrecisionReductions{
      *this, "low-precision-reductions",
      llvm::cl::desc("reduce pending sums in bf16/f16, before widening casts"),
      llvm::cl::init(false)};
  Option<std::string> attentionRows{
      *this, "attention-rows",
      llvm::cl::desc("split attention's query rows over free mesh axes: auto | split | whole"),
      llvm::cl::init("auto")};
  // Lowering.
  Option<bool> eval{*this, "eval", llvm::cl::desc("also lower a loss-only twin (@shardc_eval)"),
                    llvm::cl::init(true)};
  Option<bool> offloadActivations{
      *this, "offload-activations",
      llvm::cl::desc("keep the backward's activations in host memory, prefetched one layer "
                     "ahead (-xf-offload-activations)"),
      llvm::cl::init(false)};
  Option<int64_t> offloadMinBytes{*this, "offload-min-bytes",
                                  llvm::cl::desc("offload only activations of at least this "
                                                 "many bytes"),
                                  llvm::cl::init(65536)};
  Option<bool> overlap{*this, "overlap",
                       llvm::cl::desc("schedule for overlap (-xf-schedule, start/wait)"),
                       llvm::cl::init(true)};
  Option<int64_t> bucketBytes{*this, "bucket-bytes",
                              llvm::cl::desc("gradient all-reduce buckets (0: none)"),
                              llvm::cl::init(25 * 1024 * 1024)};
  Option<std::string> source{*this, "source",
                             llvm::cl::desc("model name recorded in the program")};
};

/// The name of the step the train-step pipeline synthesizes.
inline constexpr const char *kStepFunction = "train_step";
/// The loss-only twin the lowering pipeline extracts.
inline constexpr const char *kEvalFunction = "eval_step";

void buildTrainStepPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);
/// Propagates and partitions over the mesh, then adds the rank-local fusions
/// (addRankLocalFusions); without a mesh only those. With `partition` false,
/// stops after propagation (`shardc explain`) and fuses nothing.
void buildShardingPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                           llvm::StringRef function = kStepFunction, bool partition = true);
void buildLoweringPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);
void buildCompilePipeline(mlir::OpPassManager &pm, const PipelineOptions &options);
/// rt -> LLVM dialect (then codegen translates and links).
void buildLLVMPipeline(mlir::OpPassManager &pm);

/// Registers shardc-train-step, shardc-shard, shardc-lower, shardc-compile.
void registerShardcPipelines();

} // namespace shardc

#endif // SHARDC_COMPILER_PIPELINES_PIPELINES_H
