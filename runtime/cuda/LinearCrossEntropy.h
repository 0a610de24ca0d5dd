//===- LinearCrossEntropy.h - fused logit GEMM + cross-entropy --*- C++ -*-===//
//
// Cross-entropy of logits = x[rows, hidden] @ W_block for a rank holding the
// vocabulary block [vocabBegin, vocabBegin + blockVocab), without ever
// materialising the rows x vocabulary logits: the logits are produced a
// chunk at a time ([chunk rows, chunk columns], f32, in the workspace) and
// only live while that chunk is processed.
//  - forward: per chunk, one GEMM then the row statistics (max, sum of exp,
//    target logit) of the block; the caller combines the statistics over
//    the vocabulary group (only 3 floats per token cross ranks) and finishes
//    with cross_entropy_loss (DeviceKernels.h);
//  - backward: per chunk, the GEMM again, dlogits with the combined
//    statistics (one kernel reading the f32 logits once and writing dlogits
//    once, in W's dtype), then dx and dW GEMMs on that chunk: one pass.
//
// Chunks run along the longer of the two logit dimensions, so that every
// GEMM keeps a long k and the one gradient accumulated across chunks is the
// smaller one:
//  - by vocabulary (blockVocab >= rows, the usual LM head: 8k tokens x 128k
//    vocabulary): all rows x a block of columns. The forward merges each
//    chunk's statistics into the running ones; the backward writes each
//    chunk's dW rows/columns complete (k = rows, one rounding) and
//    accumulates dx (f32, rows x hidden) over the chunks;
//  - by rows (rows > blockVocab: a vocabulary split over many ranks):
//    a block of rows x all columns. dx is complete per chunk; dW [blockVocab,
//    hidden] accumulates (f32) over the chunks.
// An accumulated gradient whose dtype is not f32 is accumulated in an f32
// copy in the workspace and rounded once at the end.
//
// The backward recomputes the logits (one GEMM more than a kernel that keeps
// all logits, like llm.c): that is what keeps the memory at a chunk instead
// of rows x blockVocab, and it is unavoidable when the vocabulary is split
// (the statistics must be combined across ranks before any dlogits exists).
//
// W is [blockVocab, hidden] if vocabMajor (a tied embedding), else
// [hidden, blockVocab]; dW has the layout of W. x and W share one dtype
// (f32, bf16 or f16: cuBLASLt multiplies equal dtypes); dx has x's dtype or
// f32, dW W's dtype or f32. Stats are f32 [3][rows]. The workspace must be
// 256-byte aligned (cudaMalloc memory is).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H
#define SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H

#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/program/KernelScratch.h"

namespace shardc::cuda {

/// Which logit dimension is chunked (Auto: the longer one, see above) and
/// the problem: shared with the memory planner (runtime/program/
/// KernelScratch.h), which sizes the workspace of each call.
using LinearCrossEntropyChunking = rt::LinearCrossEntropyChunking;
using LinearCrossEntropyShape = rt::LinearCrossEntropyShape;

/// Rows per chunk (at least 1; all rows when chunking by vocabulary).
int64_t linear_cross_entropy_chunk_rows(const LinearCrossEntropyShape &shape);
/// Vocabulary columns per chunk (at least 1; blockVocab when chunking by rows).
int64_t linear_cross_entropy_chunk_vocab(const LinearCrossEntropyShape &shape);
/// Workspace bytes both phases need, for any dtypes.
int64_t linear_cross_entropy_workspace_bytes(const LinearCrossEntropyShape &shape);
/// Workspace bytes both phases need for these dtypes (x has w's dtype): no
/// dlogits copy when w is f32, no accumulation copy when the accumulated
/// gradient (dx chunking by vocabulary, dw by rows) is f32.
int64_t linear_cross_entropy_workspace_bytes(const LinearCrossEntropyShape &shape, DType w,
                                             DType dx, DType dw);

/// Statistics [3][rows] (f32: max, sum of exp, target logit) of this block.
/// Bad targets set *err (kBadTarget, the row as position).
void linear_cross_entropy_stats(Gemm &gemm, TView x, TView w, const int32_t *targets, TView mask,
                                const LinearCrossEntropyShape &shape, float *stats, void *workspace,
                                KernelError *err, cudaStream_t s);

/// dx (the block's share, to be summed over the vocabulary group) and dw
/// from combined statistics [3][rows]; dloss is a device scalar; groupCount
/// the counted rows of the token group (DeviceKernels.h; null: this call's).
/// dx and dw are overwritten.
void linear_cross_entropy_backward(Gemm &gemm, TView dloss, TView x, TView w,
                                   const int32_t *targets, TView mask,
                                   const LinearCrossEntropyShape &shape, const float *stats,
                                   const int32_t *groupCount, TView dx, TView dw, void *workspace,
                                   cudaStream_t s);

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H
