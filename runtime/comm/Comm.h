//===- Comm.h - the runtime's communicators ---------------------*- C++ -*-===//
//
// The group operations a compiled step needs, on the groups of a device mesh
// (runtime/program/Program.h): the group on mesh axes `axes` is the ranks
// sharing this rank's coordinates off `axes`, ordered by their shard index
// along them (MeshDesc::group). Every operation is collective over its group:
// each member calls it with the same axes and byte count, in the same order.
//
// The interface moves bytes only; reductions are done by the caller in group
// order (KernelRunner), so that every member gets bit-identical sums
// whatever the transport, in compiled steps and in the reference executor.
//
// Implementations: one rank without MPI (makeSingleRankCommunicators), every
// rank of a mesh on threads of one process (InProcessMesh: the reference
// executor's mesh simulation), both in shardc_runtime, and MPI
// (makeMpiCommunicators, in shardc_comm_mpi, the only target that links MPI).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_COMM_COMM_H
#define SHARDC_RUNTIME_COMM_COMM_H

#include "runtime/program/Program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardc::rt {

/// One communicator per mesh-axes group this rank belongs to.
class Communicators {
public:
  explicit Communicators(MeshDesc mesh, int64_t rank) : mesh_(std::move(mesh)), rank_(rank) {}
  virtual ~Communicators();

  /// This rank's number (row-major over the mesh coordinates).
  int64_t rank() const { return rank_; }
  int64_t numRanks() const { return mesh_.numRanks(); }
  const MeshDesc &mesh() const { return mesh_; }
  /// Members of the group on `axes` (1 for none).
  int64_t groupSize(const Axes &axes) const { return mesh_.size(axes); }
  /// This rank's position in its group on `axes`.
  int64_t groupIndex(const Axes &axes) const {
    return mesh_.shardIndex(axes, mesh_.coords(rank_));
  }

  /// out = every member's `bytes` bytes of `in`, concatenated in group order
  /// (groupSize(axes) * bytes). `in` may not overlap `out`.
  virtual void allgather(const Axes &axes, const void *in, void *out, int64_t bytes) = 0;
  /// `in` holds one block of `bytes` bytes per member, in group order; block j
  /// goes to member j, and out's block j is what member j sent to this rank.
  virtual void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes) = 0;
  /// A non-blocking exchange in flight; 0 for one already complete.
  using Request = int64_t;
  /// As allgather / alltoall, but may return before the exchange is done:
  /// until wait(request), `in` must not change and `out` must not be touched.
  /// The base versions exchange at once (one-rank and test communicators).
  virtual Request iallgather(const Axes &axes, const void *in, void *out, int64_t bytes) {
    allgather(axes, in, out, bytes);
    return 0;
  }
  virtual Request ialltoall(const Axes &axes, const void *in, void *out, int64_t bytes) {
    alltoall(axes, in, out, bytes);
    return 0;
  }
  /// Blocks of different sizes (bytes and byte offsets per member): block j
  /// of `in` goes to member j; member j's block for this rank lands at
  /// recvOffsets[j] of `out`. Non-blocking as ialltoall.
  virtual Request ialltoallv(const Axes &axes, const void *in, const std::vector<int64_t> &sendBytes,
                             const std::vector<int64_t> &sendOffsets, void *out,
                             const std::vector<int64_t> &recvBytes,
                             const std::vector<int64_t> &recvOffsets);
  /// In place: member j's block (bytes[j] at offsets[j] of `data`) is copied
  /// into every member's `data` at the same place.
  virtual void allgatherv(const Axes &axes, void *data, const std::vector<int64_t> &bytes,
                          const std::vector<int64_t> &offsets);
  /// Pipeline point-to-point on the group on `axes`: sends `bytes` of `in`
  /// to member `to` when `to` >= 0 and receives `bytes` into `out` from
  /// member `from` when `from` >= 0; `tag` pairs the two sides (the call's
  /// index). Non-blocking as ialltoall. The base version has no peers and
  /// throws Error.
  virtual Request isendrecv(const Axes &axes, const void *in, int64_t to, void *out,
                            int64_t from, int64_t bytes, int tag);
  /// Completes a request of iallgather / ialltoall (0: nothing to do).
  virtual void wait(Request) {}
  /// Lets requests in flight advance (MPI moves non-blocking collectives
  /// only inside MPI calls); called between kernels.
  virtual void progress() {}

  /// Member `root`'s `bytes` bytes at `data` replace every member's.
  virtual void broadcast(const Axes &axes, void *data, int64_t bytes, int64_t root) = 0;
  /// Waits for every rank of the mesh.
  virtual void barrier() = 0;
  /// Prints `message` (prefixed with the rank) and ends every rank of the
  /// job with a non-zero status: what a rank does after an Error that its
  /// peers, waiting in a collective, cannot see.
  [[noreturn]] virtual void abort(const std::string &message) = 0;

protected:
  MeshDesc mesh_;
  int64_t rank_;
};

/// A mesh of one rank: every group is this rank alone. Throws Error if
/// `mesh` has more than one rank.
std::unique_ptr<Communicators> makeSingleRankCommunicators(const MeshDesc &mesh);

/// Every rank of a mesh in one process, each on its own thread (the
/// reference executor's simulated mesh; runtime/comm/InProcessComm.cpp): the
/// members of a group exchange through shared memory. Each exchange blocks
/// until every member has called it (the non-blocking forms complete at
/// once), so the ranks must run concurrently. Calls where the members
/// disagree (another operation or byte count on the same group) are an
/// Error on every member, not a hang.
class InProcessMesh {
public:
  explicit InProcessMesh(MeshDesc mesh);
  ~InProcessMesh();
  InProcessMesh(const InProcessMesh &) = delete;
  InProcessMesh &operator=(const InProcessMesh &) = delete;

  const MeshDesc &mesh() const;
  /// Rank `rank`'s communicators; they share this mesh's state (kept alive
  /// by them).
  std::unique_ptr<Communicators> communicators(int64_t rank);
  /// Every exchange waiting now or started later throws Error (naming `why`)
  /// until reset(): what the thread of a rank that failed calls, so that its
  /// peers do not wait for it forever.
  void fail(const std::string &why);
  /// Forgets a failure and any half-done exchange; only while no rank is
  /// inside an exchange.
  void reset();

  struct State;

private:
  std::shared_ptr<State> state_;
};

/// MPI communicators (shardc_comm_mpi): one per distinct set in `axesSets`,
/// created up front with MPI_Comm_split in the order given, which must be the
/// same on every rank (KernelRunner::axesSetsNeeded). Initializes MPI if it
/// is not yet (and then finalizes it when destroyed). Throws Error if the
/// world size is not the mesh size or an MPI call fails. Groups of one rank
/// and the whole mesh need no entry in `axesSets`.
std::unique_ptr<Communicators> makeMpiCommunicators(const MeshDesc &mesh,
                                                    const std::vector<Axes> &axesSets);

/// "[0, 1]" (for messages).
std::string axesString(const Axes &axes);

} // namespace shardc::rt

#endif // SHARDC_RUNTIME_COMM_COMM_H
