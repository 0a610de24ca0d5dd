//===- Pipelines.cpp - shardc's pass pipelines, registered ----------------===//

#include "compiler/pipelines/Pipelines.h"

#include "passes/Passes.h"
#include "passes/sharding/Strategies.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace shardc {

void buildTrainStepPipeline(OpPassManager &pm, const PipelineOptions &o) {
  // The logit GEMM and the loss become one op before anything else sees
  // them: the step never holds the tokens x vocabulary logits.
  if (o.fuseLinearCE)
    pm.nest<func::FuncOp>().addPass(createXfFuseLinearCrossEntropy());
  // Q, K and V from one GEMM, unless attention's query rows are to be split
  // (the packed form keeps the sequence whole) or its kv heads do not divide
  // the axes the heads may split over.
  if (o.fuseQKV && o.attentionRows != "split") {
    XfFuseQKVOptions qkv;
    qkv.function = o.function;
    qkv.headsDivisibleBy = sharding::headSplitDivisor(o.mesh, o.strategy);
    pm.nest<func::FuncOp>().addPass(createXfFuseQKV(qkv));
  }
  if (o.precision != "fp32") {
    XfMixedPrecisionOptions mp;
    mp.function = o.function;
    mp.compute = o.precision == "bf16" ? "bf16" : "f16";
    mp.activations = o.lowActivations ? "compute" : "f32";
    mp.residual = o.lowResidual ? "compute" : "f32";
    pm.nest<func::FuncOp>().addPass(createXfMixedPrecision(mp));
  }
  XfAutodiffOptions ad;
  ad.function = o.function;
  ad.output = kStepFunction;
  ad.microBatches = o.microBatches;
  ad.lossScale = o.precision == "fp16";
  pm.addPass(createXfAutodiff(ad));
  XfAdamWOptions opt;
  opt.function = kStepFunction;
  opt.lr = o.lr;
  opt.minLr = o.minLr;
  opt.warmup = o.warmup;
  opt.decaySteps = o.decaySteps;
  opt.weightDecay = o.weightDecay;
  opt.beta1 = o.beta1;
  opt.beta2 = o.beta2;
  opt.epsilon = o.adamEps;
  opt.clipGrad = o.clipGrad;
  opt.lossScaleWindow = o.lossScaleWindow;
  opt.initialLossScale = o.lossScale;
  opt.lowPrecisionCopies = o.weightCopies;
  pm.nest<func::FuncOp>().addPass(createXfAdamW(opt));
  if (o.recompute != "none" || o.regather) {
    XfRecomputeOptions rc;
    rc.function = kStepFunction;
    rc.policy = o.recompute;
    rc.every = o.recomputeEvery;
    rc.regather = o.regather;
    pm.nest<func::FuncOp>().addPass(createXfRecompute(rc));
  }
}

void buildShardingPipeline(OpPassManager &pm, const PipelineOptions &o, llvm::StringRef function,
                           bool partition) {
  if (o.mesh.empty()) {
    // One rank: the step is its own rank-local step.
    if (partition)
      addRankLocalFusions(pm.nest<func::FuncOp>(), function, o.bucketBytes);
    return;
  }
  // The mesh string is parsed once, into the module's grid; the function
  // passes below read it.
  XfGridOptions grid;
  grid.mesh = o.mesh;
  pm.addPass(createXfGrid(grid));
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  XfPropagateShardingOptions propagate;
  propagate.function = function.str();
  propagate.strategy = o.strategy;
  propagate.hardware = o.hardware;
  propagate.memoryBudget = o.memoryBudget;
  propagate.lowPrecisionReductions = o.lowPrecisionReductions;
  propagate.attentionRows = o.attentionRows;
  fpm.addPass(createXfPropagateSharding(propagate));
  if (!partition)
    return;
  XfPartitionOptions p;
  p.function = function.str();
  fpm.addPass(createXfPartition(p));
  std::string ppAxis = sharding::pipelineAxisName(o.strategy);
  if (!ppAxis.empty()) {
    XfPipelineOptions pipeline;
    pipeline.function = function.str();
    pipeline.axis = ppAxis;
    pipeline.schedule = o.schedule;
    pipeline.virtualStages = o.virtualStages;
    pipeline.cuts = o.pipelineCuts;
    fpm.addPass(createXfPipeline(pipeline));
  }
  addRankLocalFusions(fpm, function, o.bucketBytes);
}

void buildLoweringPipeline(OpPassManager &pm, const PipelineOptions &o) {
  if (o.eval) {
    XfExtractEvalOptions extract;
    extract.function = kStepFunction;
    extract.output = kEvalFunction;
    pm.addPass(createXfExtractEval(extract));
  }
  if (o.overlap) {
    XfScheduleOptions schedule;
    schedule.function = kStepFunction;
    pm.nest<func::FuncOp>().addPass(createXfSchedule(schedule));
  }
  if (o.offloadActivations) {
    XfOffloadActivationsOptions offload;
    offload.function = kStepFunction;
    offload.minBytes = o.offloadMinBytes;
    pm.nest<func::FuncOp>().addPass(createXfOffloadActivations(offload));
  }
  XfPlanMemoryOptions plan;
  plan.function = kStepFunction;
  plan.evalFunction = o.eval ? kEvalFunction : "";
  pm.addPass(createXfPlanMemory(plan));
  XfLowerToRtOptions lower;
  lower.function = kStepFunction;
  lower.source = o.source;
  lower.strategy = o.strategy;
  lower.evalFunction = o.eval ? kEvalFunction : "";
  pm.addPass(createXfLowerToRt(lower));
  RtBucketAllReducesOptions bucket;
  bucket.bucketBytes = o.bucketBytes;
  RtScheduleCollectivesOptions collectives;
  collectives.overlap = o.overlap;
  OpPassManager &rt = pm.nest<func::FuncOp>();
  rt.addPass(createRtBucketAllReduces(bucket));
  rt.addPass(createRtScheduleCollectives(collectives));
}

void buildCompilePipeline(OpPassManager &pm, const PipelineOptions &o) {
  buildTrainStepPipeline(pm, o);
  buildShardingPipeline(pm, o);
  buildLoweringPipeline(pm, o);
}

void buildLLVMPipeline(OpPassManager &pm) { pm.addPass(createRtToLLVM()); }

void registerShardcPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "shardc-train-step", "forward + loss -> training step (autodiff, AdamW, mixed precision)",
      buildTrainStepPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "shardc-shard", "propagate shardings over --mesh and partition the training step",
      [](OpPassManager &pm, const PipelineOptions &o) { buildShardingPipeline(pm, o); });
  PassPipelineRegistration<PipelineOptions>(
      "shardc-lower", "plan memory and lower the (partitioned) step to rt",
      buildLoweringPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "shardc-compile", "what `shardc compile` runs before codegen: train step, shard, lower",
      buildCompilePipeline);
}

} // namespace shardc
