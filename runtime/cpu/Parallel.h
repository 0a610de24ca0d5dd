//===- Parallel.h - threading helpers for the CPU kernels -------*- C++ -*-===//
//
// Internal to runtime/cpu. The kernels use two thread pools: OpenMP for their
// own loops and OpenBLAS's for GEMMs. A kernel that calls BLAS from inside an
// OpenMP loop must keep BLAS single-threaded there, or every OpenMP thread
// would fan out again and oversubscribe the machine.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CPU_PARALLEL_H
#define SHARDC_RUNTIME_CPU_PARALLEL_H

#include <cstdint>

namespace shardc::cpu {

/// Loops shorter than this run on the calling thread: waking the OpenMP team
/// costs more than it saves.
constexpr int64_t kParallelGrain = 1 << 14;

/// Makes BLAS single-threaded for its lifetime when OpenBLAS runs its own
/// pthread pool. An OpenMP build of OpenBLAS already serialises inside
/// parallel regions, and its thread setter would also change the OpenMP team
/// size, so it is left alone.
class BlasSerialScope {
public:
  BlasSerialScope();
  ~BlasSerialScope();
  BlasSerialScope(const BlasSerialScope &) = delete;
  BlasSerialScope &operator=(const BlasSerialScope &) = delete;

private:
  int savedThreads = 0;
};

/// Number of OpenMP threads a parallel region started here would use.
int maxThreads();

} // namespace shardc::cpu

#endif // SHARDC_RUNTIME_CPU_PARALLEL_H
