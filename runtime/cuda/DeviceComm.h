//===- DeviceComm.h - collectives on device buffers -------------*- C++ -*-===//
//
// The CUDA backend's transport for the mesh groups (Comm.h numbering: the
// group on mesh axes `axes` is ordered by shard index along them). Two
// implementations:
//  - NCCL: one communicator per axes set, split from a world communicator
//    (ncclCommSplit, color = the rank's coordinates off the axes, key = its
//    index in the group) whose unique id rank 0 broadcasts over MPI. Every
//    operation is enqueued on the stream it is given and is capturable in a
//    CUDA graph.
//  - host-staged MPI (--comm mpi): device -> host copy, the MPI exchange of
//    the host communicators, host -> device; synchronous, not capturable.
//    It lets several ranks share one GPU (NCCL refuses that), for tests.
// Reductions by NCCL are in NCCL's order, not the CPU backend's group
// order: results agree to rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CUDA_DEVICECOMM_H
#define SHARDC_RUNTIME_CUDA_DEVICECOMM_H

#include "runtime/comm/Comm.h"
#include "runtime/program/CallDecoder.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

namespace shardc::cuda {

using rt::Axes;
using rt::DType;

class DeviceComm {
public:
  virtual ~DeviceComm();
  /// "NCCL 2.28.9" / "host-staged MPI".
  virtual std::string describe() const = 0;
  /// Whether operations may be captured in a CUDA graph.
  virtual bool capturable() const = 0;

  /// out = every member's `bytes` of `in`, in group order.
  virtual void allgather(const Axes &axes, const void *in, void *out, int64_t bytes,
                         cudaStream_t s) = 0;
  /// Element-wise reduction of n elements over the group, into out (may be in).
  virtual void allreduce(const Axes &axes, const void *in, void *out, int64_t n, DType dtype,
                         rt::Reduction op, cudaStream_t s) = 0;
  /// in holds one block of n elements per member (group order); out receives
  /// the reduction of every member's block for this rank.
  virtual void reduceScatter(const Axes &axes, const void *in, void *out, int64_t n,
                             DType dtype, rt::Reduction op, cudaStream_t s) = 0;
  /// Block j (`bytes`) of in goes to member j; out's block j came from j.
  virtual void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes,
                        cudaStream_t s) = 0;
  /// Pipeline point-to-point: sends `bytes` of in to member `to` (when >= 0)
  /// and receives `bytes` into out from member `from` (when >= 0).
  virtual void sendrecv(const Axes &axes, const void *in, int64_t to, void *out, int64_t from,
                        int64_t bytes, cudaStream_t s) = 0;
  /// Raises rt::Error if an asynchronous communication error happened (NCCL
  /// async errors: a peer failed); aborts the communicators first so that no
  /// operation of this rank hangs.
  virtual void checkAsync() = 0;
  /// Tears the communicators down without waiting (after an error).
  virtual void abort() = 0;
};

/// NCCL communicators for every axes set of `axesSets` (and the world),
/// bootstrapped over `host`. The current CUDA device must be set.
std::unique_ptr<DeviceComm> makeNcclComm(rt::Communicators &host,
                                         const std::vector<Axes> &axesSets);
/// Host-staged MPI exchanges through `host`'s communicators.
std::unique_ptr<DeviceComm> makeHostStagedComm(rt::Communicators &host);

} // namespace shardc::cuda

#endif // SHARDC_RUNTIME_CUDA_DEVICECOMM_H
