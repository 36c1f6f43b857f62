// Retries (issue 20): a failed replica runs the job again after its backoff, with an event saying which retry
// and why; when none are left the job fails saying how many it had; a restart keeps the backoff.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/node_builder.h"
#include "server/control_plane.h"

namespace xpool::server {
namespace {

class ControlPlaneRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("xpool_retry_test_" + std::to_string(::getpid()) + ".db")).string();
    std::filesystem::remove(path_);
    Open();
    auto t = store_->CreateTenant("team", false, TenantQuota{}, clock_.NowMicros());
    ASSERT_TRUE(t.ok());
    tenant_ = t->id;
    ASSERT_TRUE(control_->RegisterNode(MakeNode("n1").WithGpus(1, "A100", 81920).Build()).ok());
  }
  void TearDown() override {
    control_.reset();
    store_.reset();
    std::filesystem::remove(path_);
  }
  void Open() {
    control_.reset();
    store_.reset();
    auto s = OpenStateStore(path_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    control_ = std::make_unique<ControlPlane>(*store_, clock_, nullptr, ControlPlaneOptions{});
    ASSERT_TRUE(control_->Rebuild().ok());
  }
  std::vector<std::string> RetryEvents(JobId id) {
    std::vector<std::string> out;
    const std::vector<EventRecord> events = store_->JobEvents(id).value();
    for (const EventRecord& e : events) {
      if (e.kind == "retry") out.push_back(e.reason);
    }
    return out;
  }
  // Places the job and reports it started, as its agent would.
  void Start(JobId id) {
    ASSERT_EQ(control_->RunPass(true), 1) << control_->PendingReason(id);
    ASSERT_TRUE(control_->TaskStarted(id, clock_.NowMicros()).ok());
  }

  std::string path_;
  FakeClock clock_{1'700'000'000'000'000};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<ControlPlane> control_;
  TenantId tenant_;
};

TEST_F(ControlPlaneRetryTest, RetriesWithBackoffThenFailsSayingSo) {
  JobSpec spec;
  spec.name = "flaky";
  spec.command = {"false"};
  spec.resources.gpu = 1;
  spec.retries = 2;
  spec.retry_backoff_seconds = 10;
  JobRecord job = control_->Submit(tenant_, spec).value();
  Start(job.id);

  JobRecord after = control_->FailOrRetry(job.id, "replica 0 exited with code 1", "exit code 1").value();
  EXPECT_EQ(after.state, JobState::kQueued);
  EXPECT_EQ(after.restart_count, 1);
  EXPECT_EQ(RetryEvents(job.id),
            std::vector<std::string>{"retry 1 of 2 in 10 s after exit code 1 (replica 0 exited with code 1)"});
  // The device is free, but the retry waits out its backoff.
  EXPECT_EQ(control_->RunPass(true), 0);
  EXPECT_EQ(control_->PendingReason(job.id), "retry 1 of 2 in 10 s after exit code 1");
  clock_.Advance(9 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 0);
  clock_.Advance(1 * kMicrosPerSecond);
  Start(job.id);

  // The second retry waits twice as long, across a server restart too.
  ASSERT_TRUE(control_->FailOrRetry(job.id, "replica 0 was killed by signal 9", "signal 9").ok());
  EXPECT_EQ(RetryEvents(job.id).back(), "retry 2 of 2 in 20 s after signal 9 (replica 0 was killed by signal 9)");
  Open();
  clock_.Advance(19 * kMicrosPerSecond);
  EXPECT_EQ(control_->RunPass(true), 0);
  clock_.Advance(1 * kMicrosPerSecond);
  Start(job.id);

  after = control_->FailOrRetry(job.id, "replica 0 exited with code 3", "exit code 3").value();
  EXPECT_EQ(after.state, JobState::kFailed);
  EXPECT_EQ(after.state_reason, "replica 0 exited with code 3 (after 2 retries)");
  EXPECT_EQ(RetryEvents(job.id).size(), 2u);
  EXPECT_TRUE(control_->CheckConsistency().ok());
}

TEST_F(ControlPlaneRetryTest, NoRetriesFailsAtOnce) {
  JobSpec spec;
  spec.name = "once";
  spec.command = {"false"};
  spec.resources.cpu_milli = 100;
  JobRecord job = control_->Submit(tenant_, spec).value();
  Start(job.id);
  JobRecord after = control_->FailOrRetry(job.id, "replica 0 exited with code 1", "exit code 1").value();
  EXPECT_EQ(after.state, JobState::kFailed);
  EXPECT_EQ(after.state_reason, "replica 0 exited with code 1");
  EXPECT_TRUE(RetryEvents(job.id).empty());
}

}  // namespace
}  // namespace xpool::server
