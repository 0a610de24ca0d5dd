//===- MpiComm.cpp - communicators over MPI -------------------------------===//
//
// One MPI communicator per group of mesh axes, split from MPI_COMM_WORLD up
// front. Errors return (MPI_ERRORS_RETURN) and become rt::Error naming the
// call and the rank. Byte counts above INT_MAX go through a derived datatype
// of one element of that size, so tensors of any size move in one call.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Comm.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

namespace shardc::rt {
namespace {

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

/// A datatype of `bytes` bytes (MPI counts are ints): MPI_BYTE x bytes when
/// that fits, else one element of a struct of 1 GiB chunks and the rest.
class ByteBlock {
public:
  ByteBlock(int64_t bytes, const std::function<void(int, const char *)> &check) {
    if (bytes <= INT_MAX) {
      type_ = MPI_BYTE;
      count_ = static_cast<int>(bytes);
      return;
    }
    const int64_t chunk = int64_t{1} << 30;
    MPI_Datatype chunkType;
    check(MPI_Type_contiguous(static_cast<int>(chunk), MPI_BYTE, &chunkType),
          "MPI_Type_contiguous");
    int lengths[2] = {static_cast<int>(bytes / chunk), static_cast<int>(bytes % chunk)};
    MPI_Aint displs[2] = {0, static_cast<MPI_Aint>((bytes / chunk) * chunk)};
    MPI_Datatype types[2] = {chunkType, MPI_BYTE};
    MPI_Datatype joined;
    check(MPI_Type_create_struct(2, lengths, displs, types, &joined), "MPI_Type_create_struct");
    check(MPI_Type_create_resized(joined, 0, static_cast<MPI_Aint>(bytes), &type_),
          "MPI_Type_create_resized");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
    MPI_Type_free(&joined);
    MPI_Type_free(&chunkType);
    owned_ = true;
    count_ = 1;
  }
  ~ByteBlock() {
    if (owned_)
      MPI_Type_free(&type_);
  }
  ByteBlock(const ByteBlock &) = delete;
  ByteBlock &operator=(const ByteBlock &) = delete;

  MPI_Datatype type() const { return type_; }
  int count() const { return count_; }

private:
  MPI_Datatype type_ = MPI_BYTE;
  int count_ = 0;
  bool owned_ = false;
};

/// Byte counts and displacements as MPI ints in units of the largest block
/// dividing them all (MPI_BYTE when that is 1): a block of g bytes lifts
/// the 2 GiB limit of byte displacements to 2^31 x g.
class ByteUnits {
public:
  ByteUnits(std::initializer_list<const std::vector<int64_t> *> lists, const char *what,
            const std::function<void(int, const char *)> &check) {
    int64_t g = 0;
    for (const auto *l : lists)
      for (int64_t x : *l)
        g = std::gcd(g, x);
    unit_ = g > 1 ? g : 1;
    for (const auto *l : lists) {
      std::vector<int> out;
      for (int64_t x : *l) {
        if (x < 0 || x / unit_ > INT_MAX)
          throw Error(std::string(what) + ": a block of " + std::to_string(x) +
                      " bytes does not fit MPI's int counts in units of " +
                      std::to_string(unit_) + " bytes");
        out.push_back(static_cast<int>(x / unit_));
      }
      ints_.push_back(std::move(out));
    }
    if (unit_ > 1 && unit_ <= INT_MAX) {
      check(MPI_Type_contiguous(static_cast<int>(unit_), MPI_BYTE, &type_),
            "MPI_Type_contiguous");
      check(MPI_Type_commit(&type_), "MPI_Type_commit");
      owned_ = true;
    } else if (unit_ > INT_MAX) {
      throw Error(std::string(what) + ": blocks of " + std::to_string(unit_) +
                  " bytes do not fit an MPI datatype");
    }
  }
  /// Freed at once: MPI completes what is in flight with it (MPI_Type_free).
  ~ByteUnits() {
    if (owned_)
      MPI_Type_free(&type_);
  }
  ByteUnits(const ByteUnits &) = delete;
  ByteUnits &operator=(const ByteUnits &) = delete;

  MPI_Datatype type() const { return type_; }
  /// The i-th list in units.
  std::vector<int> &ints(size_t i) { return ints_[i]; }

private:
  int64_t unit_ = 1;
  MPI_Datatype type_ = MPI_BYTE;
  bool owned_ = false;
  std::vector<std::vector<int>> ints_;
};

class MpiCommunicators final : public Communicators {
public:
  MpiCommunicators(const MeshDesc &mesh, int64_t rank, bool ownsMpi)
      : Communicators(mesh, rank), ownsMpi_(ownsMpi) {}

  ~MpiCommunicators() override {
    for (auto &[axes, comm] : comms_)
      MPI_Comm_free(&comm);
    if (ownsMpi_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    }
  }

  /// Splits the communicator of one axes set off MPI_COMM_WORLD (collective
  /// over the world: every rank calls it with the same sets in the same order).
  void create(const Axes &axes) {
    if (comms_.count(axes))
      return;
    for (int a : axes)
      if (a < 0 || a >= static_cast<int>(mesh_.sizes.size()))
        throw Error("communicator axes " + axesString(axes) + " name an axis outside the mesh " +
                    mesh_.str());
    // color: the coordinates off `axes`; key: the shard index along them.
    std::vector<int64_t> coords = mesh_.coords(rank_);
    int64_t color = 0;
    for (size_t a = 0; a < mesh_.sizes.size(); ++a)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end())
        color = color * mesh_.sizes[a] + coords[a];
    int64_t key = mesh_.shardIndex(axes, coords);
    MPI_Comm comm;
    check(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color), static_cast<int>(key), &comm),
          "MPI_Comm_split");
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int size = 0, index = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &index);
    if (size != mesh_.size(axes) || index != key)
      throw Error("MPI_Comm_split on rank " + std::to_string(rank_) + " for axes " +
                  axesString(axes) + " gave a group of " + std::to_string(size) +
                  " at position " + std::to_string(index) + ", expected " +
                  std::to_string(mesh_.size(axes)) + " at " + std::to_string(key));
    comms_.emplace(axes, comm);
  }

  // The blocking exchanges are a start and its wait.
  void allgather(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    wait(iallgather(axes, in, out, bytes));
  }
  void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    wait(ialltoall(axes, in, out, bytes));
  }
  Request iallgather(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    return start(MPI_Iallgather, "MPI_Iallgather", axes, in, out, bytes);
  }
  Request ialltoall(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    return start(MPI_Ialltoall, "MPI_Ialltoall", axes, in, out, bytes);
  }

  Request ialltoallv(const Axes &axes, const void *in, const std::vector<int64_t> &sendBytes,
                     const std::vector<int64_t> &sendOffsets, void *out,
                     const std::vector<int64_t> &recvBytes,
                     const std::vector<int64_t> &recvOffsets) override {
    if (groupSize(axes) == 1)
      return Communicators::ialltoallv(axes, in, sendBytes, sendOffsets, out, recvBytes,
                                       recvOffsets);
    // The count arrays must outlive the request.
    ByteUnits units({&sendBytes, &sendOffsets, &recvBytes, &recvOffsets}, "alltoallv",
                    checker());
    Pending p;
    p.counts = {std::move(units.ints(0)), std::move(units.ints(1)), std::move(units.ints(2)),
                std::move(units.ints(3))};
    check(MPI_Ialltoallv(in, p.counts[0].data(), p.counts[1].data(), units.type(), out,
                         p.counts[2].data(), p.counts[3].data(), units.type(),
                         commOf(axes, "ialltoallv"), &p.request),
          "MPI_Ialltoallv", axes);
    pending_.emplace(++lastRequest_, std::move(p));
    return lastRequest_;
  }

  Request isendrecv(const Axes &axes, const void *in, int64_t to, void *out, int64_t from,
                    int64_t bytes, int tag) override {
    const int64_t n = groupSize(axes);
    if (to >= n || from >= n || (to < 0 && from < 0))
      throw Error("point-to-point transfer to member " + std::to_string(to) + " from member " +
                  std::to_string(from) + " of a group of " + std::to_string(n) + " ranks");
    MPI_Comm comm = commOf(axes, "isendrecv");
    ByteBlock block(bytes, checker());
    Pending p;
    // One request per direction: the first in `request`, the second in `extra`.
    if (to >= 0)
      check(MPI_Isend(in, block.count(), block.type(), static_cast<int>(to), tag, comm,
                      &p.request),
            "MPI_Isend", axes);
    if (from >= 0)
      check(MPI_Irecv(out, block.count(), block.type(), static_cast<int>(from), tag, comm,
                      to >= 0 ? &p.extra : &p.request),
            "MPI_Irecv", axes);
    pending_.emplace(++lastRequest_, std::move(p));
    return lastRequest_;
  }

  void allgatherv(const Axes &axes, void *data, const std::vector<int64_t> &bytes,
                  const std::vector<int64_t> &offsets) override {
    if (groupSize(axes) == 1)
      return;
    ByteUnits units({&bytes, &offsets}, "allgatherv", checker());
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, data, units.ints(0).data(),
                         units.ints(1).data(), units.type(), commOf(axes, "allgatherv")),
          "MPI_Allgatherv", axes);
  }

  void wait(Request id) override {
    if (id == 0)
      return;
    auto it = pending_.find(id);
    if (it == pending_.end())
      throw Error("wait on request " + std::to_string(id) + ", which is not in flight");
    Pending p = std::move(it->second);
    pending_.erase(it);
    check(MPI_Wait(&p.request, MPI_STATUS_IGNORE), "MPI_Wait");
    check(MPI_Wait(&p.extra, MPI_STATUS_IGNORE), "MPI_Wait");
  }

  void progress() override {
    for (auto &[id, p] : pending_) {
      int done = 0;
      check(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      check(MPI_Test(&p.extra, &done, MPI_STATUS_IGNORE), "MPI_Test");
      // A completed request becomes MPI_REQUEST_NULL; its wait returns at once.
    }
  }

  void broadcast(const Axes &axes, void *data, int64_t bytes, int64_t root) override {
    if (root < 0 || root >= groupSize(axes))
      throw Error("broadcast from member " + std::to_string(root) + " of a group of " +
                  std::to_string(groupSize(axes)) + " ranks");
    if (groupSize(axes) == 1)
      return;
    ByteBlock block(bytes, checker());
    check(MPI_Bcast(data, block.count(), block.type(), static_cast<int>(root),
                    commOf(axes, "broadcast")),
          "MPI_Bcast", axes);
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "error: rank %lld: %s\n", static_cast<long long>(rank_),
                 message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1); // MPI_Abort does not return; keep [[noreturn]] honest.
  }

  void check(int rc, const char *call, const Axes *axes = nullptr) const {
    if (rc == MPI_SUCCESS)
      return;
    throw Error(std::string(call) + " failed on rank " + std::to_string(rank_) +
                (axes ? " (group on mesh axes " + axesString(*axes) + ")" : std::string()) +
                ": " + mpiErrorString(rc));
  }
  void check(int rc, const char *call, const Axes &axes) const { check(rc, call, &axes); }

private:
  std::function<void(int, const char *)> checker() const {
    return [this](int rc, const char *call) { check(rc, call); };
  }

  MPI_Comm commOf(const Axes &axes, const char *what) const {
    auto it = comms_.find(axes);
    if (it == comms_.end())
      throw Error(std::string(what) + " on mesh axes " + axesString(axes) +
                  ", for which no communicator was created (pass the axes set to "
                  "makeMpiCommunicators)");
    return it->second;
  }

  /// MPI_Iallgather and MPI_Ialltoall: equal blocks of `bytes` per member.
  using Exchange = int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                           MPI_Request *);

  Request start(Exchange exchange, const char *name, const Axes &axes, const void *in, void *out,
                int64_t bytes) {
    if (groupSize(axes) == 1) {
      std::memmove(out, in, static_cast<size_t>(bytes));
      return 0;
    }
    // A derived datatype may be freed while the request is pending (MPI
    // keeps it until completion).
    ByteBlock block(bytes, checker());
    MPI_Request request;
    check(exchange(in, block.count(), block.type(), out, block.count(), block.type(),
                   commOf(axes, name), &request),
          name, axes);
    return track(request);
  }

  /// A request in flight and the count arrays its v-collective reads.
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Request extra = MPI_REQUEST_NULL; ///< isendrecv's receive beside its send
    std::vector<std::vector<int>> counts;
  };

  Request track(MPI_Request request) {
    Pending p;
    p.request = request;
    pending_.emplace(++lastRequest_, std::move(p));
    return lastRequest_;
  }

  bool ownsMpi_;
  std::map<Axes, MPI_Comm> comms_;
  std::map<Request, Pending> pending_;
  Request lastRequest_ = 0;
};

} // namespace

std::unique_ptr<Communicators> makeMpiCommunicators(const MeshDesc &mesh,
                                                    const std::vector<Axes> &axesSets) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  bool ownsMpi = !initialized;
  if (ownsMpi) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Error("MPI_Init_thread failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int worldSize = 0, worldRank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  if (worldSize != mesh.numRanks()) {
    if (ownsMpi)
      MPI_Finalize();
    throw Error("the binary was compiled for a mesh of " + std::to_string(mesh.numRanks()) +
                " ranks (" + mesh.str() + ") but was launched with " + std::to_string(worldSize));
  }
  // Owns MPI from here: an Error below finalizes it through the destructor.
  auto comms = std::make_unique<MpiCommunicators>(mesh, worldRank, ownsMpi);
  for (const Axes &axes : axesSets)
    comms->create(axes);
  // The whole mesh, in rank order (all axes, major first).
  Axes all;
  for (size_t a = 0; a < mesh.sizes.size(); ++a)
    all.push_back(static_cast<int>(a));
  comms->create(all);
  return comms;
}

} // namespace shardc::rt
