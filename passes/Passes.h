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

/// The fusions of the rank-local step, in order: ZeRO's gradient
/// reduce-scatters merged into buckets of `bucketBytes`
/// (-xf-bucket-reduce-scatters; 0: none), one optimizer call per stage
/// (-xf-fuse-optimizer), then the GEMM epilogues (-xf-fuse-epilogues), on
/// `function`. What a compiled step runs after partitioning; the simulated
/// mesh (shardc-shard) and `shardc explain` run the same list.
void addRankLocalFusions(mlir::OpPassManager &functionPasses, llvm::StringRef function,
                         int64_t bucketBytes = 25 * 1024 * 1024);

} // namespace shardc

#endif // SHARDC_PASSES_PASSES_H
