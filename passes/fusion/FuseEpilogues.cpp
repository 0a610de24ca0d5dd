//===- FuseEpilogues.cpp - GEMM epilogues chosen at compile time ----------===//
//
// A GEMM whose result only an elementwise op reads stores that result and
// the op reads it back: on GPT-2 124M at B=64 the bias adds, GELU, its
// gradient and the bias gradients move ~57 GB a step. cuBLASLt applies them
// in the GEMM's epilogue; this pass makes that a compiler decision, so the
// memory planner, the CPU runner and the CUDA backend all see one call:
//
//   bias_add(matmul(x, w), b)            -> xf.matmul_bias
//   gelu(bias_add(matmul(x, w), b))      -> xf.matmul_bias_gelu (+ the
//                                           pre-activation the backward reads)
//   gelu_grad(matmul(dy, w), pre)        -> xf.matmul_dgelu
//   matmul(x, dy) and reduce_sum(dy) over
//     the contracted dims                -> xf.matmul_bgrad (weight and bias
//                                           gradients in one pass over dy)
//   cast(matmul(bf16, bf16)) to f32      -> the matmul stores f32 (and a
//                                           reduce_sum's widening folds into
//                                           the bias gradient)
//   add(x, cast(y)) widening y           -> add(x, y): the add widens y as it
//                                           reads it (the bf16 branch into the
//                                           f32 residual stream)
//   add(r, layernorm_grad(dy, x, g).dx)  -> layernorm_grad(dy, x, g) plus r
//                                           (rmsnorm_grad too): the residual
//                                           gradient added as dx is written
//
// A matmul fuses only where the op it feeds is its one reader. Runs on the
// rank-local step (after partitioning), where a collective between a GEMM
// and its epilogue (a row-parallel sum) simply keeps them apart.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionTarget.h"
#include "passes/Passes.h"

#include "dialects/xf/Einsum.h"
#include "dialects/xf/XfOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

namespace shardc {
#define GEN_PASS_DEF_XFFUSEEPILOGUES
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::xf;

namespace {

Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// The one op reading `v`, if exactly one op reads it (once).
Operation *soleUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

/// The fused op runs where the GEMM ran: its pipeline stage; and it is a
/// replay where the GEMM was (-xf-recompute's mark).
void keepStage(Operation *fused, Operation *gemm) {
  for (llvm::StringRef name : {XfDialect::kStageAttrName, XfDialect::kRecomputedAttrName})
    if (Attribute a = gemm->getAttr(name))
      fused->setAttr(name, a);
}

class FuseEpilogues : public shardc::impl::XfFuseEpiloguesBase<FuseEpilogues> {
public:
  using XfFuseEpiloguesBase::XfFuseEpiloguesBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    FailureOr<bool> target = shardc::isTargetFunction(f, function, "-xf-fuse-epilogues");
    if (failed(target))
      return signalPassFailure();
    if (!*target)
      return;
    widen(f);
    fuseBiasGradients(f);
    fuseForward(f);
    foldWideningIntoAdds(f);
    foldResidualGradients(f);
  }

private:
  /// cast(matmul) from bf16/f16 to f32 where every reader of the matmul is
  /// such a cast, directly or through reshapes and splits (a packed weight's
  /// gradient, -xf-fuse-qkv, split to its f32 masters): the GEMM stores f32
  /// (it accumulates in f32 anyway) and the views carry f32.
  void widen(func::FuncOp f) {
    SmallVector<MatmulOp> matmuls(f.getOps<MatmulOp>());
    for (MatmulOp mm : matmuls) {
      Type from = elementOf(mm.getResult());
      if (!(from.isBF16() || from.isF16()) || elementOf(mm.getLhs()) != from)
        continue;
      if (widensThroughViews(mm.getResult()))
        widenViews(mm.getResult());
    }
  }

  /// Whether every reader of `v`, through reshapes and splits, is a cast to
  /// f32 (and there is one).
  static bool widensThroughViews(Value v) {
    if (v.use_empty())
      return false;
    for (Operation *user : v.getUsers()) {
      if (auto c = dyn_cast<CastOp>(user)) {
        if (!elementOf(c.getResult()).isF32())
          return false;
        continue;
      }
      if (!isa<ReshapeOp, SplitOp>(user))
        return false;
      for (Value r : user->getResults())
        if (!widensThroughViews(r))
          return false;
    }
    return true;
  }

  /// Makes `v` and the views below it f32 and drops the casts they end in.
  static void widenViews(Value v) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(Float32Type::get(v.getContext())));
    for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
      if (auto c = dyn_cast<CastOp>(user)) {
        c.getResult().replaceAllUsesWith(c.getX());
        c.erase();
        continue;
      }
      for (Value r : user->getResults())
        widenViews(r);
    }
  }

  /// add(x, cast(y)) with y bf16/f16 widened to x's type: the add reads y
  /// and widens it itself (exactly the cast's values), so y's widened copy
  /// is never written or read back. After the GEMM fusions, whose own
  /// widenings of a matmul output come first. The cast goes once nothing
  /// else reads it.
  void foldWideningIntoAdds(func::FuncOp f) {
    SmallVector<AddOp> adds(f.getOps<AddOp>());
    for (AddOp add : adds) {
      Type elem = elementOf(add.getResult());
      if (add.getLhs().getType() != add.getResult().getType() ||
          add.getRhs().getType() != add.getResult().getType())
        continue;
      for (unsigned i = 0; i < 2; ++i) {
        auto c = add->getOperand(i).getDefiningOp<CastOp>();
        if (!c)
          continue;
        Type from = elementOf(c.getX());
        if (!(from.isBF16() || from.isF16()) ||
            from.getIntOrFloatBitWidth() >= elem.getIntOrFloatBitWidth() ||
            elementOf(c.getResult()) != elem)
          continue;
        add->setOperand(i, c.getX());
        if (c->use_empty())
          c.erase();
        break; // one narrow operand per add (the verifier's rule)
      }
    }
  }

  /// add(r, dx) with dx a layernorm_grad / rmsnorm_grad's input gradient that
  /// only the add reads, r of dx's type and defined before the norm's
  /// gradient: the norm's kernel adds r as it writes dx (the residual
  /// stream's gradient joining the branch's), so dx is written once and
  /// never read back. f32: the same sum, rounded the same way.
  void foldResidualGradients(func::FuncOp f) {
    SmallVector<AddOp> adds(f.getOps<AddOp>());
    for (AddOp add : adds) {
      Type type = add.getResult().getType();
      if (add.getLhs().getType() != type || add.getRhs().getType() != type)
        continue;
      for (unsigned i = 0; i < 2; ++i) {
        Value dx = add->getOperand(i), r = add->getOperand(1 - i);
        Operation *grad = dx.getDefiningOp();
        if (!grad || !isa<LayerNormGradOp, RmsNormGradOp>(grad) || grad->getResult(0) != dx ||
            grad->getNumOperands() != 3 || !dx.hasOneUse() || r == dx)
          continue;
        if (Operation *def = r.getDefiningOp(); def && !def->isBeforeInBlock(grad))
          continue;
        if (auto ln = dyn_cast<LayerNormGradOp>(grad))
          ln.getDresidualMutable().assign(r);
        else
          cast<RmsNormGradOp>(grad).getDresidualMutable().assign(r);
        add.getResult().replaceAllUsesWith(dx);
        add.erase();
        break;
      }
    }
  }

  /// matmul(x, dy) beside reduce_sum(dy) over the dims the matmul contracts:
  /// one xf.matmul_bgrad, at the earlier of the two (both read only values
  /// defined before either).
  void fuseBiasGradients(func::FuncOp f) {
    SmallVector<ReduceSumOp> sums(f.getOps<ReduceSumOp>());
    for (ReduceSumOp sum : sums) {
      Value dy = sum.getX();
      MatmulOp match;
      for (Operation *user : dy.getUsers()) {
        auto mm = dyn_cast<MatmulOp>(user);
        if (!mm || mm.getRhs() != dy || mm.getLhs() == dy)
          continue;
        std::string error;
        std::optional<Einsum> e = Einsum::parse(mm.getEquation(), error);
        if (!e)
          continue;
        SmallVector<int64_t> contracted;
        for (auto [i, letter] : llvm::enumerate(e->rhs))
          if (!StringRef(e->out).contains(letter))
            contracted.push_back(static_cast<int64_t>(i));
        if (ArrayRef<int64_t>(contracted) != sum.getDims())
          continue;
        match = mm;
        break;
      }
      if (!match)
        continue;
      // A widening of the sum folds into the fused op's bias gradient.
      Value db = sum.getResult();
      auto widened = dyn_cast_or_null<CastOp>(soleUser(db));
      if (widened && elementOf(widened.getResult()).isF32() &&
          elementOf(match.getResult()) == elementOf(widened.getResult()))
        db = widened.getResult();
      // Or widenings through views (a packed bias's gradient, split).
      bool widenedViews = !widened && elementOf(match.getResult()).isF32() &&
                          !elementOf(db).isF32() && widensThroughViews(db);
      // At the earlier of the two where x is defined before it; else at the
      // later, where nothing reads the earlier one's result before it.
      Operation *early = sum->isBeforeInBlock(match) ? sum.getOperation() : match.getOperation();
      Operation *late = early == sum.getOperation() ? match.getOperation() : sum.getOperation();
      Operation *xDef = match.getLhs().getDefiningOp();
      Operation *at = early;
      if (xDef && !xDef->isBeforeInBlock(early)) {
        Value earlyResult = early->getResult(0);
        if (early == sum.getOperation() && db != sum.getResult())
          earlyResult = db;
        if (llvm::any_of(earlyResult.getUsers(),
                         [&](Operation *u) { return !late->isBeforeInBlock(u); }))
          continue;
        at = late;
      }
      OpBuilder b(at);
      Type dbType = db.getType();
      if (widenedViews) {
        widenViews(db);
        dbType = db.getType();
      }
      auto fused = MatmulBGradOp::create(b, match.getLoc(), match.getResult().getType(), dbType,
                                         match.getEquationAttr(), match.getLhs(), dy);
      keepStage(fused, match);
      match.getResult().replaceAllUsesWith(fused.getResult());
      db.replaceAllUsesWith(fused.getDbias());
      if (db != sum.getResult())
        db.getDefiningOp()->erase();
      sum.erase();
      match.erase();
    }
  }

  /// bias_add (then gelu) of a matmul, and gelu_grad of one.
  void fuseForward(func::FuncOp f) {
    SmallVector<MatmulOp> matmuls(f.getOps<MatmulOp>());
    for (MatmulOp mm : matmuls) {
      Operation *user = soleUser(mm.getResult());
      if (!user)
        continue;
      if (auto add = dyn_cast<BiasAddOp>(user); add && add.getX() == mm.getResult() &&
                                                 elementOf(add.getBias()) ==
                                                     elementOf(mm.getResult())) {
        Value z = add.getResult();
        GeluOp gelu;
        for (Operation *u : z.getUsers())
          if (auto g = dyn_cast<GeluOp>(u); g && (!gelu || g->isBeforeInBlock(gelu)))
            gelu = g; // the first (a replayed one stays a GELU of the sum)
        OpBuilder b(add);
        if (gelu) {
          auto fused = MatmulBiasGeluOp::create(b, add.getLoc(), z.getType(), z.getType(),
                                                mm.getEquationAttr(), mm.getLhs(), mm.getRhs(),
                                                add.getBias());
          keepStage(fused, mm);
          gelu.getResult().replaceAllUsesWith(fused.getResult());
          z.replaceAllUsesWith(fused.getPre());
          gelu.erase();
        } else {
          auto fused = MatmulBiasOp::create(b, add.getLoc(), z.getType(), mm.getEquationAttr(),
                                            mm.getLhs(), mm.getRhs(), add.getBias());
          keepStage(fused, mm);
          z.replaceAllUsesWith(fused.getResult());
        }
        add.erase();
        mm.erase();
        continue;
      }
      if (auto grad = dyn_cast<GeluGradOp>(user);
          grad && grad.getDy() == mm.getResult() && grad.getX() != mm.getResult()) {
        OpBuilder b(grad);
        auto fused = MatmulDGeluOp::create(b, grad.getLoc(), grad.getDx().getType(),
                                           mm.getEquationAttr(), mm.getLhs(), mm.getRhs(),
                                           grad.getX());
        keepStage(fused, mm);
        grad.getDx().replaceAllUsesWith(fused.getResult());
        grad.erase();
        mm.erase();
      }
    }
  }
};

} // namespace

void shardc::addRankLocalFusions(OpPassManager &functionPasses, StringRef function,
                                 int64_t bucketBytes) {
  XfBucketReduceScattersOptions buckets;
  buckets.function = function.str();
  buckets.bucketBytes = bucketBytes;
  functionPasses.addPass(createXfBucketReduceScatters(buckets));
  XfBucketAllGathersOptions gathers;
  gathers.function = function.str();
  gathers.bucketBytes = bucketBytes;
  functionPasses.addPass(createXfBucketAllGathers(gathers));
  XfFuseOptimizerOptions optimizer;
  optimizer.function = function.str();
  functionPasses.addPass(createXfFuseOptimizer(optimizer));
  XfFuseEpiloguesOptions epilogues;
  epilogues.function = function.str();
  functionPasses.addPass(createXfFuseEpilogues(epilogues));
}
