//===- GpuProbe.cpp - is there a usable CUDA device? ----------------------===//
//
// Exit status 0 and the device's name where cudaGetDeviceCount finds one;
// 77 (ctest's skip code) where it fails or finds none.
//
//===----------------------------------------------------------------------===//
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    std::printf("%s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  return 0;
}
