//===- Passes.h - shardc passes ---------------------------------*- C++ -*-===//
#ifndef SHARDC_PASSES_PASSES_H
#define SHARDC_PASSES_PASSES_H

#include "dialects/rt/RtDialect.h"
#include "dialects/xf/XfDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"

namespace shardc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace shardc

#endif // SHARDC_PASSES_PASSES_H
