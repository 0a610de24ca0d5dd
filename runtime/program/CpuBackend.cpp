//===- CpuBackend.cpp - compiled steps on the CPU -------------------------===//
//
// Host arenas (one 64-byte aligned, zero-filled buffer each) and the kernel
// runner: the step's addresses are the runtime's, so the host copy needs no
// synchronisation.
//
//===----------------------------------------------------------------------===//

#include "runtime/program/Backend.h"
#include "runtime/comm/Comm.h"
#include "runtime/program/KernelRunner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace shardc::rt {

Backend::~Backend() = default;

namespace {

class CpuBackend final : public Backend {
public:
  CpuBackend(const Program &program, Communicators *comm) {
    for (const ArenaDesc &a : program.arenas) {
      // aligned_alloc needs a size that is a multiple of the alignment.
      size_t bytes = static_cast<size_t>((std::max<int64_t>(a.bytes, 1) + 63) / 64 * 64);
      auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, bytes));
      if (!p)
        throw Error("cannot allocate arena '" + a.name + "' (" + std::to_string(a.bytes) +
                    " bytes)");
      std::memset(p, 0, bytes);
      arenas_.emplace_back(p);
    }
    runner_ = std::make_unique<KernelRunner>(program, comm ? comm->rank() : 0, comm);
  }

  std::string describe() const override { return "cpu"; }
  void *arena(int i) override { return arenas_.at(i).get(); }
  uint8_t *hostArena(int i) override { return arenas_.at(i).get(); }
  void toDevice(int, int64_t, int64_t) override {}
  void toHost(int, int64_t, int64_t) override {}

  void run(const std::function<void()> &entry, int, const StepContext &step) override {
    step_ = step;
    entry();
  }
  void kernel(int call, void **buffers) override { runner_->kernel(call, buffers, step_); }
  int collectiveStart(int call, int comm, const void *in, void *out, void *scratch) override {
    return runner_->collectiveStart(call, comm, in, out, scratch);
  }
  void collectiveWait(int handle) override { runner_->collectiveWait(handle); }
  void copy(void *dst, const void *src, int64_t bytes) override {
    // memmove: a state result may be planned over its own argument.
    std::memmove(dst, src, static_cast<size_t>(bytes));
  }
  // The host arena is one more host buffer: the copy is done at its start
  // (the program is the GPU's, so its offload path runs and is tested here).
  int copyStart(void *dst, const void *src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    size_t h = 0;
    while (h < copies_.size() && copies_[h])
      ++h;
    if (h == copies_.size())
      copies_.push_back(false);
    copies_[h] = true;
    return static_cast<int>(h);
  }
  void copyWait(int handle) override {
    if (handle < 0 || handle >= static_cast<int>(copies_.size()) || !copies_[handle])
      throw Error("wait on copy handle " + std::to_string(handle) + ", which is not in flight");
    copies_[handle] = false;
  }

  void setTiming(bool enabled) override { runner_->setTiming(enabled); }
  std::map<std::string, double> kernelSeconds() const override {
    return runner_->kernelSeconds();
  }
  std::map<std::string, double> collectiveSeconds() const override {
    return runner_->collectiveSeconds();
  }
  void resetTiming() override { runner_->resetTiming(); }

private:
  struct FreeDeleter {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> arenas_;
  std::unique_ptr<KernelRunner> runner_;
  StepContext step_;
  std::vector<bool> copies_; ///< copy handles in flight
};

} // namespace

std::unique_ptr<Backend> makeCpuBackend(const Program &program, Communicators *comm) {
  return std::make_unique<CpuBackend>(program, comm);
}

} // namespace shardc::rt
