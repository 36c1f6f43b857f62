// The agents' start and end reports and cancels commit their transition before taking the control plane's lock
// (ControlPlane::TransitionUnlocked): another change of the same job may commit in between. These tests make that
// happen from inside the store call and check that the job ends where it would have with the calls one after the
// other, its devices released once and the cluster state agreeing with the store.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "model/node_builder.h"
#include "server/control_plane.h"
#include "store/forwarding_state_store.h"

namespace xpool::server {
namespace {

// A store whose next TransitionJob runs `before` first (another change that commits first) and `after` once it
// has committed (another change that comes before the caller takes the lock again). Each hook runs once.
class RacingStore : public ForwardingStateStore {
 public:
  using ForwardingStateStore::ForwardingStateStore;
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected) override {
    if (auto hook = std::exchange(before, nullptr)) hook();
    Status s = ForwardingStateStore::TransitionJob(id, to, reason, now, expected);
    if (auto hook = std::exchange(after, nullptr)) hook();
    return s;
  }
  std::function<void()> before, after;
};

class ControlPlaneRaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("xpool_race_test_" + std::to_string(::getpid()) + ".db")).string();
    std::filesystem::remove(path_);
    auto s = OpenStateStore(path_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    base_ = std::move(*s);
    store_ = std::make_unique<RacingStore>(*base_);
    control_ = std::make_unique<ControlPlane>(*store_, clock_, nullptr, ControlPlaneOptions{});
    ASSERT_TRUE(control_->Rebuild().ok());
    tenant_ = store_->CreateTenant("team", false, TenantQuota{}, clock_.NowMicros()).value().id;
    ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  }
  void TearDown() override {
    control_.reset();
    store_.reset();
    base_.reset();
    std::filesystem::remove(path_);
  }
  // A one-GPU job, placed.
  JobId Placed() {
    JobSpec spec;
    spec.name = "train";
    spec.command = {"true"};
    spec.resources.gpu = 1;
    const JobId id = control_->Submit(tenant_, spec).value().id;
    EXPECT_EQ(control_->RunPass(true), 1) << control_->PendingReason(id);
    return id;
  }
  bool GpuAllocated() { return control_->GetNode("n1").value().usage.devices.at(0).allocated(); }
  JobState StateOf(JobId id) { return store_->GetJob(id).value().state; }

  std::string path_;
  FakeClock clock_{1'700'000'000'000'000};
  std::unique_ptr<StateStore> base_;
  std::unique_ptr<RacingStore> store_;
  std::unique_ptr<ControlPlane> control_;
  TenantId tenant_;
};

// The job's end is reported while a suspend of it commits first: the end is committed from suspending instead.
TEST_F(ControlPlaneRaceTest, AnEndReportCommitsFromTheStateAnotherChangeLeftTheJobIn) {
  const JobId id = Placed();
  ASSERT_TRUE(control_->TaskStarted(id, clock_.NowMicros()).ok());
  store_->before = [&] {
    ASSERT_TRUE(base_->TransitionJob(id, JobState::kSuspending, "raced", clock_.NowMicros(), JobState::kRunning).ok());
  };
  JobRecord after = control_->Finish(id, JobState::kSucceeded, "every replica exited 0").value();
  EXPECT_EQ(after.state, JobState::kSucceeded);
  EXPECT_FALSE(GpuAllocated());
  EXPECT_TRUE(control_->CheckConsistency().ok()) << control_->CheckConsistency().ToString();
}

// A cancel that loses the race to the job's end says what the job is; the end released the GPU once.
TEST_F(ControlPlaneRaceTest, ACancelLosingToTheJobsEndSaysItIsOver) {
  const JobId id = Placed();
  ASSERT_TRUE(control_->TaskStarted(id, clock_.NowMicros()).ok());
  store_->before = [&] { ASSERT_TRUE(control_->Finish(id, JobState::kSucceeded, "every replica exited 0").ok()); };
  auto cancelled = control_->Cancel(id, "cancelled by team");
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cancelled.status().message(), "job " + id.ToString() + " is already succeeded");
  EXPECT_FALSE(GpuAllocated());
  EXPECT_TRUE(control_->CheckConsistency().ok()) << control_->CheckConsistency().ToString();
}

// A suspend that comes between the start report's commit and its bookkeeping is not undone by it: the job goes
// on to suspended and back to the queue when its task has left, as it would have with the calls in turn.
TEST_F(ControlPlaneRaceTest, AStartReportDoesNotUndoASuspendThatCameBetween) {
  const JobId id = Placed();
  store_->after = [&] { ASSERT_TRUE(control_->Suspend(id).ok()); };
  ASSERT_TRUE(control_->TaskStarted(id, clock_.NowMicros()).ok());
  EXPECT_EQ(StateOf(id), JobState::kSuspending);
  ASSERT_TRUE(control_->TaskStarted(id, clock_.NowMicros()).ok());  // a late report changes nothing
  EXPECT_EQ(StateOf(id), JobState::kSuspending);
  ASSERT_TRUE(control_->SuspendDone(id, "checkpointed").ok());
  EXPECT_EQ(StateOf(id), JobState::kSuspended);
  EXPECT_FALSE(GpuAllocated());
  EXPECT_TRUE(control_->CheckConsistency().ok()) << control_->CheckConsistency().ToString();
}

}  // namespace
}  // namespace xpool::server
