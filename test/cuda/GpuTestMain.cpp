//===- GpuTestMain.cpp - main() of the GPU kernel tests ---------*- C++ -*-===//
//
// Runs the GoogleTest suites on the first CUDA device; without one (no GPU,
// no driver: cudaGetDeviceCount fails or finds none) exits 77, which ctest
// reports as skipped (SKIP_RETURN_CODE 77).
//
//===----------------------------------------------------------------------===//
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s): skipping the GPU tests\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
