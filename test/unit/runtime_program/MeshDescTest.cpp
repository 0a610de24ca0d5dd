//===- MeshDescTest.cpp - mesh coordinates, groups and shard indices ------===//

#include "runtime/program/Program.h"

#include <gtest/gtest.h>

using shardc::rt::MeshDesc;
using Ranks = std::vector<int64_t>;

namespace {

TEST(MeshDesc, Dp2Tp2) {
  MeshDesc mesh{{"dp", "tp"}, {2, 2}};
  EXPECT_EQ(mesh.numRanks(), 4);
  EXPECT_EQ(mesh.str(), "dp=2,tp=2");
  EXPECT_EQ(mesh.coords(0), Ranks({0, 0}));
  EXPECT_EQ(mesh.coords(1), Ranks({0, 1}));
  EXPECT_EQ(mesh.coords(2), Ranks({1, 0}));
  EXPECT_EQ(mesh.coords(3), Ranks({1, 1}));
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(mesh.linearRank(mesh.coords(r)), r);
  // tp groups are the rows, dp groups the columns.
  EXPECT_EQ(mesh.group({1}, 0), Ranks({0, 1}));
  EXPECT_EQ(mesh.group({1}, 3), Ranks({2, 3}));
  EXPECT_EQ(mesh.group({0}, 1), Ranks({1, 3}));
  EXPECT_EQ(mesh.group({0}, 2), Ranks({0, 2}));
  EXPECT_EQ(mesh.group({0, 1}, 2), Ranks({0, 1, 2, 3}));
  // Minor axis first: ordered by tp coordinate, then dp.
  EXPECT_EQ(mesh.group({1, 0}, 0), Ranks({0, 2, 1, 3}));
  EXPECT_EQ(mesh.group({}, 2), Ranks({2}));
  EXPECT_EQ(mesh.shardIndex({1}, mesh.coords(3)), 1);
  EXPECT_EQ(mesh.shardIndex({0}, mesh.coords(1)), 0);
  EXPECT_EQ(mesh.shardIndex({0, 1}, mesh.coords(2)), 2);
  EXPECT_EQ(mesh.shardIndex({1, 0}, mesh.coords(1)), 2);
  EXPECT_EQ(mesh.shardIndex({}, mesh.coords(3)), 0);
  EXPECT_EQ(mesh.size({0, 1}), 4);
  EXPECT_EQ(mesh.size({}), 1);
}

TEST(MeshDesc, TwoByThree) {
  MeshDesc mesh{{"a", "b"}, {2, 3}};
  EXPECT_EQ(mesh.numRanks(), 6);
  EXPECT_EQ(mesh.coords(4), Ranks({1, 1}));
  EXPECT_EQ(mesh.coords(5), Ranks({1, 2}));
  EXPECT_EQ(mesh.coords(2), Ranks({0, 2}));
  EXPECT_EQ(mesh.linearRank({1, 2}), 5);
  EXPECT_EQ(mesh.group({1}, 4), Ranks({3, 4, 5}));
  EXPECT_EQ(mesh.group({1}, 0), Ranks({0, 1, 2}));
  EXPECT_EQ(mesh.group({0}, 4), Ranks({1, 4}));
  EXPECT_EQ(mesh.group({0}, 2), Ranks({2, 5}));
  EXPECT_EQ(mesh.group({0, 1}, 3), Ranks({0, 1, 2, 3, 4, 5}));
  // shard index along (b, a) = b * 2 + a.
  EXPECT_EQ(mesh.group({1, 0}, 0), Ranks({0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(mesh.shardIndex({0, 1}, {1, 2}), 5);
  EXPECT_EQ(mesh.shardIndex({1, 0}, {1, 2}), 5);
  EXPECT_EQ(mesh.shardIndex({1, 0}, {1, 0}), 1);
  EXPECT_EQ(mesh.shardIndex({1}, {1, 2}), 2);
  EXPECT_EQ(mesh.size({1}), 3);
  EXPECT_EQ(mesh.str(), "a=2,b=3");
}

} // namespace
