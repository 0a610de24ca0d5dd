//===- Codegen.h - object files and executables from rt ---------*- C++ -*-===//
//
// The last two arrows of the data flow: the rt step (after -rt-to-llvm) is
// translated to LLVM IR and compiled for the host by LLVM's target machine;
// the object is linked with the runtime (libshardc_step_main, the MPI
// communicators, libshardc_runtime, OpenBLAS, OpenMP) by the MPI compiler
// wrapper, so the result runs under mpirun or srun.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_CODEGEN_CODEGEN_H
#define SHARDC_COMPILER_CODEGEN_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace shardc::codegen {

/// Translates an LLVM-dialect module to LLVM IR and writes an object file for
/// the host (x86-64 here). Errors are emitted on the module.
mlir::LogicalResult emitObjectFile(mlir::ModuleOp module, const std::string &path);

/// Links an object file with the runtime into an executable. Throws
/// rt::Error with the linker's output on failure.
void linkExecutable(const std::string &object, const std::string &output);

/// The link command linkExecutable runs (for --verbose and the README).
std::string linkCommand(const std::string &object, const std::string &output);

} // namespace shardc::codegen

#endif // SHARDC_COMPILER_CODEGEN_CODEGEN_H
