//===- AdamW.cpp - optimizer step on top of a gradient function -----------===//
//
// Replaces the gradients a -xf-autodiff function returns by one AdamW update:
// global-norm clipping over all gradients, the learning-rate schedule, the
// per-parameter update, the update counter and (with a loss-scale argument)
// dynamic loss scaling. All optimizer state is function arguments and
// results, so it is visible to sharding (ZeRO splits the moments) and to the
// driver that carries it from step to step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/FunctionTarget.h"

#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"
#include "runtime/abi/StateNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_XFADAMW
#include "passes/Passes.h.inc"
} // namespace shardc

#include <cmath>

using namespace mlir;
using namespace shardc::xf;

namespace {

/// Parameters with these roles get weight decay (Megatron-LM: not biases and
/// not norm scales).
bool decays(ParamRole role) { return role == ParamRole::weight || role == ParamRole::embedding; }

class AdamW : public shardc::impl::XfAdamWBase<AdamW> {
public:
  using XfAdamWBase::XfAdamWBase;

  void runOnOperation() override {
    if (failed(apply()))
      signalPassFailure();
  }

private:
  LogicalResult apply();
  LogicalResult checkOptions(func::FuncOp f);
};

LogicalResult AdamW::checkOptions(func::FuncOp f) {
  auto bad = [&](StringRef what) {
    return f.emitError() << "-xf-adamw: " << what;
  };
  if (!(lr >= 0.0) || !(minLr >= 0.0) || minLr > lr)
    return bad("need 0 <= min-lr <= lr");
  if (warmup < 0 || decaySteps < 0)
    return bad("warmup and decay-steps must not be negative");
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return bad("beta1 and beta2 must be in [0, 1)");
  if (!(epsilon > 0.0))
    return bad("epsilon must be positive");
  if (!(weightDecay >= 0.0))
    return bad("weight-decay must not be negative");
  if (!(clipGrad >= 0.0))
    return bad("clip-grad must not be negative (0 disables clipping)");
  if (lossScaleWindow < 1)
    return bad("loss-scale-window must be at least 1");
  if (!(initialLossScale >= 1.0) || !std::isfinite(static_cast<double>(initialLossScale)))
    return bad("initial-loss-scale must be a finite number >= 1");
  return success();
}

LogicalResult AdamW::apply() {
  func::FuncOp f = getOperation();
  FailureOr<bool> target = shardc::isTargetFunction(f, function, "-xf-adamw", "run -xf-autodiff first");
  if (failed(target))
    return failure();
  if (!*target)
    return success();
  if (failed(checkOptions(f)))
    return failure();
  MLIRContext *ctx = &getContext();
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The gradient results and the parameter argument each belongs to.
  std::map<std::string, unsigned> paramArg;
  for (const ParamArg &p : getParams(f))
    paramArg[p.attr.getName().str()] = p.index;
  struct Slot {
    Value param, grad;
    ParamAttr attr;
  };
  SmallVector<Slot> slots;
  Value loss;
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    if (auto g = f.getResultAttrOfType<StringAttr>(i, XfDialect::kGradAttrName)) {
      auto it = paramArg.find(g.str());
      if (it == paramArg.end())
        return f.emitError() << "-xf-adamw: result #" << i << " is the gradient of '" << g.getValue()
                             << "', which is not a parameter of @" << function;
      Value p = f.getArgument(it->second);
      if (p.getType() != ret.getOperand(i).getType())
        return f.emitError() << "-xf-adamw: gradient of '" << g.getValue() << "' has type "
                             << ret.getOperand(i).getType() << ", the parameter " << p.getType();
      slots.push_back({p, ret.getOperand(i),
                       f.getArgAttrOfType<ParamAttr>(it->second, XfDialect::kParamAttrName)});
    } else if (auto r = f.getResultAttrOfType<StringAttr>(i, XfDialect::kReportAttrName);
               r && r.getValue() == "loss") {
      loss = ret.getOperand(i);
    }
  }
  if (!loss || slots.empty())
    return f.emitError() << "-xf-adamw: @" << function
                         << " must return a loss (xf.report = \"loss\") and gradients "
                            "(xf.grad), as -xf-autodiff builds them";
  Value lossScaleArg;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto s = f.getArgAttrOfType<StringAttr>(i, XfDialect::kStateAttrName);
        s && s.getValue() == "loss_scale")
      lossScaleArg = f.getArgument(i);

  // New state arguments.
  auto stateAttr = [&](StringRef s) {
    return DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, XfDialect::kStateAttrName),
                                                    StringAttr::get(ctx, s))});
  };
  // Appended in batches (one insertArguments call each: inserting one at a
  // time rebuilds the function type and the argument attributes every time,
  // quadratic in a large step's arguments); `addArgs` returns them in order.
  SmallVector<Type> newTypes;
  SmallVector<DictionaryAttr> newAttrs;
  auto addArg = [&](Type t, StringRef state) {
    newTypes.push_back(t);
    newAttrs.push_back(stateAttr(state));
  };
  auto addArgs = [&]() {
    unsigned first = f.getNumArguments();
    SmallVector<unsigned> at(newTypes.size(), first);
    SmallVector<Location> locs(newTypes.size(), f.getLoc());
    if (failed(f.insertArguments(at, newTypes, newAttrs, locs)))
      return SmallVector<Value>();
    SmallVector<Value> args;
    for (unsigned i = 0; i < newTypes.size(); ++i)
      args.push_back(f.getArgument(first + i));
    newTypes.clear();
    newAttrs.clear();
    return args;
  };
  for (const Slot &s : slots)
    addArg(s.param.getType(), ("adam_m:" + s.attr.getName()).str());
  for (const Slot &s : slots)
    addArg(s.param.getType(), ("adam_v:" + s.attr.getName()).str());
  auto i32Scalar = RankedTensorType::get({}, IntegerType::get(ctx, 32));
  addArg(i32Scalar, "step");
  if (lossScaleArg)
    addArg(i32Scalar, "good_steps");
  SmallVector<Value> added = addArgs();
  if (added.size() != 2 * slots.size() + 1 + (lossScaleArg ? 1 : 0))
    return f.emitError() << "-xf-adamw: could not add the optimizer state arguments";
  SmallVector<Value> ms(added.begin(), added.begin() + slots.size());
  SmallVector<Value> vs(added.begin() + slots.size(), added.begin() + 2 * slots.size());
  Value step = added[2 * slots.size()];
  Value good = lossScaleArg ? added.back() : Value();

  // Low-precision copies: a parameter the step reads only through casts to
  // bf16 (or f16), as -xf-mixed-precision makes them, is read from a copy the
  // previous step's optimizer wrote (state "param_bf16:<name>") instead; its
  // fp32 master is then read only by the update. The copy equals the cast it
  // replaces bit for bit (the same rounding of the same master values).
  SmallVector<Value> copies(slots.size());
  if (lowPrecisionCopies) {
    SmallVector<std::pair<size_t, SmallVector<CastOp>>> copied; // slot, its casts
    for (auto [k, s] : llvm::enumerate(slots)) {
      // Only where every read is such a cast, so that the master is then read
      // by its update alone (a tied embedding's f32 lookup keeps it as is).
      SmallVector<CastOp> casts;
      bool onlyCasts = true;
      for (Operation *user : s.param.getUsers()) {
        auto c = dyn_cast<CastOp>(user);
        Type to = c ? cast<RankedTensorType>(c.getType()).getElementType() : Type();
        if (c && (to.isBF16() || to.isF16()))
          casts.push_back(c);
        else
          onlyCasts = false;
      }
      if (casts.empty() || !onlyCasts || llvm::any_of(casts, [&](CastOp c) {
            return c.getType() != casts.front().getType();
          }))
        continue;
      Type t = casts.front().getType();
      addArg(t, shardc::abi::lowPrecisionCopyState(
                    cast<RankedTensorType>(t).getElementType().isF16(), s.attr.getName().str()));
      copied.push_back({k, std::move(casts)});
    }
    SmallVector<Value> copyArgs = addArgs();
    if (copyArgs.size() != copied.size())
      return f.emitError() << "-xf-adamw: could not add the low-precision copy arguments";
    for (auto [arg, entry] : llvm::zip(copyArgs, copied)) {
      copies[entry.first] = arg;
      for (CastOp c : entry.second) {
        c.getResult().replaceAllUsesWith(arg);
        c.erase();
      }
    }
  }

  OpBuilder b(ret);
  Location loc = f.getLoc();
  Value sumsq;
  for (const Slot &s : slots) {
    Value sq = SumSquaresOp::create(b, s.grad.getLoc(), s.grad);
    sumsq = sumsq ? AddOp::create(b, loc, sumsq, sq).getResult() : sq;
  }
  auto clip = ClipGradNormOp::create(b, loc, sumsq, lossScaleArg, b.getF64FloatAttr(clipGrad));
  Value skip = lossScaleArg ? clip.getFoundInf() : Value();
  Value lrValue = LrScheduleOp::create(b, loc, step, b.getF64FloatAttr(lr), b.getF64FloatAttr(minLr),
                                       b.getI64IntegerAttr(warmup),
                                       b.getI64IntegerAttr(decaySteps));
  SmallVector<Value> newP, newM, newV;
  for (auto [s, m, v] : llvm::zip(slots, ms, vs)) {
    double wd = decays(s.attr.getRole()) ? static_cast<double>(weightDecay) : 0.0;
    auto upd = AdamWOp::create(b, s.grad.getLoc(), s.param, s.grad, m, v, lrValue,
                               clip.getGradScale(), step, skip, b.getF64FloatAttr(beta1),
                               b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon),
                               b.getF64FloatAttr(wd));
    newP.push_back(upd.getNewParam());
    newM.push_back(upd.getNewM());
    newV.push_back(upd.getNewV());
  }
  Value nextStep = CountStepOp::create(b, loc, step, skip);

  // Results: reports, then every state argument's next value.
  SmallVector<Value> results{loss, clip.getNorm(), lrValue};
  SmallVector<std::pair<StringRef, std::string>> attrs{
      {XfDialect::kReportAttrName, "loss"},
      {XfDialect::kReportAttrName, "grad_norm"},
      {XfDialect::kReportAttrName, "lr"}};
  if (lossScaleArg) {
    results.append({lossScaleArg, clip.getFoundInf()});
    attrs.push_back({XfDialect::kReportAttrName, "loss_scale"});
    attrs.push_back({XfDialect::kReportAttrName, "skipped"});
  }
  for (auto [s, p] : llvm::zip(slots, newP)) {
    results.push_back(p);
    attrs.push_back({XfDialect::kStateAttrName, ("param:" + s.attr.getName()).str()});
  }
  for (auto [s, m] : llvm::zip(slots, newM)) {
    results.push_back(m);
    attrs.push_back({XfDialect::kStateAttrName, ("adam_m:" + s.attr.getName()).str()});
  }
  for (auto [s, v] : llvm::zip(slots, newV)) {
    results.push_back(v);
    attrs.push_back({XfDialect::kStateAttrName, ("adam_v:" + s.attr.getName()).str()});
  }
  for (auto [s, copy, p] : llvm::zip(slots, copies, newP)) {
    if (!copy)
      continue;
    results.push_back(CastOp::create(b, s.param.getLoc(), copy.getType(), p));
    attrs.push_back({XfDialect::kStateAttrName,
                     shardc::abi::lowPrecisionCopyState(
                         cast<RankedTensorType>(copy.getType()).getElementType().isF16(),
                         s.attr.getName().str())});
  }
  results.push_back(nextStep);
  attrs.push_back({XfDialect::kStateAttrName, "step"});
  if (lossScaleArg) {
    auto upd = LossScaleUpdateOp::create(b, loc, lossScaleArg, good, clip.getFoundInf(),
                                         b.getI64IntegerAttr(lossScaleWindow),
                                         b.getF64FloatAttr(2.0), b.getF64FloatAttr(1.0));
    results.append({upd.getNewScale(), upd.getNewGood()});
    attrs.push_back({XfDialect::kStateAttrName, "loss_scale"});
    attrs.push_back({XfDialect::kStateAttrName, "good_steps"});
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value r : results)
    resultTypes.push_back(r.getType());
  f.setFunctionType(b.getFunctionType(f.getArgumentTypes(), resultTypes));
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto &[k, v] : attrs)
    resultAttrs.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, k), StringAttr::get(ctx, v))}));
  f.setAllResultAttrs(resultAttrs);
  // The settings travel with the step (the runtime logs them; fp16 starts
  // from the initial loss scale).
  Builder ab(ctx);
  NamedAttrList optimizer;
  optimizer.append("lr", ab.getF64FloatAttr(lr));
  optimizer.append("min_lr", ab.getF64FloatAttr(minLr));
  optimizer.append("warmup", ab.getI64IntegerAttr(warmup));
  optimizer.append("decay_steps", ab.getI64IntegerAttr(decaySteps));
  optimizer.append("weight_decay", ab.getF64FloatAttr(weightDecay));
  optimizer.append("beta1", ab.getF64FloatAttr(beta1));
  optimizer.append("beta2", ab.getF64FloatAttr(beta2));
  optimizer.append("adam_eps", ab.getF64FloatAttr(epsilon));
  optimizer.append("clip_grad", ab.getF64FloatAttr(clipGrad));
  optimizer.append("loss_scale", ab.getF64FloatAttr(initialLossScale));
  optimizer.append("loss_scale_window", ab.getI64IntegerAttr(lossScaleWindow));
  f->setAttr(XfDialect::kOptimizerAttrName, optimizer.getDictionary(ctx));
  return success();
}

} // namespace
