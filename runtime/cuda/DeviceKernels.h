//===- DeviceKernels.h - the CUDA backend's kernel library ------*- C++ -*-===//
//
// Host-side launchers of the CUDA backend's own kernels (runtime/cuda/*.cu).
// They mirror the CPU kernel library (runtime/cpu/Kernels.h) op for op: the
// CPU kernels are the reference every kernel here is tested against
// (test/cuda).
//
// Conventions:
//  - Every pointer is device memory; every launcher is asynchronous on the
//    stream it is given and allocates nothing (scratch comes from the
//    caller, sized by the *_workspace_bytes functions).
//  - A tensor is a TView: its address and storage dtype. Float storage is
//    f32, bf16 or f16 (f64 is not run on the GPU); kernels load into f32,
//    compute in f32 (reductions too, in a fixed order per launch) and round
//    once into the result's dtype, as the CPU backend does per op.
//  - Operands of one call may have different float dtypes (mixed precision:
//    bf16 activations, f32 gamma): loads switch on the dtype, a branch that
//    is uniform across a warp.
//  - Elementwise kernels, the norms, softmax and rope allow `out` to alias
//    their first input (the memory planner reuses dying buffers).
//  - User-reachable bad values found on the device (a token id outside the
//    vocabulary) set *err (the first one wins); the backend reads it after
//    the step and reports the call.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_DEVICEKERNELS_H
#define SHARDC_RUNTIME_CUDA_DEVICEKERNELS_H

#include "runtime/HostTensor.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace shardc::cuda {

using rt::DType;

/// A device tensor: address and storage dtype.
struct TView {
  void *p = nullptr;
  DType dtype = DType::F32;
};

/// A small shape or index list passed by value to kernels.
struct Dims {
  static constexpr int kMax = 8;
  int rank = 0;
  int64_t d[kMax] = {};
};

/// The first bad value a kernel met (device memory, zero when none).
struct KernelError {
  int code = 0; ///< KernelErrorCode
  int pad = 0;
  long long position = 0; ///< element index (a token's position)
  long long value = 0;    ///< the bad value (the id or target)
  long long limit = 0;    ///< the bound it broke (the vocabulary size)
};
enum KernelErrorCode : int { kNoError = 0, kBadTokenId = 1, kBadTarget = 2 };

/// The per-step scalars kernels read from device memory, so that a captured
/// CUDA graph replays with the current step's values.
struct StepScalars {
  unsigned long long seed = 0; ///< dropout seed
  unsigned long long step = 0; ///< training step (part of dropout's stream)
};

//===----------------------------------------------------------------------===//
// Elementwise (Elementwise.cu)
//===----------------------------------------------------------------------===//

void add(TView a, TView b, TView out, int64_t n, cudaStream_t s);
/// out[r, c] = x[r, c] + bias[c].
void bias_add(TView x, TView bias, TView out, int64_t rows, int64_t cols, cudaStream_t s);
/// GELU, tanh approximation.
void gelu(TView x, TView out, int64_t n, cudaStream_t s);
void gelu_grad(TView dy, TView x, TView dx, int64_t n, cudaStream_t s);
/// out = silu(gate) * up.
void swiglu(TView gate, TView up, TView out, int64_t n, cudaStream_t s);
void swiglu_grad(TView dy, TView gate, TView up, TView dgate, TView dup, int64_t n,
                 cudaStream_t s);
void scale(TView x, TView out, int64_t n, double factor, cudaStream_t s);
void fill(TView out, int64_t n, double value, cudaStream_t s);
/// Any float dtype to any float dtype (round to nearest even).
void cast(TView x, TView out, int64_t n, cudaStream_t s);
/// dropout_block of Kernels.h: element idx of the block `shape` at `offset` in
/// a tensor of `global` draws at its global row-major index with seed and
/// step read from *scalars; kept values are scaled by 1 / (1 - rate).
void dropout(TView x, TView out, const Dims &shape, const Dims &offset, const Dims &global,
             double rate, const StepScalars *scalars, uint64_t opKey, cudaStream_t s);
/// out[idx] = idx[dim] + offset (i32).
void iota(int32_t *out, const Dims &shape, int dim, int64_t offset, cudaStream_t s);
/// numpy.transpose of elements of elemBytes (2, 4 or 8) bytes.
void transpose(const void *in, void *out, int64_t elemBytes, const Dims &inShape,
               const Dims &perm, cudaStream_t s);
/// embedding_block of Kernels.h; ids outside [0, vocab) set err (kBadTokenId).
void embedding(TView block, const int32_t *ids, TView out, int64_t nIds, int64_t vocab,
               int64_t rowBegin, int64_t rows, int64_t dim, KernelError *err, cudaStream_t s);
/// embedding_backward_block of Kernels.h, deterministic: the tokens are
/// stably sorted by row (CUB radix sort in `workspace`), then each row sums
/// its tokens' dy rows in token order in f32 and rounds once into dblock.
/// Bitwise reproducible (no float atomics), so CUDA-graph replays equal eager
/// launches.
void embedding_grad(TView dy, const int32_t *ids, TView dblock, int64_t nIds, int64_t vocab,
                    int64_t rowBegin, int64_t rows, int64_t dim, void *workspace,
                    KernelError *err, cudaStream_t s);
int64_t embedding_grad_workspace_bytes(int64_t nIds, int64_t rows);
/// Sums x (of `shape`) over the dims whose bit is set in `dimMask`.
void reduce_sum(TView x, TView out, const Dims &shape, uint32_t dimMask, cudaStream_t s);

//===----------------------------------------------------------------------===//
// Normalisation, softmax, rope (Norm.cu)
//===----------------------------------------------------------------------===//

void softmax(TView x, TView out, int64_t rows, int64_t cols, cudaStream_t s);
void softmax_grad(TView dy, TView y, TView dx, int64_t rows, int64_t cols, cudaStream_t s);
/// LayerNorm over the last dim. With residual.p non-null the kernel first
/// forms h = x + residual and, with residualOut.p non-null, stores h there
/// (the fused residual-add + layernorm of a pre-norm block).
void layernorm(TView x, TView residual, TView gamma, TView beta, TView out, TView residualOut,
               int64_t rows, int64_t cols, double eps, cudaStream_t s);
/// Backward of layernorm (recomputes the row statistics); dgamma/dbeta are
/// summed over rows through `workspace`. With dresidual.p non-null, dx is the
/// gradient plus dresidual (rounded once; dx may be dresidual itself).
void layernorm_grad(TView dy, TView x, TView gamma, TView dx, TView dgamma, TView dbeta,
                    int64_t rows, int64_t cols, double eps, void *workspace, cudaStream_t s,
                    TView dresidual = TView{});
int64_t layernorm_grad_workspace_bytes(int64_t rows, int64_t cols);
void rmsnorm(TView x, TView residual, TView gamma, TView out, TView residualOut, int64_t rows,
             int64_t cols, double eps, cudaStream_t s);
void rmsnorm_grad(TView dy, TView x, TView gamma, TView dx, TView dgamma, int64_t rows,
                  int64_t cols, double eps, void *workspace, cudaStream_t s,
                  TView dresidual = TView{});
int64_t rmsnorm_grad_workspace_bytes(int64_t rows, int64_t cols);
/// Rotary embedding on [B, S, H, D] (rotate-half); `inverse` rotates by the
/// opposite angle (the backward). Positions start at positionOffset.
void rope(TView x, TView out, int64_t B, int64_t S, int64_t H, int64_t D, double theta,
          int64_t positionOffset, bool inverse, cudaStream_t s);

//===----------------------------------------------------------------------===//
// Attention (Attention.cu)
//===----------------------------------------------------------------------===//

/// Flash-style attention, BSHD: q/out [B, S, Hq, D], k/v [B, S, Hkv, D]
/// (query head h reads kv head h / (Hq / Hkv)); never materialises S x S.
/// q, k, v and out share one dtype; lse (nullable) receives [B, Hq, S] f32.
void attention_forward(TView q, TView k, TView v, TView out, float *lse, int64_t B, int64_t S,
                       int64_t Hq, int64_t Hkv, int64_t D, bool causal, double scale,
                       cudaStream_t s);
/// Backward: recomputes the probabilities tile by tile from q, k and lse
/// (computed into the workspace from q, k when not given).
void attention_backward(TView dout, TView q, TView k, TView v, TView out, TView dq, TView dk,
                        TView dv, int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                        bool causal, double scale, void *workspace, cudaStream_t s);
int64_t attention_backward_workspace_bytes(int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                                           int64_t D);
/// The largest head size the kernels support.
constexpr int64_t kMaxAttentionHeadDim = 128;

//===----------------------------------------------------------------------===//
// Optimizer (Optimizer.cu)
//===----------------------------------------------------------------------===//

/// *out = sum of squares of x (f32 result, accumulated in f32 per block and
/// the block sums in double, in a fixed order).
void sum_squares(TView x, int64_t n, float *out, void *workspace, cudaStream_t s);
int64_t sum_squares_workspace_bytes(int64_t n);
/// *out = the sum of squares of every xs[i] (ns[i] elements): each tensor's
/// blocks as sum_squares's, all block sums added in double in one fixed
/// order, rounded once.
void sum_squares_multi(const TView *xs, const int64_t *ns, int count, float *out,
                       void *workspace, cudaStream_t s);
int64_t sum_squares_multi_workspace_bytes(const int64_t *ns, int count);

/// One tensor of a multi-tensor AdamW launch (device addresses).
struct AdamWTensor {
  void *param, *grad, *m, *v; ///< results param/m/v updated in place
  int64_t n;
  DType paramType, gradType, mType, vType;
  int32_t decays;  ///< 1: decoupled weight decay applies; 0: none (biases, norms)
  DType copyType;  ///< of `copy`
  void *copy;      ///< null, or where the new parameter goes rounded (bf16/f16 copy)
};
/// Scalars of an AdamW launch: device addresses of f32/i32 scalars.
struct AdamWScalars {
  TView lr, gradScale, step, skip; ///< skip.p may be null
};
/// One launch updates `count` tensors (the descriptors in device memory):
/// torch.optim.AdamW with the gradient multiplied by gradScale first,
/// t = step + 1, skipped entirely when *skip != 0 (the copies are still
/// written, from the unchanged parameters). Arithmetic in f32 with the bias
/// corrections in double on the host side of each thread.
void adamw_multi(const AdamWTensor *tensors, int count, int64_t maxN, AdamWScalars scalars,
                 double beta1, double beta2, double eps, double weightDecay, cudaStream_t s);

/// The step scalars of Kernels.h's scalar ops, on one thread.
void lr_schedule(TView step, float *out, double lr, double minLr, int64_t warmup,
                 int64_t decaySteps, cudaStream_t s);
void clip_grad_norm(TView sumsq, TView scale, float *norm, float *coef, float *overflow,
                    double maxNorm, cudaStream_t s);
void count_step(TView step, TView skip, int32_t *out, cudaStream_t s);
void loss_scale_update(TView scale, TView good, TView overflow, float *outScale,
                       int32_t *outGood, int64_t window, double factor, double minScale,
                       cudaStream_t s);

//===----------------------------------------------------------------------===//
// Cross-entropy (Loss.cu), vocabulary-parallel as in Kernels.h
//===----------------------------------------------------------------------===//

/// Row statistics of logits [rows, blockVocab] (the block's columns): f32
/// rowMax, rowSumExp, targetLogit (see cross_entropy_block_stats). Rows that
/// do not count get zeros. Bad targets set err (kBadTarget).
void cross_entropy_block_stats(TView logits, const int32_t *targets, TView mask, int64_t rows,
                               int64_t vocab, int64_t vocabBegin, int64_t blockVocab,
                               int64_t ignoreIndex, float *rowMax, float *rowSumExp,
                               float *targetLogit, KernelError *err, cudaStream_t s);
/// Combines `blocks` statistics laid out [block][3][rows] in block order into
/// out [3][rows] (may alias block 0).
void cross_entropy_combine_stats(const float *stats, int64_t blocks, int64_t rows, float *out,
                                 cudaStream_t s);
/// Per-row counted flags summed: *count = number of counted rows (i32).
void cross_entropy_count(const int32_t *targets, TView mask, int64_t rows, int64_t ignoreIndex,
                         int32_t *count, cudaStream_t s);
/// The loss from combined stats [3][rows]: share * mean over counted rows of
/// max + log(sumExp) - target, with the count of counted rows of the whole
/// token group from *groupCount (nullable: this rank's rows only) and share
/// = localCount / groupCount as in KernelRunner.
void cross_entropy_loss(const float *stats, const int32_t *targets, TView mask, int64_t rows,
                        int64_t ignoreIndex, const int32_t *groupCount, TView loss,
                        cudaStream_t s);
/// dlogits of the block in place of / from logits: dloss / groupCount *
/// (exp(logit - lse) - onehot); lse from stats [3][rows] (combined).
/// dloss is a device scalar.
void cross_entropy_block_grad(TView dloss, TView logits, const int32_t *targets, TView mask,
                              const float *stats, const int32_t *groupCount, TView dlogits,
                              int64_t rows, int64_t vocabBegin, int64_t blockVocab,
                              int64_t ignoreIndex, cudaStream_t s);

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_DEVICEKERNELS_H
