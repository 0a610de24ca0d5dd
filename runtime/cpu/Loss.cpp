//===- Loss.cpp - cross-entropy losses ------------------------------------===//
//
// Both losses share one row routine (logsumexp - target logit, summed in
// double) and one reduction: per-row losses summed in row order, so the result
// does not depend on the thread count. linear_cross_entropy produces logits a
// bounded chunk of rows at a time, which keeps a GPT-2 sized vocabulary (50257)
// from needing a [tokens, vocab] buffer.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RowMath.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardc::cpu {

namespace {

/// Upper bound on the logits scratch of linear_cross_entropy, in elements.
constexpr int64_t kLogitsScratchElems = int64_t(1) << 23;
constexpr int64_t kMaxChunkRows = 256;


/// logsumexp(row) - row[target], max-subtracted, summed in double.
template <class T> double rowLoss(const T *row, int64_t vocab, int32_t target) {
  T mx = *std::max_element(row, row + vocab);
  double sum = expShiftedSum<T>(row, mx, vocab, nullptr);
  return double(mx) + std::log(sum) - double(row[target]);
}

/// losses[r] = rowLoss for counted rows, 0 for the others.
template <class T>
void rowLosses(const T *logits, const int32_t *targets, const T *mask,
               int64_t rows, int64_t vocab, int64_t ignoreIndex,
               double *losses) {
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    losses[r] = isCounted(targets, mask, r, ignoreIndex)
                    ? rowLoss(logits + r * vocab, vocab, targets[r])
                    : 0.0;
}

double meanOfCounted(const std::vector<double> &losses, int64_t count,
                     int64_t *countOut) {
  if (countOut)
    *countOut = count;
  if (count == 0)
    return 0.0;
  double total = 0.0;
  for (double l : losses)
    total += l;
  return total / double(count);
}

} // namespace

template <class T>
double cross_entropy(const T *logits, const int32_t *targets, const T *mask,
                     int64_t rows, int64_t vocab, int64_t ignoreIndex,
                     int64_t *countOut) {
  int64_t count =
      countTargets("cross_entropy", targets, mask, rows, vocab, ignoreIndex);
  std::vector<double> losses(rows, 0.0);
  if (count > 0)
    rowLosses(logits, targets, mask, rows, vocab, ignoreIndex, losses.data());
  return meanOfCounted(losses, count, countOut);
}

template <class T>
double linear_cross_entropy(const T *x, const T *w, bool wIsVocabMajor,
                            const int32_t *targets, const T *mask, int64_t rows,
                            int64_t hidden, int64_t vocab, int64_t ignoreIndex,
                            int64_t *countOut) {
  if (hidden <= 0 || vocab <= 0)
    throw rt::Error("linear_cross_entropy: hidden = " + std::to_string(hidden) +
                    " and vocab = " + std::to_string(vocab) +
                    " must be positive");
  int64_t count = countTargets("linear_cross_entropy", targets, mask, rows,
                               vocab, ignoreIndex);
  std::vector<double> losses(rows, 0.0);
  int64_t chunkRows =
      std::clamp<int64_t>(kLogitsScratchElems / vocab, 1, kMaxChunkRows);
  std::vector<T> logits(count > 0 ? std::min(chunkRows, rows) * vocab : 0);
  for (int64_t r0 = 0; count > 0 && r0 < rows; r0 += chunkRows) {
    int64_t n = std::min(chunkRows, rows - r0);
    const T *chunkMask = mask ? mask + r0 : nullptr;
    bool anyCounted = false;
    for (int64_t r = 0; r < n && !anyCounted; ++r)
      anyCounted = isCounted(targets + r0, chunkMask, r, ignoreIndex);
    if (!anyCounted)
      continue;
    gemm<T>(false, wIsVocabMajor, n, vocab, hidden, T(1), x + r0 * hidden,
            hidden, w, wIsVocabMajor ? hidden : vocab, T(0), logits.data(),
            vocab);
    rowLosses(logits.data(), targets + r0, chunkMask, n, vocab, ignoreIndex,
              losses.data() + r0);
  }
  return meanOfCounted(losses, count, countOut);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template double cross_entropy<T>(const T *, const int32_t *, const T *,      \
                                   int64_t, int64_t, int64_t, int64_t *);      \
  template double linear_cross_entropy<T>(                                     \
      const T *, const T *, bool, const int32_t *, const T *, int64_t,         \
      int64_t, int64_t, int64_t, int64_t *);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
