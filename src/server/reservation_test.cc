#include "server/internal/reservation.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"

namespace xpool::server::internal {
namespace {

TEST(ReservationTest, HoldsWhatIsFreeAndLeavesTheRestToWhoHoldsIt) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("n").WithCpu(8000).WithMemory(8192).WithGpus(2, "A100", 81920).Build()).ok());
  // A victim still holds device 1 whole and 2 cpus.
  Allocation victim{0, 2000, 1024, {{1, 81920, 1000}}};
  ASSERT_TRUE(state.Apply(victim).ok());
  // The preemptor planned both devices whole, 8 cpus and 8 GiB.
  const Allocation planned{0, 8000, 8192, {{0, 81920, 1000}, {1, 81920, 1000}}};
  Allocation part = FreePartOf(state, planned);
  EXPECT_EQ(part.cpu_milli, 6000);
  EXPECT_EQ(part.memory_mib, 7168);
  ASSERT_EQ(part.devices.size(), 1u);  // device 1 is the victim's until it leaves
  EXPECT_EQ(part.devices[0].device, 0);
  EXPECT_EQ(part.devices[0].memory_mib, 81920);
  EXPECT_EQ(part.devices[0].compute_milli, 1000);
  ASSERT_TRUE(state.Apply(part).ok());
  // Nothing is left for anyone else on the node but what the victim frees.
  EXPECT_FALSE(state.Apply(Allocation{0, 0, 0, {{0, 1024, 0}}}).ok());
  EXPECT_EQ(state.FreeCpu(0), 0);

  // Once the victim leaves, the reservation grows to the whole plan.
  ASSERT_TRUE(state.Release(part).ok());
  ASSERT_TRUE(state.Release(victim).ok());
  part = FreePartOf(state, planned);
  EXPECT_EQ(part.cpu_milli, 8000);
  ASSERT_EQ(part.devices.size(), 2u);
  EXPECT_TRUE(state.Apply(part).ok());
}

TEST(ReservationTest, ASharedDeviceKeepsItsOtherTenantsShare) {
  ClusterState state;
  ASSERT_TRUE(state.AddNode(MakeNode("n").WithCpu(8000).WithMemory(8192).WithGpus(1, "A100", 81920).Build()).ok());
  Allocation other{0, 0, 0, {{0, 20480, 300}}};
  ASSERT_TRUE(state.Apply(other).ok());
  Allocation part = FreePartOf(state, Allocation{0, 0, 0, {{0, 81920, 1000}}});
  ASSERT_EQ(part.devices.size(), 1u);
  EXPECT_EQ(part.devices[0].memory_mib, 61440);
  EXPECT_EQ(part.devices[0].compute_milli, 700);
  EXPECT_TRUE(state.Apply(part).ok());
}

}  // namespace
}  // namespace xpool::server::internal
