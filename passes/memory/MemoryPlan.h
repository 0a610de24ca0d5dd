//===- MemoryPlan.h - the arenas of a planned step --------------*- C++ -*-===//
//
// What -xf-plan-memory writes and -xf-lower-to-rt reads: the per-rank arenas
// and the attributes giving each value its place in one.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_PASSES_MEMORY_MEMORYPLAN_H
#define SHARDC_PASSES_MEMORY_MEMORYPLAN_H

#include "compiler/abi/CallEncoding.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace shardc::memory {

/// The arenas, in index order. Parameters, gradients and optimizer state are
/// each one contiguous buffer (what MiCS and ZeRO want to gather, reduce and
/// update in bulk); the workspace is shared by liveness. The host arena holds
/// offloaded activations (-xf-offload-activations' xf.offload results, also
/// shared by liveness): host memory on every backend, so it is not part of
/// the planned device peak.
enum Arena : int {
  Params = 0, Grads = 1, Optimizer = 2, Inputs = 3, Workspace = 4, Host = 5, NumArenas = 6
};
inline constexpr llvm::StringLiteral kArenaNames[NumArenas] = {
    "params", "grads", "optimizer", "inputs", "workspace", "host"};

/// Whether an arena is device memory (counted in the planned peak).
inline constexpr bool onDevice(int arena) { return arena != Host; }

/// On func arguments: array<i64: arena, offset>.
inline constexpr llvm::StringLiteral kBufferAttr = "rt.buffer";
/// On ops: one array<i64: arena, offset> per result.
inline constexpr llvm::StringLiteral kBuffersAttr = "rt.buffers";
/// On ops whose kernel needs scratch memory (runtime/program/
/// KernelScratch.h): array<i64: offset, bytes> in the workspace arena, live
/// only while the op runs.
inline constexpr llvm::StringLiteral kScratchAttr = "rt.scratch";
/// On the function: the workspace the plan would need without any kernel
/// scratch (the activations' own peak; the workspace arena minus it is what
/// the kernels' scratch adds to the peak).
inline constexpr llvm::StringLiteral kActivationBytesAttr = "rt.activation_bytes";
/// On the function of an unpipelined training step: the workspace bytes of
/// the activations the forward stores for the backward, the values made
/// before the first backward op (not the weights: gathers, casts and layout
/// moves of arguments) that are still held there. What Megatron-LM's
/// activation-memory formulas count (sbh(34 + 5as/h) per layer, 2sbh under
/// full recomputation); the peak adds the backward's working set to it.
inline constexpr llvm::StringLiteral kStoredActivationBytesAttr = "rt.stored_activation_bytes";
/// On the function: the workspace the plan would need without the
/// collectives' staging (the workspace arena minus it is what the staging
/// adds to the peak).
inline constexpr llvm::StringLiteral kUnstagedBytesAttr = "rt.unstaged_bytes";
/// On the function: array<i64: bytes per arena>, and the sum of the device
/// arenas (all but the host arena).
inline constexpr llvm::StringLiteral kArenaBytesAttr = "rt.arena_bytes";
inline constexpr llvm::StringLiteral kPlannedBytesAttr = "rt.planned_bytes";
/// On a pipelined step's function: per stage, the planned workspace and
/// the bytes of all arenas (each stage's ranks need only their own).
inline constexpr llvm::StringLiteral kStageWorkspaceAttr = "rt.stage_workspace";
inline constexpr llvm::StringLiteral kStageBytesAttr = "rt.stage_bytes";
/// On rt ops of a pipelined step: the stage whose ranks run it (lowering
/// copies the xf op's `xf.stage`; absent: every rank).
inline constexpr llvm::StringLiteral kRtStageAttr = "rt.stage";

/// Every buffer starts on a cache line.
inline constexpr int64_t kAlignment = 64;

/// Bytes of a statically shaped tensor or memref (sub-byte types round up).
inline int64_t byteSize(mlir::ShapedType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

inline int64_t alignUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

/// The runtime's name of an element type ("F32", "BF16", ...: the
/// executor's dtype mapping); empty for types the runtime does not hold.
inline std::string runtimeDTypeName(mlir::Type t) {
  mlir::FailureOr<rt::DType> d = abi::dtypeOf(t);
  return mlir::succeeded(d) ? rt::dtype_name(*d) : "";
}

} // namespace shardc::memory

#endif // SHARDC_PASSES_MEMORY_MEMORYPLAN_H
