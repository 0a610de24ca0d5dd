//===- shardc-opt.cpp - MlirOptMain for shardc ----------------------------===//
//
// The opt-style driver for pass authors and lit tests: the xf dialect, the
// upstream shard dialect, func/arith/tensor, the generic transforms
// (canonicalize, cse, ...), upstream shard passes and every shardc pass.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  shardc::registerShardcDialects(registry);
  mlir::registerTransformsPasses();
  mlir::shard::registerShardPasses();
  shardc::registerShardcPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "shardc optimizer driver\n", registry));
}
