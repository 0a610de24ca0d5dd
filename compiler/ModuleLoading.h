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

#include <string>

namespace shardc {

/// xf, the upstream shard dialect, func, arith and tensor.
void registerShardcDialects(mlir::DialectRegistry &registry);

/// Parses and verifies a .mlir file. Parse and verifier errors are printed
/// with their source line; returns null then. Throws rt::Error if the file
/// cannot be read.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(mlir::MLIRContext &ctx, const std::string &path);

} // namespace shardc

#endif // SHARDC_COMPILER_MODULELOADING_H
