//===- ModuleLoading.h - dialects and .mlir loading for the tools -*- C++ -*-===//
//
// One place that says which dialects shardc's tools accept and how a model
// file is read, shared by shardc, shardc-opt and the benchmarks.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_MODULELOADING_H
#define SHARDC_COMPILER_MODULELOADING_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

namespace shardc {

/// xf, the upstream shard dialect, func, arith and tensor.
void registerShardcDialects(mlir::DialectRegistry &registry);

/// Keeps the text of loaded files and prints every diagnostic of the context
/// with its source line while it lives, so errors found after parsing (by a
/// pass, by the executor) point into the file the same way parse errors do.
/// A source line longer than kMaxSourceLine (a function signature of
/// hundreds of arguments on one line) is shown as the part around the
/// column, not whole.
class SourceDiagnostics {
public:
  static constexpr size_t kMaxSourceLine = 240;
  explicit SourceDiagnostics(mlir::MLIRContext &ctx)
      : handler_(sourceMgr_, &ctx),
        longLines_(&ctx, [this](mlir::Diagnostic &d) { return printShortened(d); }) {}
  llvm::SourceMgr &sourceMgr() { return sourceMgr_; }

private:
  /// Prints `d` with the part of its source line around its column where
  /// that line is long; fails (the SourceMgr handler prints it) otherwise.
  mlir::LogicalResult printShortened(mlir::Diagnostic &d);

  llvm::SourceMgr sourceMgr_;
  mlir::SourceMgrDiagnosticHandler handler_;
  mlir::ScopedDiagnosticHandler longLines_; ///< registered last: asked first
};

/// Parses and verifies a .mlir file. Parse and verifier errors are printed
/// with their source line; returns null then. With `diagnostics`, the file
/// stays registered there for later diagnostics. Throws rt::Error if the file
/// cannot be read.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(mlir::MLIRContext &ctx, const std::string &path,
                                             SourceDiagnostics *diagnostics = nullptr);

} // namespace shardc

#endif // SHARDC_COMPILER_MODULELOADING_H
