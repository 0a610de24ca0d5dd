//===- Schedule.h - issuing a collective where its input is made -*- C++ -*-===//
//
// Shared by -xf-schedule and -xf-bucket-reduce-scatters (which merges the
// reductions before -xf-schedule runs and so issues its members early
// itself).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_SCHEDULE_SCHEDULE_H
#define SHARDC_PASSES_SCHEDULE_SCHEDULE_H

#include "mlir/IR/Operation.h"

namespace shardc {

/// Moves collective `op` up to right after its input's definition; where
/// that input is a widening cast or reshape only `op` reads (a bf16 weight
/// gradient cast to f32 for its master, which the partitioner leaves by the
/// optimizer), the chain of such ops moves up with it to what it is computed
/// from, so the gradient is reduced when it is made, not held to the end of
/// the step. Leaves `op` where it is when its input is defined elsewhere
/// (an argument, another block).
void issueAfterInput(mlir::Operation *op);

} // namespace shardc

#endif // SHARDC_PASSES_SCHEDULE_SCHEDULE_H
