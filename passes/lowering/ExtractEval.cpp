//===- ExtractEval.cpp - the loss-only twin of a training step ------------===//
//
// Validation needs the loss of the current parameters without an update.
// Cloning the (partitioned) step and keeping only what the `loss` report
// depends on gives exactly the forward pass with the step's shardings and
// collectives, so the evaluation reads the parameters where the step keeps
// them: no second propagation that could shard them differently.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "xf-extract-eval"

namespace shardc {
#define GEN_PASS_DEF_XFEXTRACTEVAL
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;

namespace {

struct XfExtractEvalPass : shardc::impl::XfExtractEvalBase<XfExtractEvalPass> {
  using XfExtractEvalBase::XfExtractEvalBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(function);
    if (!step) {
      module.emitError() << "xf-extract-eval: no function @" << function;
      return signalPassFailure();
    }
    if (module.lookupSymbol(output)) {
      module.emitError() << "xf-extract-eval: @" << output << " exists already";
      return signalPassFailure();
    }
    std::optional<unsigned> lossIndex;
    for (unsigned i = 0; i < step.getNumResults(); ++i)
      if (auto r = step.getResultAttrOfType<StringAttr>(i, xf::XfDialect::kReportAttrName))
        if (r.getValue() == "loss")
          lossIndex = i;
    if (!lossIndex) {
      step.emitError() << "xf-extract-eval: @" << function << " reports no loss (xf.report = "
                       << "\"loss\")";
      return signalPassFailure();
    }

    func::FuncOp eval = step.clone();
    eval.setSymName(output);
    module.insert(std::next(Block::iterator(step)), eval);
    Block &body = eval.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(*lossIndex);
    DictionaryAttr lossAttrs = step.getResultAttrDict(*lossIndex);
    OpBuilder b(ret);
    func::ReturnOp::create(b, ret.getLoc(), loss);
    ret.erase();
    eval.setType(FunctionType::get(&getContext(), eval.getArgumentTypes(), {loss.getType()}));
    eval.setAllResultAttrs(ArrayRef<DictionaryAttr>{lossAttrs});

    // Everything the loss does not depend on goes (the ops are pure).
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
