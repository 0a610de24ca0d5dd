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

#include "llvm/Support/raw_ostream.h"

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

mlir::LogicalResult shardc::SourceDiagnostics::printShortened(mlir::Diagnostic &d) {
  auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(d.getLocation());
  if (!loc)
    return mlir::failure();
  unsigned id = 0;
  for (unsigned i = 1; i <= sourceMgr_.getNumBuffers() && !id; ++i)
    if (sourceMgr_.getMemoryBuffer(i)->getBufferIdentifier() == loc.getFilename().getValue())
      id = i;
  if (!id)
    return mlir::failure();
  llvm::SMLoc at = sourceMgr_.FindLocForLineAndColumn(id, loc.getLine(), loc.getColumn());
  if (!at.isValid())
    return mlir::failure();
  llvm::StringRef buffer = sourceMgr_.getMemoryBuffer(id)->getBuffer();
  size_t pos = static_cast<size_t>(at.getPointer() - buffer.data());
  size_t start = buffer.rfind('\n', pos);
  start = start == llvm::StringRef::npos ? 0 : start + 1;
  size_t end = std::min(buffer.find('\n', pos), buffer.size());
  if (end - start <= kMaxSourceLine)
    return mlir::failure();
  // The part of the line around the column, and a caret under it.
  llvm::StringRef line = buffer.slice(start, end);
  size_t column = pos - start, from = column > 80 ? column - 80 : 0;
  size_t to = std::min(line.size(), from + kMaxSourceLine);
  std::string shown = (from ? "..." : "") + line.slice(from, to).str() + (to < line.size() ? "..." : "");
  size_t caret = column - from + (from ? 3 : 0);
  auto severity = [](mlir::DiagnosticSeverity s) {
    switch (s) {
    case mlir::DiagnosticSeverity::Error:
      return "error";
    case mlir::DiagnosticSeverity::Warning:
      return "warning";
    case mlir::DiagnosticSeverity::Note:
      return "note";
    case mlir::DiagnosticSeverity::Remark:
      return "remark";
    }
    return "error";
  };
  llvm::raw_ostream &os = llvm::errs();
  os << loc.getFilename().getValue() << ":" << loc.getLine() << ":" << loc.getColumn() << ": "
     << severity(d.getSeverity()) << ": " << d.str() << "\n"
     << shown << "\n"
     << std::string(caret, ' ') << "^\n";
  for (mlir::Diagnostic &note : d.getNotes())
    os << severity(note.getSeverity()) << ": " << note.str() << "\n";
  return mlir::success();
}
