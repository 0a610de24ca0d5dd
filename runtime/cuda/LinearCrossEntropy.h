//===- LinearCrossEntropy.h - fused logit GEMM + cross-entropy --*- C++ -*-===//
//
// Cross-entropy of logits = x[rows, hidden] @ W_block for a rank holding the
// vocabulary block [vocabBegin, vocabBegin + blockVocab), without ever
// materialising the rows x vocabulary logits: rows are processed in chunks;
// each chunk's logits ([chunk, blockVocab], f32) live in the workspace only
// while that chunk is processed.
//  - forward: per chunk, one GEMM then the row statistics (max, sum of exp,
//    target logit) of the block; the caller combines the statistics over
//    the vocabulary group (only 3 floats per token cross ranks) and finishes
//    with cross_entropy_loss (DeviceKernels.h);
//  - backward: per chunk, the GEMM again, dlogits in place of the logits
//    with the combined statistics, then dx_chunk = dlogits @ W_block^T and
//    dW += dlogits^T @ x_chunk: one pass over each chunk.
// W is [blockVocab, hidden] if vocabMajor (a tied embedding), else
// [hidden, blockVocab]; dW has the layout of W.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H
#define SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H

#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/Gemm.h"

namespace shardc::cuda {

struct LinearCrossEntropyShape {
  int64_t rows = 0, hidden = 0, vocab = 0, vocabBegin = 0, blockVocab = 0;
  int64_t ignoreIndex = -100;
  bool vocabMajor = false;
};

/// Rows per chunk for a workspace budget (at least 1).
int64_t linear_cross_entropy_chunk_rows(const LinearCrossEntropyShape &shape);
/// Workspace bytes both phases need.
int64_t linear_cross_entropy_workspace_bytes(const LinearCrossEntropyShape &shape);

/// Statistics [3][rows] (f32: max, sum of exp, target logit) of this block.
void linear_cross_entropy_stats(Gemm &gemm, TView x, TView w, const int32_t *targets, TView mask,
                                const LinearCrossEntropyShape &shape, float *stats,
                                void *workspace, KernelError *err, cudaStream_t s);

/// dx (the block's share, to be summed over the vocabulary group) and dw
/// from combined statistics [3][rows]; dloss is a device scalar; groupCount
/// the counted rows of the token group (DeviceKernels.h).
void linear_cross_entropy_backward(Gemm &gemm, TView dloss, TView x, TView w,
                                   const int32_t *targets, TView mask,
                                   const LinearCrossEntropyShape &shape, const float *stats,
                                   const int32_t *groupCount, TView dx, TView dw,
                                   void *workspace, cudaStream_t s);

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_LINEARCROSSENTROPY_H
