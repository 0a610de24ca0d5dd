//===- FuseLinearCrossEntropy.cpp - logit GEMM + cross-entropy fusion -----===//
//
// The logits of a language model are tokens x vocab: 4x1024x50304 fp32 is
// 824 MB for GPT-2 at batch 4. The fused op computes the same loss chunk by
// chunk, so the pass removes the largest activation of the step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "xf-fuse-linear-cross-entropy"

namespace shardc {
#define GEN_PASS_DEF_XFFUSELINEARCROSSENTROPY
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::xf;

namespace {

/// Matches cross_entropy(matmul(x, W)) where the matmul is "<t...>h,vh-><t...>v"
/// or "<t...>h,hv-><t...>v" (x's leading letters kept in order, vocab last).
struct FuseLinearCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp ce, PatternRewriter &rewriter) const override {
    auto mm = ce.getLogits().getDefiningOp<MatmulOp>();
    if (!mm || !mm->hasOneUse())
      return rewriter.notifyMatchFailure(ce, "logits are not a single-use xf.matmul");
    if (mm.getType().getElementType() != mm.getLhs().getType().getElementType())
      return rewriter.notifyMatchFailure(ce, "matmul widens its result type");
    std::string error;
    std::optional<Einsum> e = Einsum::parse(mm.getEquation(), error);
    if (!e || e->contracted.size() != 1 || e->rhs.size() != 2 || e->rhsFree.size() != 1 ||
        !e->batch.empty())
      return rewriter.notifyMatchFailure(ce, "not a token x hidden by hidden x vocab contraction");
    char h = e->contracted[0], v = e->rhsFree[0];
    if (e->lhs.back() != h || e->out.back() != v ||
        e->out.substr(0, e->out.size() - 1) != e->lhs.substr(0, e->lhs.size() - 1))
      return rewriter.notifyMatchFailure(ce, "token dimensions are reordered");
    bool vocabMajor = e->rhs[0] == v;
    rewriter.replaceOpWithNewOp<LinearCrossEntropyOp>(
        ce, ce.getType(), mm.getLhs(), mm.getRhs(), ce.getTargets(), ce.getMask(),
        vocabMajor ? rewriter.getUnitAttr() : UnitAttr(), ce.getIgnoreIndexAttr(),
        ce.getClassesAttr());
    rewriter.eraseOp(mm);
    return success();
  }
};

struct XfFuseLinearCrossEntropyPass
    : shardc::impl::XfFuseLinearCrossEntropyBase<XfFuseLinearCrossEntropyPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLinearCrossEntropy>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
