//===- NoCuda.cpp - makeCudaBackend in builds without CUDA ----------------===//
//
// Linked into shardc_step_main when CMake found no CUDA compiler: a step run
// with --device cuda says so instead of failing to link or crashing.
//
//===----------------------------------------------------------------------===//

#include "runtime/program/Backend.h"

namespace shardc::rt {

std::unique_ptr<Backend> makeCudaBackend(const Program &, Communicators *, const CudaOptions &) {
  throw Error("--device cuda: this build of shardc has no CUDA backend (CMake found no CUDA "
              "compiler; configure with -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)");
}

} // namespace shardc::rt
