//===- Backward.cpp - vector-Jacobian products of the forward kernels -----===//
//
// Each kernel here is the backward pass of the forward kernel of the same name.
// Row-local gradients (dx of the norms, softmax and losses) run one row per
// OpenMP iteration, like their forward kernels. Parameter gradients (dgamma,
// dbeta, dtable) are reductions over rows; they are parallelised over the
// columns or vocabulary rows they produce, each summed over the input rows in
// row order in double, so the result does not depend on the thread count.
//
// attention_backward runs in two passes, both parallel and free of write
// conflicts: the first over (batch, query head, query block) tasks computes dq
// and the row statistics, the second over (batch, kv head, key block) tasks
// recomputes the transposed probabilities from those statistics and computes
// dk and dv, summing the query heads of a group in head order. q, k, v and
// their gradients may lie in other than dense BSHD (AttentionLayout: a packed
// qkv read and dqkv written in place); writes touch only their own slots.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/RowMath.h"
#include "runtime/program/KernelScratch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

namespace shardc::cpu {

namespace {

/// Columns per task of the parameter-gradient reductions: a task sums a
/// [rows, kColBlock] strip into a double accumulator that stays in L1.
constexpr int64_t kColBlock = 256;

/// Query (pass 1) or key (pass 2) rows per attention_backward task, as in
/// attention_forward.
constexpr int64_t kBlockRows = 64;

/// out[c] = sum over r of term(r, c) for c in [0, cols), summed in row order
/// in double. Parallel over column blocks, so deterministic.
template <class T, class Term>
void columnSums(T *out, int64_t rows, int64_t cols, Term term) {
  int64_t nBlocks = (cols + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t blk = 0; blk < nBlocks; ++blk) {
    int64_t c0 = blk * kColBlock, c1 = std::min(cols, c0 + kColBlock);
    double acc[kColBlock] = {};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = c0; c < c1; ++c)
        acc[c - c0] += term(r, c);
    for (int64_t c = c0; c < c1; ++c)
      out[c] = T(acc[c - c0]);
  }
}

/// Mean and reciprocal standard deviation of a layernorm row, computed
/// exactly as layernorm_forward does.
template <class T>
void layernormStats(const T *xr, int64_t cols, double eps, double &mu,
                    double &rs) {
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c)
    sum += double(xr[c]);
  mu = sum / double(cols);
  double sq = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    double d = double(xr[c]) - mu;
    sq += d * d;
  }
  rs = 1.0 / std::sqrt(sq / double(cols) + eps);
}

template <class T> double rmsnormRstd(const T *xr, int64_t cols, double eps) {
  double sq = 0.0;
  for (int64_t c = 0; c < cols; ++c)
    sq += double(xr[c]) * double(xr[c]);
  return 1.0 / std::sqrt(sq / double(cols) + eps);
}


/// dlogits[r] = coef * (softmax(logits[r]) - onehot(targets[r])) for counted
/// rows, 0 for the others, on the vocabulary block [vocabBegin, vocabBegin +
/// blockVocab): softmax uses the combined statistics rowMax/rowSumExp of the
/// whole row, or, when they are null (the block is the whole vocabulary), the
/// row's own. dlogits may alias logits.
template <class T>
void crossEntropyRowGrads(const T *logits, const int32_t *targets,
                          const T *mask, const double *rowMax,
                          const double *rowSumExp, T *dlogits, int64_t rows,
                          int64_t vocabBegin, int64_t blockVocab, int64_t ld,
                          int64_t ignoreIndex, double coef) {
#pragma omp parallel for schedule(static) if (rows * ld >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = logits + r * ld;
    T *drow = dlogits + r * ld;
    // Padding columns (a padded vocabulary) are no class: zero gradient.
    std::fill(drow + blockVocab, drow + ld, T(0));
    if (!isCounted(targets, mask, r, ignoreIndex)) {
      std::fill(drow, drow + blockVocab, T(0));
      continue;
    }
    double sum;
    if (rowMax) {
      // The global max is one of the logits, a value of T.
      expShiftedSum(row, T(rowMax[r]), blockVocab, drow);
      sum = rowSumExp[r];
    } else {
      T mx = *std::max_element(row, row + blockVocab);
      sum = expShiftedSum(row, mx, blockVocab, drow);
    }
    double scaleR = coef / sum;
    int64_t t = int64_t(targets[r]) - vocabBegin;
    bool inBlock = t >= 0 && t < blockVocab;
    // coef * p_t - coef in double before rounding: p_t - 1 cancels.
    double target = inBlock ? double(drow[t]) * scaleR - coef : 0.0;
    for (int64_t j = 0; j < blockVocab; ++j)
      drow[j] = T(double(drow[j]) * scaleR);
    if (inBlock)
      drow[t] = T(target);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

template <class T>
void gelu_tanh_backward(const T *dy, const T *x, T *dx, int64_t n) {
  const T kAlpha = T(0.7978845608028654); // sqrt(2 / pi)
  const T kBeta = T(0.044715);
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    T u = kAlpha * (v + kBeta * v * v * v);
    // s = 0.5 * (1 + tanh(u)) = sigmoid(2u) and 1 - tanh(u)^2 = 4 s (1 - s):
    // gelu'(v) = s + 2 v s (1 - s) * alpha * (1 + 3 beta v^2).
    T s = T(1) / (T(1) + std::exp(T(-2) * u));
    T du = kAlpha * (T(1) + T(3) * kBeta * v * v);
    dx[i] = dy[i] * (s + T(2) * v * s * (T(1) - s) * du);
  }
}

template <class T>
void swiglu_backward(const T *dy, const T *gate, const T *up, T *dgate, T *dup,
                     int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T g = gate[i], u = up[i], d = dy[i];
    T sig = T(1) / (T(1) + std::exp(-g));
    // silu'(g) = sig + g * sig * (1 - sig).
    dgate[i] = d * u * (sig * (T(1) + g * (T(1) - sig)));
    dup[i] = d * (g * sig);
  }
}

//===----------------------------------------------------------------------===//
// Normalisation and softmax
//===----------------------------------------------------------------------===//

template <class T>
void softmax_lastdim_backward(const T *dy, const T *y, T *dx, int64_t rows,
                              int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *dyr = dy + r * cols, *yr = y + r * cols;
    T *dxr = dx + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      dot += double(dyr[c]) * double(yr[c]);
    for (int64_t c = 0; c < cols; ++c)
      dxr[c] = T(double(yr[c]) * (double(dyr[c]) - dot));
  }
}

template <class T>
void layernorm_backward(const T *dy, const T *x, const T *gamma, T *dx,
                        T *dgamma, T *dbeta, int64_t rows, int64_t cols,
                        double eps) {
  if (cols == 0)
    return;
  std::vector<double> mean(rows), rstd(rows);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    layernormStats(x + r * cols, cols, eps, mean[r], rstd[r]);
  // The parameter gradients first, so that dx may alias dy.
  if (dgamma)
    columnSums(dgamma, rows, cols, [&](int64_t r, int64_t c) {
      return double(dy[r * cols + c]) * (double(x[r * cols + c]) - mean[r]) *
             rstd[r];
    });
  if (dbeta)
    columnSums(dbeta, rows, cols,
               [&](int64_t r, int64_t c) { return double(dy[r * cols + c]); });
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols, *dyr = dy + r * cols;
    T *dxr = dx + r * cols;
    double mu = mean[r], rs = rstd[r];
    // With g = dy * gamma and xhat = (x - mu) * rs:
    // dx = rs * (g - mean(g) - xhat * mean(g * xhat)).
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      double g = double(dyr[c]) * double(gamma[c]);
      sumG += g;
      sumGX += g * (double(xr[c]) - mu) * rs;
    }
    double meanG = sumG / double(cols), meanGX = sumGX / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double g = double(dyr[c]) * double(gamma[c]);
      double xhat = (double(xr[c]) - mu) * rs;
      dxr[c] = T(rs * (g - meanG - xhat * meanGX));
    }
  }
}

template <class T>
void rmsnorm_backward(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                      int64_t rows, int64_t cols, double eps) {
  if (cols == 0)
    return;
  std::vector<double> rstd(rows);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    rstd[r] = rmsnormRstd(x + r * cols, cols, eps);
  // dgamma first, so that dx may alias dy.
  if (dgamma)
    columnSums(dgamma, rows, cols, [&](int64_t r, int64_t c) {
      return double(dy[r * cols + c]) * double(x[r * cols + c]) * rstd[r];
    });
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * cols, *dyr = dy + r * cols;
    T *dxr = dx + r * cols;
    double rs = rstd[r];
    // With g = dy * gamma: dx = rs * (g - x * rs^2 * mean(g * x)).
    double sumGX = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sumGX += double(dyr[c]) * double(gamma[c]) * double(xr[c]);
    double k = rs * rs * sumGX / double(cols);
    for (int64_t c = 0; c < cols; ++c)
      dxr[c] = T(rs * (double(dyr[c]) * double(gamma[c]) - double(xr[c]) * k));
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

template <class T>
void attention_backward(const T *dout, const T *q, const T *k, const T *v,
                        const T *out, T *dq, T *dk, T *dv, int64_t B, int64_t S,
                        int64_t Hq, int64_t Hkv, int64_t D, bool causal,
                        double scale, int64_t Skv, int64_t qOffset,
                        const AttentionLayout &layout) {
  const AttentionLayout resolved =
      checkedAttentionLayout("attention_backward", B, S, Hq, Hkv, D, Skv, qOffset, layout);
  const AttentionHeads &qL = resolved.q, &kL = resolved.k, &vL = resolved.v;
  if (B == 0 || Skv == 0)
    return;
  if (Hq == 0 || S == 0) {
    // No query reads k or v. Head by head: a strided dk or dv shares its
    // rows with other tensors.
    for (int64_t row = 0; row < B * Skv; ++row)
      for (int64_t g = 0; g < Hkv; ++g) {
        std::fill_n(dk + row * kL.rowStride + kL.head(g, D), D, T(0));
        std::fill_n(dv + row * vL.rowStride + vL.head(g, D), D, T(0));
      }
    return;
  }

  int64_t group = Hq / Hkv;
  int64_t oStride = Hq * D; // dout and out are dense
  int64_t nBlocks = (S + kBlockRows - 1) / kBlockRows;
  T tScale = T(scale);
  // Per (b, h, i): the row max and exp-sum of the scaled, masked scores, and
  // delta = rowsum(dout * out).
  std::vector<double> rowMax(B * Hq * S), rowSum(B * Hq * S), delta(B * Hq * S);

  BlasSerialScope serial;

  // Pass 1: dq. Per query block: P = softmax(scale Q K^T), dP = dO V^T,
  // dS = P * (dP - delta), dQ = scale dS K. Query row i is global row
  // qOffset + i (a block of the rows when they are split).
  int64_t nTasks1 = B * Hq * nBlocks;
#pragma omp parallel
  {
    std::vector<T> p(std::min(kBlockRows, S) * Skv), dp(p.size());
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < nTasks1; ++task) {
      int64_t blk = task % nBlocks;
      int64_t h = (task / nBlocks) % Hq;
      int64_t b = task / (nBlocks * Hq);
      int64_t i0 = blk * kBlockRows, i1 = std::min(S, i0 + kBlockRows);
      int64_t rows = i1 - i0;
      int64_t nKeys = causal ? qOffset + i1 : Skv;
      int64_t qOff = (b * S + i0) * qL.rowStride + qL.head(h, D);
      int64_t oOff = ((b * S + i0) * Hq + h) * D;
      const T *kHead = k + b * Skv * kL.rowStride + kL.head(h / group, D);
      const T *vHead = v + b * Skv * vL.rowStride + vL.head(h / group, D);
      double *mxOut = rowMax.data() + (b * Hq + h) * S + i0;
      double *sumOut = rowSum.data() + (b * Hq + h) * S + i0;
      double *deltaOut = delta.data() + (b * Hq + h) * S + i0;

      gemm<T>(false, true, rows, nKeys, D, tScale, q + qOff, qL.rowStride, kHead,
              kL.rowStride, T(0), p.data(), nKeys);
      gemm<T>(false, true, rows, nKeys, D, T(1), dout + oOff, oStride, vHead,
              vL.rowStride, T(0), dp.data(), nKeys);

      for (int64_t r = 0; r < rows; ++r) {
        T *pr = p.data() + r * nKeys;
        T *dpr = dp.data() + r * nKeys;
        int64_t valid = causal ? qOffset + i0 + r + 1 : nKeys;
        T mx = *std::max_element(pr, pr + valid);
        double sum = expShiftedSum(pr, mx, valid, pr);
        T inv = T(1.0 / sum);
        const T *dor = dout + oOff + r * oStride;
        const T *or_ = out + oOff + r * oStride;
        double dl = 0.0;
        for (int64_t d = 0; d < D; ++d)
          dl += double(dor[d]) * double(or_[d]);
        mxOut[r] = double(mx);
        sumOut[r] = sum;
        deltaOut[r] = dl;
        T tDelta = T(dl);
        for (int64_t j = 0; j < valid; ++j)
          dpr[j] = pr[j] * inv * (dpr[j] - tDelta);
        std::fill(dpr + valid, dpr + nKeys, T(0));
      }

      gemm<T>(false, false, rows, D, nKeys, tScale, dp.data(), nKeys, kHead,
              kL.rowStride, T(0), dq + qOff, qL.rowStride);
    }
  }

  // Pass 2: dk and dv. Per key block and each query head h of the group:
  // P^T and dP^T = V dO^T over the queries that see the block, then
  // dV += P^T dO and dK += scale dS^T Q. (With the query rows split, these
  // are this block of rows' share: partial sums.)
  int64_t nKeyBlocks = (Skv + kBlockRows - 1) / kBlockRows;
  int64_t nTasks2 = B * Hkv * nKeyBlocks;
#pragma omp parallel
  {
    std::vector<T> pt(std::min(kBlockRows, Skv) * S), dpt(pt.size());
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < nTasks2; ++task) {
      int64_t blk = task % nKeyBlocks;
      int64_t g = (task / nKeyBlocks) % Hkv;
      int64_t b = task / (nKeyBlocks * Hkv);
      int64_t j0 = blk * kBlockRows, j1 = std::min(Skv, j0 + kBlockRows);
      int64_t keys = j1 - j0;
      // Causal: local queries before j0 - qOffset see none of these keys.
      int64_t qStart = causal ? std::clamp<int64_t>(j0 - qOffset, 0, S) : 0;
      int64_t nQueries = S - qStart;
      int64_t kOff = (b * Skv + j0) * kL.rowStride + kL.head(g, D);
      int64_t vOff = (b * Skv + j0) * vL.rowStride + vL.head(g, D);
      if (nQueries == 0) {
        for (int64_t r = 0; r < keys; ++r) {
          std::fill_n(dk + kOff + r * kL.rowStride, D, T(0));
          std::fill_n(dv + vOff + r * vL.rowStride, D, T(0));
        }
        continue;
      }

      for (int64_t hi = 0; hi < group; ++hi) {
        int64_t h = g * group + hi;
        int64_t qOff = (b * S + qStart) * qL.rowStride + qL.head(h, D);
        int64_t oOff = ((b * S + qStart) * Hq + h) * D;
        const double *mx = rowMax.data() + (b * Hq + h) * S + qStart;
        const double *sum = rowSum.data() + (b * Hq + h) * S + qStart;
        const double *dl = delta.data() + (b * Hq + h) * S + qStart;

        gemm<T>(false, true, keys, nQueries, D, tScale, k + kOff, kL.rowStride,
                q + qOff, qL.rowStride, T(0), pt.data(), nQueries);
        gemm<T>(false, true, keys, nQueries, D, T(1), v + vOff, vL.rowStride,
                dout + oOff, oStride, T(0), dpt.data(), nQueries);

        for (int64_t r = 0; r < keys; ++r) {
          T *ptr = pt.data() + r * nQueries;
          T *dptr = dpt.data() + r * nQueries;
          // Key j0 + r is visible to global queries i >= j0 + r.
          int64_t first =
              causal ? std::clamp<int64_t>(j0 + r - qOffset, 0, S) - qStart : 0;
          std::fill(ptr, ptr + first, T(0));
          std::fill(dptr, dptr + first, T(0));
          for (int64_t c = first; c < nQueries; ++c) {
            T prob = std::exp(ptr[c] - T(mx[c])) * T(1.0 / sum[c]);
            ptr[c] = prob;
            dptr[c] = prob * (dptr[c] - T(dl[c]));
          }
        }

        T beta = hi == 0 ? T(0) : T(1);
        gemm<T>(false, false, keys, D, nQueries, T(1), pt.data(), nQueries,
                dout + oOff, oStride, beta, dv + vOff, vL.rowStride);
        gemm<T>(false, false, keys, D, nQueries, tScale, dpt.data(), nQueries,
                q + qOff, qL.rowStride, beta, dk + kOff, kL.rowStride);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Rope and embedding
//===----------------------------------------------------------------------===//

template <class T>
void embedding_backward_block(const T *dy, const int32_t *ids, T *dblock,
                              int64_t nIds, int64_t vocab, int64_t rowBegin,
                              int64_t rows, int64_t dim) {
  if (rowBegin < 0 || rows < 0 || rowBegin + rows > vocab)
    throw rt::Error("embedding_backward: table rows [" +
                    std::to_string(rowBegin) + ", " +
                    std::to_string(rowBegin + rows) +
                    ") are not inside the vocabulary [0, " +
                    std::to_string(vocab) + ")");
  // Validate first: an exception cannot leave an OpenMP region.
  for (int64_t i = 0; i < nIds; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw rt::Error("embedding_backward: token id " + std::to_string(ids[i]) +
                      " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " +
                      std::to_string(vocab) + ")");
  // Bucket the positions whose id lies in the block by row (a counting sort,
  // positions in increasing order), then let each row sum its own positions.
  auto rowOf = [&](int64_t i) { return int64_t(ids[i]) - rowBegin; };
  auto inBlock = [&](int64_t i) { return rowOf(i) >= 0 && rowOf(i) < rows; };
  std::vector<int64_t> start(rows + 1, 0);
  for (int64_t i = 0; i < nIds; ++i)
    if (inBlock(i))
      ++start[rowOf(i) + 1];
  for (int64_t t = 0; t < rows; ++t)
    start[t + 1] += start[t];
  std::vector<int64_t> positions(start[rows]);
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < nIds; ++i)
      if (inBlock(i))
        positions[next[rowOf(i)]++] = i;
  }
#pragma omp parallel if (std::max(nIds, rows) * dim >= kParallelGrain)
  {
    std::vector<double> acc(dim);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < rows; ++t) {
      T *row = dblock + t * dim;
      if (start[t] == start[t + 1]) {
        std::fill(row, row + dim, T(0));
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = start[t]; p < start[t + 1]; ++p) {
        const T *g = dy + positions[p] * dim;
        for (int64_t d = 0; d < dim; ++d)
          acc[d] += double(g[d]);
      }
      for (int64_t d = 0; d < dim; ++d)
        row[d] = T(acc[d]);
    }
  }
}

template <class T>
void embedding_backward(const T *dy, const int32_t *ids, T *dtable,
                        int64_t nIds, int64_t vocab, int64_t dim) {
  embedding_backward_block(dy, ids, dtable, nIds, vocab, 0, vocab, dim);
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

template <class T>
void reduce_sum(const T *x, T *out, const std::vector<int64_t> &shape,
                const std::vector<int64_t> &dims) {
  int64_t rank = int64_t(shape.size());
  for (int64_t i = 0; i < rank; ++i)
    if (shape[i] < 0)
      throw rt::Error("reduce_sum: dimension " + std::to_string(i) +
                      " has negative size " + std::to_string(shape[i]));
  std::vector<bool> reduced(rank, false);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      throw rt::Error("reduce_sum: dim " + std::to_string(dims[i]) +
                      " is outside [0, " + std::to_string(rank) + ")");
    if (i > 0 && dims[i] <= dims[i - 1])
      throw rt::Error("reduce_sum: dims must be sorted and unique, got " +
                      std::to_string(dims[i - 1]) + " before " +
                      std::to_string(dims[i]));
    reduced[dims[i]] = true;
  }

  // Merge adjacent dimensions of the same kind; drop size-1 dimensions.
  struct Run {
    int64_t size, stride;
    bool reduced;
  };
  std::vector<Run> runs;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (shape[i] != 1) {
      if (!runs.empty() && runs.back().reduced == reduced[i] &&
          runs.back().stride * runs.back().size == stride)
        runs.back().size *= shape[i];
      else
        runs.push_back({shape[i], stride, reduced[i]});
    }
    stride *= shape[i];
  }
  std::reverse(runs.begin(), runs.end()); // outermost first
  int64_t numel = stride;

  // A kept innermost run is contiguous in both x and out: it is processed in
  // column blocks. Every other run is an outer kept index or a reduced one.
  int64_t inner = 1;
  if (!runs.empty() && !runs.back().reduced) {
    inner = runs.back().size;
    runs.pop_back();
  }
  std::vector<Run> keptRuns, redRuns;
  for (const Run &r : runs)
    (r.reduced ? redRuns : keptRuns).push_back(r);
  int64_t nOuter = 1, nRed = 1;
  for (const Run &r : keptRuns)
    nOuter *= r.size;
  for (const Run &r : redRuns)
    nRed *= r.size;
  if (nOuter * inner == 0)
    return;

  // Offsets of every reduced index, in row-major order: the summation order.
  std::vector<int64_t> redOffsets(nRed);
  for (int64_t idx = 0; idx < nRed; ++idx) {
    int64_t rem = idx, off = 0;
    for (int64_t r = int64_t(redRuns.size()) - 1; r >= 0; --r) {
      off += (rem % redRuns[r].size) * redRuns[r].stride;
      rem /= redRuns[r].size;
    }
    redOffsets[idx] = off;
  }

  int64_t colBlock = std::min(inner, kColBlock);
  int64_t nColBlocks = (inner + colBlock - 1) / colBlock;
  int64_t nTasks = nOuter * nColBlocks;
#pragma omp parallel for schedule(static) if (numel >= kParallelGrain)
  for (int64_t task = 0; task < nTasks; ++task) {
    int64_t o = task / nColBlocks, blk = task % nColBlocks;
    int64_t c0 = blk * colBlock, c1 = std::min(inner, c0 + colBlock);
    int64_t rem = o, base = 0;
    for (int64_t r = int64_t(keptRuns.size()) - 1; r >= 0; --r) {
      base += (rem % keptRuns[r].size) * keptRuns[r].stride;
      rem /= keptRuns[r].size;
    }
    double acc[kColBlock] = {};
    for (int64_t off : redOffsets) {
      const T *src = x + base + off;
      for (int64_t c = c0; c < c1; ++c)
        acc[c - c0] += double(src[c]);
    }
    T *dst = out + o * inner;
    for (int64_t c = c0; c < c1; ++c)
      dst[c] = T(acc[c - c0]);
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <class T>
void cross_entropy_block_backward(double dloss, const T *logits,
                                  const int32_t *targets, const T *mask,
                                  const double *rowMax,
                                  const double *rowSumExp, T *dlogits,
                                  int64_t rows, int64_t vocab,
                                  int64_t vocabBegin, int64_t blockVocab,
                                  int64_t ignoreIndex, int64_t ld) {
  ld = checkVocabBlock("cross_entropy_backward", vocab, vocabBegin, blockVocab,
                       rowMax, rowSumExp, ld);
  int64_t count = countTargets("cross_entropy_backward", targets, mask, rows,
                               vocab, ignoreIndex);
  if (count == 0) {
    std::fill(dlogits, dlogits + rows * ld, T(0));
    return;
  }
  crossEntropyRowGrads(logits, targets, mask, rowMax, rowSumExp, dlogits, rows,
                       vocabBegin, blockVocab, ld, ignoreIndex,
                       dloss / double(count));
}

template <class T>
void cross_entropy_backward(double dloss, const T *logits,
                            const int32_t *targets, const T *mask, T *dlogits,
                            int64_t rows, int64_t vocab, int64_t ignoreIndex) {
  cross_entropy_block_backward<T>(dloss, logits, targets, mask, nullptr,
                                  nullptr, dlogits, rows, vocab, 0, vocab,
                                  ignoreIndex);
}

template <class T>
void linear_cross_entropy_block_backward(
    double dloss, const T *x, const T *w, bool wIsVocabMajor,
    const int32_t *targets, const T *mask, const double *rowMax,
    const double *rowSumExp, T *dx, T *dw, int64_t rows, int64_t hidden,
    int64_t vocab, int64_t vocabBegin, int64_t blockVocab,
    int64_t ignoreIndex, int64_t ld, T *scratch) {
  if (hidden <= 0 || vocab <= 0)
    throw rt::Error(
        "linear_cross_entropy_backward: hidden = " + std::to_string(hidden) +
        " and vocab = " + std::to_string(vocab) + " must be positive");
  ld = checkVocabBlock("linear_cross_entropy_backward", vocab, vocabBegin,
                       blockVocab, rowMax, rowSumExp, ld);
  int64_t count = countTargets("linear_cross_entropy_backward", targets, mask,
                               rows, vocab, ignoreIndex);
  double coef = count > 0 ? dloss / double(count) : 0.0;
  int64_t bv = blockVocab;
  // W's padding rows (vocab-major) or columns (hidden-major, stride ld) are
  // no class: their gradient is zero and they are never multiplied.
  if (wIsVocabMajor) {
    std::fill(dw + bv * hidden, dw + ld * hidden, T(0));
  } else {
    for (int64_t h = 0; h < hidden; ++h)
      std::fill(dw + h * ld + bv, dw + (h + 1) * ld, T(0));
  }
  if (bv == 0) {
    std::fill(dx, dx + rows * hidden, T(0));
    return;
  }
  int64_t ldw = wIsVocabMajor ? hidden : ld;
  // The chunking of linear_cross_entropy.
  int64_t chunkRows = rt::scratch::cpuLogitChunkRows(bv);
  std::vector<T> own(count > 0 && !scratch ? std::min(chunkRows, rows) * bv : 0);
  T *dlogits = scratch ? scratch : own.data();
  bool dwWritten = false;
  for (int64_t r0 = 0; r0 < rows; r0 += chunkRows) {
    int64_t n = std::min(chunkRows, rows - r0);
    const T *chunkMask = mask ? mask + r0 : nullptr;
    bool anyCounted = false;
    for (int64_t r = 0; count > 0 && r < n && !anyCounted; ++r)
      anyCounted = isCounted(targets + r0, chunkMask, r, ignoreIndex);
    if (!anyCounted) {
      std::fill(dx + r0 * hidden, dx + (r0 + n) * hidden, T(0));
      continue;
    }
    const T *xChunk = x + r0 * hidden;
    // Chunk logits, turned into their gradient in place.
    gemm<T>(false, wIsVocabMajor, n, bv, hidden, T(1), xChunk, hidden, w, ldw,
            T(0), dlogits, bv);
    crossEntropyRowGrads(dlogits, targets + r0, chunkMask,
                         rowMax ? rowMax + r0 : nullptr,
                         rowSumExp ? rowSumExp + r0 : nullptr, dlogits,
                         n, vocabBegin, bv, bv, ignoreIndex, coef);
    // dx = dlogits @ W^T in the logits' orientation.
    gemm<T>(false, !wIsVocabMajor, n, hidden, bv, T(1), dlogits, bv, w,
            ldw, T(0), dx + r0 * hidden, hidden);
    // dw += dlogits^T x (vocab-major) or x^T dlogits (hidden-major).
    T beta = dwWritten ? T(1) : T(0);
    if (wIsVocabMajor)
      gemm<T>(true, false, bv, hidden, n, T(1), dlogits, bv, xChunk,
              hidden, beta, dw, hidden);
    else
      gemm<T>(true, false, hidden, bv, n, T(1), xChunk, hidden, dlogits,
              bv, beta, dw, ld);
    dwWritten = true;
  }
  if (!dwWritten) {
    if (wIsVocabMajor)
      std::fill(dw, dw + bv * hidden, T(0));
    else
      for (int64_t h = 0; h < hidden; ++h)
        std::fill(dw + h * ld, dw + h * ld + bv, T(0));
  }
}

template <class T>
void linear_cross_entropy_backward(double dloss, const T *x, const T *w,
                                   bool wIsVocabMajor, const int32_t *targets,
                                   const T *mask, T *dx, T *dw, int64_t rows,
                                   int64_t hidden, int64_t vocab,
                                   int64_t ignoreIndex) {
  linear_cross_entropy_block_backward<T>(dloss, x, w, wIsVocabMajor, targets,
                                         mask, nullptr, nullptr, dx, dw, rows,
                                         hidden, vocab, 0, vocab, ignoreIndex);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void gelu_tanh_backward<T>(const T *, const T *, T *, int64_t);     \
  template void swiglu_backward<T>(const T *, const T *, const T *, T *, T *,  \
                                   int64_t);                                   \
  template void softmax_lastdim_backward<T>(const T *, const T *, T *,         \
                                            int64_t, int64_t);                 \
  template void layernorm_backward<T>(const T *, const T *, const T *, T *,    \
                                      T *, T *, int64_t, int64_t, double);     \
  template void rmsnorm_backward<T>(const T *, const T *, const T *, T *, T *, \
                                    int64_t, int64_t, double);                 \
  template void attention_backward<T>(                                         \
      const T *, const T *, const T *, const T *, const T *, T *, T *, T *,    \
      int64_t, int64_t, int64_t, int64_t, int64_t, bool, double, int64_t,      \
      int64_t, const AttentionLayout &);                                       \
  template void embedding_backward<T>(const T *, const int32_t *, T *,         \
                                      int64_t, int64_t, int64_t);              \
  template void embedding_backward_block<T>(const T *, const int32_t *, T *,   \
                                            int64_t, int64_t, int64_t,         \
                                            int64_t, int64_t);                 \
  template void reduce_sum<T>(const T *, T *, const std::vector<int64_t> &,    \
                              const std::vector<int64_t> &);                   \
  template void cross_entropy_backward<T>(double, const T *, const int32_t *,  \
                                          const T *, T *, int64_t, int64_t,    \
                                          int64_t);                            \
  template void cross_entropy_block_backward<T>(                               \
      double, const T *, const int32_t *, const T *, const double *,           \
      const double *, T *, int64_t, int64_t, int64_t, int64_t, int64_t,        \
      int64_t);                                                                \
  template void linear_cross_entropy_backward<T>(                              \
      double, const T *, const T *, bool, const int32_t *, const T *, T *,     \
      T *, int64_t, int64_t, int64_t, int64_t);                                \
  template void linear_cross_entropy_block_backward<T>(                        \
      double, const T *, const T *, bool, const int32_t *, const T *,          \
      const double *, const double *, T *, T *, int64_t, int64_t, int64_t,     \
      int64_t, int64_t, int64_t, int64_t, T *);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
