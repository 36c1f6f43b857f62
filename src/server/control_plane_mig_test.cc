// Dynamic MIG in the control plane: a pass plans the waiting `mig:` demand onto an idle --mig-dynamic node.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/mig_label.h"
#include "server/control_plane.h"

namespace xpool::server {
namespace {

class ControlPlaneMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xpool_cp_mig_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto s = OpenStateStore((dir_ / "xpool.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    control_ = std::make_unique<ControlPlane>(*store_, clock_, nullptr, ControlPlaneOptions{});
    ASSERT_TRUE(control_->Rebuild().ok());
    auto t = store_->CreateTenant("team", false, TenantQuota{}, clock_.NowMicros());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tenant_ = t->id;
  }
  void TearDown() override {
    control_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A node of one A100 80GB in MIG mode holding `profiles` (at the starts given), as an agent run with
  // --mig-dynamic registers it: one device per instance, and the label.
  static Node MigNode(const std::vector<std::pair<std::string, int>>& profiles) {
    const MigModel* model = MigModelNamed("A100-80GB");
    Node node;
    node.name = "m";
    node.cpu_milli = 32000;
    node.memory_mib = 262144;
    node.simulated = true;
    MigGpuGeometry gpu{0, model, {}};
    for (const auto& [name, start] : profiles) {
      const int p = MigProfileIndex(*model, name);
      gpu.instances.push_back({p, start});
      Device d;
      d.model = "A100-SXM4-80GB MIG " + name;
      d.uuid = "MIG-" + std::to_string(node.devices.size());
      d.index = static_cast<int>(node.devices.size());
      d.memory_mib = model->profiles[p].memory_mib;
      d.compute_milli = MigComputeMilli(*model, model->profiles[p]);
      d.max_sharers = 1;
      d.mode = DeviceMode::kMig;
      node.devices.push_back(d);
    }
    node.labels[std::string(kMigDynamicLabel)] = FormatMigDynamicLabel(std::span(&gpu, 1));
    return node;
  }
  JobId SubmitMig(const std::string& profile) {
    JobSpec s;
    s.name = "infer";
    s.command = {"true"};
    s.resources.cpu_milli = 1000;
    s.resources.memory_mib = 1024;
    s.resources.mig = profile;
    auto j = control_->Submit(tenant_, s);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? j->id : JobId();
  }
  bool DevicesCordoned() {
    for (const NodeView& n : control_->Nodes()) {
      for (const Device& d : n.node.devices) {
        if (!d.cordoned) return false;
      }
    }
    return true;
  }

  std::filesystem::path dir_;
  FakeClock clock_{1'700'000'000'000'000};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<ControlPlane> control_;
  TenantId tenant_;
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
  auto allocations = store_->JobAllocations(whole);
  ASSERT_TRUE(allocations.ok());
  EXPECT_EQ(allocations->size(), 1u);
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
