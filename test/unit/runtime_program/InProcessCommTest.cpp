//===- InProcessCommTest.cpp - every rank of a mesh on threads -------------===//
//
// The in-process communicators (the reference executor's mesh): the same
// checks as over MPI (CommChecks.h) on 4 threads of one process, pipeline
// transfers, broadcast and barrier, and that a failing or disagreeing rank
// is an error on every rank, never a hang.
//
//===----------------------------------------------------------------------===//

#include "CommChecks.h"

#include <atomic>
#include <functional>
#include <thread>

using namespace shardc;
using namespace shardc::test;

namespace {

const rt::MeshDesc kMesh{{"dp", "tp"}, {2, 2}};

/// Runs body(comm) for every rank of `mesh` on its own thread; returns each
/// rank's Error message ("" if none).
std::vector<std::string> onEveryRank(const rt::MeshDesc &mesh,
                                     const std::function<void(rt::Communicators &)> &body) {
  rt::InProcessMesh world(mesh);
  std::vector<std::unique_ptr<rt::Communicators>> comms;
  for (int64_t r = 0; r < mesh.numRanks(); ++r)
    comms.push_back(world.communicators(r));
  std::vector<std::string> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        body(*comms[r]);
      } catch (const rt::Error &e) {
        errors[r] = e.what();
        world.fail(e.what());
      }
    });
  for (std::thread &t : threads)
    t.join();
  return errors;
}

void expectNoErrors(const std::vector<std::string> &errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(InProcessComm, CollectivesMatchTheSimulation) {
  expectNoErrors(onEveryRank(kMesh, [](rt::Communicators &c) { checkCollectives(c); }));
}

// The same collectives staging through planned scratch (the compiled step's
// collectiveStaging regions): same results, nothing written past the plan.
TEST(InProcessComm, CollectivesStagingThroughPlannedScratch) {
  expectNoErrors(onEveryRank(kMesh, [](rt::Communicators &c) { checkCollectives(c, true); }));
}

TEST(InProcessComm, LargeReductionsExchangeInRounds) {
  expectNoErrors(onEveryRank(kMesh, checkLargeReductions));
}

TEST(InProcessComm, SplitVocabularyCrossEntropy) {
  expectNoErrors(onEveryRank(kMesh, checkSplitCrossEntropy));
}

TEST(InProcessComm, SplitPaddedVocabularyCrossEntropy) {
  expectNoErrors(onEveryRank(rt::MeshDesc{{"tp"}, {4}}, checkSplitCrossEntropyPadded));
}

TEST(InProcessComm, RepeatedRoundsKeepTheirOrder) {
  // Many back-to-back gathers on one group: a fast rank must not enter the
  // next round before its peers have read the last one.
  expectNoErrors(onEveryRank(kMesh, [](rt::Communicators &comm) {
    for (int i = 0; i < 200; ++i) {
      int64_t mine = comm.rank() * 1000 + i, all[2] = {0, 0};
      comm.allgather({1}, &mine, all, sizeof(int64_t));
      std::vector<int64_t> group = comm.mesh().group(Axes{1}, comm.rank());
      EXPECT_EQ(all[0], group[0] * 1000 + i);
      EXPECT_EQ(all[1], group[1] * 1000 + i);
    }
  }));
}

TEST(InProcessComm, TransfersBroadcastAndBarrier) {
  rt::MeshDesc pp{{"pp"}, {3}};
  expectNoErrors(onEveryRank(pp, [](rt::Communicators &comm) {
    // A pipeline: stage s sends s*10+k to stage s+1, tags 0..2 in order.
    int64_t s = comm.rank();
    for (int tag = 0; tag < 3; ++tag) {
      int64_t send = s * 10 + tag, recv = -1;
      comm.wait(comm.isendrecv({0}, &send, s + 1 < 3 ? s + 1 : -1, &recv, s > 0 ? s - 1 : -1,
                               sizeof(int64_t), tag));
      if (s > 0)
        EXPECT_EQ(recv, (s - 1) * 10 + tag);
    }
    int64_t value = s == 2 ? 42 : -1;
    comm.broadcast({0}, &value, sizeof(value), 2);
    EXPECT_EQ(value, 42);
    comm.barrier();
  }));
}

TEST(InProcessComm, DisagreeingMembersAreAnErrorOnEveryRank) {
  std::vector<std::string> errors = onEveryRank(kMesh, [](rt::Communicators &comm) {
    int64_t in[2] = {1, 2}, out[4];
    // Rank 0 gathers one element, its tp peer two: no hang, an error.
    comm.allgather({1}, in, out, comm.rank() == 0 ? 8 : 16);
  });
  for (int r : {0, 1})
    EXPECT_NE(errors[r].find("disagree"), std::string::npos) << errors[r];
}

TEST(InProcessComm, AFailingRankReleasesItsPeers) {
  std::vector<std::string> errors = onEveryRank(kMesh, [](rt::Communicators &comm) {
    if (comm.rank() == 3)
      throw rt::Error("kernel failed on rank 3");
    int64_t in = 0, out[4];
    comm.allgather({0, 1}, &in, out, sizeof(in)); // rank 3 never comes
  });
  EXPECT_EQ(errors[3], "kernel failed on rank 3");
  for (int r : {0, 1, 2})
    EXPECT_NE(errors[r].find("another rank of the in-process mesh failed: kernel failed on rank 3"),
              std::string::npos)
        << errors[r];
}

TEST(InProcessComm, RankOutsideTheMeshIsAnError) {
  rt::InProcessMesh world(kMesh);
  EXPECT_THROW(world.communicators(4), rt::Error);
}

} // namespace
