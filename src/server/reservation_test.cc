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

// An MPS device serves one user at a time: while the victims' user still holds it, the preemptor's hold is
// nothing there, and what is left of it is kept as the victims' user's, so no further task of theirs lands on it.
TEST(ReservationTest, AnMpsDeviceTheVictimsStillHoldIsKeptWhole) {
  ClusterState state;
  Node n = MakeNode("n").WithCpu(8000).WithMemory(8192).WithGpus(2, "A100", 81920).WithMaxSharers(4).Build();
  for (Device& d : n.devices) d.mode = DeviceMode::kMps;
  ASSERT_TRUE(state.AddNode(n).ok());
  Allocation victim{0, 0, 0, {{0, 20480, 300}}, 7};
  ASSERT_TRUE(state.Apply(victim).ok());
  const Allocation planned{0, 0, 0, {{0, 20480, 300}, {1, 20480, 300}}, 8};
  Allocation part = FreePartOf(state, planned);
  ASSERT_EQ(part.devices.size(), 1u);  // device 1 only: device 0 is the victim's user's until it leaves
  EXPECT_EQ(part.devices[0].device, 1);
  ASSERT_TRUE(state.Apply(part).ok());
  std::vector<Allocation> kept = MpsDevicesKeptFor(state, planned);
  ASSERT_EQ(kept.size(), 3u);  // the rest of device 0, then its two other places for a sharer
  for (const Allocation& k : kept) {
    EXPECT_EQ(k.mps_user, 7u);
    ASSERT_TRUE(state.Apply(k).ok());
  }
  EXPECT_EQ(state.FreeDeviceMemory(0, 0), 0);
  // Not even a task of the victims' user that asks nothing of the device fits there now.
  EXPECT_FALSE(state.Apply(Allocation{0, 0, 0, {{0, 0, 0}}, 7}).ok());
  for (auto k = kept.rbegin(); k != kept.rend(); ++k) ASSERT_TRUE(state.Release(*k).ok());
  ASSERT_TRUE(state.Release(victim).ok());
  EXPECT_TRUE(MpsDevicesKeptFor(state, planned).empty());
  EXPECT_TRUE(state.CheckInvariants().ok());
}

}  // namespace
}  // namespace xpool::server::internal
