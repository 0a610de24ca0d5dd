//===- LowerToRt.cpp - planned xf + shard step to rt ----------------------===//
//
// Arguments become views at their planned places before the conversion (the
// step takes no arguments: its state lives in the arenas from one step to
// the next); the conversion then rewrites every xf op into an rt.kernel and
// every shard collective into an rt.collective whose results are views at
// the places the plan gave them, and the return into the copies of state
// results that the plan could not write in place.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/lowering/AttrJson.h"
#include "passes/memory/MemoryPlan.h"

#include "compiler/sharding/Sharding.h"
#include "dialects/rt/RtDialect.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/Params.h"
#include "dialects/xf/XfOps.h"

#include "compiler/abi/CallEncoding.h"
#include "runtime/abi/StateNames.h"

#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/JSON.h"

#define DEBUG_TYPE "xf-lower-to-rt"

namespace shardc {
#define GEN_PASS_DEF_XFLOWERTORT
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using namespace shardc::memory;
namespace json = llvm::json;

namespace {

MemRefType bufferType(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

json::Array axesJson(llvm::ArrayRef<sharding::Axis> axes) {
  json::Array a;
  for (sharding::Axis x : axes)
    a.push_back(static_cast<int64_t>(x));
  return a;
}

/// The places -xf-plan-memory gave a value.
std::optional<std::pair<int32_t, int64_t>> placeOf(Value v) {
  // A function argument already converted: the view of its buffer.
  if (auto cast = v.getDefiningOp<UnrealizedConversionCastOp>(); cast && cast->getNumOperands() == 1)
    if (auto view = cast->getOperand(0).getDefiningOp<rt_dialect::ViewOp>())
      return std::make_pair(static_cast<int32_t>(view.getArena()),
                            static_cast<int64_t>(view.getOffset()));
  DenseI64ArrayAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    attr = func.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(), kBufferAttr);
  } else if (auto list = v.getDefiningOp()->getAttrOfType<ArrayAttr>(kBuffersAttr)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (i < list.size())
      attr = dyn_cast<DenseI64ArrayAttr>(list[i]);
  }
  if (!attr || attr.size() != 2)
    return std::nullopt;
  return std::make_pair(static_cast<int32_t>(attr[0]), attr[1]);
}

/// Copies an xf op's `xf.stage` onto the rt op it became.
void copyStage(Operation *from, Operation *to) {
  if (auto stage = from->getAttrOfType<IntegerAttr>(xf::XfDialect::kStageAttrName))
    to->setAttr(kRtStageAttr, stage);
}

/// Lowers one xf op to an rt.kernel, or one shard collective to an
/// rt.collective, whose outputs are views at the op's planned places.
struct OpToRt : ConversionPattern {
  OpToRt(const TypeConverter &converter, MLIRContext *ctx, const sharding::Mesh *mesh)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx), mesh(mesh) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    Dialect *dialect = op->getDialect();
    bool isXf = dialect && isa<xf::XfDialect>(dialect);
    const abi::OpSpec *known = abi::findOp(op->getName().getStringRef());
    bool isCollective = known && known->collective;
    if (!isXf && !isCollective)
      return failure();
    // The op's call by the op table (compiler/abi/CallEncoding.h, shared with
    // the reference executor): an op the runtime has no kernel for, or an
    // attribute of the wrong kind, is an error here, not at run time.
    FailureOr<const abi::OpSpec *> spec = abi::specOf(op, "xf-lower-to-rt");
    if (failed(spec))
      return failure();
    FailureOr<DictionaryAttr> encoded = abi::encodeCallAttrs(op, **spec, "xf-lower-to-rt");
    if (failed(encoded))
      return failure();
    NamedAttrList attrs(*encoded);
    std::string name = (*spec)->name;
    FailureOr<abi::CallAxes> axes = abi::CallAxes();
    if (!isCollective && failed(axes = abi::encodeCallAxes(op, mesh, "xf-lower-to-rt")))
      return failure();
    for (Value r : op->getResults())
      if (!placeOf(r))
        return rewriter.notifyMatchFailure(op, "no planned buffer");
    // The results are views at their planned places.
    Location loc = op->getLoc();
    SmallVector<Value> outs;
    for (Value r : op->getResults()) {
      auto place = placeOf(r);
      outs.push_back(rt_dialect::ViewOp::create(rewriter, loc, bufferType(r.getType()),
                                                place->first, place->second));
    }
    // An op that is a view when run in place (the op table's viewInPlace:
    // a reshape) and that the planner placed over its operand is no call.
    if ((*spec)->viewInPlace && op->getNumOperands() == 1 &&
        placeOf(op->getResult(0)) == placeOf(op->getOperand(0))) {
      rewriter.replaceOp(op, outs);
      return success();
    }
    if (isa<xf::OffloadOp, xf::ReloadOp>(op)) {
      // Activation offload: an asynchronous copy between the workspace and
      // the host arena (-rt-schedule-collectives moves its start and wait
      // apart as far as the plan's buffers allow).
      auto start = rt_dialect::CopyStartOp::create(
          rewriter, loc, rt_dialect::EventType::get(op->getContext()), operands[0], outs[0]);
      copyStage(op, start);
      rt_dialect::WaitOp::create(rewriter, loc, start.getEvent());
      rewriter.replaceOp(op, outs);
      return success();
    }
    // The kernel's planned scratch, or the collective's staging
    // (-xf-plan-memory's rt.scratch).
    Value scratch;
    if (auto s = op->getAttrOfType<DenseI64ArrayAttr>(kScratchAttr)) {
      if (s.size() != 2 || s[1] <= 0)
        return op->emitError("xf-lower-to-rt: rt.scratch must be array<i64: offset, bytes>");
      scratch = rt_dialect::ViewOp::create(
          rewriter, loc, MemRefType::get({s[1]}, rewriter.getIntegerType(8)), Workspace, s[0]);
    }
    if (isCollective) {
      auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
      auto c = rt_dialect::CollectiveOp::create(rewriter, loc, name, axes, operands[0], outs[0],
                                                scratch, attrs.getDictionary(op->getContext()));
      copyStage(op, c);
      rewriter.replaceOp(op, outs);
      return success();
    }
    ArrayAttr operandAxes = axes->operandAxes, resultAxes = axes->resultAxes;
    if (!axes->tokenAxes.empty())
      attrs.append("token_axes", rewriter.getDenseI16ArrayAttr(axes->tokenAxes));
    auto k = rt_dialect::KernelOp::create(rewriter, loc, name, operands, outs, scratch,
                                          attrs.getDictionary(op->getContext()), operandAxes,
                                          resultAxes);
    copyStage(op, k);
    rewriter.replaceOp(op, outs);
    return success();
  }

  const sharding::Mesh *mesh;
};

/// The return becomes the copies of state results into their arguments'
/// buffers where the plan could not write them in place.
struct ReturnToRt : OpConversionPattern<func::ReturnOp> {
  ReturnToRt(const TypeConverter &converter, MLIRContext *ctx,
             const llvm::DenseMap<unsigned, Value> &copies,
             const llvm::DenseMap<unsigned, int64_t> &stages)
      : OpConversionPattern(converter, ctx), copies(copies), stages(stages) {}

  LogicalResult matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    for (auto [i, v] : llvm::enumerate(adaptor.getOperands()))
      if (Value target = copies.lookup(i)) {
        auto copy = rt_dialect::CopyOp::create(rewriter, op.getLoc(), v, target);
        // On the stage that holds the state (a pipelined step).
        if (auto it = stages.find(i); it != stages.end() && it->second >= 0)
          copy->setAttr(kRtStageAttr, rewriter.getI64IntegerAttr(it->second));
      }
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }

  const llvm::DenseMap<unsigned, Value> &copies;
  /// Per copied result, the pipeline stage holding it.
  const llvm::DenseMap<unsigned, int64_t> &stages;
};

struct XfLowerToRtPass : shardc::impl::XfLowerToRtBase<XfLowerToRtPass> {
  using XfLowerToRtBase::XfLowerToRtBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError() << "xf-lower-to-rt: no function @" << function;
      return signalPassFailure();
    }
    if (failed(lower(module, func)))
      signalPassFailure();
  }

  LogicalResult lower(ModuleOp module, func::FuncOp func) {
    auto arenaBytes = func->getAttrOfType<DenseI64ArrayAttr>(kArenaBytesAttr);
    if (!arenaBytes || arenaBytes.size() != NumArenas)
      return func.emitError("xf-lower-to-rt: the function has no memory plan (run "
                            "-xf-plan-memory first)");
    sharding::Mesh mesh;
    mesh.names.clear();
    mesh.sizes.clear();
    if (auto grid = func->getAttrOfType<FlatSymbolRefAttr>(sharding::kGridAttr)) {
      FailureOr<sharding::Mesh> m = sharding::Mesh::fromModule(module, grid.getValue());
      if (failed(m))
        return func.emitError() << "xf-lower-to-rt: cannot resolve the grid @" << grid.getValue();
      mesh = *m;
    }

    json::Object program;
    program["version"] = abi::kProgramVersion;
    program["op_table"] = abi::opTableFingerprint();
    program["source"] = source;
    program["strategy"] = strategy;
    // The model's shape (layers, width, heads, vocabulary), for MFU in logs.
    if (auto model = module->getAttrOfType<DictionaryAttr>(xf::XfDialect::kModelAttrName)) {
      json::Value m = attrJson(model);
      // The loss's classes (a padded vocabulary whose padding is no class):
      // `shardc export` drops the padding rows only then.
      std::optional<int64_t> classes;
      func.walk([&](Operation *op) {
        if (isa<xf::CrossEntropyOp, xf::LinearCrossEntropyOp, xf::CrossEntropyGradOp,
                xf::LinearCrossEntropyGradOp>(op))
          if (auto c = op->getAttrOfType<IntegerAttr>("classes"))
            classes = c.getInt();
      });
      if (classes && m.getAsObject())
        (*m.getAsObject())["classes"] = *classes;
      program["model"] = std::move(m);
    }
    json::Array names, sizes;
    for (auto [n, s] : llvm::zip(mesh.names, mesh.sizes)) {
      names.push_back(n);
      sizes.push_back(s);
    }
    program["mesh"] = json::Object{{"names", std::move(names)}, {"sizes", std::move(sizes)}};
    json::Array arenas;
    int64_t total = 0;
    for (int a = 0; a < NumArenas; ++a) {
      arenas.push_back(json::Object{{"name", kArenaNames[a]}, {"bytes", arenaBytes[a]}});
      total += onDevice(a) ? arenaBytes[a] : 0;
    }
    program["arenas"] = std::move(arenas);
    program["planned_peak_bytes"] = total;
    // The workspace's activations alone (the rest is the kernels' scratch and the
    // collectives' staging).
    if (auto a = func->getAttrOfType<IntegerAttr>(kActivationBytesAttr))
      program["activation_bytes"] = a.getInt();
    if (auto u = func->getAttrOfType<IntegerAttr>(kUnstagedBytesAttr))
      program["unstaged_bytes"] = u.getInt();
    if (auto st = func->getAttrOfType<IntegerAttr>(kStoredActivationBytesAttr))
      program["stored_activation_bytes"] = st.getInt();

    // The boundary: state and inputs (arguments), reports (results).
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // The compute precision: the low-precision type -xf-mixed-precision
    // stores GEMM operands and activations in, if any.
    std::string precision = "fp32";
    func.walk([&](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto shaped = dyn_cast<ShapedType>(t)) {
          Type e = shaped.getElementType();
          if (e.isBF16() || e.isF16())
            precision = e.isBF16() ? "bf16" : "fp16";
        }
    });
    program["precision"] = precision;
    int64_t microBatches = 1;
    json::Array tensors;
    // A parameter's initializer, by name: a low-precision copy is initialized
    // as its master is, rounded to its own dtype (the cast the update makes).
    llvm::StringMap<xf::ParamAttr> paramInit;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto p = func.getArgAttrOfType<xf::ParamAttr>(i, xf::XfDialect::kParamAttrName))
        paramInit[p.getName()] = p;
    auto boundary = [&](Value v, DictionaryAttr attrs, std::string kind, std::string name,
                        Location loc) -> LogicalResult {
      auto type = cast<RankedTensorType>(v.getType());
      auto place = placeOf(v);
      std::string dtype = runtimeDTypeName(type.getElementType());
      if (!place || dtype.empty())
        return emitError(loc) << "xf-lower-to-rt: " << kind << " '" << name
                              << "' has no planned buffer or an unsupported type " << type;
      sharding::TensorSharding s = sharding::TensorSharding::replicated(type.getRank());
      if (auto attr = attrs ? attrs.getAs<shard::GridAxesArrayAttr>(sharding::kShardingAttr)
                            : shard::GridAxesArrayAttr())
        s = sharding::TensorSharding::fromSplitAttr(attr, type.getRank());
      json::Array shape, global, dims;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        for (sharding::Axis a : s.dims[d])
          if (a < 0 || a >= mesh.rank())
            return emitError(loc) << "xf-lower-to-rt: " << kind << " '" << name
                                  << "' is split over an axis outside the mesh";
        shape.push_back(type.getDimSize(d));
        global.push_back(type.getDimSize(d) * mesh.size(s.dims[d]));
        dims.push_back(axesJson(s.dims[d]));
      }
      json::Object t{{"kind", kind},        {"name", name},           {"dtype", dtype},
                     {"shape", std::move(shape)}, {"global_shape", std::move(global)},
                     {"sharding", std::move(dims)}, {"arena", place->first},
                     {"offset", place->second}};
      if (int64_t stage = xf::stageOf(v); stage >= 0)
        t["stage"] = stage;
      if (attrs)
        if (auto mb = attrs.getAs<IntegerAttr>(xf::XfDialect::kMicroBatchAttrName)) {
          t["micro_batch"] = mb.getInt();
          microBatches = std::max<int64_t>(microBatches, mb.getInt() + 1);
        }
      xf::ParamAttr init = attrs ? attrs.getAs<xf::ParamAttr>(xf::XfDialect::kParamAttrName)
                                 : xf::ParamAttr();
      if (StringRef master = abi::lowPrecisionCopyOf(name); !init && !master.empty())
        init = paramInit.lookup(master);
      if (init)
        if (auto p = init) {
          json::Object param{{"name", p.getName().str()},
                             {"role", xf::stringifyParamRole(p.getRole()).str()},
                             {"init", xf::stringifyInitKind(p.getInit()).str()}};
          param["std"] = p.getStdValue();
          t["param"] = std::move(param);
        }
      tensors.push_back(std::move(t));
      return success();
    };
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      DictionaryAttr attrs = func.getArgAttrDict(i);
      Location loc = func.getLoc();
      if (auto s = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName)) {
        if (failed(boundary(arg, attrs, "state", s.str(), loc)))
          return failure();
      } else if (auto in = func.getArgAttrOfType<StringAttr>(i, xf::XfDialect::kInputAttrName)) {
        if (failed(boundary(arg, attrs, "input", in.str(), loc)))
          return failure();
      } else {
        return func.emitError() << "xf-lower-to-rt: " << abi::argumentName(func, i)
                                << " is neither state (xf.state) nor a data input (xf.input); "
                                   "compiled steps are training steps (-xf-adamw)";
      }
    }
    // State results go back to their argument's buffer.
    llvm::StringMap<BlockArgument> stateArgs;
    for (BlockArgument arg : body.getArguments())
      if (auto s = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     xf::XfDialect::kStateAttrName))
        stateArgs[s.getValue()] = arg;
    llvm::DenseMap<unsigned, unsigned> copyFrom; // result -> argument
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      DictionaryAttr attrs = func.getResultAttrDict(i);
      if (auto s = func.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kStateAttrName)) {
        BlockArgument arg = stateArgs.lookup(s.getValue());
        if (!arg)
          return ret.emitError() << "xf-lower-to-rt: " << abi::resultName(func, i)
                                 << " has no argument with the same xf.state";
        if (placeOf(v) != placeOf(arg))
          copyFrom[i] = arg.getArgNumber();
        continue;
      }
      if (auto r = func.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kReportAttrName)) {
        if (failed(boundary(v, attrs, "report", r.str(), ret.getLoc())))
          return failure();
        continue;
      }
      return ret.emitError() << "xf-lower-to-rt: " << abi::resultName(func, i)
                             << " is neither state nor a report; compiled steps are training "
                                "steps (-xf-adamw)";
    }
    program["micro_batches"] = microBatches;
    // A pipelined step: its axis, stages and static schedule (-xf-pipeline).
    if (auto pipeline = func->getAttrOfType<DictionaryAttr>(xf::XfDialect::kPipelineAttrName)) {
      json::Value info = attrJson(pipeline);
      for (StringRef key : {kStageWorkspaceAttr, kStageBytesAttr})
        if (auto perStage = func->getAttrOfType<DenseI64ArrayAttr>(key))
          info.getAsObject()->try_emplace(key.drop_front(3), attrJson(perStage));
      program["pipeline"] = std::move(info);
    }
    // The optimizer settings the step was synthesized with (-xf-adamw).
    if (auto opt = func->getAttrOfType<DictionaryAttr>(xf::XfDialect::kOptimizerAttrName)) {
      json::Object train;
      for (NamedAttribute a : opt) {
        if (auto f = dyn_cast<FloatAttr>(a.getValue()))
          train[a.getName().getValue()] = f.getValueAsDouble();
        else if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
          train[a.getName().getValue()] = i.getInt();
      }
      train["precision"] = precision;
      train["micro_batches"] = microBatches;
      program["train"] = std::move(train);
    }

    // The eval function's loss (it reads the step's arguments in place).
    func::FuncOp eval;
    if (!evalFunction.empty()) {
      eval = module.lookupSymbol<func::FuncOp>(evalFunction);
      if (!eval)
        return module.emitError() << "xf-lower-to-rt: no function @" << evalFunction;
      auto evalRet = cast<func::ReturnOp>(eval.getBody().front().getTerminator());
      if (evalRet.getNumOperands() != 1)
        return eval.emitError("xf-lower-to-rt: the eval function must return only its loss "
                              "(-xf-extract-eval)");
      if (failed(boundary(evalRet.getOperand(0), eval.getResultAttrDict(0), "eval_report",
                          "loss", evalRet.getLoc())))
        return failure();
    }
    program["tensors"] = std::move(tensors);

    if (failed(convert(func, mesh, copyFrom, "shardc_step")))
      return failure();
    if (eval && failed(convert(eval, mesh, {}, "shardc_eval")))
      return failure();
    // The module is now the program: what was not lowered goes.
    for (Operation &op : llvm::make_early_inc_range(module.getBody()->getOperations()))
      if (auto other = dyn_cast<func::FuncOp>(op); other && other != func && other != eval)
        other.erase();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << json::Value(std::move(program));
    module->setAttr("rt.program", StringAttr::get(module.getContext(), text));
    return success();
  }

  /// Rewrites `func` to rt as `name`: arguments become views, ops rt calls,
  /// results in `copyFrom` (result -> argument) copies into the argument.
  LogicalResult convert(func::FuncOp func, const sharding::Mesh &mesh,
                        const llvm::DenseMap<unsigned, unsigned> &copyFrom, StringRef name) {
    Block &body = func.getBody().front();
    // Arguments become views; the conversion sees tensors behind casts.
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&body);
    SmallVector<Value> argViews;
    for (BlockArgument arg : body.getArguments()) {
      auto place = *placeOf(arg);
      Value view = rt_dialect::ViewOp::create(b, func.getLoc(), bufferType(arg.getType()),
                                              place.first, place.second);
      argViews.push_back(view);
      auto cast = UnrealizedConversionCastOp::create(b, func.getLoc(), arg.getType(), view);
      arg.replaceAllUsesWith(cast.getResult(0));
    }
    llvm::DenseMap<unsigned, Value> copies;
    llvm::DenseMap<unsigned, int64_t> copyStages;
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (auto [res, arg] : copyFrom) {
      copies[res] = argViews[arg];
      copyStages[res] = xf::stageOf(ret.getOperand(res));
    }
    body.eraseArguments(0, body.getNumArguments());
    func.setType(FunctionType::get(func.getContext(), {}, {}));
    func.removeArgAttrsAttr();
    func.removeResAttrsAttr();

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([](RankedTensorType t) -> Type { return bufferType(t); });
    ConversionTarget target(*func.getContext());
    target.addLegalDialect<rt_dialect::RtDialect>();
    target.addIllegalDialect<xf::XfDialect>();
    target.addIllegalOp<shard::AllGatherOp, shard::AllReduceOp, shard::ReduceScatterOp,
                        shard::AllSliceOp, shard::AllToAllOp>();
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [](func::ReturnOp op) { return op.getNumOperands() == 0; });
    target.addLegalOp<UnrealizedConversionCastOp, func::FuncOp>();
    RewritePatternSet patterns(func.getContext());
    patterns.add<OpToRt>(converter, func.getContext(), &mesh);
    patterns.add<ReturnToRt>(converter, func.getContext(), copies, copyStages);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      return failure();
    SmallVector<UnrealizedConversionCastOp> casts;
    func.walk([&](UnrealizedConversionCastOp c) { casts.push_back(c); });
    reconcileUnrealizedCasts(casts);
    for (Operation &op : body)
      if (isa<UnrealizedConversionCastOp>(op))
        return op.emitError("xf-lower-to-rt: a tensor value is left unconverted");

    for (StringRef attr : {sharding::kGridAttr.data(), kArenaBytesAttr.data(),
                           kPlannedBytesAttr.data(), xf::XfDialect::kOptimizerAttrName.data(),
                           xf::XfDialect::kPipelineAttrName.data(), kStageWorkspaceAttr.data(),
                           kStageBytesAttr.data(), kActivationBytesAttr.data(),
                           kUnstagedBytesAttr.data(), kStoredActivationBytesAttr.data()})
      func->removeAttr(attr);
    func.setSymName(name);
    return success();
  }
};

} // namespace
