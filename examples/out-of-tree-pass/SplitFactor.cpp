//===- SplitFactor.cpp - an out-of-tree sharding pass for shardc-opt ------===//
//
// `-example-split-factor`: for every op with a sharding rule, the factor to
// split over one mesh axis (ExamplePasses.td says what and how). Built as a
// pass plugin against the installed shardc and loaded by shardc-opt:
//
//   shardc-opt --load-pass-plugin=ExampleSplitFactor.so \
//     --pass-pipeline='builtin.module(example-split-factor{axis=dp})' model.mlir
//
// To write your own pass, copy this directory and change three places:
//   1. ExamplePasses.td: the pass's name, summary and options;
//   2. runOnOperation() below: what the pass does;
//   3. mlirGetPassPluginInfo() at the end: the plugin's name (the registration
//      call stays registerExamplePasses(), or register<Prefix>Passes() after
//      renaming `-name Example` in CMakeLists.txt).
//
// What the plugin may use: every header of the installed package (the xf ops
// and their interfaces, compiler/sharding/Sharding.h, passes/Passes.h, ...) and
// MLIR. The code behind shardc's headers comes from shardc-opt itself at load
// time (it is linked with -rdynamic); the plugin links no shardc library, so
// the xf dialect exists once and isa<xf::MatmulOp> or
// dyn_cast<xf::ShardingRuleOpInterface> agree with the ops the parser made.
//
//===----------------------------------------------------------------------===//

#include "compiler/sharding/Sharding.h"
#include "dialects/xf/ShardingRule.h"
#include "dialects/xf/XfInterfaces.h"
#include "dialects/xf/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

#include <optional>

namespace example {
#define GEN_PASS_DECL
#define GEN_PASS_DEF_EXAMPLESPLITFACTOR
#include "ExamplePasses.h.inc"
} // namespace example

using namespace mlir;
namespace xf = shardc::xf;

namespace {

llvm::StringRef kindName(xf::FactorKind kind) {
  switch (kind) {
  case xf::FactorKind::Parallel:
    return "parallel";
  case xf::FactorKind::Reduction:
    return "reduction";
  case xf::FactorKind::Replicated:
    return "replicated";
  }
  return "?";
}

/// The factor to split over `devices`: the first Parallel one that may be
/// split, else the first Reduction one; none if no factor may be split.
/// (ShardingRule.h: only the major-most factor of a dimension may be split,
/// Replicated factors never; here also only evenly.)
std::optional<int> pickFactor(const xf::OpShardingRule &rule, int64_t devices) {
  llvm::SmallVector<bool, 8> minor(rule.factors.size(), false);
  for (const auto *tensors : {&rule.operands, &rule.results})
    for (const xf::TensorFactors &tensor : *tensors)
      for (const xf::DimFactors &dim : tensor)
        for (size_t i = 1; i < dim.size(); ++i)
          minor[dim[i]] = true;
  auto splittable = [&](int f, xf::FactorKind kind) {
    const xf::ShardingFactor &factor = rule.factors[f];
    return factor.kind == kind && !minor[f] && factor.size % devices == 0;
  };
  for (xf::FactorKind kind : {xf::FactorKind::Parallel, xf::FactorKind::Reduction})
    for (int f = 0, e = static_cast<int>(rule.factors.size()); f < e; ++f)
      if (splittable(f, kind))
        return f;
  return std::nullopt;
}

class SplitFactor : public example::impl::ExampleSplitFactorBase<SplitFactor> {
public:
  using ExampleSplitFactorBase::ExampleSplitFactorBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The mesh: shardc's own reading of the module's shard.grid and its axis
    // names (compiler/sharding/Sharding.h), which reports its errors itself.
    FailureOr<shardc::sharding::Mesh> mesh = shardc::sharding::Mesh::fromModule(module);
    if (failed(mesh))
      return signalPassFailure();
    int index = mesh->axisIndex(axis);
    if (index < 0) {
      Operation *grid = SymbolTable::lookupSymbolIn(module, mesh->symbol);
      (grid ? grid : module.getOperation())->emitError()
          << "example-split-factor: the mesh " << mesh->str() << " has no axis '" << axis << "'";
      return signalPassFailure();
    }
    int64_t devices = mesh->sizes[index];

    Builder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      int ops = 0, split = 0, matmuls = 0, matmulsSplit = 0;
      // Every op with a sharding rule: the interface, not a list of ops, so
      // the pass covers ops added to xf later.
      func.walk([&](xf::ShardingRuleOpInterface op) {
        xf::OpShardingRule rule = op.getShardingRule();
        std::optional<int> f = pickFactor(rule, devices);
        // A specific op, for the summary and the remark.
        auto matmul = dyn_cast<xf::MatmulOp>(op.getOperation());
        ++ops;
        matmuls += matmul ? 1 : 0;
        if (!f) {
          op->emitRemark() << "no factor splits evenly over '" << axis << "' (" << devices
                           << " devices): stays replicated";
          return;
        }
        ++split;
        matmulsSplit += matmul ? 1 : 0;
        const xf::ShardingFactor &factor = rule.factors[*f];
        op->setAttr("example.split",
                    b.getDictionaryAttr({b.getNamedAttr("factor", b.getI64IntegerAttr(*f)),
                                         b.getNamedAttr("kind", b.getStringAttr(kindName(factor.kind))),
                                         b.getNamedAttr("size", b.getI64IntegerAttr(factor.size))}));
        InFlightDiagnostic remark = op->emitRemark();
        remark << "split factor " << *f << " (" << kindName(factor.kind) << ", size "
               << factor.size << ") over '" << axis << "' (" << devices << " devices)";
        if (matmul)
          remark << " of \"" << matmul.getEquation() << "\"";
        if (factor.kind == xf::FactorKind::Reduction)
          remark << "; the results become partial sums";
      });
      func.emitRemark() << "example-split-factor: " << split << " of " << ops
                        << " ops split over '" << axis << "'; xf.matmul: " << matmulsSplit
                        << " of " << matmuls;
    }
  }
};

} // namespace

namespace example {
#define GEN_PASS_REGISTRATION
#include "ExamplePasses.h.inc"
} // namespace example

/// The plugin's entry point, found by `--load-pass-plugin`: registers the
/// passes with MLIR's pass registry (so --pass-pipeline and --help see them).
extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "ExampleSplitFactor", LLVM_VERSION_STRING,
          [] { example::registerExamplePasses(); }};
}
