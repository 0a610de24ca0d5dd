//===- RtToLLVM.cpp - rt to calls of the runtime's C ABI ------------------===//
//
// The step is straight-line code, so the lowering is one walk: views become
// byte offsets from their arena's base (fetched once at entry), kernels and
// collectives calls with their index in the call table, and the table itself
// (with the boundary, mesh and arenas -xf-lower-to-rt recorded) the constant
// descriptor string the runtime parses at start-up.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/lowering/AttrJson.h"
#include "passes/memory/MemoryPlan.h"

#include "dialects/rt/RtDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"

#include <map>

#define DEBUG_TYPE "rt-to-llvm"

namespace shardc {
#define GEN_PASS_DEF_RTTOLLVM
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
namespace json = llvm::json;

namespace {

json::Object bufferJson(Value v) {
  auto t = cast<MemRefType>(v.getType());
  return json::Object{{"dtype", memory::runtimeDTypeName(t.getElementType())},
                      {"shape", json::Array(t.getShape())}};
}

/// The pipeline stage an rt op runs on (its `rt.stage`, set by lowering from
/// the xf op's `xf.stage`), -1 for every rank.
int64_t stageOf(Operation *op) {
  auto stage = op->getAttrOfType<IntegerAttr>(memory::kRtStageAttr);
  return stage ? stage.getInt() : -1;
}

json::Array buffersJson(ValueRange values) {
  json::Array a;
  for (Value v : values)
    a.push_back(bufferJson(v));
  return a;
}

struct RtToLLVMPass : shardc::impl::RtToLLVMBase<RtToLLVMPass> {
  /// Emits llvm.func @`name`(ctx) for the rt function `rtFunc` (an empty
  /// body when null), appending its calls and communicators to the tables.
  LogicalResult emitFunction(OpBuilder &b, func::FuncOp rtFunc, StringRef name,
                             const std::vector<int64_t> &arenaBytes, json::Array &calls,
                             json::Array &comms,
                             std::map<std::vector<int16_t>, int64_t> &commIndex) {
    MLIRContext *ctx = b.getContext();
    ModuleOp module = getOperation();
    Location loc = rtFunc ? rtFunc.getLoc() : module.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = b.getI32Type(), i64 = b.getI64Type(), i8 = b.getI8Type();
    auto voidTy = LLVM::LLVMVoidType::get(ctx);
    auto lookup = [&](StringRef n) { return module.lookupSymbol<LLVM::LLVMFuncOp>(n); };
    auto arenaFn = lookup("shardc_rt_arena"), kernelFn = lookup("shardc_rt_kernel");
    auto collectiveFn = lookup("shardc_rt_collective"), copyFn = lookup("shardc_rt_copy");
    auto startFn = lookup("shardc_rt_collective_start"), waitFn = lookup("shardc_rt_wait");
    auto copyStartFn = lookup("shardc_rt_copy_start"), copyWaitFn = lookup("shardc_rt_copy_wait");
    auto declare = [&](StringRef n, Type result, ArrayRef<Type> args) {
      return LLVM::LLVMFuncOp::create(b, loc, n, LLVM::LLVMFunctionType::get(result, args));
    };
    auto fn = declare(name, voidTy, {ptr});
    Block *entry = fn.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    Value ctxArg = entry->getArgument(0);
    auto constI32 = [&](int64_t v) {
      return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v)).getResult();
    };
    auto constI64 = [&](int64_t v) {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v)).getResult();
    };

    // One buffer-pointer array, big enough for the widest kernel.
    int64_t widest = 1;
    if (rtFunc)
      rtFunc.walk([&](rt_dialect::KernelOp k) {
        widest = std::max<int64_t>(widest,
                                   k.getIns().size() + k.getOuts().size() + (k.getScratch() ? 1 : 0));
      });
    Value bufferArray = LLVM::AllocaOp::create(b, loc, ptr, ptr, constI64(widest), 8);
    std::vector<Value> bases(arenaBytes.size());
    for (size_t a = 0; a < arenaBytes.size(); ++a)
      bases[a] = LLVM::CallOp::create(b, loc, arenaFn, ValueRange{ctxArg, constI32(a)}).getResult();

    if (!rtFunc) {
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      return success();
    }
    IRMapping map;
    bool failedWalk = false;
    for (Operation &op : rtFunc.getBody().front()) {
      if (auto view = dyn_cast<rt_dialect::ViewOp>(op)) {
        int32_t a = view.getArena();
        int64_t end = view.getOffset() + memory::byteSize(view.getType());
        if (a >= static_cast<int32_t>(bases.size()) || end > arenaBytes[a]) {
          view.emitError() << "rt-to-llvm: the view ends at byte " << end
                           << ", outside arena " << a;
          failedWalk = true;
          break;
        }
        // An i64 index: constant GEP indices are i32, arenas may pass 2 GiB.
        Value p = LLVM::GEPOp::create(b, loc, ptr, i8, bases[a],
                                      ArrayRef<LLVM::GEPArg>{constI64(view.getOffset())});
        map.map(view.getResult(), p);
      } else if (auto kernel = dyn_cast<rt_dialect::KernelOp>(op)) {
        json::Object call{{"op", kernel.getCallee().str()},
                          {"operands", buffersJson(kernel.getIns())},
                          {"results", buffersJson(kernel.getOuts())},
                          {"attrs", attrJson(kernel.getAttrs())}};
        if (auto axes = kernel.getOperandAxes())
          call["operand_axes"] = attrJson(*axes);
        if (auto axes = kernel.getResultAxes())
          call["result_axes"] = attrJson(*axes);
        if (int64_t stage = stageOf(kernel); stage >= 0)
          call["stage"] = stage;
        // The buffers: operands, results, then the planned scratch.
        SmallVector<Value> buffers(kernel.getIns());
        buffers.append(kernel.getOuts().begin(), kernel.getOuts().end());
        if (Value scratch = kernel.getScratch()) {
          buffers.push_back(scratch);
          call["scratch"] = memory::byteSize(cast<ShapedType>(scratch.getType()));
        }
        int64_t slot = 0;
        for (Value v : buffers) {
          Value addr = LLVM::GEPOp::create(b, loc, ptr, ptr, bufferArray,
                                           ArrayRef<LLVM::GEPArg>{slot++});
          LLVM::StoreOp::create(b, loc, map.lookup(v), addr);
        }
        LLVM::CallOp::create(b, loc, kernelFn,
                             ValueRange{ctxArg, constI32(calls.size()), bufferArray});
        calls.push_back(std::move(call));
      } else if (isa<rt_dialect::CollectiveOp, rt_dialect::CollectiveStartOp>(op)) {
        // Both carry kind, axes, input, output and attrs.
        auto kind = op.getAttrOfType<StringAttr>("kind");
        auto axesAttr = op.getAttrOfType<DenseI16ArrayAttr>("axes");
        auto attrs = op.getAttrOfType<DictionaryAttr>("attrs");
        Value in = op.getOperand(0), out = op.getOperand(1);
        std::vector<int16_t> axes(axesAttr.asArrayRef().begin(), axesAttr.asArrayRef().end());
        auto [it, inserted] = commIndex.emplace(axes, comms.size());
        if (inserted)
          comms.push_back(json::Object{{"axes", attrJson(axesAttr)}});
        json::Object call{{"op", kind.str()},
                          {"operands", buffersJson(in)},
                          {"results", buffersJson(out)},
                          {"attrs", attrJson(attrs)},
                          {"comm", it->second}};
        if (int64_t stage = stageOf(&op); stage >= 0)
          call["stage"] = stage;
        // The planned staging (KernelScratch.h collectiveStaging), else null.
        Value scratch = op.getNumOperands() > 2 ? op.getOperand(2) : Value();
        Value scratchPtr;
        if (scratch) {
          scratchPtr = map.lookup(scratch);
          call["scratch"] = memory::byteSize(cast<ShapedType>(scratch.getType()));
        } else {
          scratchPtr = LLVM::ZeroOp::create(b, loc, ptr);
        }
        SmallVector<Value, 6> args{ctxArg,         constI32(calls.size()), constI32(it->second),
                                   map.lookup(in), map.lookup(out),        scratchPtr};
        if (isa<rt_dialect::CollectiveOp>(op)) {
          LLVM::CallOp::create(b, loc, collectiveFn, args);
        } else {
          // The event is the runtime's handle of the collective in flight.
          Value handle = LLVM::CallOp::create(b, loc, startFn, args).getResult();
          map.map(op.getResult(0), handle);
        }
        calls.push_back(std::move(call));
      } else if (auto copy = dyn_cast<rt_dialect::CopyStartOp>(op)) {
        // The event is the runtime's handle of the copy in flight.
        Value handle =
            LLVM::CallOp::create(b, loc, copyStartFn,
                                 ValueRange{ctxArg, map.lookup(copy.getTarget()),
                                            map.lookup(copy.getSource()),
                                            constI64(memory::byteSize(copy.getSource().getType())),
                                            constI32(stageOf(copy))})
                .getResult();
        map.map(copy.getEvent(), handle);
      } else if (auto wait = dyn_cast<rt_dialect::WaitOp>(op)) {
        bool isCopy = wait.getEvent().getDefiningOp<rt_dialect::CopyStartOp>() != nullptr;
        LLVM::CallOp::create(b, loc, isCopy ? copyWaitFn : waitFn,
                             ValueRange{ctxArg, map.lookup(wait.getEvent())});
      } else if (auto copy = dyn_cast<rt_dialect::CopyOp>(op)) {
        LLVM::CallOp::create(b, loc, copyFn,
                             ValueRange{ctxArg, map.lookup(copy.getTarget()),
                                        map.lookup(copy.getSource()),
                                        constI64(memory::byteSize(copy.getSource().getType())),
                                        constI32(stageOf(copy))});
      } else if (isa<func::ReturnOp>(op)) {
        LLVM::ReturnOp::create(b, loc, ValueRange{});
      } else {
        op.emitError() << "rt-to-llvm: '" << op.getName() << "' is not an rt op";
        failedWalk = true;
        break;
      }
    }
    if (failedWalk) {
      fn.erase();
      return failure();
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("shardc_step");
    auto programAttr = module->getAttrOfType<StringAttr>("rt.program");
    if (!step || !programAttr) {
      module.emitError("rt-to-llvm: no rt step (@shardc_step and the module's rt.program; run "
                       "-xf-lower-to-rt first)");
      return signalPassFailure();
    }
    llvm::Expected<json::Value> parsed = json::parse(programAttr.getValue());
    if (!parsed || !parsed->getAsObject()) {
      llvm::consumeError(parsed.takeError());
      module.emitError("rt-to-llvm: the module's rt.program is not a JSON object");
      return signalPassFailure();
    }
    json::Object program = std::move(*parsed->getAsObject());
    std::vector<int64_t> arenaBytes;
    if (json::Array *arenas = program.getArray("arenas"))
      for (json::Value &a : *arenas)
        arenaBytes.push_back(a.getAsObject()->getInteger("bytes").value_or(0));

    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    Location loc = step.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = b.getI32Type(), i64 = b.getI64Type(), i8 = b.getI8Type();
    auto voidTy = LLVM::LLVMVoidType::get(ctx);

    b.setInsertionPointToEnd(module.getBody());
    auto declare = [&](StringRef name, Type result, ArrayRef<Type> args) {
      return LLVM::LLVMFuncOp::create(b, loc, name, LLVM::LLVMFunctionType::get(result, args));
    };
    declare("shardc_rt_arena", ptr, {ptr, i32});
    declare("shardc_rt_kernel", voidTy, {ptr, i32, ptr});
    declare("shardc_rt_collective", voidTy, {ptr, i32, i32, ptr, ptr, ptr});
    declare("shardc_rt_copy", voidTy, {ptr, ptr, ptr, i64, i32});
    declare("shardc_rt_collective_start", i32, {ptr, i32, i32, ptr, ptr, ptr});
    declare("shardc_rt_wait", voidTy, {ptr, i32});
    declare("shardc_rt_copy_start", i32, {ptr, ptr, ptr, i64, i32});
    declare("shardc_rt_copy_wait", voidTy, {ptr, i32});
    json::Array calls, comms;
    std::map<std::vector<int16_t>, int64_t> commIndex;
    // The step, and the eval function (an empty one without -xf-extract-eval:
    // the runtime links against both and finds no eval report then).
    auto evalStep = module.lookupSymbol<func::FuncOp>("shardc_eval");
    for (auto [rtFunc, name] : {std::pair<func::FuncOp, StringRef>{step, "shardc_step"},
                                std::pair<func::FuncOp, StringRef>{evalStep, "shardc_eval"}}) {
      b.setInsertionPointToEnd(module.getBody());
      if (failed(emitFunction(b, rtFunc, name, arenaBytes, calls, comms, commIndex)))
        return signalPassFailure();
    }
    program["calls"] = std::move(calls);
    program["comms"] = std::move(comms);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << json::Value(std::move(program));
    text.push_back('\0');

    b.setInsertionPointToStart(module.getBody());
    auto arrayTy = LLVM::LLVMArrayType::get(i8, text.size());
    LLVM::GlobalOp::create(b, loc, arrayTy, /*isConstant=*/true, LLVM::Linkage::External,
                           "shardc_program_json", b.getStringAttr(text));
    step.erase();
    for (Operation &op : llvm::make_early_inc_range(module.getBody()->getOperations()))
      if (isa<shard::GridOp>(op) || (isa<func::FuncOp>(op)))
        op.erase();
    module->removeAttr("rt.program");
  }
};

} // namespace
