//===- PipelineSchedule.h - what a pipeline stage runs ahead -----*- C++ -*-===//
//
// The numbers -xf-pipeline's schedules are built from, shared with the
// planner, which reports a long pipeline from four compiled stages and
// reasons about what each stage holds at once.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SHARDING_PIPELINESCHEDULE_H
#define SHARDC_PASSES_SHARDING_PIPELINESCHEDULE_H

#include <algorithm>
#include <cstdint>

namespace shardc::pipeline {

/// The stage of a `scheduleStages`-stage pipeline whose order stage `stage`
/// of `stages` runs (-xf-pipeline schedule-stages): the first half its first
/// stages, the rest its last.
inline int64_t standsFor(int64_t stage, int64_t stages, int64_t scheduleStages) {
  return 2 * stage < stages ? stage : scheduleStages - (stages - stage);
}

/// The micro-batches interleaved 1F1B runs each chunk of a stage for in
/// turn: groups of the pipeline's stages (Megatron-LM), or all of them where
/// there are fewer (one partial group; the planner composes a long step's
/// figures from two such short ones).
inline int64_t interleavedGroup(int64_t stages, int64_t microBatches) {
  return std::min(stages, microBatches);
}

/// The forwards stage `stage` of a `stages`-stage pipeline runs before its
/// first backward: 1F1B's stages - s - 1 (of m micro-batches), interleaved
/// 1F1B's 2 (stages - s - 1) + (v - 1) stages (of v m chunk forwards).
inline int64_t warmupForwards(int64_t stage, int64_t stages, int64_t virtualStages,
                              int64_t microBatches) {
  if (virtualStages == 1)
    return std::min(stages - stage - 1, microBatches);
  return std::min((stages - stage - 1) * 2 + (virtualStages - 1) * stages,
                  virtualStages * microBatches);
}

/// The units a stage has run forward and not yet backward when its first
/// backward starts (its warm-ups and one more, at most all of them): what
/// its activations grow with.
inline int64_t unitsHeld(int64_t stage, int64_t stages, int64_t virtualStages,
                         int64_t microBatches) {
  return std::min(warmupForwards(stage, stages, virtualStages, microBatches) + 1,
                  virtualStages * microBatches);
}

} // namespace shardc::pipeline

#endif // SHARDC_PASSES_SHARDING_PIPELINESCHEDULE_H
