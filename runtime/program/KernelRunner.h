//===- KernelRunner.h - the calls of a compiled step ------------*- C++ -*-===//
//
// The runtime twin of the reference executor (compiler/executor): runs one
// entry of the descriptor's call table on raw rank-local buffers with the CPU
// kernel library, computing bit-identical results to Executor and
// MeshSimulation for the same inputs:
//  - bf16/f16 tensors are computed in f32 and rounded after every op, f64 ops
//    in f64 (the compute type is the op's first float operand's, else its
//    first result's);
//  - ops whose values depend on global indices (embedding rows, iota,
//    dropout's mask, rope positions, cross-entropy vocabulary blocks) take
//    this rank's block offsets from the call's operand_axes/result_axes;
//  - reductions over a group (all_reduce, reduce_scatter, cross-entropy
//    statistics) gather every member's values and combine them locally in
//    group order, so all members and the executor agree bit for bit.
//
// Every call is decoded once, at construction (CallDecoder.h); a call the
// runner cannot run (op, dtype, shape, attribute) is an Error naming its index
// and op then, not in the middle of a step.
//
// In place: a result may share its buffer with an operand (the memory planner
// reuses a dying operand's buffer). Kernels that are correct in place run on
// the shared buffer; for the others the operand is copied to scratch first.
// Partial overlaps are handled the same way.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_PROGRAM_KERNELRUNNER_H
#define SHARDC_RUNTIME_PROGRAM_KERNELRUNNER_H

#include "runtime/program/Backend.h"
#include "runtime/program/CallDecoder.h"
#include "runtime/program/Program.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::rt {

class Communicators;


/// Element-wise reduction of `members` blocks of n elements of `dtype`
/// (contiguous, in group order) into `out`: accumulated in f32 (f64 for f64,
/// i64 for i32) in group order and rounded once, as MeshSimulation reduces.
/// Every transport that reduces on the host (the MPI all-reduce, the CUDA
/// backend's host-staged path) uses this one, so all agree bit for bit.
void reduceBlocks(const uint8_t *blocks, int64_t members, int64_t n, DType dtype,
                  Reduction kind, void *out);

class KernelRunner {
public:
  /// Decodes every call of `program` for rank `rank`. `comm` (not owned, may
  /// be null for a program without collectives or split cross-entropy) runs
  /// the group operations. Throws Error naming the first call it cannot run.
  KernelRunner(const Program &program, int64_t rank, Communicators *comm);
  ~KernelRunner();
  KernelRunner(const KernelRunner &) = delete;
  KernelRunner &operator=(const KernelRunner &) = delete;

  /// Runs kernel call `call` (any op but shard.*): `buffers` holds its
  /// operands' then its results' addresses.
  void kernel(int call, void **buffers, const StepContext &ctx);

  /// Runs collective call `call` (shard.all_gather, all_reduce,
  /// reduce_scatter, all_slice, all_to_all) on the group of
  /// program.comms[comm]; `in` and `out` may be the same buffer. `scratch`
  /// is the call's planned staging (KernelScratch.h collectiveStaging: the
  /// copy of an overlapping input, gathered or packed blocks, an
  /// all-to-all's received blocks), null where the plan gives none; the
  /// exchange's receive side of an all-reduce or reduce-scatter is the
  /// runner's own memory.
  void collective(int call, int comm, const void *in, void *out, void *scratch = nullptr);

  /// Starts collective call `call` and returns its handle: `in` must not
  /// change and `out` (and `scratch`) must not be touched until
  /// collectiveWait(handle).
  int collectiveStart(int call, int comm, const void *in, void *out, void *scratch = nullptr);
  /// Completes a collective started by collectiveStart (its output is then
  /// written).
  void collectiveWait(int handle);

  /// Every mesh-axes group the program's calls use (its communicators, the
  /// vocabulary and token groups of the cross-entropy ops), deduplicated, in
  /// a deterministic order: what makeMpiCommunicators needs up front.
  static std::vector<Axes> axesSetsNeeded(const Program &program);

  /// Accumulate wall time per op name (kernels) and per collective op name.
  void setTiming(bool enabled) { timing_ = enabled; }
  const std::map<std::string, double> &kernelSeconds() const { return kernelSeconds_; }
  const std::map<std::string, double> &collectiveSeconds() const { return collectiveSeconds_; }
  void resetTiming();

  int numCalls() const { return static_cast<int>(calls_.size()); }

  /// A call's decoded form (CallDecoder.h).
  using Decoded = DecodedCall;

private:
  void runKernel(const Decoded &d, void **buffers, const StepContext &ctx);
  /// A collective between its start and its wait, with its own buffers.
  struct InFlight;
  /// Validates the call, packs what the exchange sends and issues it.
  void beginCollective(InFlight &f, int call, int comm, const void *in, void *out,
                       void *scratch);
  /// Waits for the exchange and writes the output.
  void finishCollective(InFlight &f);
  /// The reductions' exchange in bounded rounds (KernelRunner.cpp).
  void startRounds(InFlight &f, int64_t chunk, int64_t elemBytes);
  void exchangeRound(InFlight &f, int64_t r);
  void finishRounds(InFlight &f, int64_t chunk, uint8_t *out);
  template <class C> void runFloat(const Decoded &d, void **buffers, const StepContext &ctx);
  template <class C> void runCrossEntropyAs(const Decoded &d, void **buffers);

  const Program &program_;
  int64_t rank_;
  Communicators *comm_;
  std::vector<std::unique_ptr<Decoded>> calls_;
  /// Scratch copies of operands that alias results in kernels that are not
  /// correct in place, and the gather buffers of collectives.
  std::vector<std::vector<uint8_t>> scratch_;
  std::vector<void *> ptrs_; ///< a call's buffers, some redirected to scratch_
  /// Collectives in flight; slots are reused (their buffers keep capacity).
  std::vector<std::unique_ptr<InFlight>> inFlight_;
  bool timing_ = false;
  std::map<std::string, double> kernelSeconds_, collectiveSeconds_;
};

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_PROGRAM_KERNELRUNNER_H
