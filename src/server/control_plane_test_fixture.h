#pragma once
// The fixture of ControlPlane's tests (control_plane_test.cc, control_plane_mig_test.cc): a control plane over a
// fresh SQLite store in its own directory, one tenant, a fake clock; and a peer that reaches into a pass.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/node_builder.h"
#include "server/control_plane.h"
#include "store/internal/sql_store.h"

namespace xpool::server {

// Splits a pass at the commit: books the placements (RunPass's first half), runs `between`, then commits them.
class ControlPlaneTestPeer {
 public:
  static int BookThenCommit(ControlPlane& c, const std::function<void()>& between) {
    std::lock_guard pass(c.pass_mu_);
    std::vector<ControlPlane::PendingCommit> commits;
    std::vector<std::pair<JobId, std::string>> reasons;
    c.BookPass(true, &commits, &reasons);
    between();
    return c.CommitPlacements(commits);
  }
  static int QueuedPriority(const ControlPlane& c, JobId id) {
    std::lock_guard lock(c.mu_);
    auto it = c.queued_.find(id);
    return it == c.queued_.end() ? -1 : it->second.priority;
  }
};

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xpool_cp_test_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
    auto t = store_->CreateTenant("team", false, TenantQuota{}, clock_.NowMicros());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tenant_ = t->id;
  }
  void TearDown() override {
    control_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    control_.reset();
    store_.reset();
    auto s = OpenStateStore((dir_ / "xpool.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    control_ = std::make_unique<ControlPlane>(*store_, clock_, nullptr, options_);
    ASSERT_TRUE(control_->Rebuild().ok());
  }
  static JobSpec Spec(std::string name, int gpus, int replicas = 1, int priority = 50, int gpucores = 0) {
    JobSpec s;
    s.name = std::move(name);
    s.command = {"true"};
    s.replicas = replicas;
    s.priority = priority;
    s.resources.cpu_milli = 1000;
    s.resources.memory_mib = 1024;
    s.resources.gpu = gpus;
    if (gpus > 0) s.resources.gpumem_mib = 1024;
    s.resources.gpucores = gpucores;
    return s;
  }
  JobRecord Submit(const JobSpec& spec) {
    auto j = control_->Submit(tenant_, spec);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : JobRecord{};
  }
  JobState StateOf(JobId id) {
    auto j = store_->GetJob(id);
    EXPECT_TRUE(j.ok());
    return j.ok() ? j->state : JobState::kFailed;
  }
  int64_t DeviceMemoryUsed() {
    int64_t used = 0;
    for (const NodeView& n : control_->Nodes()) {
      for (const DeviceUsage& d : n.usage.devices) used += d.memory_mib;
    }
    return used;
  }

  bool HasEvent(JobId id, std::string_view text) {
    auto events = store_->JobEvents(id);
    EXPECT_TRUE(events.ok());
    if (!events.ok()) return false;
    for (const EventRecord& e : *events) {
      if (e.reason.find(text) != std::string::npos) return true;
    }
    return false;
  }
  static JobSpec Preemptible(JobSpec s) {
    s.preemptible = true;
    return s;
  }

  std::filesystem::path dir_;
  ControlPlaneOptions options_;
  FakeClock clock_{1'700'000'000'000'000};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<ControlPlane> control_;
  TenantId tenant_;
};

}  // namespace xpool::server
