// Dynamic MIG in the control plane (control_plane_mig.cc, docs/mig.md "Dynamic geometry").
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/mig_label.h"
#include "server/control_plane_test_fixture.h"

namespace xpool::server {
namespace {

// Dynamic MIG (control_plane_mig.cc): a pass plans the waiting `mig:` demand onto an idle --mig-dynamic node.
class ControlPlaneMigTest : public ControlPlaneTest {
 protected:
  // A node of one A100 80GB in MIG mode holding `profiles` (at the starts given), as an agent run with
  // --mig-dynamic registers it, with the label: one device per instance (uuid MIG-<n>), or, `slotted`, one per
  // start slot (an instance's uuid MIG-<profile>@<start>, a free slot's GPU-<node>/slot<start>).
  static Node MigNode(const std::vector<std::pair<std::string, int>>& profiles, bool slotted = false,
                      std::string name = "m") {
    const MigModel* model = MigModelNamed("A100-80GB");
    Node node;
    node.name = std::move(name);
    node.cpu_milli = 32000;
    node.memory_mib = 262144;
    node.simulated = true;
    MigGpuGeometry gpu{0, model, {}, slotted ? 0 : -1};
    for (const auto& [name, start] : profiles) gpu.instances.push_back({MigProfileIndex(*model, name), start});
    const auto instance_device = [&](const MigPlacement& at) {
      const MigProfile& p = model->profiles[at.profile];
      const std::string uuid = slotted ? "MIG-" + std::string(p.name) + "@" + std::to_string(at.start)
                                       : "MIG-" + std::to_string(node.devices.size());
      return Device{.model = "A100-SXM4-80GB MIG " + std::string(p.name),
                    .uuid = uuid,
                    .memory_mib = p.memory_mib,
                    .compute_milli = MigComputeMilli(*model, p),
                    .max_sharers = 1,
                    .mode = DeviceMode::kMig};
    };
    for (const MigPlacement& at : slotted ? std::vector<MigPlacement>{} : gpu.instances) {
      node.devices.push_back(instance_device(at));
    }
    for (int slot : slotted ? MigStartSlots(*model) : std::vector<int>{}) {
      auto at = std::find_if(gpu.instances.begin(), gpu.instances.end(),
                             [&](const MigPlacement& p) { return p.start == slot; });
      const Device free_slot{.model = "A100-SXM4-80GB MIG slot " + std::to_string(slot),
                             .uuid = "GPU-" + node.name + "/slot" + std::to_string(slot),
                             .memory_mib = 0,
                             .compute_milli = 0,
                             .max_sharers = 1,
                             .mode = DeviceMode::kMigSlot};
      node.devices.push_back(at == gpu.instances.end() ? free_slot : instance_device(*at));
    }
    for (size_t i = 0; i < node.devices.size(); ++i) node.devices[i].index = static_cast<int>(i);
    for (Device& d : node.devices) d.memory_mib = d.memory_mib * 95 / 100;  // as the driver reports it
    node.labels[std::string(kMigDynamicLabel)] = FormatMigDynamicLabel(std::span(&gpu, 1));
    return node;
  }
  std::string GrantedUuid(JobId id) {
    auto allocations = store_->JobAllocations(id);
    if (!allocations.ok() || allocations->size() != 1 || (*allocations)[0].devices.size() != 1) return "";
    return (*allocations)[0].devices[0].device_uuid;
  }
  JobId SubmitMig(const std::string& profile) {
    JobSpec s = Spec("infer", 0);
    s.resources.mig = profile;
    return Submit(s).id;
  }
  bool DevicesCordoned() {
    for (const NodeView& n : control_->Nodes()) {
      for (const Device& d : n.node.devices) {
        if (!d.cordoned) return false;
      }
    }
    return true;
  }
};

TEST_F(ControlPlaneMigTest, WaitingDemandRepartitionsAnIdleNodeAndRunsOnceItsAgentRegistersAgain) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"7g.80gb", 0}})).ok());
  const JobId a = SubmitMig("3g.40gb"), b = SubmitMig("3g.40gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=3g.40gb,3g.40gb");
  EXPECT_TRUE(DevicesCordoned());  // nothing lands on the old instance meanwhile
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=3g.40gb,3g.40gb");  // one plan, not a second
  // The agent applied it and registers the new instances.
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"3g.40gb", 0}, {"3g.40gb", 4}})).ok());
  EXPECT_EQ(control_->WantedMigGeometry("m"), "");
  EXPECT_FALSE(DevicesCordoned());
  EXPECT_EQ(control_->RunPass(true), 2);
  for (JobId id : {a, b}) {
    auto allocations = store_->JobAllocations(id);
    ASSERT_TRUE(allocations.ok());
    ASSERT_EQ(allocations->size(), 1u);
    EXPECT_EQ((*allocations)[0].node, "m");
  }
  EXPECT_TRUE(control_->CheckConsistency().ok());
  // A node holding jobs is never repartitioned.
  SubmitMig("1g.10gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  clock_.Advance(31 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "");
}

TEST_F(ControlPlaneMigTest, RequestsByMemoryAndCoresAskForTheSmallestCoveringInstances) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({})).ok());  // MIG on, no instance yet: nothing to run on
  JobSpec selective = Spec("picky", 1);
  selective.resources.gpu_type = {"MIG 7g"};  // a selector: an instance not yet made cannot be matched against it
  Submit(selective);
  JobSpec mid = Spec("mid", 1);
  mid.resources.gpumem_mib = 10 * 1024;  // more than a 1g.10gb has usable (9,728 MiB on an A100 80GB)
  const JobId m = Submit(mid).id;
  JobSpec small = Spec("small", 1, 1, 50, /*gpucores=*/10);
  small.resources.gpumem_mib = 8 * 1024;
  const JobId s = Submit(small).id;
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=1g.20gb,1g.10gb");
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"1g.20gb", 0}, {"1g.10gb", 2}})).ok());
  EXPECT_EQ(control_->RunPass(true), 2);  // not the selective one: no 7g instance was made for it
  EXPECT_EQ(GrantedUuid(m), "MIG-0");
  EXPECT_EQ(GrantedUuid(s), "MIG-1");
}

TEST_F(ControlPlaneMigTest, ANodeOfferedBySlotsIsFilledAroundTheInstancesInUse) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"3g.40gb", 0}}, /*slotted=*/true)).ok());
  const JobId busy = SubmitMig("3g.40gb");
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(GrantedUuid(busy), "MIG-3g.40gb@0");
  JobSpec small = Spec("small", 1);
  small.resources.gpumem_mib = 8 * 1024;
  const JobId added = Submit(small).id;
  EXPECT_EQ(control_->RunPass(true), 0);
  // The instance in use stays where it is; the new one goes where it removes the fewest other placements.
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=3g.40gb@0,1g.10gb@6");
  EXPECT_TRUE(DevicesCordoned());  // the GPU's slots; the job on it keeps running
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"3g.40gb", 0}, {"1g.10gb", 6}}, true)).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(GrantedUuid(added), "MIG-1g.10gb@6");
  EXPECT_EQ(GrantedUuid(busy), "MIG-3g.40gb@0");
  EXPECT_TRUE(control_->CheckConsistency().ok());
  // The plan was applied: more demand is planned at once, around both instances in use.
  SubmitMig("2g.20gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=3g.40gb@0,2g.20gb@4,1g.10gb@6");
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"3g.40gb", 0}, {"1g.10gb", 6}, {"2g.20gb", 4}}, true)).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  // Another instance where an allocated one is: refused, nothing changes.
  const Status s = control_->RegisterNode(MigNode({{"1g.10gb", 0}, {"1g.10gb", 6}}, true));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("is allocated and would become MIG-1g.10gb@0"), std::string::npos) << s.message();
  // A label whose slots do not match the devices is refused.
  Node wrong = MigNode({{"3g.40gb", 0}, {"1g.10gb", 6}}, true);
  wrong.devices[6].mode = DeviceMode::kMigSlot;
  EXPECT_EQ(control_->RegisterNode(wrong).code(), StatusCode::kInvalidArgument);
}

// HAMi's dynamic MIG: a request by size does not take a larger free instance (here the whole GPU) but waits, saying
// so, for the instance made for it.
TEST_F(ControlPlaneMigTest, ARequestBySizeWaitsForItsOwnInstanceRatherThanTakeALargerOne) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"7g.80gb", 0}}, /*slotted=*/true)).ok());
  JobSpec small = Spec("small", 1);
  small.resources.gpumem_mib = 8 * 1024;
  const JobId id = Submit(small).id;
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_NE(control_->PendingReason(id).find("waiting for a MIG instance of its size to be made"), std::string::npos)
      << control_->PendingReason(id);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=1g.10gb@0");
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"1g.10gb", 0}}, true)).ok());
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(GrantedUuid(id), "MIG-1g.10gb@0");
}

// Across nodes as on one node's GPUs: slices beside the instances in use serve before a GPU nothing runs on is cut,
// so the idle GPU stays whole for a job that needs it all.
TEST_F(ControlPlaneMigTest, SlicesBesideInstancesInUseServeBeforeAnIdleGpuIsCut) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({}, /*slotted=*/true, "a")).ok());  // MIG on, no instance, idle
  const Status b = control_->RegisterNode(MigNode({{"3g.40gb", 0}}, true, "b"));
  ASSERT_TRUE(b.ok()) << b.ToString();
  const JobId busy = SubmitMig("3g.40gb");
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(GrantedUuid(busy), "MIG-3g.40gb@0");  // on b, the only instance there is
  SubmitMig("1g.10gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("b"), "0=3g.40gb@0,1g.10gb@6");
  EXPECT_EQ(control_->WantedMigGeometry("a"), "");
  // What b cannot take goes to the idle GPU in the same pass.
  SubmitMig("7g.80gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("a"), "0=7g.80gb@0");
}

TEST_F(ControlPlaneMigTest, APlanItsAgentDoesNotTakeExpiresAndTheNodeComesBack) {
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"7g.80gb", 0}})).ok());
  SubmitMig("1g.10gb");
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=1g.10gb");
  EXPECT_TRUE(DevicesCordoned());
  clock_.Advance(61 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 0);  // expired: the old description, then planned again
  EXPECT_EQ(control_->WantedMigGeometry("m"), "0=1g.10gb");
  // A whole-GPU job takes the 7g.80gb instance once the plan is gone (the agent came back unchanged).
  ASSERT_TRUE(control_->RegisterNode(MigNode({{"7g.80gb", 0}})).ok());
  EXPECT_FALSE(DevicesCordoned());
  const JobId whole = SubmitMig("7g.80gb");
  EXPECT_EQ(control_->RunPass(true), 1);
  EXPECT_EQ(GrantedUuid(whole), "MIG-0");
}

TEST_F(ControlPlaneMigTest, ABadLabelIsRefusedAtRegistration) {
  Node node = MigNode({{"7g.80gb", 0}});
  node.labels[std::string(kMigDynamicLabel)] = "0=A100-80GB:3g.40gb@2";
  const Status s = control_->RegisterNode(node);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("label xpool.io/mig-dynamic"), std::string::npos) << s.message();
  EXPECT_TRUE(control_->Nodes().empty());
}
}  // namespace
}  // namespace xpool::server
