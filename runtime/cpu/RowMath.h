//===- RowMath.h - shared row reductions for the CPU kernels ----*- C++ -*-===//
//
// Internal to runtime/cpu. The exp-and-sum at the heart of softmax, attention
// and cross-entropy, and the losses' row selection, written once. A naive `sum += exp(x[j])` loop keeps the
// sum in memory across every libm call (calls clobber all vector registers),
// which makes the store-to-load latency, not exp, the bottleneck; computing a
// block of exps first and then summing with independent accumulators runs
// about twice as fast.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CPU_ROWMATH_H
#define SHARDC_RUNTIME_CPU_ROWMATH_H

#include "runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace shardc::cpu {

/// Returns the sum over j of exp(x[j] - shift), each exp in T and the sum in
/// double, in a fixed order. If `out` is non-null it receives the exps; it may
/// be `x` itself.
template <class T>
double expShiftedSum(const T *x, T shift, int64_t n, T *out) {
  constexpr int64_t kBlock = 256;
  T buf[kBlock];
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    int64_t len = std::min(kBlock, n - j0);
    for (int64_t t = 0; t < len; ++t)
      buf[t] = std::exp(x[j0 + t] - shift);
    if (out)
      std::copy(buf, buf + len, out + j0);
    int64_t t = 0;
    for (; t + 4 <= len; t += 4)
      for (int lane = 0; lane < 4; ++lane)
        acc[lane] += double(buf[t + lane]);
    for (; t < len; ++t)
      acc[0] += double(buf[t]);
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/// Whether loss row r counts: its target is not the ignore index and its
/// mask (if any) is non-zero.
template <class T>
bool isCounted(const int32_t *targets, const T *mask, int64_t r, int64_t ignoreIndex) {
  return targets[r] != ignoreIndex && (!mask || mask[r] != T(0));
}

/// Validates every target of a loss kernel named `kernel` and returns how
/// many rows are counted.
template <class T>
int64_t countTargets(const char *kernel, const int32_t *targets, const T *mask, int64_t rows,
                     int64_t vocab, int64_t ignoreIndex) {
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == ignoreIndex)
      continue;
    if (targets[r] < 0 || targets[r] >= vocab)
      throw rt::Error(std::string(kernel) + ": target " + std::to_string(targets[r]) +
                      " at row " + std::to_string(r) + " is outside [0, " +
                      std::to_string(vocab) + ") and is not the ignore index " +
                      std::to_string(ignoreIndex));
    if (isCounted(targets, mask, r, ignoreIndex))
      ++count;
  }
  return count;
}

/// Validates the vocabulary block [vocabBegin, vocabBegin + blockVocab) of a
/// loss kernel and returns its allocated extent ld (0: blockVocab): the block
/// lies in [0, vocab); ld >= blockVocab; padding (ld > blockVocab) only
/// follows the last class (the block ends at vocab, or is empty and starts at
/// or past it); without combined statistics (rowMax and rowSumExp both null)
/// it is the whole vocabulary.
inline int64_t checkVocabBlock(const char *kernel, int64_t vocab, int64_t vocabBegin,
                               int64_t blockVocab, const double *rowMax,
                               const double *rowSumExp, int64_t ld = 0) {
  if (ld == 0)
    ld = blockVocab;
  bool ok = vocab > 0 && vocabBegin >= 0 && blockVocab >= 0 && ld >= blockVocab && ld > 0;
  if (ok && blockVocab > 0)
    ok = vocabBegin + blockVocab <= vocab && (ld == blockVocab || vocabBegin + blockVocab == vocab);
  else if (ok)
    ok = vocabBegin >= vocab;
  if (!ok)
    throw rt::Error(std::string(kernel) + ": vocabulary block [" + std::to_string(vocabBegin) +
                    ", " + std::to_string(vocabBegin + blockVocab) + ") of extent " +
                    std::to_string(ld) + " is empty or not inside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
  if ((rowMax == nullptr) != (rowSumExp == nullptr))
    throw rt::Error(std::string(kernel) + ": give both row statistics or neither");
  if (!rowMax && blockVocab != vocab)
    throw rt::Error(std::string(kernel) + ": a vocabulary block [" +
                    std::to_string(vocabBegin) + ", " +
                    std::to_string(vocabBegin + blockVocab) +
                    ") needs the combined row statistics of the whole vocabulary");
  return ld;
}

} // namespace shardc::cpu

#endif // SHARDC_RUNTIME_CPU_ROWMATH_H
