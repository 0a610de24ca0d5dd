//===- Kernels.h - CPU kernel library ---------------------------*- C++ -*-===//
//
// The one kernel library shared by the reference executor (`shardc run`) and
// the compiled runtime. No MLIR or LLVM dependency.
//
// Conventions:
//  - Tensors are row-major and contiguous unless a leading dimension is given.
//  - Float kernels are templates instantiated for float and double; double
//    exists for finite-difference gradient checks.
//  - Reductions (norm statistics, softmax sums, losses) accumulate in double.
//  - Elementwise kernels (add, bias_add, gelu_tanh, swiglu, rope, dropout,
//    the norms and softmax_lastdim) allow `out` to alias their first input.
//  - Kernels parallelise internally (OpenMP, threaded BLAS); call each one from
//    a single host thread at a time.
//  - Invalid arguments a user can reach (token ids, targets, shapes, rates)
//    throw shardc::rt::Error with a message that names the argument.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CPU_KERNELS_H
#define SHARDC_RUNTIME_CPU_KERNELS_H

#include <cstdint>
#include <vector>

namespace shardc::cpu {

//===----------------------------------------------------------------------===//
// Matrix multiplication (Gemm.cpp)
//===----------------------------------------------------------------------===//

/// C = alpha * op(A) * op(B) + beta * C, where op(A) is MxK and op(B) is KxN.
/// Leading dimensions are the row strides of the stored (untransposed)
/// matrices. As in BLAS, C is not read when beta == 0.
template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha,
          const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
          int64_t ldc);

/// `batch` independent gemms; matrix i of A starts at A + i * strideA, and
/// likewise for B and C. strideA or strideB may be 0 to broadcast one operand.
template <class T>
void gemm_batched(int64_t batch, bool transA, bool transB, int64_t M, int64_t N,
                  int64_t K, T alpha, const T *A, int64_t lda, int64_t strideA,
                  const T *B, int64_t ldb, int64_t strideB, T beta, T *C,
                  int64_t ldc, int64_t strideC);

//===----------------------------------------------------------------------===//
// Layout (Layout.cpp)
//===----------------------------------------------------------------------===//

/// numpy.transpose: output dimension i is input dimension perm[i].
/// Instantiated for float, double, int32_t and uint16_t (bf16/f16 storage).
template <class T>
void transpose(const T *in, T *out, const std::vector<int64_t> &inShape,
               const std::vector<int64_t> &perm);

/// out[idx] = idx[dim] + offset for every multi-index idx of `shape`. A
/// rank's block of a larger iota, split along `dim`, passes the block's start
/// as `offset`.
void iota(int32_t *out, const std::vector<int64_t> &shape, int64_t dim, int64_t offset = 0);

//===----------------------------------------------------------------------===//
// Elementwise (Elementwise.cpp)
//===----------------------------------------------------------------------===//

/// out = a + b over n elements.
template <class T> void add(const T *a, const T *b, T *out, int64_t n);

/// out[r, c] = x[r, c] + bias[c].
template <class T>
void bias_add(const T *x, const T *bias, T *out, int64_t rows, int64_t cols);

/// GELU, tanh approximation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
template <class T> void gelu_tanh(const T *x, T *out, int64_t n);

/// out = silu(gate) * up, silu(g) = g * sigmoid(g).
template <class T> void swiglu(const T *gate, const T *up, T *out, int64_t n);

/// Rotary position embedding, rotate-half convention (GPT-NeoX, HF LLaMA), on
/// x of shape [B, S, H, D]. Pair (i, i + D/2) at position s + positionOffset is
/// rotated by angle pos * theta^(-2i/D). Angles are computed in double.
template <class T>
void rope(const T *x, T *out, int64_t B, int64_t S, int64_t H, int64_t D,
          double theta, int64_t positionOffset);

/// Inverted dropout. Element i is kept iff
/// rng::uniform(seed, rng::stream_key(step, opKey), globalOffset + i) >= rate
/// and kept values are scaled by 1 / (1 - rate), so a shard holding elements
/// [globalOffset, globalOffset + n) drops exactly what the whole tensor would.
/// rate must lie in [0, 1]; rate == 0 copies, rate == 1 zeroes. The mask is
/// recomputed, never stored: the backward is this same call on the gradient.
template <class T>
void dropout(const T *x, T *out, int64_t n, double rate, uint64_t seed,
             uint64_t step, uint64_t opKey, int64_t globalOffset);

/// dropout of one rank's block of a larger tensor: x and out hold the block of
/// `shape` (row-major) that starts at `offset` in a tensor of `globalShape`.
/// Element idx draws with the global linear index
/// sum_d (idx_d + offset_d) * globalStride_d, so the blocks of a tensor split
/// along any dims drop exactly what the whole tensor drops. dropout() is the
/// one-dimensional case; a whole tensor has offsets 0 and globalShape == shape.
template <class T>
void dropout_block(const T *x, T *out, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &offset,
                   const std::vector<int64_t> &globalShape, double rate,
                   uint64_t seed, uint64_t step, uint64_t opKey);

/// out[i, :] = table[ids[i], :] for a [vocab, dim] table. Throws rt::Error
/// naming the id and its position if an id is outside [0, vocab).
template <class T>
void embedding(const T *table, const int32_t *ids, T *out, int64_t nIds,
               int64_t vocab, int64_t dim);

/// embedding with a vocabulary-parallel shard of the table: `block` holds the
/// rows [rowBegin, rowBegin + rows) of a [vocab, dim] table. out[i, :] =
/// block[ids[i] - rowBegin, :] for ids inside the block and zeros for the
/// others (summing the blocks' outputs gives embedding()). Ids are checked
/// against the whole vocabulary [0, vocab). embedding() is the block
/// rowBegin = 0, rows = vocab.
template <class T>
void embedding_block(const T *block, const int32_t *ids, T *out, int64_t nIds,
                     int64_t vocab, int64_t rowBegin, int64_t rows, int64_t dim);

//===----------------------------------------------------------------------===//
// Normalisation and softmax (Norm.cpp)
//===----------------------------------------------------------------------===//

/// torch.nn.LayerNorm over the last dimension (biased variance). mean and
/// rstd, if non-null, receive one value per row for the backward pass.
template <class T>
void layernorm_forward(const T *x, const T *gamma, const T *beta, T *out,
                       T *mean, T *rstd, int64_t rows, int64_t cols,
                       double eps);

/// LLaMA RMSNorm: out = x * rsqrt(mean(x^2) + eps) * gamma. rstd, if non-null,
/// receives one value per row.
template <class T>
void rmsnorm_forward(const T *x, const T *gamma, T *out, T *rstd, int64_t rows,
                     int64_t cols, double eps);

/// Max-subtracted softmax over the last dimension.
template <class T>
void softmax_lastdim(const T *x, T *out, int64_t rows, int64_t cols);

//===----------------------------------------------------------------------===//
// Attention (Attention.cpp)
//===----------------------------------------------------------------------===//

/// Where one of attention's per-head tensors (q, k or v, and its gradient)
/// lies: head h of sequence row i of batch b starts at element
///   (b * rows + i) * rowStride + offset + (h / group) * groupStride + (h % group) * D
/// for a tensor of `rows` sequence rows. rowStride = 0 is dense [B, rows, H, D].
struct AttentionHeads {
  int64_t rowStride = 0, offset = 0, group = 1, groupStride = 0;

  /// This layout, or dense for H heads of size D when rowStride = 0.
  AttentionHeads orDense(int64_t H, int64_t D) const {
    return rowStride ? *this : AttentionHeads{H * D, 0, 1, D};
  }
  int64_t head(int64_t h, int64_t D) const {
    return offset + (h / group) * groupStride + (h % group) * D;
  }
};

/// The layouts of q (and dq), k (dk) and v (dv); out and dout are always
/// dense [B, S, Hq, D]. The default is dense throughout.
struct AttentionLayout {
  AttentionHeads q, k, v;

  /// q, k and v read in place from one [B, S, Hkv, G + 2, D] tensor
  /// (Megatron's grouped QKV, xf.packed_attention): kv head g holds its G
  /// query heads (query head h = g * G + j), then its k, then its v.
  static AttentionLayout packedQkv(int64_t Hkv, int64_t G, int64_t D) {
    const int64_t slots = (G + 2) * D, row = Hkv * slots;
    return {{row, 0, G, slots}, {row, G * D, 1, slots}, {row, (G + 1) * D, 1, slots}};
  }
};

/// Checks the shapes of an attention call (`kernel` names it in the error:
/// kv heads dividing the query heads, the query rows a block of the Skv keys,
/// the rows the GEMMs get within BLAS's integer range) and returns `layout`
/// with every dense default filled in. Skv = 0 becomes S.
AttentionLayout checkedAttentionLayout(const char *kernel, int64_t B, int64_t S, int64_t Hq,
                                       int64_t Hkv, int64_t D, int64_t &Skv, int64_t qOffset,
                                       const AttentionLayout &layout);

/// Scaled dot-product attention, BSHD layout: q and out are [B, S, Hq, D], k
/// and v are [B, S, Hkv, D]; query head h reads kv head h / (Hq / Hkv). With
/// `causal`, key j is masked for query i when j > i. lse, if non-null, receives
/// the [B, Hq, S] log-sum-exp of the scaled, masked scores.
/// A block of the query rows: q and out hold S rows, global rows
/// [qOffset, qOffset + S) of a sequence of Skv keys (k and v are
/// [B, Skv, Hkv, D]); Skv = 0 means S (the whole sequence).
/// `layout` places q, k and v elsewhere than dense (the same GEMMs with other
/// leading dimensions: bit-identical to the dense copies).
template <class T>
void attention_forward(const T *q, const T *k, const T *v, T *out, T *lse,
                       int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                       bool causal, double scale, int64_t Skv = 0, int64_t qOffset = 0,
                       const AttentionLayout &layout = {});

//===----------------------------------------------------------------------===//
// Losses (Loss.cpp)
//===----------------------------------------------------------------------===//

/// Mean over counted rows of logsumexp(logits[r]) - logits[r, targets[r]].
/// Row r is counted if targets[r] != ignoreIndex and (mask is null or
/// mask[r] != 0). Returns 0 with a count of 0 if no row is counted. Throws
/// rt::Error on a target outside [0, vocab) that is not ignoreIndex.
template <class T>
double cross_entropy(const T *logits, const int32_t *targets, const T *mask,
                     int64_t rows, int64_t vocab, int64_t ignoreIndex,
                     int64_t *countOut);

/// cross_entropy of logits = x[rows, hidden] @ W without materialising the
/// [rows, vocab] logits: W is [vocab, hidden] if wIsVocabMajor (a tied
/// embedding), else [hidden, vocab]. Rows are processed in bounded chunks.
template <class T>
double linear_cross_entropy(const T *x, const T *w, bool wIsVocabMajor,
                            const int32_t *targets, const T *mask, int64_t rows,
                            int64_t hidden, int64_t vocab, int64_t ignoreIndex,
                            int64_t *countOut);

//===----------------------------------------------------------------------===//
// Backward kernels (Backward.cpp)
//
// Each computes the vector-Jacobian product of the forward kernel of the same
// name: given dy = dL/dy it returns dL/dx. Outputs are overwritten, never
// accumulated into. Parameter gradients (dgamma, dbeta, dtable, dw) are summed
// in double in a fixed order, so results do not depend on the thread count.
//===----------------------------------------------------------------------===//

/// dx = dy * gelu_tanh'(x).
template <class T> void gelu_tanh_backward(const T *dy, const T *x, T *dx, int64_t n);

/// out = silu(gate) * up: dgate = dy * up * silu'(gate), dup = dy * silu(gate).
template <class T>
void swiglu_backward(const T *dy, const T *gate, const T *up, T *dgate, T *dup, int64_t n);

/// y = softmax(x) row-wise: dx = y * (dy - sum_j dy_j y_j). dx may alias dy.
template <class T>
void softmax_lastdim_backward(const T *dy, const T *y, T *dx, int64_t rows, int64_t cols);

/// Backward of layernorm_forward; recomputes the row statistics from x.
/// dgamma and dbeta ([cols]) are sums over rows.
template <class T>
void layernorm_backward(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma, T *dbeta,
                        int64_t rows, int64_t cols, double eps);

/// Backward of rmsnorm_forward; recomputes rstd from x.
template <class T>
void rmsnorm_backward(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma, int64_t rows,
                      int64_t cols, double eps);

/// Backward of attention_forward (same layouts and head grouping). `out` is
/// the forward result; the probabilities are recomputed from q and k. dk and
/// dv sum over the query heads that share a kv head. A block of the query
/// rows (Skv, qOffset as in attention_forward): dk and dv are that block's
/// share, to be summed over the blocks. dq, dk and dv lie as `layout` places
/// q, k and v (packedQkv: one dqkv, every element written).
template <class T>
void attention_backward(const T *dout, const T *q, const T *k, const T *v, const T *out, T *dq,
                        T *dk, T *dv, int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                        bool causal, double scale, int64_t Skv = 0, int64_t qOffset = 0,
                        const AttentionLayout &layout = {});

/// Backward of rope: the rotation by the opposite angle (the transpose).
/// dx may alias dy.
template <class T>
void rope_backward(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D, double theta,
                   int64_t positionOffset);

/// dtable[v, :] = sum of dy[i, :] over the i with ids[i] == v ([vocab, dim],
/// zero rows for unused ids). Throws rt::Error on an id outside [0, vocab).
template <class T>
void embedding_backward(const T *dy, const int32_t *ids, T *dtable, int64_t nIds, int64_t vocab,
                        int64_t dim);

/// embedding_backward for the table rows [rowBegin, rowBegin + rows) only
/// (dblock is [rows, dim]): positions whose id lies outside the block are
/// skipped. Ids are checked against [0, vocab). embedding_backward() is the
/// block rowBegin = 0, rows = vocab.
template <class T>
void embedding_backward_block(const T *dy, const int32_t *ids, T *dblock, int64_t nIds,
                              int64_t vocab, int64_t rowBegin, int64_t rows, int64_t dim);

/// Sums x (row-major, `shape`) over the dimensions listed in `dims` (sorted,
/// unique); out has the remaining dimensions in order. Accumulates in double.
template <class T>
void reduce_sum(const T *x, T *out, const std::vector<int64_t> &shape,
                const std::vector<int64_t> &dims);

/// Gradient of cross_entropy (same arguments) scaled by dloss:
/// dlogits[r] = dloss / count * (softmax(logits[r]) - onehot(targets[r])) for
/// counted rows, 0 for the others (and everywhere if count == 0).
template <class T>
void cross_entropy_backward(double dloss, const T *logits, const int32_t *targets, const T *mask,
                            T *dlogits, int64_t rows, int64_t vocab, int64_t ignoreIndex);

/// Gradients of linear_cross_entropy (same arguments) scaled by dloss, without
/// materialising the [rows, vocab] logits: chunks of rows are recomputed.
/// dx is [rows, hidden]; dw has the layout of w.
template <class T>
void linear_cross_entropy_backward(double dloss, const T *x, const T *w, bool wIsVocabMajor,
                                   const int32_t *targets, const T *mask, T *dx, T *dw,
                                   int64_t rows, int64_t hidden, int64_t vocab,
                                   int64_t ignoreIndex);

//===----------------------------------------------------------------------===//
// Vocabulary-parallel cross-entropy (Loss.cpp, Backward.cpp)
//
// The losses above, for a rank that holds only the vocabulary block
// [vocabBegin, vocabBegin + blockVocab) of a `vocab`-wide vocabulary (the
// logits' columns, or the rows/columns of the logit weight), as in
// Megatron-LM's vocabulary-parallel cross-entropy:
//  1. each rank computes per-row statistics of its block
//     (*_block_stats: row max, sum of exp(logit - max), target logit);
//  2. the ranks of the vocabulary group combine them in group order
//     (cross_entropy_combine_stats) — b*s scalars per rank, never the rows;
//  3. each rank finishes with the combined statistics: the loss
//     (cross_entropy_from_stats, the same on every rank) or its block of the
//     gradient (*_block_backward).
// The whole-vocabulary kernels above are these with vocabBegin = 0 and
// blockVocab = vocab, so both paths share one implementation.
//
// Row statistics are double arrays of `rows` entries. Rows that do not count
// (ignored target, zero mask) get 0 everywhere and are never read back.
//
// A padded vocabulary (xf's `classes`): `vocab` is then the number of
// classes, a block holds only its class columns [vocabBegin, vocabBegin +
// blockVocab) — possibly none — and `ld` (0: blockVocab) is the block's
// allocated extent: the row stride of logits/dlogits and the vocabulary
// extent of W/dW. Columns [blockVocab, ld) are padding: never read into the
// statistics, their gradients written as zeros. An empty block's counted
// rows get rowMax = -inf, rowSumExp = 0 (they add nothing when combined).
//===----------------------------------------------------------------------===//

/// Statistics of logits [rows, blockVocab], the block's columns: for counted
/// rows rowMax[r] = max_j logits[r, j] (a value of T), rowSumExp[r] = sum_j
/// exp(logits[r, j] - rowMax[r]) (exps in T, summed in double), targetLogit[r]
/// = logits[r, targets[r] - vocabBegin] if the target lies in the block, else
/// 0. Throws as cross_entropy on a target outside [0, vocab); returns the
/// number of counted rows.
template <class T>
int64_t cross_entropy_block_stats(const T *logits, const int32_t *targets, const T *mask,
                                  int64_t rows, int64_t vocab, int64_t vocabBegin,
                                  int64_t blockVocab, int64_t ignoreIndex, double *rowMax,
                                  double *rowSumExp, double *targetLogit, int64_t ld = 0);

/// The same for logits = x[rows, hidden] @ W_block: w is the block of the
/// weight, [blockVocab, hidden] if wIsVocabMajor, else [hidden, blockVocab].
/// Logits are produced in bounded chunks of rows, as in linear_cross_entropy
/// (rt::scratch::cpuLogitChunkRows(blockVocab) rows each), in `scratch` when
/// given (that many rows x blockVocab elements), else in memory of its own.
template <class T>
int64_t linear_cross_entropy_block_stats(const T *x, const T *w, bool wIsVocabMajor,
                                         const int32_t *targets, const T *mask, int64_t rows,
                                         int64_t hidden, int64_t vocab, int64_t vocabBegin,
                                         int64_t blockVocab, int64_t ignoreIndex,
                                         double *rowMax, double *rowSumExp,
                                         double *targetLogit, int64_t ld = 0,
                                         T *scratch = nullptr);

/// Combines the statistics of `blocks` vocabulary blocks (block b's arrays
/// are rowMax[b], rowSumExp[b], targetLogit[b]) in block order:
/// max = max_b max_b[r], sumExp = sum_b sumExp_b[r] * exp(max_b[r] - max),
/// target = sum_b target_b[r]. Combining one block returns it unchanged.
/// The outputs may alias the inputs of block 0; targetLogit and outTarget may
/// be null (the backward needs no target logit).
void cross_entropy_combine_stats(int64_t blocks, const double *const *rowMax,
                                 const double *const *rowSumExp,
                                 const double *const *targetLogit, int64_t rows,
                                 double *outMax, double *outSumExp, double *outTarget);

/// The loss from combined statistics: the mean over counted rows of
/// rowMax + log(rowSumExp) - targetLogit, summed in row order; 0 with a count
/// of 0 if no row counts.
template <class T>
double cross_entropy_from_stats(const double *rowMax, const double *rowSumExp,
                                const double *targetLogit, const int32_t *targets,
                                const T *mask, int64_t rows, int64_t ignoreIndex,
                                int64_t *countOut);

/// The block of cross_entropy_backward given the combined statistics of each
/// row (lse = rowMax + log(rowSumExp)): for counted rows dlogits[r, j] =
/// dloss / count * (exp(logits[r, j] - lse[r]) - [targets[r] == vocabBegin + j]),
/// 0 for the others; count is over all rows. With rowMax and rowSumExp null
/// the block must be the whole vocabulary and each row's statistics are
/// computed from the row itself (this is cross_entropy_backward).
template <class T>
void cross_entropy_block_backward(double dloss, const T *logits, const int32_t *targets,
                                  const T *mask, const double *rowMax, const double *rowSumExp,
                                  T *dlogits, int64_t rows, int64_t vocab, int64_t vocabBegin,
                                  int64_t blockVocab, int64_t ignoreIndex, int64_t ld = 0);

/// The block of linear_cross_entropy_backward given the combined statistics
/// (or null statistics for the whole vocabulary, as above): with dlogits the
/// block's logit gradient, dx = dlogits @ W_block^T — the block's share of
/// dx, to be summed over the vocabulary group — and dw = the gradient of the
/// weight block (layout of w).
template <class T>
void linear_cross_entropy_block_backward(double dloss, const T *x, const T *w,
                                         bool wIsVocabMajor, const int32_t *targets,
                                         const T *mask, const double *rowMax,
                                         const double *rowSumExp, T *dx, T *dw, int64_t rows,
                                         int64_t hidden, int64_t vocab, int64_t vocabBegin,
                                         int64_t blockVocab, int64_t ignoreIndex,
                                         int64_t ld = 0, T *scratch = nullptr);

//===----------------------------------------------------------------------===//
// Optimizer (Optimizer.cpp)
//===----------------------------------------------------------------------===//

/// out = x * factor over n elements (out may alias x).
template <class T> void scale(const T *x, T *out, int64_t n, double factor);

/// Sum of squares of n elements, accumulated in double in a fixed order.
template <class T> double sum_squares(const T *x, int64_t n);

/// True iff every one of the n elements is finite.
template <class T> bool all_finite(const T *x, int64_t n);

/// One AdamW update in place (torch.optim.AdamW semantics), with the gradient
/// multiplied by gradScale first (clipping and loss-scale removal):
///   g = gradScale * grad;  param *= 1 - lr * weightDecay
///   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
///   param -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
/// where t = step >= 1 is the number of this update. Arithmetic in double.
template <class T>
void adamw(T *param, const T *grad, T *m, T *v, int64_t n, double lr, double beta1,
           double beta2, double eps, double weightDecay, int64_t step, double gradScale);

/// Learning rate after `step` completed updates (0-based): linear warm-up
/// lr * (step + 1) / warmup for step < warmup, then cosine decay from lr to
/// minLr reached at step == decaySteps, minLr after that. warmup == 0 starts
/// the cosine at once; decaySteps <= warmup holds lr after the warm-up.
double lr_schedule(int64_t step, double lr, double minLr, int64_t warmup, int64_t decaySteps);

//===----------------------------------------------------------------------===//
// Casts (Cast.cpp)
//===----------------------------------------------------------------------===//

/// float -> bfloat16, round to nearest even; NaN stays NaN (quiet), overflow
/// rounds to infinity.
uint16_t f32_to_bf16(float x);
/// bfloat16 -> float (exact).
float bf16_to_f32(uint16_t x);
/// float -> IEEE binary16, round to nearest even, with subnormals; overflow
/// (|x| >= 65520) gives infinity and NaN stays NaN (quiet).
uint16_t f32_to_f16(float x);
/// IEEE binary16 -> float (exact).
float f16_to_f32(uint16_t x);

void cast_f32_to_bf16(const float *in, uint16_t *out, int64_t n);
void cast_bf16_to_f32(const uint16_t *in, float *out, int64_t n);
void cast_f32_to_f16(const float *in, uint16_t *out, int64_t n);
void cast_f16_to_f32(const uint16_t *in, float *out, int64_t n);

} // namespace shardc::cpu

#endif // SHARDC_RUNTIME_CPU_KERNELS_H
