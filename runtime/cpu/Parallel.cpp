//===- Parallel.cpp - threading helpers for the CPU kernels ---------------===//
#include "runtime/cpu/Parallel.h"

#include <cblas.h>
#include <omp.h>

namespace shardc::cpu {

BlasSerialScope::BlasSerialScope() {
  if (openblas_get_parallel() != OPENBLAS_THREAD)
    return;
  savedThreads = openblas_get_num_threads();
  if (savedThreads > 1)
    openblas_set_num_threads(1);
}

BlasSerialScope::~BlasSerialScope() {
  if (savedThreads > 1)
    openblas_set_num_threads(savedThreads);
}

int maxThreads() { return omp_get_max_threads(); }

} // namespace shardc::cpu
