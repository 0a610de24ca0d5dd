//===- Trainer.h - runs a synthesized training step -------------*- C++ -*-===//
//
// Carries the state of a training step function (built by -xf-autodiff and
// -xf-adamw) from one step to the next: each result with `xf.state = S`
// becomes the next step's argument with the same `xf.state`. Data inputs are
// cut from a token file, one batch per micro-batch. A gradient function
// straight from -xf-autodiff runs too: its gradients (`xf.grad` results) are
// kept by parameter name.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_EXECUTOR_TRAINER_H
#define SHARDC_COMPILER_EXECUTOR_TRAINER_H

#include "compiler/executor/Params.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardc::exec {

/// The per-step quantities a step function reports (`xf.report` results).
struct StepReport {
  double loss = 0, gradNorm = 0, lr = 0;
  std::optional<double> lossScale; ///< the scale used, with fp16 loss scaling
  bool skipped = false;            ///< overflow: the update was not applied
};

class Trainer {
public:
  /// `step` must carry xf.state arguments; parameters start from `params`
  /// (by name), Adam moments and counters from zero, the loss scale from
  /// `initialLossScale`. `run`, when given, is what executes: the same step
  /// partitioned over a mesh (-xf-partition), whose arguments and results
  /// are the global tensors of `step`'s signature, less any state it does
  /// not keep (ZeRO-1/2 store no bf16 weight copies).
  Trainer(mlir::func::FuncOp step, const ParamValues &params, double initialLossScale,
          mlir::func::FuncOp run = {});

  /// Runs step number `index` (0-based): micro-batch j reads the batch at
  /// `positions[j]`. `seed` keys dropout and the BERT masking.
  mlir::LogicalResult step(const data::TokenFile &tokens, const std::vector<int64_t> &positions,
                           uint64_t index, uint64_t seed, int32_t maskToken, StepReport &report);

  /// Number of micro-batches the step function takes.
  int64_t microBatches() const { return microBatches_; }
  /// Tokens consumed per step (all micro-batches).
  int64_t tokensPerStep() const { return tokensPerStep_; }
  /// The current parameters by name.
  ParamValues params() const;
  /// The gradients the last step returned (`xf.grad` results), by parameter.
  const ParamValues &gradients() const { return grads_; }

  /// Accumulate the time per op name (see profile()).
  void setProfiling(bool on) { profiling_ = on; }
  /// Seconds per op name over all profiled steps.
  const std::map<std::string, double> &profile() const { return profile_; }

private:
  mlir::func::FuncOp func_, run_;
  std::vector<unsigned> dropped_; ///< `step`'s state arguments `run` does not take
  std::map<std::string, HostTensor> state_;
  ParamValues grads_;
  int64_t microBatches_ = 1, tokensPerStep_ = 0;
  bool profiling_ = false;
  std::map<std::string, double> profile_;
};

} // namespace shardc::exec

#endif // SHARDC_COMPILER_EXECUTOR_TRAINER_H
