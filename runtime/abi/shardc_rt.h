/*===- shardc_rt.h - the C ABI between compiled steps and the runtime -----===*
 *
 * A compiled step (`shardc compile`) is an object file that defines
 *   - `shardc_program_json`: the program descriptor (runtime/program/Program.h
 *     documents its schema): mesh, arenas, the step's boundary tensors, the
 *     kernel and collective call table, the communicators;
 *   - `shardc_step(ctx)`: one training step, a straight-line sequence of
 *     calls into the runtime on views of the planned arenas;
 *   - `shardc_eval(ctx)`: the loss only (validation), same arenas.
 * It is linked with libshardc_runtime, whose `main` (runtime/main) parses the
 * descriptor, creates the communicators (MPI), allocates one buffer per
 * arena, initializes or loads the state and calls `shardc_step` once per
 * training step.
 *
 * Buffers are plain pointers: arena base + planned byte offset. A call's
 * static description (op, dtypes, shapes, attributes) lives in the
 * descriptor's call table under its index, so the generated code passes only
 * the index and the buffer pointers.
 *
 * Pipelined steps (the descriptor's "pipeline"): every rank runs the same
 * code; a call (and a copy) of another stage returns at once, so each rank
 * runs only its stage's calls (a transfer runs on its two stages).
 *
 *===----------------------------------------------------------------------===*/
#ifndef SHARDC_RUNTIME_ABI_SHARDC_RT_H
#define SHARDC_RUNTIME_ABI_SHARDC_RT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The runtime's per-rank state (arenas, communicators, step counters). */
typedef struct shardc_rt_ctx shardc_rt_ctx;

/* Defined by the compiled step. */
extern const char shardc_program_json[];
void shardc_step(shardc_rt_ctx *ctx);
/** The loss of the current parameters on the inputs, without an update (the
 *  step's forward with its shardings: -xf-extract-eval); writes the
 *  descriptor's "eval_report" tensor. Empty in programs compiled without it. */
void shardc_eval(shardc_rt_ctx *ctx);

/* Provided by the runtime. */

/** Base address of arena `arena` (index into the descriptor's "arenas"). */
void *shardc_rt_arena(shardc_rt_ctx *ctx, int32_t arena);

/** Runs kernel call `call` of the descriptor's call table; `buffers` holds
 *  the operands' then the results' addresses, in op order. */
void shardc_rt_kernel(shardc_rt_ctx *ctx, int32_t call, void **buffers);

/** Runs collective call `call` (a call-table entry whose op is shard.*) on
 *  communicator `comm` (index into the descriptor's "comms"). `scratch` is
 *  the call's planned staging (the call's "scratch" bytes of the workspace,
 *  runtime/program/KernelScratch.h collectiveStaging), or null where the
 *  plan gives none (the backend then stages in memory of its own). */
void shardc_rt_collective(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in, void *out,
                          void *scratch);

/** Starts collective call `call` on communicator `comm` and returns a handle
 *  for shardc_rt_wait; until then `in` must not change and `out` must not be
 *  touched (the compiler schedules compute in between). */
int32_t shardc_rt_collective_start(shardc_rt_ctx *ctx, int32_t call, int32_t comm, void *in,
                                   void *out, void *scratch);

/** Completes the collective `handle` names: its output is written. A
 *  negative handle (a collective of another pipeline stage) does nothing. */
void shardc_rt_wait(shardc_rt_ctx *ctx, int32_t handle);

/** Copies `bytes` bytes (state results written back to their arguments) on
 *  the ranks of pipeline stage `stage` (-1: on every rank). */
void shardc_rt_copy(shardc_rt_ctx *ctx, void *dst, const void *src, int64_t bytes,
                    int32_t stage);

/** Starts copying `bytes` bytes from `src` to `dst` (activation offload:
 *  between the workspace and the host arena) on the ranks of pipeline stage
 *  `stage` (-1: on every rank) and returns a handle for shardc_rt_copy_wait
 *  (negative on a rank of another stage). The copy is ordered after every
 *  call issued before it; until the wait `src` must not change and `dst`
 *  must not be touched. */
int32_t shardc_rt_copy_start(shardc_rt_ctx *ctx, void *dst, const void *src, int64_t bytes,
                             int32_t stage);

/** Completes the copy `handle` names (a negative handle does nothing): calls
 *  issued after it see `dst` written. */
void shardc_rt_copy_wait(shardc_rt_ctx *ctx, int32_t handle);

#ifdef __cplusplus
}
#endif

#endif /* SHARDC_RUNTIME_ABI_SHARDC_RT_H */
