//===- Context.cpp - the runtime behind the C ABI -------------------------===//

#include "runtime/main/Context.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

using namespace shardc::rt;

shardc_rt_ctx::shardc_rt_ctx(Program p, Communicators *c) : program(std::move(p)), comm(c) {
  for (const ArenaDesc &a : program.arenas) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    size_t bytes = static_cast<size_t>((std::max<int64_t>(a.bytes, 1) + 63) / 64 * 64);
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, bytes));
    if (!p)
      throw Error("cannot allocate arena '" + a.name + "' (" + std::to_string(a.bytes) +
                  " bytes)");
    std::memset(p, 0, bytes);
    arenas.emplace_back(p);
  }
  runner = std::make_unique<KernelRunner>(program, comm->rank(), comm);
}

namespace {

/// Runs `body`; any exception ends the job (it cannot cross the C ABI).
template <class F> void guarded(shardc_rt_ctx *ctx, const char *what, F &&body) {
  try {
    body();
  } catch (const std::exception &e) {
    ctx->comm->abort(std::string(what) + ": " + e.what());
  } catch (...) {
    ctx->comm->abort(std::string(what) + ": unknown exception");
  }
}

} // namespace

extern "C" {

void *shardc_rt_arena(shardc_rt_ctx *ctx, int32_t arena) {
  if (arena < 0 || arena >= static_cast<int32_t>(ctx->arenas.size()))
    ctx->comm->abort("the compiled step asks for arena " + std::to_string(arena) + " of " +
                     std::to_string(ctx->arenas.size()));
  return ctx->arenas[arena].get();
}

void shardc_rt_kernel(shardc_rt_ctx *ctx, int32_t call, void **buffers) {
  guarded(ctx, "kernel call", [&] { ctx->runner->kernel(call, buffers, ctx->step); });
}

void shardc_rt_collective(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in, void *out) {
  guarded(ctx, "collective call", [&] { ctx->runner->collective(call, comm, in, out); });
}

int32_t shardc_rt_collective_start(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in,
                                   void *out) {
  int32_t handle = -1;
  guarded(ctx, "collective call",
          [&] { handle = ctx->runner->collectiveStart(call, comm, in, out); });
  return handle;
}

void shardc_rt_wait(shardc_rt_ctx *ctx, int32_t handle) {
  guarded(ctx, "collective wait", [&] { ctx->runner->collectiveWait(handle); });
}

void shardc_rt_copy(shardc_rt_ctx *, void *dst, const void *src, int64_t bytes) {
  // memmove: a state result may be planned over its own argument.
  std::memmove(dst, src, static_cast<size_t>(bytes));
}

} // extern "C"
