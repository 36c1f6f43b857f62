// CachingStateStore against the store it caches (SQLite and PostgreSQL): after every kind of job change, a
// refused one, one that committed but reported a failure, and a restart, every read the cache serves (by id,
// lists under each filter and page, allocations) equals the store's own answer. Pages over concurrent submits
// visit each job once.
#include "store/caching_state_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "store/state_store_test_fixture.h"
#include "store/testing/faulty_state_store.h"

namespace xpool::store_test {
namespace {

// With `lose`, commits TransitionJob, CommitPlacement and UpdateTask, then reports the connection lost: a commit
// the caller cannot see.
// Also runs `after_list_tasks` once after a ListTasks has read (a change that comes while a read is on its way).
class LostAckStore : public ForwardingStateStore {
 public:
  using ForwardingStateStore::ForwardingStateStore;
  bool lose = false;
  std::function<void()> after_list_tasks;
  Result<std::vector<TaskRecord>> ListTasks(JobId job) override {
    Result<std::vector<TaskRecord>> tasks = ForwardingStateStore::ListTasks(job);
    if (auto hook = std::exchange(after_list_tasks, nullptr)) hook();
    return tasks;
  }
  Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) override {
    Status s = ForwardingStateStore::UpdateTask(job, replica, state, exit_code, now);
    return lose && s.ok() ? UnavailableError("connection lost at COMMIT") : s;
  }
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected = std::nullopt) override {
    Status s = ForwardingStateStore::TransitionJob(id, to, reason, now, expected);
    return lose && s.ok() ? UnavailableError("connection lost at COMMIT") : s;
  }
  Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                         TimeMicros now) override {
    Status s = ForwardingStateStore::CommitPlacement(id, allocations, reason, now);
    return lose && s.ok() ? UnavailableError("connection lost at COMMIT") : s;
  }
};

void ExpectSameJob(const JobRecord& a, const JobRecord& b) {
  SCOPED_TRACE("job " + a.id.ToString());
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.tenant, b.tenant);
  EXPECT_TRUE(a.spec == b.spec);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.submitted_us, b.submitted_us);
  EXPECT_EQ(a.updated_us, b.updated_us);
  EXPECT_EQ(a.restart_count, b.restart_count);
  EXPECT_EQ(a.pending_reason, b.pending_reason);
  EXPECT_EQ(a.state_reason, b.state_reason);
  EXPECT_EQ(a.last_start_us, b.last_start_us);
}

void ExpectSameTasks(const std::vector<TaskRecord>& a, const std::vector<TaskRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("task " + std::to_string(i));
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].job, b[i].job);
    EXPECT_EQ(a[i].replica, b[i].replica);
    EXPECT_EQ(a[i].state, b[i].state);
    EXPECT_EQ(a[i].node, b[i].node);
    EXPECT_EQ(a[i].exit_code, b[i].exit_code);
    EXPECT_EQ(a[i].updated_us, b[i].updated_us);
  }
}

void ExpectSameJobs(const std::vector<JobRecord>& a, const std::vector<JobRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ExpectSameJob(a[i], b[i]);
}

template <typename Env>
class CachingStateStoreTest : public StateStoreTest<Env> {
 protected:
  void SetUp() override {
    StateStoreTest<Env>::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    Result<TenantRecord> other = this->store_->CreateTenant("speech", false, TenantQuota{}, 1000);
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    other_ = other->id;
    Wrap();
  }

  // faulty_ over the store, lost_ack_ over faulty_, the cache over lost_ack_: loaded from what is stored.
  void Wrap() {
    faulty_ = std::make_unique<FaultyStateStore>(*this->store_);
    lost_ack_ = std::make_unique<LostAckStore>(*faulty_);
    Result<std::unique_ptr<CachingStateStore>> cache = CachingStateStore::Load(*lost_ack_);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    cache_ = std::move(cache).value();
  }
  void Restart() {
    cache_.reset();
    lost_ack_.reset();
    faulty_.reset();
    this->Reopen();
    Wrap();
  }

  // Every read the cache serves equals the store's.
  void ExpectAgrees(const std::string& where) {
    SCOPED_TRACE(where);
    StateStore& store = *this->store_;
    Result<std::vector<JobRecord>> all = store.ListJobs({});
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(cache_->job_count(), all->size());
    for (const JobRecord& job : *all) {
      Result<JobRecord> cached = cache_->GetJob(job.id);
      ASSERT_TRUE(cached.ok()) << cached.status().ToString();
      ExpectSameJob(*cached, job);
      Result<std::vector<AllocationRecord>> held = store.JobAllocations(job.id);
      ASSERT_TRUE(held.ok());
      EXPECT_EQ(*cache_->JobAllocations(job.id), *held);
      // Read twice: the first read may fill the cache's entry, the second is served from it.
      for (int read = 0; read < 2; ++read) {
        Result<std::vector<TaskRecord>> tasks = cache_->ListTasks(job.id);
        ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
        ExpectSameTasks(*tasks, *store.ListTasks(job.id));
      }
    }
    EXPECT_EQ(cache_->GetJob(JobId(999999)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(*cache_->ListAllocations(), *store.ListAllocations());
    if (!all->empty()) {
      const JobId first = all->front().id, last = all->back().id, mid((first.value() + last.value()) / 2);
      EXPECT_EQ(*cache_->JobAllocationsBetween(first, mid), *store.JobAllocationsBetween(first, mid));
      EXPECT_EQ(*cache_->JobAllocationsBetween(mid, last), *store.JobAllocationsBetween(mid, last));
    }
    const std::vector<std::optional<TenantId>> tenants = {std::nullopt, this->tenant_, other_, TenantId(777)};
    const std::vector<std::vector<JobState>> states = {
        {},
        {JobState::kQueued},
        {JobState::kRunning, JobState::kScheduled},
        {JobState::kQueued, JobState::kSuspended, JobState::kCancelled, JobState::kQueued}};
    const int64_t mid = all->empty() ? 0 : (all->front().id.value() + all->back().id.value()) / 2;
    for (const auto& tenant : tenants) {
      for (const auto& state : states) {
        for (int64_t after : {int64_t{0}, mid}) {
          for (int limit : {0, 1, 3}) {
            JobFilter f;
            f.tenant = tenant;
            f.states = state;
            f.after = JobId(after);
            f.limit = limit;
            SCOPED_TRACE("tenant " + (tenant ? tenant->ToString() : "any") + ", " + std::to_string(state.size()) +
                         " states, after " + std::to_string(after) + ", limit " + std::to_string(limit));
            Result<std::vector<JobRecord>> want = store.ListJobs(f);
            Result<std::vector<JobRecord>> got = cache_->ListJobs(f);
            ASSERT_TRUE(want.ok() && got.ok());
            ExpectSameJobs(*got, *want);
            // `more` says whether the store has a match past the page.
            JobFilter rest = f;
            rest.limit = 0;
            rest.after = want->empty() ? f.after : want->back().id;
            EXPECT_EQ(cache_->ListJobRefs(f).more, limit > 0 && !store.ListJobs(rest)->empty());
          }
        }
      }
    }
  }

  JobId Submit(TenantId tenant, const JobSpec& spec, TimeMicros now) {
    Result<JobRecord> job = cache_->SubmitJob(tenant, spec, now);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : JobId();
  }

  TenantId other_;
  std::unique_ptr<FaultyStateStore> faulty_;
  std::unique_ptr<LostAckStore> lost_ack_;
  std::unique_ptr<CachingStateStore> cache_;
};

TYPED_TEST_SUITE(CachingStateStoreTest, Backends, BackendNames);

TYPED_TEST(CachingStateStoreTest, AgreesWithTheStoreAfterEveryKindOfChange) {
  CachingStateStore& c = *this->cache_;
  this->ExpectAgrees("empty");
  ASSERT_TRUE(c.UpsertNode(MakeNode("n1", 8), 1).ok());
  const JobId gang = this->Submit(this->tenant_, MakeSpec("gang", 2, 1), 10);
  const JobId solo = this->Submit(this->tenant_, MakeSpec("solo", 1, 1), 11);
  JobSpec bad = MakeSpec("bad");
  bad.replicas = 0;
  std::vector<std::pair<TenantId, JobSpec>> batch = {{this->other_, MakeSpec("s1")},
                                                     {this->other_, bad},
                                                     {TenantId(4242), MakeSpec("nobody")},
                                                     {this->other_, MakeSpec("s2")},
                                                     {this->tenant_, MakeSpec("v3")}};
  std::vector<Result<JobRecord>> stored = c.SubmitJobs(batch, 12);
  ASSERT_EQ(stored.size(), 5u);
  EXPECT_TRUE(stored[0].ok() && !stored[1].ok() && !stored[2].ok() && stored[3].ok() && stored[4].ok());
  const JobId s1 = stored[0]->id, s2 = stored[3]->id, v3 = stored[4]->id;
  this->ExpectAgrees("submitted");

  // A gang placed with its replicas out of order; then through the lifecycle and back to the queue.
  std::vector<AllocationRecord> placement = this->PlaceOn(gang, "n1", 2, 1);
  std::swap(placement[0], placement[1]);
  ASSERT_TRUE(c.CommitPlacement(gang, placement, "placed on n1", 20).ok());
  this->ExpectAgrees("placed");
  ASSERT_TRUE(c.TransitionJob(gang, JobState::kRunning, "started", 21).ok());
  this->ExpectAgrees("running");
  ASSERT_TRUE(c.UpdateTask(gang, 1, JobState::kRunning, std::nullopt, 21).ok());
  this->ExpectAgrees("a task reported");
  ASSERT_TRUE(c.TransitionJob(gang, JobState::kSuspending, "for job 9", 22).ok());
  ASSERT_TRUE(c.UpdateTask(gang, 0, JobState::kSuspended, std::nullopt, 22).ok());
  this->ExpectAgrees("suspending");
  ASSERT_TRUE(c.TransitionJob(gang, JobState::kSuspended, "checkpointed", 23).ok());
  ASSERT_TRUE(c.TransitionJob(gang, JobState::kQueued, "resumed", 24).ok());
  this->ExpectAgrees("requeued");
  EXPECT_EQ(c.GetJob(gang)->restart_count, 1);
  ASSERT_TRUE(c.CommitPlacement(solo, this->PlaceOn(solo, "n1", 1, 1), "placed", 25).ok());
  ASSERT_TRUE(c.TransitionJob(solo, JobState::kRunning, "started", 26).ok());
  this->ExpectAgrees("solo running");
  ASSERT_TRUE(c.UpdateTask(solo, 0, JobState::kSucceeded, 0, 27).ok());
  this->ExpectAgrees("solo's task ended");
  ASSERT_TRUE(c.TransitionJob(solo, JobState::kSucceeded, "exit 0", 27).ok());
  ASSERT_TRUE(c.TransitionJob(s1, JobState::kCancelled, "cancelled by speech", 28).ok());
  this->ExpectAgrees("finished");

  // Priority, reasons (one longer than the store keeps, cut inside a UTF-8 sequence), pending reasons of a
  // mix of queued, finished and unknown jobs.
  ASSERT_TRUE(c.SetJobPriority(s2, 90, "by admin", 29).ok());
  std::string long_reason(4095, 'x');
  long_reason += "\xc3\xa9 and more";
  ASSERT_TRUE(c.SetPendingReason(v3, long_reason).ok());
  this->ExpectAgrees("one reason");
  ASSERT_TRUE(c.SetPendingReasons({{gang, "no node fits"}, {s1, "too late"}, {JobId(999999), "?"}, {v3, "x"}}).ok());
  this->ExpectAgrees("reasons");

  // Refused by the store: the cache keeps what it had.
  this->faulty_->Fail("TransitionJob", UnavailableError("disk full"));
  this->faulty_->Fail("CommitPlacement", UnavailableError("disk full"));
  this->faulty_->Fail("SetPendingReasons", UnavailableError("disk full"));
  EXPECT_FALSE(c.TransitionJob(v3, JobState::kCancelled, "no", 30).ok());
  EXPECT_FALSE(c.CommitPlacement(gang, this->PlaceOn(gang, "n1", 2, 1), "no", 30).ok());
  EXPECT_FALSE(c.SetPendingReasons({{gang, "changed"}}).ok());
  this->faulty_->Heal();
  EXPECT_EQ(c.TransitionJob(solo, JobState::kRunning, "illegal", 31).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.SetJobPriority(solo, 5, "finished", 31).status().code(), StatusCode::kFailedPrecondition);
  this->ExpectAgrees("refused");

  // Committed, but reported as failed: the cache reads the job back.
  this->lost_ack_->lose = true;
  EXPECT_FALSE(c.CommitPlacement(gang, this->PlaceOn(gang, "n1", 2, 1), "placed again", 32).ok());
  EXPECT_FALSE(c.TransitionJob(v3, JobState::kCancelled, "cancelled", 33).ok());
  this->lost_ack_->lose = false;
  EXPECT_EQ(c.GetJob(gang)->state, JobState::kScheduled);
  this->ExpectAgrees("placed again");
  // A task update the store applied but reported as failed: the cache drops the tasks all the same.
  this->lost_ack_->lose = true;
  EXPECT_FALSE(c.UpdateTask(gang, 0, JobState::kRunning, std::nullopt, 34).ok());
  this->lost_ack_->lose = false;
  this->ExpectAgrees("lost acknowledgements");

  this->Restart();
  this->ExpectAgrees("after a restart");
}

// A task list is read without waiting for the writer: one read while a task changes is returned as read but not
// kept, so the next read sees the change.
TYPED_TEST(CachingStateStoreTest, ATaskListReadWhileATaskChangesIsNotKept) {
  CachingStateStore& c = *this->cache_;
  ASSERT_TRUE(c.UpsertNode(MakeNode("n1", 8), 1).ok());
  const JobId job = this->Submit(this->tenant_, MakeSpec("solo", 1, 1), 10);
  ASSERT_TRUE(c.CommitPlacement(job, this->PlaceOn(job, "n1", 1, 1), "placed on n1", 20).ok());
  ASSERT_TRUE(c.TransitionJob(job, JobState::kRunning, "started", 21).ok());
  this->lost_ack_->after_list_tasks = [&] { ASSERT_TRUE(c.UpdateTask(job, 0, JobState::kSucceeded, 0, 30).ok()); };
  Result<std::vector<TaskRecord>> raced = c.ListTasks(job);
  ASSERT_TRUE(raced.ok());
  EXPECT_NE(raced->at(0).state, JobState::kSucceeded);  // read before the change
  for (int read = 0; read < 2; ++read) {
    Result<std::vector<TaskRecord>> tasks = c.ListTasks(job);
    ASSERT_TRUE(tasks.ok());
    EXPECT_EQ(tasks->at(0).state, JobState::kSucceeded);
    EXPECT_EQ(tasks->at(0).exit_code, std::optional<int>(0));
    EXPECT_EQ(tasks->at(0).updated_us, 30);
  }
  // Kept, the entry follows the next change in place.
  ASSERT_TRUE(c.UpdateTask(job, 0, JobState::kFailed, 3, 31).ok());
  EXPECT_EQ(c.ListTasks(job)->at(0).exit_code, std::optional<int>(3));
  this->ExpectAgrees("after the race");
}

TYPED_TEST(CachingStateStoreTest, PagesOverConcurrentSubmitsVisitEachJobOnce) {
  CachingStateStore& c = *this->cache_;
  for (int i = 0; i < 40; ++i) this->Submit(i % 3 ? this->tenant_ : this->other_, MakeSpec("before"), 10);
  std::atomic<bool> done{false};
  std::thread submitter([&] {
    for (int i = 0; i < 30; ++i) {
      std::vector<std::pair<TenantId, JobSpec>> batch;
      for (int k = 0; k < 5; ++k) batch.emplace_back(k % 2 ? this->tenant_ : this->other_, MakeSpec("during"));
      for (const Result<JobRecord>& job : c.SubmitJobs(batch, 20)) EXPECT_TRUE(job.ok());
    }
    done = true;
  });
  for (std::optional<TenantId> tenant : {std::optional<TenantId>(), std::optional<TenantId>(this->tenant_)}) {
    std::vector<int64_t> visited;
    JobFilter f;
    f.tenant = tenant;
    f.limit = 7;
    for (;;) {
      const bool finished = done;
      CachingStateStore::JobPage page = c.ListJobRefs(f);
      for (const auto& job : page.jobs) visited.push_back(job->id.value());
      if (!page.jobs.empty()) f.after = page.jobs.back()->id;
      if (!page.more && finished) break;
    }
    SCOPED_TRACE(tenant ? "one tenant" : "every tenant");
    for (size_t i = 1; i < visited.size(); ++i) ASSERT_LT(visited[i - 1], visited[i]);  // no job twice
    JobFilter every;
    every.tenant = tenant;
    std::vector<int64_t> want;
    Result<std::vector<JobRecord>> stored = this->store_->ListJobs(every);
    ASSERT_TRUE(stored.ok());
    for (const JobRecord& j : *stored) want.push_back(j.id.value());
    EXPECT_EQ(visited, want);  // none missed
    if (!tenant) {
      EXPECT_EQ(visited.size(), 40u + 150u);
    }
  }
  submitter.join();
}

}  // namespace
}  // namespace xpool::store_test
