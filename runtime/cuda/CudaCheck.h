//===- CudaCheck.h - CUDA, cuBLASLt and NCCL errors as rt::Error -*- C++ -*-===//
//
// Every CUDA, cuBLASLt and NCCL call of the backend goes through one of the
// SHARDC_CUDA / SHARDC_CUBLAS / SHARDC_NCCL macros: a failure throws
// rt::Error naming the call, the error string, the source line and this
// process's rank (set once by the backend), e.g.
//   rank 1: cudaMalloc(&p, bytes) failed: out of memory (CudaBackend.cpp:88)
// Kernel launches are checked with SHARDC_CUDA_LAUNCH() right after them.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_CUDACHECK_H
#define SHARDC_RUNTIME_CUDA_CUDACHECK_H

#include "runtime/Error.h"

#include <cuda_runtime_api.h>

#include <string>

namespace shardc::cuda {

/// The rank reported in error messages (-1 until the backend sets it).
inline int &errorRank() {
  static int rank = -1;
  return rank;
}

[[noreturn]] inline void throwCallError(const char *call, const std::string &what,
                                        const char *file, int line) {
  std::string where = file;
  size_t slash = where.rfind('/');
  if (slash != std::string::npos)
    where = where.substr(slash + 1);
  std::string prefix = errorRank() >= 0 ? "rank " + std::to_string(errorRank()) + ": " : "";
  throw rt::Error(prefix + call + " failed: " + what + " (" + where + ":" +
                  std::to_string(line) + ")");
}

inline void checkCuda(cudaError_t e, const char *call, const char *file, int line) {
  if (e != cudaSuccess)
    throwCallError(call, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e), file,
                   line);
}

} // namespace shardc::cuda

#define SHARDC_CUDA(call) ::shardc::cuda::checkCuda((call), #call, __FILE__, __LINE__)
#define SHARDC_CUDA_LAUNCH()                                                                       \
  ::shardc::cuda::checkCuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// cuBLASLt and NCCL: usable in the files that include their headers (a macro
// body is only compiled where it is used).
#define SHARDC_CUBLAS(call)                                                                        \
  do {                                                                                             \
    cublasStatus_t st_ = (call);                                                                   \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                              \
      ::shardc::cuda::throwCallError(#call, cublasLtGetStatusString(st_), __FILE__, __LINE__);    \
  } while (0)
#define SHARDC_NCCL(call)                                                                          \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                                                 \
      ::shardc::cuda::throwCallError(#call, ncclGetErrorString(r_), __FILE__, __LINE__);          \
  } while (0)

#endif // SHARDC_RUNTIME_CUDA_CUDACHECK_H
