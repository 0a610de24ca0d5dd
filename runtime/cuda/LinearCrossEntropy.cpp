//===- LinearCrossEntropy.cpp - chunked fused linear cross-entropy --------===//
//
// Host code: GEMMs through Gemm (cuBLASLt), the row kernels of Loss.cu
// (LossInternal.h). See LinearCrossEntropy.h for the chunking.
//
// Where the time goes (H = hidden, V = blockVocab, N = rows; the bf16 LM head
// at N = 8192, H = 4096, V = 131072 on an H100):
//  - GEMMs, 2*N*H*V FLOPs each: forward 1 (logits), backward 3 (logits
//    again, dx, dW): ~8.8 TFLOP each, ~12 ms each at ~750 TFLOP/s. They are
//    > 90% of the time; every GEMM has k >= min(N, V) and tiles that fill
//    the GPU (chunks [8192 x 32768] by vocabulary at this shape).
//  - The row kernels are bandwidth-bound on the f32 chunk: forward 4 B/logit
//    written by the GEMM + 4 read by the statistics; backward 4 written + 4
//    read + 2 written (bf16 dlogits) + the dx/dW GEMMs reading the bf16
//    dlogits (from L2 in part): ~1.3 ms (statistics) and ~1.9 ms (dlogits)
//    at the shape above, beside the GEMMs' own f32 stores.
//  - Chunking by vocabulary re-reads x (N*H) per chunk and accumulates dx in
//    f32 in the dx GEMM's epilogue: 2*N*H*4 bytes per chunk (256 MiB; 1 GiB
//    over the 4 chunks above, partly hidden by the GEMM) — where
//    chunking by rows would re-read W (V*H) per chunk and accumulate dW
//    (2*V*H*4 = 4 GiB per chunk). Hence "chunk the longer dimension".
//  - There is no extra pass: no separate softmax, no cast of dlogits (the
//    gradient kernel writes W's dtype), no zeroing (the first chunk's GEMM
//    writes with beta = 0), one final cast only for a non-f32 accumulated
//    gradient.
// Numerics: logits and statistics in f32; dlogits are rounded once to W's
// dtype before the dx/dW GEMMs (bf16: relative 2^-9 per element, as PyTorch,
// llm.c and Liger, whose logits are bf16 throughout); the GEMMs accumulate
// in f32, accumulated gradients are f32 across chunks and rounded once.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/LinearCrossEntropy.h"

#include "runtime/Error.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/LossInternal.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <string>

namespace shardc::cuda {

namespace {

using Shape = LinearCrossEntropyShape;

[[noreturn]] void fail(const char *fn, const std::string &what) {
  std::string prefix = errorRank() >= 0 ? "rank " + std::to_string(errorRank()) + ": " : "";
  throw rt::Error(prefix + fn + ": " + what);
}

/// The block's class columns (the rest is a padded vocabulary's padding).
int64_t classColsOf(const Shape &s) { return s.classCols > 0 ? s.classCols : s.blockVocab; }

/// The class columns among the block's columns [v0, v0 + n).
int64_t classColsIn(const Shape &s, int64_t v0, int64_t n) {
  return std::clamp<int64_t>(classColsOf(s) - v0, 0, n);
}

void checkShape(const char *fn, const Shape &s) {
  if (s.rows < 0 || s.rows > INT_MAX)
    fail(fn, "rows = " + std::to_string(s.rows) + " is outside [0, 2^31)");
  if (s.hidden <= 0 || s.vocab <= 0)
    fail(fn, "hidden = " + std::to_string(s.hidden) + " and vocab = " + std::to_string(s.vocab) +
                 " must be positive");
  const int64_t cols = classColsOf(s);
  if (s.vocabBegin < 0 || s.blockVocab <= 0 || cols < 1 || cols > s.blockVocab ||
      s.vocabBegin + cols > s.vocab || (cols < s.blockVocab && s.vocabBegin + cols != s.vocab))
    fail(fn, "vocabulary block [" + std::to_string(s.vocabBegin) + ", " +
                 std::to_string(s.vocabBegin + s.blockVocab) + ") with " + std::to_string(cols) +
                 " class column(s) is empty, not inside the vocabulary [0, " +
                 std::to_string(s.vocab) + "), or padded before its last class");
  if (s.chunkElems < 0)
    fail(fn, "negative chunkElems");
}

bool isFloat(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

void checkOperands(const char *fn, TView x, TView w) {
  if (!isFloat(w.dtype) || x.dtype != w.dtype)
    fail(fn, std::string("x (") + rt::dtype_name(x.dtype) + ") and w (" + rt::dtype_name(w.dtype) +
                 ") must share one of f32, bf16, f16");
}

// The chunks and the workspace layout are the plan's
// (runtime/program/KernelScratch.h): -xf-plan-memory sizes a call's scratch
// with the same functions.
using Chunks = rt::scratch::LinearCrossEntropyChunks;
using Layout = rt::scratch::LinearCrossEntropyLayout;
Chunks chunksOf(const Shape &s) { return rt::scratch::linearCrossEntropyChunks(s); }
Layout layoutOf(const Shape &s, const Chunks &c, bool lowp, bool acc) {
  return rt::scratch::linearCrossEntropyLayout(s, c, lowp, acc);
}

/// `elements` elements further on.
TView at(TView v, int64_t elements) {
  v.p = static_cast<char *>(v.p) + elements * rt::dtype_size(v.dtype);
  return v;
}

/// Row-major C[m, n] = op(A) op(B) (+ beta C).
GemmArgs product(bool transA, bool transB, int64_t m, int64_t n, int64_t k, TView a, int64_t lda,
                 TView b, int64_t ldb, TView c, int64_t ldc, float beta) {
  GemmArgs g;
  g.transA = transA;
  g.transB = transB;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.c = c;
  g.ldc = ldc;
  g.beta = beta;
  return g;
}

} // namespace

int64_t linear_cross_entropy_chunk_rows(const LinearCrossEntropyShape &shape) {
  checkShape("linear_cross_entropy", shape);
  return chunksOf(shape).rows;
}

int64_t linear_cross_entropy_chunk_vocab(const LinearCrossEntropyShape &shape) {
  checkShape("linear_cross_entropy", shape);
  return chunksOf(shape).vocab;
}

int64_t linear_cross_entropy_workspace_bytes(const LinearCrossEntropyShape &shape) {
  checkShape("linear_cross_entropy", shape);
  return layoutOf(shape, chunksOf(shape), true, true).total;
}

int64_t linear_cross_entropy_workspace_bytes(const LinearCrossEntropyShape &shape, DType w,
                                             DType dx, DType dw) {
  checkShape("linear_cross_entropy", shape);
  return rt::scratch::linearCrossEntropyBytes(shape, /*backward=*/true, w, dx, dw);
}

void linear_cross_entropy_stats(Gemm &gemm, TView x, TView w, const int32_t *targets, TView mask,
                                const LinearCrossEntropyShape &shape, float *stats, void *workspace,
                                KernelError *err, cudaStream_t s) {
  const char *fn = "linear_cross_entropy_stats";
  checkShape(fn, shape);
  checkOperands(fn, x, w);
  const int64_t rows = shape.rows, H = shape.hidden, bv = shape.blockVocab;
  if (rows == 0)
    return;
  const Chunks c = chunksOf(shape);
  const Layout l = layoutOf(shape, c, false, false);
  float *logits = reinterpret_cast<float *>(static_cast<char *>(workspace) + l.logits);
  float *mx = stats, *se = stats + rows, *tg = stats + 2 * rows;
  const bool vm = shape.vocabMajor;
  const int64_t ldw = vm ? H : bv;

  if (c.byVocab) {
    // All rows x columns [v0, v0 + nv): statistics merged chunk by chunk.
    for (int64_t v0 = 0; v0 < bv; v0 += c.vocab) {
      const int64_t nv = std::min(c.vocab, bv - v0);
      TView wc = at(w, vm ? v0 * H : v0);
      const int64_t n = classColsIn(shape, v0, nv);
      if (n == 0)
        break; // the rest is padding (the first chunk always has a class)
      gemm.run(product(false, vm, rows, nv, H, x, H, wc, ldw, {logits, DType::F32}, nv, 0.0f), s);
      detail::ce_stats({logits, DType::F32}, nv, targets, mask, rows, shape.vocab,
                       shape.vocabBegin + v0, n, shape.ignoreIndex, mx, se, tg,
                       /*merge=*/v0 > 0, /*positionOffset=*/0, err, s);
    }
    return;
  }
  // Rows [r0, r0 + nr) x all columns: statistics of complete rows.
  for (int64_t r0 = 0; r0 < rows; r0 += c.rows) {
    const int64_t nr = std::min(c.rows, rows - r0);
    gemm.run(
        product(false, vm, nr, bv, H, at(x, r0 * H), H, w, ldw, {logits, DType::F32}, bv, 0.0f), s);
    detail::ce_stats({logits, DType::F32}, bv, targets + r0, detail::offsetView(mask, r0), nr,
                     shape.vocab, shape.vocabBegin, classColsOf(shape), shape.ignoreIndex,
                     mx + r0, se + r0, tg + r0, /*merge=*/false, /*positionOffset=*/r0, err, s);
  }
}

void linear_cross_entropy_backward(Gemm &gemm, TView dloss, TView x, TView w,
                                   const int32_t *targets, TView mask,
                                   const LinearCrossEntropyShape &shape, const float *stats,
                                   const int32_t *groupCount, TView dx, TView dw, void *workspace,
                                   cudaStream_t s) {
  const char *fn = "linear_cross_entropy_backward";
  checkShape(fn, shape);
  checkOperands(fn, x, w);
  if (dx.dtype != x.dtype && dx.dtype != DType::F32)
    fail(fn, std::string("dx must have x's dtype or f32, not ") + rt::dtype_name(dx.dtype));
  if (dw.dtype != w.dtype && dw.dtype != DType::F32)
    fail(fn, std::string("dw must have w's dtype or f32, not ") + rt::dtype_name(dw.dtype));
  const int64_t rows = shape.rows, H = shape.hidden, bv = shape.blockVocab;
  if (rows == 0) {
    SHARDC_CUDA(cudaMemsetAsync(dw.p, 0, size_t(bv * H * rt::dtype_size(dw.dtype)), s));
    return;
  }
  const Chunks c = chunksOf(shape);
  const bool lowp = w.dtype != DType::F32;
  const bool acc = c.byVocab ? dx.dtype != DType::F32 : dw.dtype != DType::F32;
  const Layout l = layoutOf(shape, c, lowp, acc);
  char *ws = static_cast<char *>(workspace);
  float *logits = reinterpret_cast<float *>(ws + l.logits);
  // dlogits: in place for f32 weights, else W's dtype beside the logits (the
  // gradient kernel rounds once; cuBLASLt needs A and B in one dtype).
  const TView dl = lowp ? TView{ws + l.lowp, w.dtype} : TView{logits, DType::F32};
  const float *mx = stats, *se = stats + rows;
  const int32_t *denom = groupCount;
  if (!denom) {
    int32_t *count = reinterpret_cast<int32_t *>(ws + l.count);
    cross_entropy_count(targets, mask, rows, shape.ignoreIndex, count, s);
    denom = count;
  }
  const bool vm = shape.vocabMajor;
  const int64_t ldw = vm ? H : bv;

  if (c.byVocab) {
    const TView dxAcc = acc ? TView{ws + l.acc, DType::F32} : dx;
    for (int64_t v0 = 0; v0 < bv; v0 += c.vocab) {
      const int64_t nv = std::min(c.vocab, bv - v0);
      const TView wc = at(w, vm ? v0 * H : v0);
      const int64_t n = classColsIn(shape, v0, nv);
      gemm.run(product(false, vm, rows, nv, H, x, H, wc, ldw, {logits, DType::F32}, nv, 0.0f), s);
      if (n > 0)
        detail::ce_grad(dloss, {logits, DType::F32}, nv, targets, mask, mx, se, denom, dl, nv,
                        rows, shape.vocabBegin + v0, n, shape.ignoreIndex, s);
      detail::zero_columns(dl, rows, nv, n, s);
      // dx (+)= dlogits @ Wc^T: Wc is [nv, H] (vocab-major) or the [H, nv]
      // column block of stride bv.
      gemm.run(product(false, !vm, rows, H, nv, dl, nv, wc, ldw, dxAcc, H, v0 > 0 ? 1.0f : 0.0f),
               s);
      // dW of these columns, complete: k = rows.
      if (vm)
        gemm.run(product(true, false, nv, H, rows, dl, nv, x, H, at(dw, v0 * H), H, 0.0f), s);
      else
        gemm.run(product(true, false, H, nv, rows, x, H, dl, nv, at(dw, v0), bv, 0.0f), s);
    }
    if (acc)
      detail::cast_from_f32(static_cast<const float *>(dxAcc.p), dx, rows * H, s);
    return;
  }

  const TView dwAcc = acc ? TView{ws + l.acc, DType::F32} : dw;
  for (int64_t r0 = 0; r0 < rows; r0 += c.rows) {
    const int64_t nr = std::min(c.rows, rows - r0);
    const TView xc = at(x, r0 * H);
    gemm.run(product(false, vm, nr, bv, H, xc, H, w, ldw, {logits, DType::F32}, bv, 0.0f), s);
    detail::ce_grad(dloss, {logits, DType::F32}, bv, targets + r0, detail::offsetView(mask, r0),
                    mx + r0, se + r0, denom, dl, bv, nr, shape.vocabBegin, classColsOf(shape),
                    shape.ignoreIndex, s);
    detail::zero_columns(dl, nr, bv, classColsOf(shape), s);
    // dx of these rows, complete: k = blockVocab.
    gemm.run(product(false, !vm, nr, H, bv, dl, bv, w, ldw, at(dx, r0 * H), H, 0.0f), s);
    // dW (+)= dlogits^T x_chunk (vocab-major) or x_chunk^T dlogits.
    const float beta = r0 > 0 ? 1.0f : 0.0f;
    if (vm)
      gemm.run(product(true, false, bv, H, nr, dl, bv, xc, H, dwAcc, H, beta), s);
    else
      gemm.run(product(true, false, H, bv, nr, xc, H, dl, bv, dwAcc, bv, beta), s);
  }
  if (acc)
    detail::cast_from_f32(static_cast<const float *>(dwAcc.p), dw, bv * H, s);
}

} // namespace shardc::cuda
