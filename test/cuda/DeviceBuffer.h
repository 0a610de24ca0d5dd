//===- DeviceBuffer.h - device memory and dtype helpers for GPU tests -*- C++ -*-===//
//
// Shared by the GPU kernel tests (test/cuda): an RAII device buffer with
// upload/download, float vectors stored as f32/bf16/f16 (rounded with the CPU
// backend's own conversions, runtime/cpu/Cast.cpp), random inputs and the
// per-tensor error metric the tests use:
//   relError(got, want) = max_i |got_i - want_i| / max(max_i |want_i|, 1e-30)
// i.e. the largest deviation relative to the tensor's largest reference
// value. CUDA failures throw std::runtime_error, which GoogleTest reports as
// a test failure.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TEST_CUDA_DEVICEBUFFER_H
#define SHARDC_TEST_CUDA_DEVICEBUFFER_H

#include "runtime/HostTensor.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceKernels.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shardc::test {

using rt::DType;

inline void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
}

/// Waits for the device and surfaces asynchronous kernel errors.
inline void deviceSync() {
  checkCuda(cudaGetLastError(), "kernel launch");
  checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/// An owning device allocation (at least 256-byte aligned, as cudaMalloc).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes)
      checkCuda(cudaMalloc(&p_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (p_)
      cudaFree(p_);
  }
  DeviceBuffer(DeviceBuffer &&o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      if (p_)
        cudaFree(p_);
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *get() const { return p_; }
  size_t bytes() const { return bytes_; }
  template <class T> T *as() const { return static_cast<T *>(p_); }

  void upload(const void *src, size_t bytes, size_t offset = 0) {
    checkCuda(cudaMemcpy(static_cast<char *>(p_) + offset, src, bytes, cudaMemcpyHostToDevice),
              "cudaMemcpy H2D");
  }
  void download(void *dst, size_t bytes, size_t offset = 0) const {
    checkCuda(cudaMemcpy(dst, static_cast<const char *>(p_) + offset, bytes,
                         cudaMemcpyDeviceToHost),
              "cudaMemcpy D2H");
  }
  void memset(int byte) { checkCuda(cudaMemset(p_, byte, bytes_), "cudaMemset"); }

  template <class T> static DeviceBuffer of(const std::vector<T> &v) {
    DeviceBuffer b(std::max<size_t>(v.size() * sizeof(T), 1));
    if (!v.empty())
      b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T> std::vector<T> to(size_t n) const {
    std::vector<T> v(n);
    if (n)
      download(v.data(), n * sizeof(T));
    return v;
  }

private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

//===----------------------------------------------------------------------===//
// Float vectors stored as any float dtype
//===----------------------------------------------------------------------===//

inline uint16_t toBf16(float x) { return cpu::f32_to_bf16(x); }
inline float fromBf16(uint16_t x) { return cpu::bf16_to_f32(x); }
inline uint16_t toF16(float x) { return cpu::f32_to_f16(x); }
inline float fromF16(uint16_t x) { return cpu::f16_to_f32(x); }

/// x rounded to dtype t (round to nearest even) and widened back to f32.
inline float roundTo(DType t, float x) {
  switch (t) {
  case DType::BF16:
    return fromBf16(toBf16(x));
  case DType::F16:
    return fromF16(toF16(x));
  default:
    return x;
  }
}

inline std::vector<float> roundTo(DType t, std::vector<float> v) {
  for (float &x : v)
    x = roundTo(t, x);
  return v;
}

/// The bytes of v stored as dtype t (F32, BF16, F16 or F64).
inline std::vector<uint8_t> encode(const std::vector<float> &v, DType t) {
  std::vector<uint8_t> bytes(v.size() * size_t(rt::dtype_size(t)));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t) {
    case DType::BF16: {
      uint16_t b = toBf16(v[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
      break;
    }
    case DType::F16: {
      uint16_t h = toF16(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      break;
    }
    case DType::F64: {
      double d = v[i];
      std::memcpy(bytes.data() + 8 * i, &d, 8);
      break;
    }
    case DType::I32: {
      int32_t k = int32_t(v[i]);
      std::memcpy(bytes.data() + 4 * i, &k, 4);
      break;
    }
    default:
      std::memcpy(bytes.data() + 4 * i, &v[i], 4);
    }
  }
  return bytes;
}

inline std::vector<float> decode(const std::vector<uint8_t> &bytes, DType t) {
  size_t n = bytes.size() / size_t(rt::dtype_size(t));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
    case DType::BF16: {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      v[i] = fromBf16(b);
      break;
    }
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = fromF16(h);
      break;
    }
    case DType::F64: {
      double d;
      std::memcpy(&d, bytes.data() + 8 * i, 8);
      v[i] = float(d);
      break;
    }
    case DType::I32: {
      int32_t k;
      std::memcpy(&k, bytes.data() + 4 * i, 4);
      v[i] = float(k);
      break;
    }
    default:
      std::memcpy(&v[i], bytes.data() + 4 * i, 4);
    }
  }
  return v;
}

/// A device tensor of dtype t holding v (rounded to t).
struct DeviceTensor {
  DeviceBuffer buf;
  DType dtype = DType::F32;
  size_t n = 0;

  DeviceTensor() = default;
  DeviceTensor(DType t, size_t count)
      : buf(std::max<size_t>(count * size_t(rt::dtype_size(t)), 1)), dtype(t), n(count) {}
  DeviceTensor(const std::vector<float> &v, DType t) : DeviceTensor(t, v.size()) {
    set(v);
  }

  void set(const std::vector<float> &v) {
    std::vector<uint8_t> bytes = encode(v, dtype);
    if (!bytes.empty())
      buf.upload(bytes.data(), bytes.size());
  }
  std::vector<float> get() const {
    std::vector<uint8_t> bytes(n * size_t(rt::dtype_size(dtype)));
    if (!bytes.empty())
      buf.download(bytes.data(), bytes.size());
    return decode(bytes, dtype);
  }
  /// The raw stored bytes (bit-exact comparisons).
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b(n * size_t(rt::dtype_size(dtype)));
    if (!b.empty())
      buf.download(b.data(), b.size());
    return b;
  }
  cuda::TView view() const { return cuda::TView{buf.get(), dtype}; }
  /// A view of element `offset` on (misaligned on purpose in some tests).
  cuda::TView viewAt(size_t offset) const {
    return cuda::TView{static_cast<char *>(buf.get()) + offset * size_t(rt::dtype_size(dtype)),
                       dtype};
  }
};

//===----------------------------------------------------------------------===//
// Inputs and comparisons
//===----------------------------------------------------------------------===//

inline std::vector<float> randomFloats(size_t n, uint32_t seed, double lo = -1.0,
                                       double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(dist(gen));
  return v;
}

/// Random values already representable in dtype t.
inline std::vector<float> randomIn(DType t, size_t n, uint32_t seed, double lo = -1.0,
                                   double hi = 1.0) {
  return roundTo(t, randomFloats(n, seed, lo, hi));
}

inline const char *dtypeName(DType t) { return rt::dtype_name(t); }

/// The tolerance of a result stored as t: f32 1e-5, f16 2e-3, bf16 1e-2
/// (a few units in the last place of each).
inline double tolFor(DType t) {
  switch (t) {
  case DType::BF16:
    return 1e-2;
  case DType::F16:
    return 2e-3;
  default:
    return 1e-5;
  }
}

/// max |got - want| / max(max |want|, 1e-30). NaNs count as infinite error
/// unless both sides are NaN.
inline double relError(const std::vector<float> &got, const std::vector<float> &want) {
  double maxRef = 0.0, maxDiff = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    maxRef = std::max(maxRef, std::fabs(double(want[i])));
    if (std::isnan(got[i]) && std::isnan(want[i]))
      continue;
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (std::isnan(d))
      d = INFINITY;
    maxDiff = std::max(maxDiff, d);
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

/// relError(got, want) <= tol, reporting the worst element on failure.
inline ::testing::AssertionResult closeTo(const std::vector<float> &got,
                                          const std::vector<float> &want, double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != expected " << want.size();
  double err = relError(got, want);
  if (err <= tol)
    return ::testing::AssertionSuccess();
  size_t worst = 0;
  double worstDiff = -1.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (std::isnan(d) || d > worstDiff) {
      worst = i;
      worstDiff = std::isnan(d) ? INFINITY : d;
      if (std::isnan(d))
        break;
    }
  }
  return ::testing::AssertionFailure()
         << "relative error " << err << " > " << tol << "; worst at " << worst << ": got "
         << got[worst] << ", expected " << want[worst];
}

/// Element-wise bit equality of two float vectors (NaN == NaN).
inline ::testing::AssertionResult sameValues(const std::vector<float> &got,
                                             const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != expected " << want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    bool same = std::isnan(got[i]) ? std::isnan(want[i])
                                   : std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
    if (!same)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

/// A Dims from a shape list.
inline cuda::Dims dims(const std::vector<int64_t> &v) {
  cuda::Dims d;
  d.rank = int(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    d.d[i] = v[i];
  return d;
}

inline int64_t numel(const std::vector<int64_t> &shape) { return rt::num_elements(shape); }

} // namespace shardc::test

#endif // SHARDC_TEST_CUDA_DEVICEBUFFER_H
