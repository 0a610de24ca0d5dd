//===- InProcessComm.cpp - every rank of a mesh in one process ------------===//
//
// The reference executor's simulated mesh: each rank runs on its own thread
// with its own Communicators, and the members of a group exchange through
// shared memory. An exchange is a rendezvous per group: every member posts
// what it sends, the last to arrive opens the round, each member copies what
// it receives straight from its peers' buffers, and nobody leaves before all
// have copied (so a sender's buffer stays valid). Calls on one group come in
// the same order on every member (the collective contract), so a round is
// identified by the group alone. Pipeline transfers go through a mailbox.
//
// A member that fails (an Error in a kernel, members disagreeing on an
// exchange) fails the mesh: every rank waiting, or arriving later, gets an
// Error instead of a hang, until reset().
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Comm.h"

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace shardc::rt {

namespace {

/// What one member brings to a round.
struct Post {
  const char *what = "";
  int64_t bytes = 0; ///< must agree across members (-1: not checked)
  const void *in = nullptr;
  const std::vector<int64_t> *sendBytes = nullptr, *sendOffsets = nullptr;
};

} // namespace

struct InProcessMesh::State {
  explicit State(MeshDesc m) : mesh(std::move(m)) {}

  struct Round {
    std::vector<const Post *> posts;
    int64_t arrived = 0, departed = 0;
    bool copying = false;
  };

  MeshDesc mesh;
  std::mutex m;
  std::condition_variable cv;
  bool failed = false;
  std::string why;
  /// Per group: (axes, first member).
  std::map<std::pair<Axes, int64_t>, Round> rounds;
  /// Transfers sent and not yet received: (axes, from rank, to rank, tag).
  std::map<std::tuple<Axes, int64_t, int64_t, int>, std::vector<uint8_t>> mailbox;

  void fail(const std::string &message) {
    std::lock_guard<std::mutex> lock(m);
    if (!failed) {
      failed = true;
      why = message;
    }
    cv.notify_all();
  }

  void throwIfFailed() const {
    if (failed)
      throw Error("another rank of the in-process mesh failed: " + why);
  }

  /// The rendezvous: `copy(posts, me)` runs on this member's thread once every
  /// member of the group has posted, with the posts in group order.
  template <class F> void exchange(const Axes &axes, int64_t rank, const Post &post, F &&copy) {
    std::vector<int64_t> members = mesh.group(axes, rank);
    const int64_t n = static_cast<int64_t>(members.size());
    const int64_t me = mesh.shardIndex(axes, mesh.coords(rank));
    std::unique_lock<std::mutex> lock(m);
    Round &r = rounds[{axes, members.front()}];
    // The previous round on this group must be over.
    cv.wait(lock, [&] { return failed || !r.copying; });
    throwIfFailed();
    if (r.posts.empty())
      r.posts.assign(n, nullptr);
    r.posts[me] = &post;
    if (++r.arrived == n) {
      r.copying = true;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return failed || r.copying; });
      throwIfFailed();
    }
    std::vector<const Post *> posts = r.posts;
    for (const Post *p : posts)
      if (std::strcmp(p->what, post.what) != 0 || (post.bytes >= 0 && p->bytes != post.bytes)) {
        failed = true;
        why = "the members of the group on mesh axes " + axesString(axes) +
              " disagree: one calls " + post.what + " of " + std::to_string(post.bytes) +
              " bytes, another " + p->what + " of " + std::to_string(p->bytes);
        cv.notify_all();
        throwIfFailed();
      }
    lock.unlock();
    try {
      copy(posts, me);
    } catch (const Error &e) {
      fail(e.what());
      throw;
    }
    lock.lock();
    if (++r.departed == n) {
      r = Round();
      cv.notify_all();
    } else {
      // Peers may still read this member's buffers.
      // (The next round cannot close before this member arrives in it.)
      cv.wait(lock, [&] { return failed || !r.copying; });
      throwIfFailed();
    }
  }
};

namespace {

class InProcessCommunicators final : public Communicators {
public:
  InProcessCommunicators(std::shared_ptr<InProcessMesh::State> state, int64_t rank)
      : Communicators(state->mesh, rank), s_(std::move(state)) {}

  void allgather(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    Post p{"allgather", bytes, in};
    s_->exchange(axes, rank_, p, [&](const std::vector<const Post *> &posts, int64_t) {
      for (size_t j = 0; j < posts.size(); ++j)
        std::memcpy(static_cast<uint8_t *>(out) + j * bytes, posts[j]->in,
                    static_cast<size_t>(bytes));
    });
  }

  void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes) override {
    Post p{"alltoall", bytes, in};
    s_->exchange(axes, rank_, p, [&](const std::vector<const Post *> &posts, int64_t me) {
      for (size_t j = 0; j < posts.size(); ++j)
        std::memcpy(static_cast<uint8_t *>(out) + j * bytes,
                    static_cast<const uint8_t *>(posts[j]->in) + me * bytes,
                    static_cast<size_t>(bytes));
    });
  }

  Request ialltoallv(const Axes &axes, const void *in, const std::vector<int64_t> &sendBytes,
                     const std::vector<int64_t> &sendOffsets, void *out,
                     const std::vector<int64_t> &recvBytes,
                     const std::vector<int64_t> &recvOffsets) override {
    Post p{"alltoallv", -1, in, &sendBytes, &sendOffsets};
    s_->exchange(axes, rank_, p, [&](const std::vector<const Post *> &posts, int64_t me) {
      for (size_t j = 0; j < posts.size(); ++j) {
        int64_t bytes = (*posts[j]->sendBytes)[me];
        if (bytes != recvBytes[j])
          throw Error("alltoallv: member " + std::to_string(j) + " sends " +
                      std::to_string(bytes) + " bytes, member " + std::to_string(me) +
                      " expects " + std::to_string(recvBytes[j]));
        std::memcpy(static_cast<uint8_t *>(out) + recvOffsets[j],
                    static_cast<const uint8_t *>(posts[j]->in) + (*posts[j]->sendOffsets)[me],
                    static_cast<size_t>(bytes));
      }
    });
    return 0;
  }

  void allgatherv(const Axes &axes, void *data, const std::vector<int64_t> &bytes,
                  const std::vector<int64_t> &offsets) override {
    // Each member reads only its peers' own blocks and writes only theirs
    // into its buffer: the regions never overlap.
    Post p{"allgatherv", -1, data};
    s_->exchange(axes, rank_, p, [&](const std::vector<const Post *> &posts, int64_t me) {
      for (size_t j = 0; j < posts.size(); ++j)
        if (static_cast<int64_t>(j) != me)
          std::memcpy(static_cast<uint8_t *>(data) + offsets[j],
                      static_cast<const uint8_t *>(posts[j]->in) + offsets[j],
                      static_cast<size_t>(bytes[j]));
    });
  }

  Request isendrecv(const Axes &axes, const void *in, int64_t to, void *out, int64_t from,
                    int64_t bytes, int tag) override {
    std::vector<int64_t> members = mesh_.group(axes, rank_);
    const int64_t n = static_cast<int64_t>(members.size());
    if (to >= n || from >= n || (to < 0 && from < 0))
      throw Error("transfer between members " + std::to_string(from) + " and " +
                  std::to_string(to) + " of a group of " + std::to_string(n));
    std::unique_lock<std::mutex> lock(s_->m);
    s_->throwIfFailed();
    if (to >= 0) {
      const auto *p = static_cast<const uint8_t *>(in);
      s_->mailbox[{axes, rank_, members[to], tag}].assign(p, p + bytes);
      s_->cv.notify_all();
    }
    if (from >= 0) {
      auto key = std::make_tuple(axes, members[from], rank_, tag);
      s_->cv.wait(lock, [&] { return s_->failed || s_->mailbox.count(key); });
      s_->throwIfFailed();
      auto it = s_->mailbox.find(key);
      if (static_cast<int64_t>(it->second.size()) != bytes)
        throw Error("transfer of " + std::to_string(it->second.size()) + " bytes received as " +
                    std::to_string(bytes));
      std::memcpy(out, it->second.data(), static_cast<size_t>(bytes));
      s_->mailbox.erase(it);
    }
    return 0;
  }

  void broadcast(const Axes &axes, void *data, int64_t bytes, int64_t root) override {
    if (root < 0 || root >= groupSize(axes))
      throw Error("broadcast from member " + std::to_string(root) + " of a group of " +
                  std::to_string(groupSize(axes)) + " ranks");
    Post p{"broadcast", bytes, data};
    s_->exchange(axes, rank_, p, [&](const std::vector<const Post *> &posts, int64_t me) {
      if (me != root)
        std::memcpy(data, posts[root]->in, static_cast<size_t>(bytes));
    });
  }

  void barrier() override {
    Axes all(mesh_.sizes.size());
    for (size_t a = 0; a < all.size(); ++a)
      all[a] = static_cast<int>(a);
    Post p{"barrier", 0};
    s_->exchange(all, rank_, p, [](const std::vector<const Post *> &, int64_t) {});
  }

  [[noreturn]] void abort(const std::string &message) override {
    std::string why = "rank " + std::to_string(rank_) + ": " + message;
    s_->fail(why);
    throw Error(why);
  }

private:
  std::shared_ptr<InProcessMesh::State> s_;
};

} // namespace

InProcessMesh::InProcessMesh(MeshDesc mesh) : state_(std::make_shared<State>(std::move(mesh))) {}
InProcessMesh::~InProcessMesh() = default;

const MeshDesc &InProcessMesh::mesh() const { return state_->mesh; }

std::unique_ptr<Communicators> InProcessMesh::communicators(int64_t rank) {
  if (rank < 0 || rank >= state_->mesh.numRanks())
    throw Error("rank " + std::to_string(rank) + " is outside the mesh " + state_->mesh.str());
  return std::make_unique<InProcessCommunicators>(state_, rank);
}

void InProcessMesh::fail(const std::string &why) { state_->fail(why); }

void InProcessMesh::reset() {
  std::lock_guard<std::mutex> lock(state_->m);
  state_->failed = false;
  state_->why.clear();
  state_->rounds.clear();
  state_->mailbox.clear();
}

} // namespace shardc::rt
