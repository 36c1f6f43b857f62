#include "store/allocation_codec.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

Node MakeNode(const std::string& name, int gpus) {
  Node n;
  n.name = name;
  n.cpu_milli = 32000;
  n.memory_mib = 65536;
  for (int i = 0; i < gpus; ++i) {
    Device d;
    d.model = "A100";
    d.uuid = name + "-GPU-" + std::to_string(i);
    d.index = i;
    d.memory_mib = 40960;
    n.devices.push_back(d);
  }
  return n;
}

TEST(AllocationCodecTest, RoundTripsThroughNamesAndUuids) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("a", 2)).ok());
  ASSERT_TRUE(state.AddNode(MakeNode("b", 4)).ok());
  Allocation alloc{1, 4000, 8192, {{3, 10240, 500}, {1, 20480, 1000}}};
  Result<AllocationRecord> rec = ToAllocationRecord(state, alloc, JobId(7), 2);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->node, "b");
  EXPECT_EQ(rec->replica, 2);
  ASSERT_EQ(rec->devices.size(), 2u);
  EXPECT_EQ(rec->devices[0].device_uuid, "b-GPU-3");
  EXPECT_EQ(rec->devices[1].compute_milli, 1000);

  // A state rebuilt with nodes in another order maps the names back to the new indices.
  ClusterState rebuilt;
  ASSERT_TRUE(rebuilt.AddNode(MakeNode("b", 4)).ok());
  ASSERT_TRUE(rebuilt.AddNode(MakeNode("a", 2)).ok());
  Result<Allocation> back = FromAllocationRecord(rebuilt, *rec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->node, 0);
  EXPECT_EQ(back->devices[0].device, 3);
  EXPECT_EQ(back->devices[0].memory_mib, 10240);
  EXPECT_EQ(back->cpu_milli, 4000);
}

TEST(AllocationCodecTest, RejectsUnknownNodesAndDevices) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("a", 1)).ok());
  EXPECT_EQ(ToAllocationRecord(state, Allocation{5, 0, 0, {}}, JobId(1), 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ToAllocationRecord(state, Allocation{0, 0, 0, {{4, 1, 1}}}, JobId(1), 0).status().code(),
            StatusCode::kInvalidArgument);
  AllocationRecord rec;
  rec.node = "zzz";
  EXPECT_EQ(FromAllocationRecord(state, rec).status().code(), StatusCode::kNotFound);
  rec.node = "a";
  rec.devices.push_back({"GPU-missing", 1, 1});
  EXPECT_EQ(FromAllocationRecord(state, rec).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace xpool
