//===- Attention.cpp - scaled dot-product attention -----------------------===//
//
// Work is split into (batch, query head, block of kBlockRows queries) tasks
// spread over OpenMP threads. A task computes its score block with one GEMM
// reading Q and K in place through their leading dimensions (BSHD, or the
// rows of a packed qkv: AttentionLayout), applies the causal mask and a
// max-subtracted softmax in a per-thread scratch, and writes its output rows
// with a second GEMM. Causal blocks only multiply the keys up to their last
// query, halving the work. BLAS runs single-threaded inside the tasks (see
// Parallel.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RowMath.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

namespace shardc::cpu {

namespace {

/// Query rows per task: large enough for efficient GEMMs, small enough that a
/// [kBlockRows, S] float scratch stays in L2 for S in the low thousands.
constexpr int64_t kBlockRows = 64;

} // namespace

AttentionLayout checkedAttentionLayout(const char *kernel, int64_t B, int64_t S, int64_t Hq,
                                       int64_t Hkv, int64_t D, int64_t &Skv, int64_t qOffset,
                                       const AttentionLayout &layout) {
  const std::string name = kernel;
  if (Skv == 0)
    Skv = S;
  if (B < 0 || S < 0 || Hq < 0 || D <= 0 || Hkv <= 0 || Hq % Hkv != 0 || Skv < 0 ||
      qOffset < 0 || qOffset + S > Skv)
    throw rt::Error(name + ": invalid shape B=" + std::to_string(B) +
                    " S=" + std::to_string(S) + " Hq=" + std::to_string(Hq) +
                    " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D) +
                    " Skv=" + std::to_string(Skv) + " query offset " +
                    std::to_string(qOffset) +
                    " (query heads must be a multiple of kv heads; the query rows a block "
                    "of the keys' sequence)");
  const AttentionLayout r{layout.q.orDense(Hq, D), layout.k.orDense(Hkv, D),
                          layout.v.orDense(Hkv, D)};
  // The leading dimensions the GEMMs get (a packed layout's row is longer).
  const int64_t ld = std::max({Hq * D, r.q.rowStride, r.k.rowStride, r.v.rowStride});
  if (ld > INT_MAX || Skv > INT_MAX)
    throw rt::Error(name + ": S=" + std::to_string(Skv) + " or a row of " + std::to_string(ld) +
                    " elements exceeds the BLAS integer range");
  if (r.q.group < 1 || r.k.group < 1 || r.v.group < 1)
    throw rt::Error(name + ": a head layout's group must be at least 1");
  return r;
}

template <class T>
void attention_forward(const T *q, const T *k, const T *v, T *out, T *lse,
                       int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                       bool causal, double scale, int64_t Skv, int64_t qOffset,
                       const AttentionLayout &layout) {
  const AttentionLayout resolved =
      checkedAttentionLayout("attention_forward", B, S, Hq, Hkv, D, Skv, qOffset, layout);
  const AttentionHeads &qL = resolved.q, &kL = resolved.k, &vL = resolved.v;
  if (B == 0 || S == 0 || Hq == 0)
    return;

  int64_t group = Hq / Hkv;
  int64_t oStride = Hq * D;
  int64_t nBlocks = (S + kBlockRows - 1) / kBlockRows;
  int64_t nTasks = B * Hq * nBlocks;
  T tScale = T(scale);

  BlasSerialScope serial;
#pragma omp parallel
  {
    std::vector<T> scores(std::min(kBlockRows, S) * Skv);
    std::vector<double> invSum(kBlockRows);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < nTasks; ++task) {
      int64_t blk = task % nBlocks;
      int64_t h = (task / nBlocks) % Hq;
      int64_t b = task / (nBlocks * Hq);
      int64_t i0 = blk * kBlockRows, i1 = std::min(S, i0 + kBlockRows);
      int64_t rows = i1 - i0;
      // Causal: no query in this block (global rows qOffset + i) sees a key
      // at or past qOffset + i1.
      int64_t nKeys = causal ? qOffset + i1 : Skv;
      const T *qBlock = q + (b * S + i0) * qL.rowStride + qL.head(h, D);
      const T *kHead = k + b * Skv * kL.rowStride + kL.head(h / group, D);
      const T *vHead = v + b * Skv * vL.rowStride + vL.head(h / group, D);
      T *oBlock = out + ((b * S + i0) * Hq + h) * D;
      T *p = scores.data();

      gemm<T>(false, true, rows, nKeys, D, tScale, qBlock, qL.rowStride, kHead,
              kL.rowStride, T(0), p, nKeys);

      for (int64_t r = 0; r < rows; ++r) {
        T *row = p + r * nKeys;
        int64_t valid = causal ? qOffset + i0 + r + 1 : nKeys;
        T mx = *std::max_element(row, row + valid);
        double sum = expShiftedSum(row, mx, valid, row);
        std::fill(row + valid, row + nKeys, T(0));
        // Normalise the D outputs after the GEMM instead of the nKeys
        // probabilities before it.
        invSum[r] = 1.0 / sum;
        if (lse)
          lse[(b * Hq + h) * S + i0 + r] = T(double(mx) + std::log(sum));
      }

      gemm<T>(false, false, rows, D, nKeys, T(1), p, nKeys, vHead, vL.rowStride,
              T(0), oBlock, oStride);
      for (int64_t r = 0; r < rows; ++r) {
        T inv = T(invSum[r]);
        T *o = oBlock + r * oStride;
        for (int64_t d = 0; d < D; ++d)
          o[d] *= inv;
      }
    }
  }
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void attention_forward<T>(const T *, const T *, const T *, T *,     \
                                     T *, int64_t, int64_t, int64_t, int64_t,  \
                                     int64_t, bool, double, int64_t, int64_t,  \
                                     const AttentionLayout &);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
