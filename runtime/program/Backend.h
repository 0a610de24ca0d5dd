//===- Backend.h - where a compiled step's calls run ------------*- C++ -*-===//
//
// The C ABI (runtime/abi/shardc_rt.h) forwards every call of a compiled step
// to one Backend: the CPU backend (the kernel runner on host arenas) or the
// CUDA backend (runtime/cuda: device arenas, cuBLASLt and own kernels, NCCL or
// host-staged MPI collectives, CUDA graphs). The step itself is identical.
//
// Arenas: `arena(i)` is what the compiled step addresses (device memory on a
// GPU, except the "host" arena of offloaded activations: pinned host memory); `hostArena(i)` is where the runtime's main reads and writes the
// boundary tensors (inputs, state, reports). On the CPU they are the same
// buffer; on a GPU the host copy is synchronised explicitly, per byte range,
// with toDevice / toHost (the runtime moves inputs up and reports down every
// step, the state at start-up and for checkpoints).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_BACKEND_H
#define SHARDC_RUNTIME_PROGRAM_BACKEND_H

#include "runtime/program/Program.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace shardc::rt {

class Communicators;

/// What a step's kernels need beyond their buffers (the executor's
/// RunOptions).
struct StepContext {
  uint64_t seed = 1234; ///< dropout seed
  uint64_t step = 0;    ///< training step, part of the dropout key
  bool training = false; ///< dropout active
};

class Backend {
public:
  virtual ~Backend();

  /// One line for the log ("cpu", "cuda: NVIDIA H100 ..., NCCL, graphs").
  virtual std::string describe() const = 0;

  /// Base address of arena `i` as the compiled step sees it.
  virtual void *arena(int i) = 0;
  /// The host copy of arena `i`, for the runtime's boundary tensors.
  virtual uint8_t *hostArena(int i) = 0;
  /// Copies bytes [offset, offset + bytes) of arena `i` host -> device /
  /// device -> host (no-ops where both are one buffer). toHost returns when
  /// the bytes are on the host.
  virtual void toDevice(int i, int64_t offset, int64_t bytes) = 0;
  virtual void toHost(int i, int64_t offset, int64_t bytes) = 0;

  /// Runs one entry of the compiled step (shardc_step or shardc_eval, told
  /// apart by `entryId`) with `step`'s seed, index and dropout mode: calls
  /// `entry`, whose calls come back through the functions below. Returns when
  /// the entry's results may be read with toHost. The CUDA backend captures
  /// an entry once as a CUDA graph and replays it afterwards.
  virtual void run(const std::function<void()> &entry, int entryId, const StepContext &step) = 0;

  /// The C ABI's calls (shardc_rt_kernel, _collective_start, _wait, _copy).
  virtual void kernel(int call, void **buffers) = 0;
  /// `scratch`: the call's planned staging (KernelScratch.h
  /// collectiveStaging), null where the plan gives none.
  virtual int collectiveStart(int call, int comm, const void *in, void *out, void *scratch) = 0;
  virtual void collectiveWait(int handle) = 0;
  virtual void copy(void *dst, const void *src, int64_t bytes) = 0;
  /// shardc_rt_copy_start / _copy_wait (activation offload): a copy between
  /// the workspace and the host arena, ordered after the calls before it
  /// (a GPU: on a copy stream, overlapping the compute); the handle is the
  /// backend's own, completed by copyWait.
  virtual int copyStart(void *dst, const void *src, int64_t bytes) = 0;
  virtual void copyWait(int handle) = 0;

  /// --profile: wall time per op name of kernels and collectives (a GPU
  /// backend then runs eagerly and synchronises after every call).
  virtual void setTiming(bool enabled) = 0;
  virtual std::map<std::string, double> kernelSeconds() const = 0;
  virtual std::map<std::string, double> collectiveSeconds() const = 0;
  virtual void resetTiming() = 0;
  /// Device memory the backend allocated beyond the planned arenas so far
  /// (buffers for what the plan does not cover: collective staging, copies of
  /// operands that overlap a result, the workspace of calls planned without
  /// scratch, library workspaces); -1 where the backend's memory is the
  /// process's (the CPU: its RSS tells).
  virtual int64_t bytesOutsidePlan() const { return -1; }
};

/// The CPU backend: 64-byte aligned, zeroed host arenas and the
/// KernelRunner. `comm` (not owned) runs the collectives.
std::unique_ptr<Backend> makeCpuBackend(const Program &program, Communicators *comm);

/// What the CUDA backend is asked for (runtime/main's --comm, --no-graph).
struct CudaOptions {
  /// "nccl", "mpi" (host-staged) or "auto": NCCL unless this node has more
  /// ranks than GPUs (then host-staged).
  std::string comm = "auto";
  bool graphs = true;        ///< capture each entry once, replay it
};

/// The CUDA backend (runtime/cuda), one GPU per rank: the local rank modulo
/// the GPUs of the node. Throws Error if this build has no CUDA backend, if
/// there is no GPU, or if the arenas do not fit (naming the planned bytes).
std::unique_ptr<Backend> makeCudaBackend(const Program &program, Communicators *comm,
                                         const CudaOptions &options);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_BACKEND_H
