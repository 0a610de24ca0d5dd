//===- Loss.cpp - cross-entropy losses ------------------------------------===//
//
// Both losses share one row routine (the statistics max, sum of exp(x - max)
// in double and target logit of a vocabulary block) and one reduction: per-row
// losses max + log(sum) - target summed in row order, so the result does not
// depend on the thread count. The whole-vocabulary losses are the
// vocabulary-parallel path with one block covering the vocabulary.
// linear_cross_entropy produces logits a bounded chunk of rows at a time,
// which keeps a GPT-2 sized vocabulary (50257) from needing a [tokens, vocab]
// buffer.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RowMath.h"
#include "runtime/program/KernelScratch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace shardc::cpu {

namespace {


/// Statistics of the counted rows of logits [rows, blockVocab] (row stride
/// ld), the block starting at vocabBegin: max, sum of exp(x - max) (summed in
/// double) and the target logit if the target is in the block; zeros for the
/// other rows. An empty block (all padding): -inf, 0, 0.
template <class T>
void rowStats(const T *logits, int64_t ld, const int32_t *targets, const T *mask,
              int64_t rows, int64_t vocabBegin, int64_t blockVocab,
              int64_t ignoreIndex, double *rowMax, double *rowSumExp,
              double *targetLogit) {
#pragma omp parallel for schedule(static) if (rows * blockVocab >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    if (!isCounted(targets, mask, r, ignoreIndex)) {
      rowMax[r] = rowSumExp[r] = targetLogit[r] = 0.0;
      continue;
    }
    if (blockVocab == 0) {
      rowMax[r] = -std::numeric_limits<double>::infinity();
      rowSumExp[r] = targetLogit[r] = 0.0;
      continue;
    }
    const T *row = logits + r * ld;
    T mx = *std::max_element(row, row + blockVocab);
    rowMax[r] = double(mx);
    rowSumExp[r] = expShiftedSum<T>(row, mx, blockVocab, nullptr);
    int64_t t = int64_t(targets[r]) - vocabBegin;
    targetLogit[r] = t >= 0 && t < blockVocab ? double(row[t]) : 0.0;
  }
}

/// The whole-vocabulary loss of a stats kernel: statistics, then the mean.
template <class T, class Stats>
double lossOf(const int32_t *targets, const T *mask, int64_t rows,
              int64_t ignoreIndex, int64_t *countOut, Stats stats) {
  std::vector<double> mx(rows), sumExp(rows), target(rows);
  stats(mx.data(), sumExp.data(), target.data());
  return cross_entropy_from_stats(mx.data(), sumExp.data(), target.data(),
                                  targets, mask, rows, ignoreIndex, countOut);
}

} // namespace

template <class T>
int64_t cross_entropy_block_stats(const T *logits, const int32_t *targets,
                                  const T *mask, int64_t rows, int64_t vocab,
                                  int64_t vocabBegin, int64_t blockVocab,
                                  int64_t ignoreIndex, double *rowMax,
                                  double *rowSumExp, double *targetLogit,
                                  int64_t ld) {
  ld = checkVocabBlock("cross_entropy", vocab, vocabBegin, blockVocab, rowMax,
                       rowSumExp, ld);
  int64_t count =
      countTargets("cross_entropy", targets, mask, rows, vocab, ignoreIndex);
  if (count > 0) {
    rowStats(logits, ld, targets, mask, rows, vocabBegin, blockVocab,
             ignoreIndex, rowMax, rowSumExp, targetLogit);
  } else {
    std::fill(rowMax, rowMax + rows, 0.0);
    std::fill(rowSumExp, rowSumExp + rows, 0.0);
    std::fill(targetLogit, targetLogit + rows, 0.0);
  }
  return count;
}

template <class T>
int64_t linear_cross_entropy_block_stats(
    const T *x, const T *w, bool wIsVocabMajor, const int32_t *targets,
    const T *mask, int64_t rows, int64_t hidden, int64_t vocab,
    int64_t vocabBegin, int64_t blockVocab, int64_t ignoreIndex,
    double *rowMax, double *rowSumExp, double *targetLogit, int64_t ld, T *scratch) {
  if (hidden <= 0 || vocab <= 0)
    throw rt::Error("linear_cross_entropy: hidden = " + std::to_string(hidden) +
                    " and vocab = " + std::to_string(vocab) +
                    " must be positive");
  ld = checkVocabBlock("linear_cross_entropy", vocab, vocabBegin, blockVocab,
                       rowMax, rowSumExp, ld);
  int64_t count = countTargets("linear_cross_entropy", targets, mask, rows,
                               vocab, ignoreIndex);
  std::fill(rowMax, rowMax + rows, 0.0);
  std::fill(rowSumExp, rowSumExp + rows, 0.0);
  std::fill(targetLogit, targetLogit + rows, 0.0);
  int64_t bv = blockVocab;
  if (bv == 0) { // all padding: only the counted rows' empty statistics
    rowStats<T>(nullptr, 0, targets, mask, rows, vocabBegin, 0, ignoreIndex,
                rowMax, rowSumExp, targetLogit);
    return count;
  }
  // Only the class columns are multiplied: W's first bv rows (vocab-major)
  // or columns (hidden-major, row stride ld).
  int64_t ldw = wIsVocabMajor ? hidden : ld;
  int64_t chunkRows = rt::scratch::cpuLogitChunkRows(bv);
  std::vector<T> own(count > 0 && !scratch ? std::min(chunkRows, rows) * bv : 0);
  T *logits = scratch ? scratch : own.data();
  for (int64_t r0 = 0; count > 0 && r0 < rows; r0 += chunkRows) {
    int64_t n = std::min(chunkRows, rows - r0);
    const T *chunkMask = mask ? mask + r0 : nullptr;
    bool anyCounted = false;
    for (int64_t r = 0; r < n && !anyCounted; ++r)
      anyCounted = isCounted(targets + r0, chunkMask, r, ignoreIndex);
    if (!anyCounted)
      continue;
    gemm<T>(false, wIsVocabMajor, n, bv, hidden, T(1), x + r0 * hidden, hidden,
            w, ldw, T(0), logits, bv);
    rowStats(logits, bv, targets + r0, chunkMask, n, vocabBegin, bv,
             ignoreIndex, rowMax + r0, rowSumExp + r0, targetLogit + r0);
  }
  return count;
}

void cross_entropy_combine_stats(int64_t blocks, const double *const *rowMax,
                                 const double *const *rowSumExp,
                                 const double *const *targetLogit, int64_t rows,
                                 double *outMax, double *outSumExp,
                                 double *outTarget) {
  if (blocks <= 0)
    throw rt::Error("cross_entropy_combine_stats: no blocks to combine");
  for (int64_t r = 0; r < rows; ++r) {
    double mx = rowMax[0][r];
    for (int64_t b = 1; b < blocks; ++b)
      mx = std::max(mx, rowMax[b][r]);
    double sum = 0.0, target = 0.0;
    for (int64_t b = 0; b < blocks; ++b) {
      sum += rowSumExp[b][r] * std::exp(rowMax[b][r] - mx);
      if (targetLogit)
        target += targetLogit[b][r];
    }
    outMax[r] = mx;
    outSumExp[r] = sum;
    if (outTarget)
      outTarget[r] = target;
  }
}

template <class T>
double cross_entropy_from_stats(const double *rowMax, const double *rowSumExp,
                                const double *targetLogit,
                                const int32_t *targets, const T *mask,
                                int64_t rows, int64_t ignoreIndex,
                                int64_t *countOut) {
  int64_t count = 0;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    if (!isCounted(targets, mask, r, ignoreIndex))
      continue;
    total += rowMax[r] + std::log(rowSumExp[r]) - targetLogit[r];
    ++count;
  }
  if (countOut)
    *countOut = count;
  return count == 0 ? 0.0 : total / double(count);
}

template <class T>
double cross_entropy(const T *logits, const int32_t *targets, const T *mask,
                     int64_t rows, int64_t vocab, int64_t ignoreIndex,
                     int64_t *countOut) {
  return lossOf(targets, mask, rows, ignoreIndex, countOut,
                [&](double *mx, double *sumExp, double *target) {
                  cross_entropy_block_stats(logits, targets, mask, rows, vocab,
                                            0, vocab, ignoreIndex, mx, sumExp,
                                            target);
                });
}

template <class T>
double linear_cross_entropy(const T *x, const T *w, bool wIsVocabMajor,
                            const int32_t *targets, const T *mask, int64_t rows,
                            int64_t hidden, int64_t vocab, int64_t ignoreIndex,
                            int64_t *countOut) {
  return lossOf(targets, mask, rows, ignoreIndex, countOut,
                [&](double *mx, double *sumExp, double *target) {
                  linear_cross_entropy_block_stats(
                      x, w, wIsVocabMajor, targets, mask, rows, hidden, vocab,
                      0, vocab, ignoreIndex, mx, sumExp, target);
                });
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template double cross_entropy<T>(const T *, const int32_t *, const T *,      \
                                   int64_t, int64_t, int64_t, int64_t *);      \
  template double linear_cross_entropy<T>(                                     \
      const T *, const T *, bool, const int32_t *, const T *, int64_t,         \
      int64_t, int64_t, int64_t, int64_t *);                                 \
  template int64_t cross_entropy_block_stats<T>(                               \
      const T *, const int32_t *, const T *, int64_t, int64_t, int64_t,        \
      int64_t, int64_t, double *, double *, double *, int64_t);                \
  template int64_t linear_cross_entropy_block_stats<T>(                        \
      const T *, const T *, bool, const int32_t *, const T *, int64_t,         \
      int64_t, int64_t, int64_t, int64_t, int64_t, double *, double *,         \
      double *, int64_t, T *);                                                      \
  template double cross_entropy_from_stats<T>(                                 \
      const double *, const double *, const double *, const int32_t *,         \
      const T *, int64_t, int64_t, int64_t *);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
