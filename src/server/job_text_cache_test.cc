#include "server/internal/job_text_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/internal/json_codec.h"

namespace xpool::server::internal {
namespace {

std::shared_ptr<const JobRecord> Job(JobState state, int restarts = 0) {
  auto job = std::make_shared<JobRecord>();
  job->id = JobId(42);
  job->tenant = TenantId(1);
  job->state = state;
  job->restart_count = restarts;
  job->spec.name = "train";
  job->spec.command = {"python", "train.py"};
  job->spec.resources.gpu = 1;
  return job;
}

std::vector<AllocationRecord> On(const std::string& node) {
  std::vector<AllocationRecord> placement(1);
  placement[0].node = node;
  placement[0].devices = {{"GPU-" + node, 1024, 500}};
  return placement;
}

// What AppendJobJson writes, the text the cache must give back.
std::string Direct(const JobRecord& job, const std::string& tenant, const std::string& reason,
                   const std::vector<AllocationRecord>& placement) {
  std::string out;
  AppendJobJson(&out, job, tenant, reason, &placement, SpecText(job.spec));
  return out;
}

std::string Cached(JobTextCache& cache, const std::shared_ptr<const JobRecord>& job, const std::string& tenant,
                   const std::string& reason, const std::vector<AllocationRecord>& placement) {
  std::string out = "[";
  cache.Append(&out, job, tenant, reason, placement, SpecText(job->spec));
  EXPECT_EQ(out.substr(0, 1), "[") << "appends, keeps what was there";
  return out.substr(1);
}

TEST(JobTextCacheTest, GivesAppendJobJsonsTextAndWritesItAgainWhenAnythingItShowsChanged) {
  JobTextCache cache;
  const std::vector<AllocationRecord> none;
  auto queued = Job(JobState::kQueued);
  EXPECT_EQ(Cached(cache, queued, "team-a", "waiting for 1 GPU", none),
            Direct(*queued, "team-a", "waiting for 1 GPU", none));
  EXPECT_EQ(Cached(cache, queued, "team-a", "waiting for 1 GPU", none),
            Direct(*queued, "team-a", "waiting for 1 GPU", none));
  EXPECT_EQ(cache.size(), 1u);
  // The pending reason and the tenant's name are part of the text.
  EXPECT_EQ(Cached(cache, queued, "team-a", "quota", none), Direct(*queued, "team-a", "quota", none));
  EXPECT_EQ(Cached(cache, queued, "team-b", "quota", none), Direct(*queued, "team-b", "quota", none));
  // A changed job is a new record: its new state shows.
  auto running = Job(JobState::kRunning);
  EXPECT_EQ(Cached(cache, running, "team-b", "", On("a")), Direct(*running, "team-b", "", On("a")));
  // The same record with another placement (read from the store beside the record).
  EXPECT_EQ(Cached(cache, running, "team-b", "", On("b")), Direct(*running, "team-b", "", On("b")));
  // A record gone and another in its place (perhaps at the same address) is never taken for it.
  queued.reset();
  running.reset();
  auto requeued = Job(JobState::kQueued, /*restarts=*/1);
  EXPECT_EQ(Cached(cache, requeued, "team-b", "", none), Direct(*requeued, "team-b", "", none));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(JobTextCacheTest, StartsOverPastItsBound) {
  JobTextCache cache;
  std::vector<std::shared_ptr<const JobRecord>> jobs;
  for (size_t i = 0; i <= JobTextCache::kMaxEntries; ++i) {
    auto job = std::make_shared<JobRecord>(*Job(JobState::kQueued));
    job->id = JobId(static_cast<int64_t>(i) + 1);
    std::string out;
    cache.Append(&out, job, "t", "", {}, "{}");
    jobs.push_back(std::move(job));
  }
  EXPECT_EQ(cache.size(), 1u);  // full at kMaxEntries: the next job started it over
}

}  // namespace
}  // namespace xpool::server::internal
