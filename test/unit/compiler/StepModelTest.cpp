//===- StepModelTest.cpp - the modelled step from its stages' costs -------===//
//
// modelStep (passes/sharding/StepReport.h): what `shardc explain` and
// `shardc plan` take a step's time from. Hand-computed cases: the overlap of
// gathers and gradient reductions with their phases, the busiest stage, a
// pipeline's gradient reductions hidden only behind the last micro-batch's
// backward and the drain after it, offload beyond a phase.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/StepReport.h"

#include <gtest/gtest.h>

using namespace shardc;

namespace {

/// 10 s of compute summed: 6 backward, 3 forward, 1 optimizer.
StageCost stage(double comm, double gradient, double forwardGather = 0,
                double backwardGather = 0) {
  StageCost s;
  s.commSeconds = comm;
  s.gradientSeconds = gradient;
  s.forwardGatherSeconds = forwardGather;
  s.backwardGatherSeconds = backwardGather;
  s.computeSum = 10;
  s.backwardSum = 6;
  s.forwardSum = 3;
  return s;
}

TEST(ModelStep, UnpipelinedHidesGradientsBehindTheWholeBackward) {
  // Shares of 20 s of compute: backward 12, forward 6. Gradients 8 of the
  // 9 s hide; the forward gather of 1 s hides.
  ModelledStep m = modelStep({stage(10, 8, 1)}, 20, 0);
  EXPECT_DOUBLE_EQ(m.backwardShare, 12);
  EXPECT_DOUBLE_EQ(m.forwardShare, 6);
  EXPECT_DOUBLE_EQ(m.exposedSeconds, 1);
  EXPECT_DOUBLE_EQ(m.stepSeconds, 21);
  // More gradient traffic than backward: the excess is exposed.
  ModelledStep over = modelStep({stage(20, 15, 0, 2)}, 20, 0);
  EXPECT_DOUBLE_EQ(over.exposedSeconds, 20 - 12);
}

TEST(ModelStep, PipelineStageHidesGradientsBehindItsLastMicroBatchAndTheDrain) {
  // Backward share 12 s; m = 4: stage 0 hides 12 * 1/4 = 3 s of its 8 s of
  // gradients, stage 1 12 * 2/4 = 6 s, stage 3 all 8 (window 12).
  std::vector<StageCost> stages = {stage(10, 8), stage(10, 8), stage(10, 8), stage(10, 8)};
  ModelledStep m = modelStep(stages, 20, 0, /*pipelineMicroBatches=*/4);
  EXPECT_EQ(m.busiest, 0u);
  EXPECT_DOUBLE_EQ(m.exposedSeconds, 10 - 3);
  EXPECT_DOUBLE_EQ(m.stepSeconds, 27);
  // The later stages alone: stage 1's window.
  ModelledStep later = modelStep({stages[1]}, 20, 0, 2);
  EXPECT_DOUBLE_EQ(later.exposedSeconds, 10 - 6);
  // Backward gathers take their part of the window first.
  ModelledStep gathers = modelStep({stage(10, 8, 0, 2)}, 20, 0, 4);
  EXPECT_DOUBLE_EQ(gathers.exposedSeconds, 10 - 2 - 1);
}

TEST(ModelStep, BusiestStageBoundsTheStep) {
  // Stage 1 communicates more than stage 0 hides: its step is the step.
  ModelledStep m = modelStep({stage(2, 0), stage(5, 0), stage(5, 0)}, 20, 0);
  EXPECT_EQ(m.busiest, 1u); // the first of equals
  EXPECT_DOUBLE_EQ(m.stepSeconds, 25);
}

TEST(ModelStep, OffloadBeyondEachPhaseIsExposed) {
  StageCost s = stage(0, 0);
  s.offloadBytes = 8e9; // 8 s each way at 1 GB/s: 2 beyond the forward's 6
  ModelledStep m = modelStep({s}, 20, 1e9);
  EXPECT_DOUBLE_EQ(m.offloadSeconds, 8);
  EXPECT_DOUBLE_EQ(m.exposedOffloadSeconds, 2);
  EXPECT_DOUBLE_EQ(m.stepSeconds, 22);
}

TEST(GradientBuckets, OneLatencyPerBucketOrPerTensor) {
  GradientBuckets b;
  b.input = 60;
  b.count = 7;
  b.perBucket = 0.5;
  b.bucketBytes = 25;
  EXPECT_DOUBLE_EQ(b.priced(), 3 * 0.5);
  b.bucketBytes = 0;
  EXPECT_DOUBLE_EQ(b.priced(), 7 * 0.5);
}

} // namespace
