//===- Gemm.h - GEMMs through cuBLASLt --------------------------*- C++ -*-===//
//
// Row-major batched GEMMs with the argument convention of cpu::gemm_batched
// (runtime/cpu/Kernels.h), run by cuBLASLt:
//   C[b] = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b])
// Supported dtypes (CUBLAS_COMPUTE_32F, f32 scale type; A and B always share
// one dtype, cuBLASLt has no mixed A/B for these types):
//   A, B f32        -> C f32            (no TF32: f32 results match the CPU
//                                        backend to ~1e-6)
//   A, B bf16 / f16 -> C in A's dtype or f32 (tensor cores, f32 accumulation)
//
// cuBLASLt is column-major: a row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, i.e. with A and B swapped (cuBLASLt's
// "A" is our B and its "B" our A) and m, n exchanged; a row-major matrix with
// row stride ld is the column-major transpose with the same ld, so no data
// moves. Consequences for the epilogues (cuBLASLt terms in brackets):
//  - Bias: one value per column of C  [per row of D^T: CUBLASLT_EPILOGUE_BIAS
//    broadcasts a vector of D's rows];
//  - aux: shaped like C with row stride ldc  [D's leading dimension];
//  - BGrad: the sums over k of op(B)  [cuBLASLt's A is our B, so this is
//    CUBLASLT_EPILOGUE_BGRADA: "bias size = rows of D, reduced over k";
//    cuBLASLt supports BGRADA only for a non-transposed A, i.e. transB ==
//    false here, which is the natural layout of a weight gradient
//    dW = X^T dY with dY [tokens, out] row-major].
//
// Epilogue rules (cuBLASLt 13; run() checks them and throws rt::Error):
//  - batch == 1 (the aux/bias batch strides are not used);
//  - bias and aux have C's dtype (cuBLASLt's default bias/aux type is D's type
//    for these inputs; we never set BIAS/AUX_DATA_TYPE);
//  - BiasGeluAux/DGelu: ldc divisible by 8 (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
//    "must be divisible by 8"), aux 16-byte aligned;
//  - BGrad: transB == false, alpha == 1 (the bias gradient is the plain sum of
//    op(B); whether cuBLASLt scales it by alpha is not documented, so we do not
//    depend on it). The bias gradient is overwritten, whatever beta is.
// GELU is the tanh approximation (cpu::gelu_tanh), as cuBLASLt's GELU epilogues.
//
// The matmul descriptor, the four layouts and the heuristic's best algorithm
// are cached per (batch, transposes, m, n, k, ld*, strides, dtypes, epilogue,
// the alignment of every pointer, 16..256 bytes), so a step's GEMMs query the
// heuristic once each; alpha/beta and the pointers are set per call.
//
// Not thread-safe; the workspace is shared by all calls of one Gemm, so use
// one Gemm per stream that runs GEMMs concurrently with another.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_GEMM_H
#define SHARDC_RUNTIME_CUDA_GEMM_H

#include "runtime/cuda/DeviceKernels.h"

#include <cstdint>
#include <memory>

namespace shardc::cuda {

/// What cuBLASLt applies to the product before storing C. Row-major terms:
/// bias has one value per column of C; aux is a tensor shaped like C.
enum class Epilogue {
  None,
  Bias,        ///< C = AB + bias
  BiasGeluAux, ///< aux = AB + bias; C = gelu_tanh(aux)
  DGelu,       ///< C = AB * gelu_tanh'(aux)  (aux: the pre-activation)
  BGrad,       ///< C = AB; bias = the sums of op(B)'s rows over k, i.e. for a
               ///< weight gradient dW = X^T dY (B = dY) the bias gradient
               ///< (column sums of dY), in the same pass
};

struct GemmArgs {
  int64_t batch = 1;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  TView a, b, c;
  int64_t lda = 0, ldb = 0, ldc = 0;             ///< row strides, as cpu::gemm
  int64_t strideA = 0, strideB = 0, strideC = 0; ///< between batch matrices (elements)
  Epilogue epilogue = Epilogue::None;
  TView bias; ///< Bias, BiasGeluAux: [n]; BGrad: receives the bias gradient
  TView aux;  ///< BiasGeluAux (written), DGelu (read): like C, ld = ldc
};

class Gemm {
public:
  /// Creates the cuBLASLt handle and a workspace of `workspaceBytes`
  /// (32 MiB: what cuBLASLt's Hopper kernels want for split-K/stream-K).
  explicit Gemm(int64_t workspaceBytes = 32ll << 20);
  /// The cuBLASLt workspace's bytes (device memory outside the step's plan).
  int64_t workspaceBytes() const;
  ~Gemm();
  Gemm(const Gemm &) = delete;
  Gemm &operator=(const Gemm &) = delete;

  /// Enqueues one (batched) GEMM on `s`. Throws rt::Error (with the shape)
  /// on invalid arguments or if cuBLASLt has no algorithm for it. As in BLAS,
  /// C is not read when beta == 0; m == 0, n == 0 or batch == 0 is a no-op.
  void run(const GemmArgs &args, cudaStream_t s);

  /// Whether run(args) would find an algorithm: the argument checks and the
  /// heuristic query of run() without the launch (the plan is cached). Lets
  /// the backend fall back to an unfused epilogue for one odd shape.
  bool supports(const GemmArgs &args);

  /// Whether cuBLASLt supports `epilogue` for these dtypes (the backend's
  /// fusion checks before fusing): the dtype rules above, then, when a CUDA
  /// device is present, a heuristic query for a 256^3 GEMM with 256-byte
  /// aligned operands (cached per argument triple). Shape rules (batch 1,
  /// ldc % 8 for aux, transB == false for BGrad) are not part of the answer;
  /// supports() checks a concrete call.
  static bool epilogueSupported(Epilogue epilogue, DType ab, DType c);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_GEMM_H
