// The StateStore typed suite (fixture: state_store_test_fixture.h): nodes and devices, allocations.
#include "store/state_store_test_fixture.h"

namespace xpool::store_test {
namespace {

TYPED_TEST(StateStoreTest, PlacementIsAllOrNothing) {
  StateStore& s = *this->store_;
  const JobId id = this->Submit(MakeSpec("gang", 3, 1));
  auto placement = this->PlaceOn(id, "n1", 3, 1);
  auto short_one = placement;
  short_one.pop_back();
  EXPECT_EQ(s.CommitPlacement(id, short_one, "", 1).code(), StatusCode::kInvalidArgument);
  auto repeated = placement;
  repeated[2].replica = 0;
  EXPECT_EQ(s.CommitPlacement(id, repeated, "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.ListAllocations()->empty());
  EXPECT_EQ(s.GetJob(id)->state, JobState::kQueued);
  EXPECT_EQ(s.JobEvents(id)->size(), 1u);
  ASSERT_TRUE(s.CommitPlacement(id, placement, "", 1).ok());
  EXPECT_EQ(s.CommitPlacement(id, placement, "", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.ListAllocations()->size(), 3u);
}

TYPED_TEST(StateStoreTest, NodesAndDevices) {
  StateStore& s = *this->store_;
  Node n1 = MakeNode("n1", 4);
  n1.devices[2].healthy = false;
  n1.devices[3].mode = DeviceMode::kExclusive;
  ASSERT_TRUE(s.UpsertNode(n1, 100).ok());
  ASSERT_TRUE(s.UpsertNode(MakeNode("a0", 0), 101).ok());
  Result<NodeRecord> got = s.GetNode("n1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->node.labels, n1.labels);
  EXPECT_EQ(got->node.cpu_milli, n1.cpu_milli);
  ASSERT_EQ(got->node.devices.size(), 4u);
  EXPECT_EQ(got->node.devices[1].uuid, "n1-GPU-1");
  EXPECT_EQ(got->node.devices[1].memory_mib, 81920);
  EXPECT_EQ(got->node.devices[3].numa_node, 0);
  EXPECT_FALSE(got->node.devices[2].healthy);
  EXPECT_EQ(got->node.devices[3].mode, DeviceMode::kExclusive);
  EXPECT_EQ(got->node.links.Score(1, 2), 100);
  EXPECT_EQ(got->node.links.Score(0, 3), 0);
  EXPECT_EQ(got->registered_us, 100);

  n1.cpu_milli = 32000;
  n1.devices.pop_back();
  n1.links = LinkTable();
  ASSERT_TRUE(s.UpsertNode(n1, 200).ok());
  got = s.GetNode("n1");
  EXPECT_EQ(got->node.cpu_milli, 32000);
  EXPECT_EQ(got->node.devices.size(), 3u);
  EXPECT_TRUE(got->node.links.empty());
  EXPECT_EQ(got->registered_us, 100);
  EXPECT_EQ(got->updated_us, 200);

  ASSERT_TRUE(s.SetNodeCordoned("n1", true, 300).ok());
  ASSERT_TRUE(s.SetNodeReady("n1", false, 301).ok());
  got = s.GetNode("n1");
  EXPECT_TRUE(got->node.cordoned);
  EXPECT_FALSE(got->node.ready);
  EXPECT_EQ(s.SetNodeCordoned("zz", true, 1).code(), StatusCode::kNotFound);

  Node thief = MakeNode("n2", 1);
  thief.devices[0].uuid = "n1-GPU-0";
  EXPECT_EQ(s.UpsertNode(thief, 1).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.GetNode("n2").status().code(), StatusCode::kNotFound);  // rolled back whole
  Node invalid = MakeNode("", 1);
  EXPECT_EQ(s.UpsertNode(invalid, 1).code(), StatusCode::kInvalidArgument);

  Result<std::vector<NodeRecord>> all = s.ListNodes();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].node.name, "a0");
  EXPECT_EQ((*all)[1].node.devices.size(), 3u);
  ASSERT_TRUE(s.DeleteNode("n1").ok());
  EXPECT_EQ(s.DeleteNode("n1").code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.UpsertNode(MakeNode("n3", 1), 1).ok());
  EXPECT_TRUE(s.UpsertNode(thief, 1).ok());  // its uuid is free again
}

}  // namespace
}  // namespace xpool::store_test
