#include "vgpu/memory_ledger.h"

#include <gtest/gtest.h>

namespace xpool::vgpu {
namespace {

TEST(MemoryLedgerTest, APoolKeepsItsChargeAfterFreesUntilTheDriverReleases) {
  MemoryLedger ledger;
  EXPECT_EQ(ledger.PoolNeed(1, 100), 100u);
  ledger.PoolAllocated(1, 0, 100, 100);
  EXPECT_EQ(ledger.PoolFreed(1, 100).bytes, 0u);  // kept, still charged
  EXPECT_TRUE(ledger.AnyKeptCharge());
  EXPECT_EQ(ledger.PoolNeed(1, 60), 0u);                // reuses what the pool keeps
  EXPECT_EQ(ledger.PoolNeed(1, 160), 60u);              // only the growth is new
  DeviceBytes released = ledger.PoolReconcile(1, 100);  // the driver still holds it all
  EXPECT_EQ(released.bytes, 0u);
  released = ledger.PoolReconcile(1, 30);
  EXPECT_EQ(released.device, 0);
  EXPECT_EQ(released.bytes, 70u);
  released = ledger.PoolReconcile(1, 0);
  EXPECT_EQ(released.bytes, 30u);
  EXPECT_FALSE(ledger.AnyKeptCharge());
}

TEST(MemoryLedgerTest, ReconcilingNeverReleasesWhatIsInUse) {
  MemoryLedger ledger;
  ledger.PoolAllocated(1, 0, 100, 100);
  ledger.PoolAllocated(1, 0, 50, 50);
  ledger.PoolFreed(1, 50);
  EXPECT_EQ(ledger.PoolReconcile(1, 0).bytes, 50u);  // 100 still in use
  EXPECT_EQ(ledger.PoolGrowth(1, 120), 20u);         // the driver holds more than is charged
}

TEST(MemoryLedgerTest, ADestroyedPoolReleasesWithItsLastAllocation) {
  MemoryLedger ledger;
  ledger.PoolAllocated(1, 0, 100, 100);
  EXPECT_EQ(ledger.PoolDestroyed(1).bytes, 0u);
  EXPECT_EQ(ledger.PoolFreed(1, 100).bytes, 100u);
  ledger.NotePool(2, -1, false);
  EXPECT_EQ(ledger.PoolDevice(2, 0), -1);  // host memory
  EXPECT_EQ(ledger.PoolDevice(3, 0), 0);   // a device's default pool
}

TEST(MemoryLedgerTest, GraphChargesFollowLiveExecsAndTheGraphPool) {
  MemoryLedger ledger;
  uint64_t reserved[kMaxDevices] = {};
  std::vector<DeviceBytes> needs = {{0, 100}};
  std::vector<DeviceBytes> charges = ledger.GraphInstantiateCharges(needs, reserved);
  ASSERT_EQ(charges.size(), 1u);
  EXPECT_EQ(charges[0].bytes, 100u);
  ledger.GraphInstantiated(7, needs, charges);
  EXPECT_EQ(ledger.GraphInstantiateCharges(needs, reserved)[0].bytes, 100u);  // a second exec needs its own
  EXPECT_EQ(ledger.GraphExecDestroyed(7), std::vector<int>{0});
  EXPECT_EQ(ledger.GraphReconcile(0, 100).bytes, 0u);  // the graph pool keeps it
  EXPECT_EQ(ledger.GraphReconcile(0, 0).bytes, 100u);  // trimmed
  reserved[0] = 80;                                    // memory the pool kept covers part of a new exec
  ledger.GraphInstantiated(8, needs, {{0, 80}});
  EXPECT_EQ(ledger.GraphCharged(0), 80u);
}

TEST(MemoryLedgerTest, VmmMemoryLivesWhileAHandleOrAMappingDoes) {
  MemoryLedger ledger;
  bool known = false;
  ledger.VmmCreated(5, 0, 100);
  ledger.VmmMapped(0x1000, 100, 5, 0, 0);
  EXPECT_EQ(ledger.VmmReleased(5, &known).bytes, 0u);  // still mapped
  EXPECT_TRUE(known);
  ledger.VmmRetained(9, 0x1040);  // a new handle value for the mapped memory
  std::vector<DeviceBytes> unmapped = ledger.VmmUnmapped(0x1000, 100);
  EXPECT_TRUE(unmapped.empty());  // retained
  EXPECT_EQ(ledger.VmmReleased(9, &known).bytes, 100u);
  ledger.VmmReleased(9, &known);
  EXPECT_FALSE(known);  // a double release releases nothing
}

TEST(MemoryLedgerTest, ExportedVmmMemoryStaysChargedAndImportsAreChargedWhenMapped) {
  MemoryLedger ledger;
  bool known = false;
  ledger.VmmCreated(5, 0, 100);
  ledger.VmmExported(5);
  EXPECT_EQ(ledger.VmmReleased(5, &known).bytes, 0u);
  ledger.VmmImported(6);
  EXPECT_EQ(ledger.VmmMapNeed(6, 0, 64), 64u);
  ledger.VmmMapped(0x2000, 64, 6, 1, 64);
  EXPECT_EQ(ledger.VmmMapNeed(6, 32, 64), 32u);  // a wider mapping of the same import
  std::vector<DeviceBytes> unmapped = ledger.VmmUnmapped(0x2000, 64);
  EXPECT_TRUE(unmapped.empty());  // the import's handle is still held
  DeviceBytes released = ledger.VmmReleased(6, &known);
  EXPECT_EQ(released.device, 1);
  EXPECT_EQ(released.bytes, 64u);
}

TEST(MemoryLedgerTest, IpcMappingsAreChargedOncePerAddress) {
  MemoryLedger ledger;
  bool known = false;
  EXPECT_FALSE(ledger.IpcOpenedAgain(0x10));
  ledger.IpcOpened(0x10, 0, 600);
  EXPECT_TRUE(ledger.IpcOpenedAgain(0x10));
  EXPECT_EQ(ledger.IpcClosed(0x10, &known).bytes, 0u);
  EXPECT_EQ(ledger.IpcClosed(0x10, &known).bytes, 600u);
  ledger.IpcClosed(0x10, &known);
  EXPECT_FALSE(known);
}

}  // namespace
}  // namespace xpool::vgpu
