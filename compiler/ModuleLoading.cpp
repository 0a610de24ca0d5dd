//===- ModuleLoading.cpp - dialects and .mlir loading for the tools -------===//

#include "compiler/ModuleLoading.h"
#include "dialects/rt/RtDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "dialects/xf/XfDialect.h"
#include "runtime/Error.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>

using namespace mlir;

void shardc::registerShardcDialects(DialectRegistry &registry) {
  registry.insert<xf::XfDialect, shard::ShardDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect, rt_dialect::RtDialect, LLVM::LLVMDialect>();
}

OwningOpRef<ModuleOp> shardc::loadModule(MLIRContext &ctx, const std::string &path,
                                         SourceDiagnostics *diagnostics) {
  DialectRegistry registry;
  registerShardcDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  std::optional<SourceDiagnostics> local;
  if (!diagnostics)
    diagnostics = &local.emplace(ctx);
  std::string error;
  auto file = openInputFile(path, &error);
  if (!file)
    throw rt::Error("cannot read '" + path + "': " + error);
  llvm::SourceMgr &sourceMgr = diagnostics->sourceMgr();
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &ctx);
}
