//===- FunctionTarget.h - which functions a function pass works on -*- C++ -*-===//
//
// shardc's function-local passes anchor on func.func (they run on each
// function the pass manager gives them, in parallel where MLIR threads), and
// their `function` option narrows them to one function of a module that
// holds several (the model `forward` beside the synthesized `train_step`);
// an empty option means every function with a body.
//
// A name that matches no function is still a diagnostic, not a silent
// no-op: the pass instance that runs on the module's first function reports
// it (a read-only symbol lookup in the parent module), once.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_FUNCTIONTARGET_H
#define SHARDC_PASSES_FUNCTIONTARGET_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {

/// Whether `pass` (its flag, for the message) works on `func`: true for the
/// target, false to leave it alone, failure (after an error at the module)
/// when `func` is the module's first function and no function with a body
/// is called `name`.
inline mlir::FailureOr<bool> isTargetFunction(mlir::func::FuncOp func, llvm::StringRef name,
                                              llvm::StringRef pass,
                                              llvm::StringRef hint = "") {
  if (name.empty() || func.getSymName() == name)
    return !func.isExternal();
  auto module = func->getParentOfType<mlir::ModuleOp>();
  if (!module || *module.getOps<mlir::func::FuncOp>().begin() != func)
    return false;
  auto target = module.lookupSymbol<mlir::func::FuncOp>(name);
  if (target && !target.isExternal())
    return false;
  auto diag = module.emitError() << pass << ": no function @" << name << " with a body";
  if (!hint.empty())
    diag << " (" << hint << ")";
  return mlir::failure();
}

} // namespace shardc

#endif // SHARDC_PASSES_FUNCTIONTARGET_H
