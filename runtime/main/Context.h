//===- Context.h - the runtime behind the C ABI -----------------*- C++ -*-===//
//
// `shardc_rt_ctx` (runtime/abi/shardc_rt.h) is one rank's runtime: the
// decoded descriptor, the backend that owns the arenas and runs the calls
// (Backend.h: the CPU kernel runner, or the CUDA backend) and the step being
// run. The C ABI functions never let an exception out: an Error ends the
// whole job through Communicators::abort, since peers waiting in a
// collective cannot see it.
//
// Boundary tensors are read and written on the host copy of the arenas
// (address()); toDevice / toHost move one tensor's bytes between the copies
// (no-ops on the CPU backend).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_MAIN_CONTEXT_H
#define SHARDC_RUNTIME_MAIN_CONTEXT_H

#include "runtime/abi/shardc_rt.h"
#include "runtime/comm/Comm.h"
#include "runtime/program/Backend.h"
#include "runtime/program/Program.h"

#include <memory>

struct shardc_rt_ctx {
  /// Takes the program and the backend built for it; `comm` (not owned) is
  /// this rank's communicators.
  shardc_rt_ctx(shardc::rt::Program program, shardc::rt::Communicators *comm,
                const std::function<std::unique_ptr<shardc::rt::Backend>(
                    const shardc::rt::Program &)> &makeBackend);

  /// Where a boundary tensor lives in this rank's host copy of the arenas.
  void *address(const shardc::rt::BoundaryTensor &t) const {
    return backend->hostArena(t.arena) + t.offset;
  }
  void toDevice(const shardc::rt::BoundaryTensor &t) const {
    backend->toDevice(t.arena, t.offset, t.local.bytes());
  }
  void toHost(const shardc::rt::BoundaryTensor &t) const {
    backend->toHost(t.arena, t.offset, t.local.bytes());
  }
  /// Runs shardc_step (training) or shardc_eval with `step`'s values.
  void run(bool eval, const shardc::rt::StepContext &step);

  /// Whether this rank runs call `call` (its pipeline stage's calls; all
  /// of them in a step without a pipeline).
  bool runs(int32_t call) const;

  /// Declared first: the backend keeps a reference to it.
  const shardc::rt::Program program;
  shardc::rt::Communicators *comm;
  /// This rank's pipeline stage (0 without a pipeline) and, per call, runs().
  int stage = 0;
  std::vector<char> mine;
  std::unique_ptr<shardc::rt::Backend> backend;
};

#endif // SHARDC_RUNTIME_MAIN_CONTEXT_H
