//===- Context.cpp - the runtime behind the C ABI -------------------------===//

#include "runtime/main/Context.h"

#include <exception>
#include <string>

using namespace shardc::rt;

shardc_rt_ctx::shardc_rt_ctx(Program p, Communicators *c,
                             const std::function<std::unique_ptr<Backend>(const Program &)> &make)
    : program(std::move(p)), comm(c) {
  const int64_t rank = comm ? comm->rank() : 0;
  stage = program.stageOf(rank);
  for (const Call &call : program.calls)
    mine.push_back(program.runs(call, rank));
  backend = make(program);
}

bool shardc_rt_ctx::runs(int32_t call) const {
  return call < 0 || call >= static_cast<int32_t>(mine.size()) || mine[call];
}

void shardc_rt_ctx::run(bool eval, const StepContext &step) {
  backend->run([this, eval] { eval ? shardc_eval(this) : shardc_step(this); }, eval ? 1 : 0,
               step);
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
  if (arena < 0 || arena >= static_cast<int32_t>(ctx->program.arenas.size()))
    ctx->comm->abort("the compiled step asks for arena " + std::to_string(arena) + " of " +
                     std::to_string(ctx->program.arenas.size()));
  return ctx->backend->arena(arena);
}

void shardc_rt_kernel(shardc_rt_ctx *ctx, int32_t call, void **buffers) {
  if (!ctx->runs(call))
    return;
  guarded(ctx, "kernel call", [&] { ctx->backend->kernel(call, buffers); });
}

void shardc_rt_collective(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in, void *out,
                          void *scratch) {
  if (!ctx->runs(call))
    return;
  guarded(ctx, "collective call", [&] {
    ctx->backend->collectiveWait(ctx->backend->collectiveStart(call, comm, in, out, scratch));
  });
}

int32_t shardc_rt_collective_start(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in,
                                   void *out, void *scratch) {
  int32_t handle = -1;
  if (!ctx->runs(call))
    return handle;
  guarded(ctx, "collective call",
          [&] { handle = ctx->backend->collectiveStart(call, comm, in, out, scratch); });
  return handle;
}

void shardc_rt_wait(shardc_rt_ctx *ctx, int32_t handle) {
  if (handle < 0)
    return;
  guarded(ctx, "collective wait", [&] { ctx->backend->collectiveWait(handle); });
}

void shardc_rt_copy(shardc_rt_ctx *ctx, void *dst, const void *src, int64_t bytes,
                    int32_t stage) {
  if (stage >= 0 && stage != ctx->stage)
    return;
  guarded(ctx, "copy", [&] { ctx->backend->copy(dst, src, bytes); });
}

int32_t shardc_rt_copy_start(shardc_rt_ctx *ctx, void *dst, const void *src, int64_t bytes,
                             int32_t stage) {
  int32_t handle = -1;
  if (stage >= 0 && stage != ctx->stage)
    return handle;
  guarded(ctx, "copy", [&] { handle = ctx->backend->copyStart(dst, src, bytes); });
  return handle;
}

void shardc_rt_copy_wait(shardc_rt_ctx *ctx, int32_t handle) {
  if (handle < 0)
    return;
  guarded(ctx, "copy wait", [&] { ctx->backend->copyWait(handle); });
}

} // extern "C"
