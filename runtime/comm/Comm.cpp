//===- Comm.cpp - communicators of one rank -------------------------------===//

#include "runtime/comm/Comm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shardc::rt {

Communicators::~Communicators() = default;

// A group of one: the only block is this rank's own.
Communicators::Request Communicators::ialltoallv(const Axes &axes, const void *in,
                                                 const std::vector<int64_t> &sendBytes,
                                                 const std::vector<int64_t> &sendOffsets,
                                                 void *out, const std::vector<int64_t> &,
                                                 const std::vector<int64_t> &recvOffsets) {
  if (groupSize(axes) != 1)
    throw Error("alltoallv on a group of " + std::to_string(groupSize(axes)) +
                " ranks needs a communicator that can exchange (MPI)");
  std::memmove(static_cast<uint8_t *>(out) + recvOffsets[0],
               static_cast<const uint8_t *>(in) + sendOffsets[0],
               static_cast<size_t>(sendBytes[0]));
  return 0;
}

void Communicators::allgatherv(const Axes &axes, void *, const std::vector<int64_t> &,
                               const std::vector<int64_t> &) {
  if (groupSize(axes) != 1)
    throw Error("allgatherv on a group of " + std::to_string(groupSize(axes)) +
                " ranks needs a communicator that can exchange (MPI)");
}

std::string axesString(const Axes &axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

Communicators::Request Communicators::isendrecv(const Axes &axes, const void *, int64_t to, void *,
                                                int64_t from, int64_t, int) {
  throw Error("a pipeline transfer (to member " + std::to_string(to) + ", from member " +
              std::to_string(from) + " of the group on mesh axes " + axesString(axes) +
              ") needs a communicator with peers");
}

namespace {

/// Every group is this rank alone: the operations are copies.
class SingleRankCommunicators final : public Communicators {
public:
  explicit SingleRankCommunicators(const MeshDesc &mesh) : Communicators(mesh, 0) {}

  void allgather(const Axes &, const void *in, void *out, int64_t bytes) override {
    std::memmove(out, in, static_cast<size_t>(bytes));
  }
  void alltoall(const Axes &, const void *in, void *out, int64_t bytes) override {
    std::memmove(out, in, static_cast<size_t>(bytes));
  }
  void broadcast(const Axes &, void *, int64_t, int64_t root) override {
    if (root != 0)
      throw Error("broadcast from member " + std::to_string(root) + " of a group of one rank");
  }
  void barrier() override {}
  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    std::exit(1);
  }
};

} // namespace

std::unique_ptr<Communicators> makeSingleRankCommunicators(const MeshDesc &mesh) {
  if (mesh.numRanks() != 1)
    throw Error("the binary was compiled for a mesh of " + std::to_string(mesh.numRanks()) +
                " ranks (" + mesh.str() + ") but runs as a single process; launch it with " +
                "mpiexec -n " + std::to_string(mesh.numRanks()));
  return std::make_unique<SingleRankCommunicators>(mesh);
}

} // namespace shardc::rt
