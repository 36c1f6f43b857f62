// The StateStore typed suite (fixture: state_store_test_fixture.h): jobs — submit, lifecycle and transitions,
// priorities, pending reasons, listing, concurrent and grouped submissions, a random lifecycle against the rules.
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "store/state_store_test_fixture.h"

namespace xpool::store_test {
namespace {

TYPED_TEST(StateStoreTest, SubmitStoresJobTasksAndEvent) {
  StateStore& s = *this->store_;
  JobSpec spec = MakeSpec("train", 3, 2);
  spec.priority = kPriorityHigh;
  spec.command = {"echo hi && sleep 1"};
  spec.command_is_shell = true;
  Result<JobRecord> job = s.SubmitJob(this->tenant_, spec, 4242);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_TRUE(job->id.valid());

  Result<JobRecord> got = s.GetJob(job->id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->spec, spec);
  EXPECT_EQ(got->tenant, this->tenant_);
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_EQ(got->priority, kPriorityHigh);
  EXPECT_EQ(got->submitted_us, 4242);
  EXPECT_EQ(got->restart_count, 0);

  Result<std::vector<TaskRecord>> tasks = s.ListTasks(job->id);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ((*tasks)[r].replica, r);
    EXPECT_EQ((*tasks)[r].state, JobState::kQueued);
    EXPECT_FALSE((*tasks)[r].exit_code.has_value());
  }
  Result<std::vector<EventRecord>> events = s.JobEvents(job->id);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "submitted");
  EXPECT_EQ((*events)[0].to, JobState::kQueued);
  EXPECT_EQ((*events)[0].time_us, 4242);

  EXPECT_EQ(s.GetJob(JobId(12345)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ListTasks(JobId(12345)).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StateStoreTest, RejectedSubmissionsStoreNothing) {
  StateStore& s = *this->store_;
  JobSpec bad = MakeSpec("bad");
  bad.resources.gpucores = 500;
  bad.resources.gpu = 1;
  EXPECT_EQ(s.SubmitJob(this->tenant_, bad, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.SubmitJob(TenantId(999), MakeSpec("x"), 1).status().code(), StatusCode::kNotFound);
  Result<std::vector<JobRecord>> jobs = s.ListJobs({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
  EXPECT_TRUE(s.EventsSince(0)->empty());
}

TYPED_TEST(StateStoreTest, LifecycleRecordsEveryTransitionAndReleasesAllocations) {
  StateStore& s = *this->store_;
  ASSERT_TRUE(s.UpsertNode(MakeNode("n1", 8), 1).ok());
  const JobId id = this->Submit(MakeSpec("life", 2, 2), /*now=*/5);
  const auto placement = this->PlaceOn(id, "n1", 2, 2);
  ASSERT_TRUE(s.SetPendingReason(id, "no node has 2 free GPUs").ok());
  EXPECT_EQ(s.GetJob(id)->pending_reason, "no node has 2 free GPUs");

  ASSERT_TRUE(s.CommitPlacement(id, placement, "placed on n1", 10).ok());
  Result<JobRecord> job = s.GetJob(id);
  EXPECT_EQ(job->state, JobState::kScheduled);
  EXPECT_EQ(job->pending_reason, "");
  EXPECT_EQ(*s.JobAllocations(id), placement);
  EXPECT_EQ(*s.ListAllocations(), placement);
  EXPECT_EQ(*s.JobAllocationsBetween(id, id), placement);
  EXPECT_TRUE(s.JobAllocationsBetween(JobId(id.value() + 1), JobId(id.value() + 9))->empty());
  EXPECT_EQ((*s.ListTasks(id))[1].node, "n1");

  ASSERT_TRUE(s.TransitionJob(id, JobState::kRunning, "agent started it", 20).ok());
  ASSERT_TRUE(s.UpdateTask(id, 0, JobState::kRunning, std::nullopt, 21).ok());
  ASSERT_TRUE(s.TransitionJob(id, JobState::kSuspending, "preempted by job 9", 30).ok());
  EXPECT_EQ(s.JobAllocations(id)->size(), 2u);  // still held while it checkpoints
  ASSERT_TRUE(s.TransitionJob(id, JobState::kSuspended, "checkpointed", 40).ok());
  EXPECT_TRUE(s.JobAllocations(id)->empty());
  EXPECT_TRUE(s.ListAllocations()->empty());
  EXPECT_EQ((*s.ListTasks(id))[0].node, "");
  ASSERT_TRUE(s.TransitionJob(id, JobState::kQueued, "resumed", 50).ok());
  job = s.GetJob(id);
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->restart_count, 1);
  EXPECT_EQ(job->submitted_us, 5);  // keeps its queue position
  EXPECT_EQ(job->state_reason, "resumed");

  ASSERT_TRUE(s.CommitPlacement(id, placement, "placed again", 60).ok());
  // A scheduled job taken back (its node lost before it reported) gets a new epoch too: its agent may have
  // started it, and that run must not pass for the next placement's.
  ASSERT_TRUE(s.TransitionJob(id, JobState::kQueued, "node lost", 61).ok());
  EXPECT_EQ(s.GetJob(id)->restart_count, 2);
  ASSERT_TRUE(s.CommitPlacement(id, placement, "placed a third time", 62).ok());
  ASSERT_TRUE(s.TransitionJob(id, JobState::kRunning, "", 70).ok());
  ASSERT_TRUE(s.UpdateTask(id, 1, JobState::kSucceeded, 0, 79).ok());
  ASSERT_TRUE(s.TransitionJob(id, JobState::kSucceeded, "exit 0", 80).ok());
  EXPECT_TRUE(s.ListAllocations()->empty());
  Result<std::vector<TaskRecord>> tasks = s.ListTasks(id);
  EXPECT_EQ((*tasks)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*tasks)[1].exit_code, 0);

  // Terminal: nothing leaves it, and a refused transition leaves no event behind.
  const size_t events_before = s.JobEvents(id)->size();
  Status refused = s.TransitionJob(id, JobState::kRunning, "again", 90);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("final"), std::string::npos) << refused.message();
  EXPECT_EQ(s.JobEvents(id)->size(), events_before);

  std::vector<std::pair<JobState, JobState>> expected = {
      {JobState::kQueued, JobState::kScheduled},   {JobState::kScheduled, JobState::kRunning},
      {JobState::kRunning, JobState::kSuspending}, {JobState::kSuspending, JobState::kSuspended},
      {JobState::kSuspended, JobState::kQueued},   {JobState::kQueued, JobState::kScheduled},
      {JobState::kScheduled, JobState::kQueued},   {JobState::kQueued, JobState::kScheduled},
      {JobState::kScheduled, JobState::kRunning},  {JobState::kRunning, JobState::kSucceeded}};
  Result<std::vector<EventRecord>> events = s.JobEvents(id);
  ASSERT_EQ(events->size(), expected.size() + 1);
  EXPECT_EQ((*events)[0].kind, "submitted");
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    const EventRecord& e = (*events)[i + 1];
    EXPECT_EQ(e.from, expected[i].first);
    EXPECT_EQ(e.to, expected[i].second);
    EXPECT_GT(e.id, (*events)[i].id);
    EXPECT_GE(e.time_us, (*events)[i].time_us);
  }
  EXPECT_EQ((*events)[1].kind, "placed");
  EXPECT_EQ((*events)[3].reason, "preempted by job 9");
  Result<std::vector<EventRecord>> last2 = s.JobEvents(id, 2);
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ((*last2)[1].to, JobState::kSucceeded);
}

TYPED_TEST(StateStoreTest, TransitionChecksAndCompareAndSet) {
  StateStore& s = *this->store_;
  const JobId id = this->Submit(MakeSpec("cas"));
  EXPECT_EQ(s.TransitionJob(id, JobState::kRunning, "", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.TransitionJob(id, JobState::kQueued, "", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.TransitionJob(id, JobState::kCancelled, "", 1, JobState::kRunning).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.GetJob(id)->state, JobState::kQueued);
  EXPECT_TRUE(s.TransitionJob(id, JobState::kCancelled, "user", 1, JobState::kQueued).ok());
  EXPECT_EQ(s.TransitionJob(JobId(777), JobState::kCancelled, "", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.SetPendingReason(JobId(777), "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(s.UpdateTask(id, 5, JobState::kRunning, std::nullopt, 1).code(), StatusCode::kNotFound);
}

TYPED_TEST(StateStoreTest, PriorityChangesAreRecordedAndChecked) {
  StateStore& s = *this->store_;
  JobSpec spec = MakeSpec("prio");
  spec.priority = kPriorityLow;
  const JobId id = this->Submit(spec);
  Result<JobRecord> changed = s.SetJobPriority(id, 95, "priority 10 -> 95 by admin", 3000);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->priority, 95);
  EXPECT_EQ(changed->spec.priority, kPriorityLow);  // the spec keeps what was submitted
  EXPECT_EQ(s.GetJob(id)->priority, 95);
  const EventRecord last = s.JobEvents(id, 1)->back();
  EXPECT_EQ(last.kind, "priority");
  EXPECT_EQ(last.reason, "priority 10 -> 95 by admin");
  EXPECT_EQ(last.time_us, 3000);

  for (int bad : {-1, 101, 1000}) {
    Status refused = s.SetJobPriority(id, bad, "x", 3001).status();
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.message().find("priority"), std::string::npos) << refused.message();
  }
  EXPECT_EQ(s.SetJobPriority(JobId(777), 50, "x", 3001).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.TransitionJob(id, JobState::kCancelled, "user", 3002).ok());
  const size_t events = s.JobEvents(id)->size();
  EXPECT_EQ(s.SetJobPriority(id, 50, "x", 3003).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.JobEvents(id)->size(), events);  // a refused change leaves nothing behind
  EXPECT_EQ(s.GetJob(id)->priority, 95);
  this->Reopen();
  EXPECT_EQ(this->store_->GetJob(id)->priority, 95);
}

TYPED_TEST(StateStoreTest, LastStartAndSuspensionsSurviveReopen) {
  StateStore& s = *this->store_;
  ASSERT_TRUE(s.UpsertNode(MakeNode("n1", 8), 1).ok());
  const JobId a = this->Submit(MakeSpec("a", 1, 1));
  const JobId b = this->Submit(MakeSpec("b", 1, 1));
  EXPECT_EQ(s.GetJob(a)->last_start_us, 0);
  // a: runs at 100, suspended at 200, runs again at 300, suspended at 400; b: runs at 150, never suspended.
  ASSERT_TRUE(s.CommitPlacement(a, this->PlaceOn(a, "n1", 1, 1), "placed", 90).ok());
  EXPECT_EQ(s.GetJob(a)->last_start_us, 0);  // scheduled is not started
  ASSERT_TRUE(s.TransitionJob(a, JobState::kRunning, "", 100).ok());
  EXPECT_EQ(s.GetJob(a)->last_start_us, 100);
  ASSERT_TRUE(s.TransitionJob(a, JobState::kSuspending, "suspended for job 9", 200).ok());
  EXPECT_EQ(s.GetJob(a)->last_start_us, 100);
  ASSERT_TRUE(s.TransitionJob(a, JobState::kSuspended, "", 210).ok());
  ASSERT_TRUE(s.TransitionJob(a, JobState::kQueued, "", 220).ok());
  ASSERT_TRUE(s.CommitPlacement(a, this->PlaceOn(a, "n1", 1, 1), "placed", 290).ok());
  ASSERT_TRUE(s.TransitionJob(a, JobState::kRunning, "", 300).ok());
  ASSERT_TRUE(s.TransitionJob(a, JobState::kSuspending, "suspend requested by the user", 400).ok());
  std::vector<AllocationRecord> on_b = this->PlaceOn(b, "n1", 1, 1);
  on_b[0].devices[0].device_uuid = "n1-GPU-5";
  ASSERT_TRUE(s.CommitPlacement(b, on_b, "placed", 140).ok());
  ASSERT_TRUE(s.TransitionJob(b, JobState::kRunning, "", 150).ok());

  this->Reopen();
  StateStore& r = *this->store_;
  EXPECT_EQ(r.GetJob(a)->last_start_us, 300);
  EXPECT_EQ(r.GetJob(b)->last_start_us, 150);
  using Suspensions = std::vector<std::pair<JobId, TimeMicros>>;
  EXPECT_EQ(*r.SuspensionsSince(0), (Suspensions{{a, 200}, {a, 400}}));
  EXPECT_EQ(*r.SuspensionsSince(201), (Suspensions{{a, 400}}));
  EXPECT_TRUE(r.SuspensionsSince(401)->empty());
  // A refused transition records no suspension.
  EXPECT_EQ(r.TransitionJob(b, JobState::kSuspending, "", 500, JobState::kQueued).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r.SuspensionsSince(401)->empty());
}

TYPED_TEST(StateStoreTest, PendingReasonsInOneCall) {
  StateStore& s = *this->store_;
  ASSERT_TRUE(s.UpsertNode(MakeNode("n1", 8), 1).ok());
  const JobId a = this->Submit(MakeSpec("a", 1, 1));
  const JobId b = this->Submit(MakeSpec("b", 1, 1));
  const JobId placed = this->Submit(MakeSpec("placed", 1, 1));
  ASSERT_TRUE(s.CommitPlacement(placed, this->PlaceOn(placed, "n1", 1, 1), "placed", 3).ok());
  const std::string long_reason(10000, 'r');
  ASSERT_TRUE(s.SetPendingReasons({{a, "no node has 1 free GPU"},
                                   {b, long_reason},
                                   {placed, "stale: the job was placed meanwhile"},
                                   {JobId(777), "unknown ids are skipped"}})
                  .ok());
  EXPECT_EQ(s.GetJob(a)->pending_reason, "no node has 1 free GPU");
  EXPECT_EQ(s.GetJob(b)->pending_reason.size(), 4096u);  // clipped like every reason
  EXPECT_EQ(s.GetJob(placed)->pending_reason, "");
  EXPECT_EQ(s.GetJob(placed)->state, JobState::kScheduled);
  EXPECT_TRUE(s.SetPendingReasons({}).ok());
  // Unchanged and changed reasons in one call; no event is recorded for reasons.
  const size_t events = s.EventsSince(0)->size();
  ASSERT_TRUE(s.SetPendingReasons({{a, "no node has 1 free GPU"}, {b, "quota: 1 device"}}).ok());
  EXPECT_EQ(s.GetJob(b)->pending_reason, "quota: 1 device");
  EXPECT_EQ(s.EventsSince(0)->size(), events);
  // A transition clears the reason.
  ASSERT_TRUE(s.TransitionJob(a, JobState::kCancelled, "user", 4).ok());
  EXPECT_EQ(s.GetJob(a)->pending_reason, "");
  // Survives a reopen (it is what `describe job` shows after a restart).
  this->Reopen();
  EXPECT_EQ(this->store_->GetJob(b)->pending_reason, "quota: 1 device");
}

TYPED_TEST(StateStoreTest, ListJobsFilters) {
  StateStore& s = *this->store_;
  Result<TenantRecord> other = s.CreateTenant("nlp", false, {}, 1);
  ASSERT_TRUE(other.ok());
  std::vector<JobId> mine;
  for (int i = 0; i < 5; ++i) mine.push_back(this->Submit(MakeSpec("m" + std::to_string(i))));
  ASSERT_TRUE(s.SubmitJob(other->id, MakeSpec("theirs"), 1).ok());
  ASSERT_TRUE(s.TransitionJob(mine[1], JobState::kCancelled, "", 3).ok());
  ASSERT_TRUE(s.TransitionJob(mine[3], JobState::kSuspended, "held", 3).ok());

  EXPECT_EQ(s.ListJobs({})->size(), 6u);
  JobFilter f;
  f.tenant = this->tenant_;
  EXPECT_EQ(s.ListJobs(f)->size(), 5u);
  f.states = {JobState::kQueued};
  Result<std::vector<JobRecord>> queued = s.ListJobs(f);
  ASSERT_EQ(queued->size(), 3u);
  EXPECT_EQ((*queued)[0].id, mine[0]);
  EXPECT_EQ((*queued)[2].id, mine[4]);
  f.states = {JobState::kCancelled, JobState::kSuspended};
  EXPECT_EQ(s.ListJobs(f)->size(), 2u);
  JobFilter page;
  page.limit = 2;
  Result<std::vector<JobRecord>> p1 = s.ListJobs(page);
  ASSERT_EQ(p1->size(), 2u);
  page.after = p1->back().id;
  Result<std::vector<JobRecord>> p2 = s.ListJobs(page);
  ASSERT_EQ(p2->size(), 2u);
  EXPECT_GT(p2->front().id, p1->back().id);
}

TYPED_TEST(StateStoreTest, ConcurrentSubmissionsAllLand) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  std::vector<std::vector<JobId>> ids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Result<JobRecord> job =
            this->store_->SubmitJob(this->tenant_, MakeSpec("c" + std::to_string(t) + "-" + std::to_string(i)), i);
        if (job.ok()) {
          ids[t].push_back(job->id);
        } else {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::set<JobId> unique;
  for (const auto& v : ids) unique.insert(v.begin(), v.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(this->store_->ListJobs({})->size(), unique.size());
}

// Group commit: a refused submission in the same batch as good ones does not take them down.
TYPED_TEST(StateStoreTest, GroupedSubmissionsFailIndividually) {
  constexpr int kThreads = 8;
  std::atomic<int> ok{0}, not_found{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const TenantId tenant = (t % 2 == 0) ? this->tenant_ : TenantId(4040);
        Result<JobRecord> job = this->store_->SubmitJob(tenant, MakeSpec("g" + std::to_string(t)), i);
        if (job.ok()) {
          ++ok;
        } else if (job.status().code() == StatusCode::kNotFound) {
          ++not_found;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 40);
  EXPECT_EQ(not_found.load(), 40);
  EXPECT_EQ(other.load(), 0);
  Result<std::vector<JobRecord>> jobs = this->store_->ListJobs({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 40u);
  for (const JobRecord& j : *jobs) {
    EXPECT_EQ(j.tenant, this->tenant_);
    EXPECT_EQ(this->store_->ListTasks(j.id)->size(), 1u);
    EXPECT_EQ(this->store_->JobEvents(j.id)->size(), 1u);
  }
}

// Group commit of single-job writes: refused writes batched with good ones change nothing and take none down.
TYPED_TEST(StateStoreTest, GroupedWritesFailIndividually) {
  constexpr int kThreads = 8;
  std::vector<JobId> jobs;
  for (int t = 0; t < kThreads; ++t) jobs.push_back(this->Submit(MakeSpec("w" + std::to_string(t))));
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1; i <= 10; ++i) {
        Status s = t % 2 == 0 ? this->store_->UpdateTask(jobs[t], 0, JobState::kRunning, std::nullopt, 3000 + i)
                   : i % 2 == 0
                       ? this->store_->UpdateTask(jobs[t], 7, JobState::kRunning, std::nullopt, 3000 + i)
                       : this->store_->TransitionJob(jobs[t], JobState::kCancelled, "no", 3000 + i, JobState::kRunning);
        if (s.ok()) {
          ++ok;
        } else if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kFailedPrecondition) {
          ++refused;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 40);
  EXPECT_EQ(refused.load(), 40);
  EXPECT_EQ(other.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("job " + std::to_string(t));
    EXPECT_EQ(this->store_->GetJob(jobs[t])->state, JobState::kQueued);
    EXPECT_EQ(this->store_->JobEvents(jobs[t])->size(), 1u);  // the submission's only
    const TaskRecord task = this->store_->ListTasks(jobs[t])->at(0);
    EXPECT_EQ(task.state, t % 2 == 0 ? JobState::kRunning : JobState::kQueued);
    if (t % 2 == 0) {
      EXPECT_EQ(task.updated_us, 3010);
    }
  }
}

TYPED_TEST(StateStoreTest, SubmitJobsInOneCall) {
  JobSpec bad = MakeSpec("bad");
  bad.replicas = 0;
  std::vector<std::pair<TenantId, JobSpec>> jobs = {{this->tenant_, MakeSpec("a", 2)},
                                                    {TenantId(999), MakeSpec("b")},
                                                    {this->tenant_, bad},
                                                    {this->tenant_, MakeSpec("c")}};
  std::vector<Result<JobRecord>> results = this->store_->SubmitJobs(jobs, 77);
  ASSERT_EQ(results.size(), 4u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();
  EXPECT_EQ(results[1].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(results[2].status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(results[3].ok());
  EXPECT_LT(results[0]->id, results[3]->id);
  EXPECT_EQ(this->store_->GetJob(results[3]->id)->spec.name, "c");
  EXPECT_EQ(this->store_->ListTasks(results[0]->id)->size(), 2u);
  EXPECT_EQ(this->store_->ListJobs({})->size(), 2u);
  EXPECT_TRUE(this->store_->SubmitJobs({}, 1).empty());
}

// Random walks through the lifecycle (fixed seed): the store agrees with a model that applies CheckTransition,
// and allocations exist exactly while the job holds them.
TYPED_TEST(StateStoreTest, RandomLifecycleMatchesTheRules) {
  StateStore& s = *this->store_;
  std::mt19937 rng(20261130);
  std::map<JobId, JobState> model;
  for (int i = 0; i < 6; ++i) model[this->Submit(MakeSpec("r" + std::to_string(i), 1, 1))] = JobState::kQueued;
  for (int step = 0; step < 150; ++step) {
    auto it = model.begin();
    std::advance(it, static_cast<long>(rng() % model.size()));
    const JobId id = it->first;
    const JobState to = kAllJobStates[rng() % std::size(kAllJobStates)];
    SCOPED_TRACE("step " + std::to_string(step) + ": job " + id.ToString() + " " +
                 std::string(JobStateName(it->second)) + " -> " + std::string(JobStateName(to)));
    Status st = (it->second == JobState::kQueued && to == JobState::kScheduled)
                    ? s.CommitPlacement(id, this->PlaceOn(id, "n1", 1, 1), "", step)
                    : s.TransitionJob(id, to, "step", step);
    EXPECT_EQ(st.ok(), IsLegalTransition(it->second, to)) << st.ToString();
    if (st.ok()) it->second = to;
    EXPECT_EQ(s.GetJob(id)->state, it->second);
    EXPECT_EQ(s.JobAllocations(id)->size(), HoldsAllocation(it->second) ? 1u : 0u);
  }
}

}  // namespace
}  // namespace xpool::store_test
