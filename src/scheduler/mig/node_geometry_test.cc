#include "scheduler/mig/node_geometry.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

// A node whose one A100 80GB is offered by its seven start slots (positions 0-6) with instances at 0 and 4.
Node SlottedNode() {
  Node n;
  n.name = "n";
  n.labels[std::string(kMigDynamicLabel)] = "0@0=A100-80GB:3g.40gb@0,3g.40gb@4";
  return n;
}

NodeUsage UsageWithAllocated(std::initializer_list<int> devices) {
  NodeUsage usage;
  usage.devices.resize(7);
  for (int d : devices) usage.devices[static_cast<size_t>(d)].sharers = 1;
  return usage;
}

TEST(NodeGeometryTest, InstancesAreBusyWhereTheirSlotDeviceIsAllocated) {
  auto mig = ReplannableMigOf(SlottedNode(), UsageWithAllocated({4}));
  ASSERT_TRUE(mig.has_value());
  EXPECT_TRUE(mig->slotted);
  ASSERT_EQ(mig->gpus.size(), 1u);
  ASSERT_EQ(mig->gpus[0].instances.size(), 2u);
  EXPECT_FALSE(mig->gpus[0].instances[0].busy);
  EXPECT_TRUE(mig->gpus[0].instances[1].busy);
  EXPECT_EQ(mig->geometries.at(0).first_device, 0);
}

TEST(NodeGeometryTest, DemandIsServedOnlyWhereIdleSlicesOrIdleInstancesLeaveRoom) {
  const MigDemand small{"", 1, 8192, 0};  // a 1g.10gb
  EXPECT_TRUE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({}), small));
  EXPECT_TRUE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0}), small));  // the idle 3g.40gb is remade
  EXPECT_FALSE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0, 4}), small));
  // Slices 4-7 beside the busy 3g.40gb take three 1g.10gb (start slots 4, 5, 6), not four.
  EXPECT_TRUE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0}), MigDemand{"", 3, 8192, 0}));
  EXPECT_FALSE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0}), MigDemand{"", 4, 8192, 0}));
  EXPECT_TRUE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0}), MigDemand{"3g.40gb", 1}));
  EXPECT_FALSE(MigDemandCanBeServedOn(SlottedNode(), UsageWithAllocated({0}), MigDemand{"7g.80gb", 1}));
}

TEST(NodeGeometryTest, NodesThatCannotBeRepartitionedNowHaveNoPlannerView) {
  Node plain = SlottedNode();
  plain.labels.clear();
  EXPECT_FALSE(ReplannableMigOf(plain, UsageWithAllocated({})).has_value());
  Node bad = SlottedNode();
  bad.labels[std::string(kMigDynamicLabel)] = "0@0=A100-80GB:3g.40gb@1";  // not a start 3g.40gb may take
  EXPECT_FALSE(ReplannableMigOf(bad, UsageWithAllocated({})).has_value());
  // A GPU offered by its instances only: planned while nothing on the node is allocated, not after.
  Node by_instances = SlottedNode();
  by_instances.labels[std::string(kMigDynamicLabel)] = "0=A100-80GB:3g.40gb@0,3g.40gb@4";
  auto idle = ReplannableMigOf(by_instances, UsageWithAllocated({}));
  ASSERT_TRUE(idle.has_value());
  EXPECT_FALSE(idle->slotted);
  EXPECT_FALSE(ReplannableMigOf(by_instances, UsageWithAllocated({1})).has_value());
  EXPECT_FALSE(MigDemandCanBeServedOn(by_instances, UsageWithAllocated({1}), MigDemand{"", 1, 8192, 0}));
}

}  // namespace
}  // namespace xpool
