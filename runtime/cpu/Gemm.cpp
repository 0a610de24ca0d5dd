//===- Gemm.cpp - matrix multiplication -----------------------------------===//
//
// Row-major GEMMs through OpenBLAS (cblas_sgemm / cblas_dgemm). Arguments are
// checked here because OpenBLAS reports a bad leading dimension by printing a
// message and returning with C untouched.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include "runtime/Error.h"
#include "runtime/cpu/Parallel.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

namespace shardc::cpu {

namespace {

void blasGemm(bool transA, bool transB, blasint M, blasint N, blasint K,
              float alpha, const float *A, blasint lda, const float *B,
              blasint ldb, float beta, float *C, blasint ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

void blasGemm(bool transA, bool transB, blasint M, blasint N, blasint K,
              double alpha, const double *A, blasint lda, const double *B,
              blasint ldb, double beta, double *C, blasint ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

void checkBlasInt(const char *kernel, const char *what, int64_t value,
                  int64_t minimum) {
  if (value < minimum || value > INT_MAX)
    throw rt::Error(std::string(kernel) + ": " + what + " = " +
                    std::to_string(value) + " is outside [" +
                    std::to_string(minimum) + ", " + std::to_string(INT_MAX) +
                    "]");
}

/// Rejects what BLAS would silently ignore: negative sizes, leading dimensions
/// shorter than a stored row, and sizes past BLAS's 32-bit integers.
void checkGemmArgs(const char *kernel, bool transA, bool transB, int64_t M,
                   int64_t N, int64_t K, int64_t lda, int64_t ldb,
                   int64_t ldc) {
  checkBlasInt(kernel, "M", M, 0);
  checkBlasInt(kernel, "N", N, 0);
  checkBlasInt(kernel, "K", K, 0);
  checkBlasInt(kernel, "lda", lda, std::max<int64_t>(1, transA ? M : K));
  checkBlasInt(kernel, "ldb", ldb, std::max<int64_t>(1, transB ? K : N));
  checkBlasInt(kernel, "ldc", ldc, std::max<int64_t>(1, N));
}

} // namespace

template <class T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha,
          const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
          int64_t ldc) {
  checkGemmArgs("gemm", transA, transB, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0)
    return;
  blasGemm(transA, transB, blasint(M), blasint(N), blasint(K), alpha, A,
           blasint(lda), B, blasint(ldb), beta, C, blasint(ldc));
}

template <class T>
void gemm_batched(int64_t batch, bool transA, bool transB, int64_t M, int64_t N,
                  int64_t K, T alpha, const T *A, int64_t lda, int64_t strideA,
                  const T *B, int64_t ldb, int64_t strideB, T beta, T *C,
                  int64_t ldc, int64_t strideC) {
  checkGemmArgs("gemm_batched", transA, transB, M, N, K, lda, ldb, ldc);
  if (batch < 0)
    throw rt::Error("gemm_batched: batch = " + std::to_string(batch) +
                    " is negative");
  if (batch > 1 && strideC == 0)
    throw rt::Error("gemm_batched: strideC = 0 would make the " +
                    std::to_string(batch) + " products overwrite each other");
  if (batch == 0 || M == 0 || N == 0)
    return;

  auto one = [&](int64_t i) {
    blasGemm(transA, transB, blasint(M), blasint(N), blasint(K), alpha,
             A + i * strideA, blasint(lda), B + i * strideB, blasint(ldb), beta,
             C + i * strideC, blasint(ldc));
  };
  // Enough matrices to occupy every thread: one single-threaded GEMM per
  // thread beats splitting each GEMM. Otherwise let BLAS split each one.
  int threads = maxThreads();
  if (threads > 1 && batch >= threads) {
    BlasSerialScope serial;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < batch; ++i)
      one(i);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    one(i);
}

#define SHARDC_INSTANTIATE(T)                                                  \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T *,   \
                        int64_t, const T *, int64_t, T, T *, int64_t);         \
  template void gemm_batched<T>(                                               \
      int64_t, bool, bool, int64_t, int64_t, int64_t, T, const T *, int64_t,   \
      int64_t, const T *, int64_t, int64_t, T, T *, int64_t, int64_t);
SHARDC_INSTANTIATE(float)
SHARDC_INSTANTIATE(double)
#undef SHARDC_INSTANTIATE

} // namespace shardc::cpu
