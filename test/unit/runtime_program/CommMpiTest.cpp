//===- CommMpiTest.cpp - collectives over MPI on a dp=2,tp=2 mesh ---------===//
//
// Run by ctest under `mpiexec -n 4`: the checks of CommChecks.h on MPI
// communicators.
//
//===----------------------------------------------------------------------===//

#include "CommChecks.h"

#include <mpi.h>

using namespace shardc;
using namespace shardc::test;

namespace {

std::unique_ptr<rt::Communicators> mpiCommunicators(const rt::Program &p) {
  std::unique_ptr<rt::Communicators> comm =
      rt::makeMpiCommunicators(p.mesh, KernelRunner::axesSetsNeeded(p));
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  EXPECT_EQ(comm->rank(), r);
  return comm;
}

TEST(CommMpi, CollectivesMatchTheSimulation) {
  checkCollectives(*mpiCommunicators(collectivesProgram()));
}

TEST(CommMpi, CollectivesStagingThroughPlannedScratch) {
  checkCollectives(*mpiCommunicators(collectivesProgram()), true);
}

TEST(CommMpi, LargeReductionsExchangeInRounds) {
  rt::Program p = program({"dp", "tp"}, {2, 2}, json::array(), {{0, 1}});
  checkLargeReductions(*mpiCommunicators(p));
}

TEST(CommMpi, SplitVocabularyCrossEntropy) {
  // The vocabulary and token groups of the loss: {1} and {0}.
  rt::Program p = program({"dp", "tp"}, {2, 2}, json::array(), {{0}, {1}});
  checkSplitCrossEntropy(*mpiCommunicators(p));
}

TEST(CommMpi, WrongWorldSizeIsAnError) {
  rt::MeshDesc mesh{{"dp", "tp"}, {2, 3}};
  try {
    rt::makeMpiCommunicators(mesh, {{1}});
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("compiled for a mesh of 6 ranks (dp=2,tp=3) but was "
                                         "launched with 4"),
              std::string::npos)
        << e.what();
  }
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  // Any rank's failure fails the run.
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
