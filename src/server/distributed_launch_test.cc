#include "server/internal/distributed_launch.h"

#include <gtest/gtest.h>

namespace xpool::server::internal {
namespace {

AllocationRecord On(const std::string& node, int replica) {
  AllocationRecord a;
  a.job = JobId(7);
  a.replica = replica;
  a.node = node;
  return a;
}

TEST(DistributedLaunchTest, RanksFollowThePlacement) {
  // Replicas 0 and 2 on b, 1 and 3 on a, 4 on c (given out of order): b is node 0 (replica 0's), a node 1, c 2.
  const std::vector<AllocationRecord> gang = {On("a", 3), On("b", 0), On("a", 1), On("c", 4), On("b", 2)};
  struct Row {
    int replica, node_rank, local_rank, local_world_size;
  };
  for (const Row& row : {Row{0, 0, 0, 2}, Row{1, 1, 0, 2}, Row{2, 0, 1, 2}, Row{3, 1, 1, 2}, Row{4, 2, 0, 1}}) {
    SCOPED_TRACE("replica " + std::to_string(row.replica));
    auto d = DistributedFor(gang, row.replica, "10.0.0.2", 29507);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->master_addr, "10.0.0.2");
    EXPECT_EQ(d->master_port, 29507);
    EXPECT_EQ(d->world_size, 5);
    EXPECT_EQ(d->rank, row.replica);
    EXPECT_EQ(d->node_rank, row.node_rank);
    EXPECT_EQ(d->local_rank, row.local_rank);
    EXPECT_EQ(d->local_world_size, row.local_world_size);
  }
  EXPECT_FALSE(DistributedFor(gang, 5, "h", 1).has_value());          // not a replica of the gang
  EXPECT_FALSE(DistributedFor({On("a", 0)}, 0, "h", 1).has_value());  // one replica: no block
}

TEST(DistributedLaunchTest, MasterPortsAreDistinctOnANode) {
  EXPECT_EQ(ChooseMasterPort(7, {}), kMasterPortBase + 7);
  EXPECT_EQ(ChooseMasterPort(7, {kMasterPortBase + 7, kMasterPortBase + 8}), kMasterPortBase + 9);
  EXPECT_EQ(ChooseMasterPort(kMasterPortRange + 3, {}), kMasterPortBase + 3);
  // The last port of the range wraps around to the first.
  EXPECT_EQ(ChooseMasterPort(kMasterPortRange - 1, {kMasterPortBase + kMasterPortRange - 1}), kMasterPortBase);
  std::vector<int> all;
  for (int p = 0; p < kMasterPortRange; ++p) all.push_back(kMasterPortBase + p);
  EXPECT_EQ(ChooseMasterPort(1, all), 0);
}

}  // namespace
}  // namespace xpool::server::internal
