//===- shardc-opt.cpp - MlirOptMain for shardc ----------------------------===//
//
// The opt-style driver for pass authors and lit tests: the xf dialect, the
// upstream shard dialect, func/arith/tensor, the generic transforms
// (canonicalize, cse, ...), upstream shard passes, every shardc pass and the
// registered pipelines (shardc-train-step, -shard, -lower, -compile). The xf
// ops implement upstream's ShardingInterface here only
// (dialects/xf/XfUpstreamSharding.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "compiler/pipelines/Pipelines.h"
#include "dialects/xf/XfUpstreamSharding.h"
#include "passes/Debug.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/Transforms/Passes.h"

/// Release LLVM has no -debug-only: shardc's passes have their own switch.
static llvm::cl::opt<std::string> debugTypes(
    "shardc-debug", llvm::cl::desc("debug output of these shardc passes (comma-separated "
                                   "pass flags, or all); also $SHARDC_DEBUG"),
    llvm::cl::value_desc("passes"), llvm::cl::cb<void, std::string>([](const std::string &v) {
      shardc::debug::enable(v);
    }));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  shardc::registerShardcDialects(registry);
  // What upstream shard IR needs: linalg and the ShardingInterface models of
  // linalg, arith, tensor and func, so `sharding-propagation` and
  // `shard-partition` run here as in mlir-opt.
  registry.insert<mlir::linalg::LinalgDialect>();
  mlir::linalg::registerShardingInterfaceExternalModels(registry);
  mlir::arith::registerShardingInterfaceExternalModels(registry);
  mlir::tensor::registerShardingInterfaceExternalModels(registry);
  mlir::func::registerShardingInterfaceExternalModels(registry);
  // ... and of the xf ops, derived from their sharding rules
  // (test/lit/passes/upstream-shard-xf.mlir). shardc's own pipelines do not
  // use them.
  shardc::xf::registerXfUpstreamShardingModels(registry);
  mlir::registerTransformsPasses();
  mlir::shard::registerShardPasses();
  shardc::registerShardcPasses();
  shardc::registerShardcPipelines();
  // As MlirOptMain(argc, argv, ...), plus each enabled pass's summary
  // (debug::instrument) in every pass manager it sets up.
  auto [inputFile, outputFile] =
      mlir::registerAndParseCLIOptions(argc, argv, "shardc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
  // The command line's passes, then the summaries.
  mlir::MlirOptMainConfig fromCommandLine = config;
  config.setPassPipelineSetupFn([fromCommandLine](mlir::PassManager &pm) {
    shardc::debug::instrument(pm);
    return fromCommandLine.setupPassPipeline(pm);
  });
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
