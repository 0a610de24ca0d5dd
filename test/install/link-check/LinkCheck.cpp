//===- LinkCheck.cpp - a tool linked against the installed shardc ---------===//
//
// Registers shardc's dialects and passes, parses an xf function, reads a
// sharding rule through the interface and runs a shardc pass from the
// registry: each step needs a different exported library.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "dialects/xf/XfOps.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

static const char *kModule = R"mlir(
func.func @loss(%x: tensor<4x8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<4x8xi32>) -> tensor<f32> {
  %l = xf.matmul "bsh,vh->bsv" %x, %w : tensor<4x8x16xf32>, tensor<32x16xf32> -> tensor<4x8x32xf32>
  %loss = xf.cross_entropy %l, %t ignore_index = -100 : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
)mlir";

int main() {
  mlir::DialectRegistry registry;
  shardc::registerShardcDialects(registry);
  shardc::registerShardcPasses();
  mlir::MLIRContext ctx(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(kModule, &ctx);
  if (!module)
    return 1;
  module->walk([](shardc::xf::ShardingRuleOpInterface op) {
    llvm::outs() << op->getName() << ": " << op.getShardingRule().factors.size() << " factors\n";
  });
  mlir::PassManager pm(&ctx);
  const char *pipeline = "func.func(xf-fuse-linear-cross-entropy)";
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())) ||
      mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
