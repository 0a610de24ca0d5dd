//===- Context.h - the runtime behind the C ABI -----------------*- C++ -*-===//
//
// `shardc_rt_ctx` (runtime/abi/shardc_rt.h) is one rank's runtime: the
// decoded descriptor, one 64-byte aligned buffer per arena (allocated once,
// zero-filled), the kernel runner and the step being run. The C ABI functions
// never let an exception out: an Error ends the whole job through
// Communicators::abort, since peers waiting in a collective cannot see it.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_MAIN_CONTEXT_H
#define SHARDC_RUNTIME_MAIN_CONTEXT_H

#include "runtime/abi/shardc_rt.h"
#include "runtime/comm/Comm.h"
#include "runtime/program/KernelRunner.h"
#include "runtime/program/Program.h"

#include <cstdlib>
#include <memory>
#include <vector>

struct shardc_rt_ctx {
  /// Decodes nothing itself: takes the program, allocates its arenas and
  /// builds the kernel runner for `comm`'s rank (not owned). Throws Error.
  shardc_rt_ctx(shardc::rt::Program program, shardc::rt::Communicators *comm);

  /// Where a boundary tensor lives in this rank's arenas.
  void *address(const shardc::rt::BoundaryTensor &t) const {
    return arenas[t.arena].get() + t.offset;
  }

  struct FreeDeleter {
    void operator()(uint8_t *p) const { std::free(p); }
  };

  /// Declared first: the runner keeps a reference to it.
  const shardc::rt::Program program;
  shardc::rt::Communicators *comm;
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> arenas;
  std::unique_ptr<shardc::rt::KernelRunner> runner;
  /// The step shardc_step is running (seed, index, dropout on).
  shardc::rt::StepContext step;
};

#endif // SHARDC_RUNTIME_MAIN_CONTEXT_H
