//===- LossInternal.h - general forms of the cross-entropy kernels -*- C++ -*-===//
//
// Internal to runtime/cuda (Loss.cu, LinearCrossEntropy.cpp): the launchers
// behind the cross-entropy kernels of DeviceKernels.h with the extra freedom
// the chunked linear cross-entropy needs: a row stride (a chunk of columns of
// the logits), statistics merged into those of earlier column chunks, an
// offset for error positions (a chunk of rows) and a precomputed denominator.
// The DeviceKernels.h launchers are these with ld = blockVocab, merge =
// false, positionOffset = 0.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_LOSSINTERNAL_H
#define SHARDC_RUNTIME_CUDA_LOSSINTERNAL_H

#include "runtime/cuda/DeviceKernels.h"

namespace shardc::cuda::detail {

/// A view `elements` elements further on (a row offset into targets/mask).
inline TView offsetView(TView v, int64_t elements) {
  if (v.p)
    v.p = static_cast<char *>(v.p) + elements * rt::dtype_size(v.dtype);
  return v;
}

/// cross_entropy_block_stats over logits rows of stride `ld` (elements)
/// holding the vocabulary columns [vocabBegin, vocabBegin + n). With `merge`
/// the result is combined (max, rescaled sum of exp, summed target) into the
/// statistics already in rowMax/rowSumExp/targetLogit (an earlier chunk of
/// columns of the same rows); rows that do not count are then left alone.
/// Bad targets report position positionOffset + row.
void ce_stats(TView logits, int64_t ld, const int32_t *targets, TView mask, int64_t rows,
              int64_t vocab, int64_t vocabBegin, int64_t n, int64_t ignoreIndex, float *rowMax,
              float *rowSumExp, float *targetLogit, bool merge, int64_t positionOffset,
              KernelError *err, cudaStream_t s);

/// cross_entropy_block_grad over logits of row stride ldIn writing dlogits
/// of row stride ldOut (may alias logits when the dtypes and strides agree),
/// columns [vocabBegin, vocabBegin + n): counted rows get
/// dloss / denom * (exp(x - rowMax) / rowSumExp - onehot), others 0, where
/// denom = *denom, or the number of counted rows of this call when denom is
/// null; denom == 0 gives zeros.
void ce_grad(TView dloss, TView logits, int64_t ldIn, const int32_t *targets, TView mask,
             const float *rowMax, const float *rowSumExp, const int32_t *denom, TView dlogits,
             int64_t ldOut, int64_t rows, int64_t vocabBegin, int64_t n, int64_t ignoreIndex,
             cudaStream_t s);

/// Zeroes columns [from, ld) of `rows` rows of stride ld (a padded
/// vocabulary's dlogits); nothing when from >= ld.
void zero_columns(TView m, int64_t rows, int64_t ld, int64_t from, cudaStream_t s);

/// out[i] = in[i] rounded to out's float dtype (nearest even), n elements.
void cast_from_f32(const float *in, TView out, int64_t n, cudaStream_t s);

} // namespace shardc::cuda::detail

#endif // SHARDC_RUNTIME_CUDA_LOSSINTERNAL_H
