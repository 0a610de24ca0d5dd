//===- Trainer.cpp - runs a synthesized training step ---------------------===//

#include "compiler/executor/Trainer.h"

#include "dialects/xf/Params.h"
#include "runtime/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/data/TokenFile.h"
#include "runtime/abi/StateNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace shardc;
using namespace shardc::exec;

namespace {

/// A zero scalar or tensor of an argument's type.
HostTensor zerosOf(Type type) {
  auto [dtype, shape] = *tensorSpec(type);
  return HostTensor(dtype, shape); // zero-filled
}

} // namespace

Trainer::Trainer(func::FuncOp step, const ParamValues &params, double initialLossScale,
                 func::FuncOp run)
    : func_(step), run_(run ? run : step) {
  // Partitioning may drop state the unpartitioned step has (ZeRO-1/2 make
  // the bf16 weight copies from their masters' shards instead of storing
  // them): what runs keeps the others in order.
  llvm::StringSet<> kept;
  for (unsigned i = 0; i < run_.getNumArguments(); ++i)
    if (auto state = run_.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
      kept.insert(state.getValue());
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto mb = step.getArgAttrOfType<IntegerAttr>(i, xf::XfDialect::kMicroBatchAttrName);
    if (mb)
      microBatches_ = std::max<int64_t>(microBatches_, mb.getInt() + 1);
    auto state = step.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName);
    if (!state)
      continue;
    StringRef s = state.getValue();
    if (!kept.contains(s)) {
      dropped_.push_back(i);
      continue;
    }
    Type type = step.getArgument(i).getType();
    if (s.starts_with("param:")) {
      auto it = params.find(s.drop_front(6).str());
      if (it == params.end())
        throw rt::Error("no initial value for parameter '" + s.drop_front(6).str() + "'");
      state_[s.str()] = it->second;
    } else if (StringRef master = abi::lowPrecisionCopyOf(s); !master.empty()) {
      // A weight's bf16/f16 copy: its master rounded, as the update casts it.
      auto it = params.find(master.str());
      if (it == params.end())
        throw rt::Error("no initial value for parameter '" + master.str() + "'");
      auto [dtype, shape] = *tensorSpec(type);
      const HostTensor &m = it->second;
      if (m.dtype != DType::F32 || m.shape != shape || (dtype != DType::BF16 && dtype != DType::F16))
        throw rt::Error("state '" + s.str() + "' is not a bf16/f16 copy of the f32 parameter '" +
                        master.str() + "'");
      HostTensor t(dtype, shape);
      auto *out = reinterpret_cast<uint16_t *>(t.bytes.data());
      if (dtype == DType::BF16)
        cpu::cast_f32_to_bf16(m.data<float>(), out, t.numel());
      else
        cpu::cast_f32_to_f16(m.data<float>(), out, t.numel());
      state_[s.str()] = std::move(t);
    } else if (s == "loss_scale") {
      HostTensor t(DType::F32, {});
      t.data<float>()[0] = static_cast<float>(initialLossScale);
      state_[s.str()] = std::move(t);
    } else {
      state_[s.str()] = zerosOf(type); // moments, counters
    }
  }
  for (const xf::InputArg &in : xf::getInputs(step))
    if (in.kind == "tokens")
      tokensPerStep_ += in.type.getNumElements();
}

LogicalResult Trainer::step(const data::TokenFile &tokens, const std::vector<int64_t> &positions,
                            uint64_t index, uint64_t seed, int32_t maskToken,
                            StepReport &report) {
  std::vector<HostTensor> args(func_.getNumArguments());
  for (int64_t j = 0; j < microBatches_; ++j)
    fillInputs(func_, args, tokens, positions.at(j), seed, maskToken, j);
  // The state moves into the step and comes back as its results.
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto s = func_.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName))
      if (auto it = state_.find(s.str()); it != state_.end())
        args[i] = std::move(it->second);

  RunOptions options;
  options.seed = seed;
  options.step = index;
  options.training = true;
  options.profile = profiling_;
  for (unsigned i : llvm::reverse(dropped_))
    args.erase(args.begin() + i);
  Executor executor(run_, options);
  std::vector<HostTensor> results;
  if (failed(executor.run(std::move(args), results)))
    return failure();
  for (const auto &[name, secs] : executor.profile())
    profile_[name] += secs;
  report = StepReport();
  for (unsigned i = 0; i < results.size(); ++i) {
    if (auto s = run_.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName)) {
      state_[s.str()] = std::move(results[i]);
      continue;
    }
    if (auto g = run_.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kGradAttrName)) {
      grads_[g.str()] = std::move(results[i]);
      continue;
    }
    auto r = run_.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kReportAttrName);
    if (!r)
      continue;
    double v = scalarValue(results[i]);
    StringRef name = r.getValue();
    if (name == "loss")
      report.loss = v;
    else if (name == "grad_norm")
      report.gradNorm = v;
    else if (name == "lr")
      report.lr = v;
    else if (name == "loss_scale")
      report.lossScale = v;
    else if (name == "skipped")
      report.skipped = v != 0.0;
  }
  return success();
}

ParamValues Trainer::params() const {
  ParamValues out;
  for (const auto &[k, v] : state_)
    if (StringRef(k).starts_with("param:"))
      out[k.substr(6)] = v;
  return out;
}
