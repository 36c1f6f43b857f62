// The StateStore typed suite (fixture: state_store_test_fixture.h), store-wide cases: schema, the event feed,
// durability (reopen, an unwritable store) and, PostgreSQL only, reconnecting. The other areas are in
// state_store_{jobs,tenants,nodes}_test.cc.
#include "store/state_store_test_fixture.h"

namespace xpool::store_test {
namespace {

// The binary's one SharedResources (temp dir, PostgreSQL server), for every file of the suite.
const bool kInstalled = (SharedResources::Install(), true);

TYPED_TEST(StateStoreTest, SchemaIsMigratedOnceAndReopens) {
  Result<int> version = this->store_->SchemaVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, 5);
  EXPECT_TRUE(this->store_->Ping().ok());
  this->Reopen();
  EXPECT_EQ(*this->store_->SchemaVersion(), 5);
  EXPECT_TRUE(this->store_->FindTenant("vision").ok());
}

TYPED_TEST(StateStoreTest, EventFeed) {
  StateStore& s = *this->store_;
  EventRecord e;
  e.time_us = 5;
  e.kind = "node";
  e.reason = "n1 joined";
  Result<EventRecord> stored = s.AppendEvent(e);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_GT(stored->id, 0);
  const JobId id = this->Submit(MakeSpec("feed"));
  Result<std::vector<EventRecord>> all = s.EventsSince(0);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].reason, "n1 joined");
  EXPECT_FALSE((*all)[0].job.valid());
  EXPECT_EQ((*all)[1].job, id);
  EXPECT_EQ(s.EventsSince(stored->id)->size(), 1u);
  EXPECT_EQ(s.EventsSince(0, 1)->size(), 1u);
  std::string long_reason;
  for (int i = 0; i < 3000; ++i) long_reason += "\xe2\x82\xac";  // "€": a long reason is cut between characters
  e.reason = long_reason;
  Result<EventRecord> clipped = s.AppendEvent(e);
  ASSERT_TRUE(clipped.ok());
  Result<std::vector<EventRecord>> tail = s.EventsSince(clipped->id - 1);
  ASSERT_EQ(tail->size(), 1u);
  EXPECT_EQ(tail->front().reason.size(), 4095u);  // 1365 whole characters, not 4096 bytes
  EXPECT_EQ(tail->front().reason, long_reason.substr(0, 4095));
  e.kind = "";
  EXPECT_EQ(s.AppendEvent(e).status().code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StateStoreTest, CommittedStateSurvivesReopen) {
  StateStore& s = *this->store_;
  ASSERT_TRUE(s.UpsertNode(MakeNode("n1", 8), 1).ok());
  std::vector<JobId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(this->Submit(MakeSpec("d" + std::to_string(i), 1, 1), 100 + i));
  ASSERT_TRUE(s.CommitPlacement(ids[3], this->PlaceOn(ids[3], "n1", 1, 1), "", 200).ok());
  ASSERT_TRUE(s.TransitionJob(ids[4], JobState::kCancelled, "user", 201).ok());
  this->Reopen();
  StateStore& again = *this->store_;
  Result<std::vector<JobRecord>> jobs = again.ListJobs({});
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ((*jobs)[i].submitted_us, 100 + i);
  EXPECT_EQ((*jobs)[3].state, JobState::kScheduled);
  EXPECT_EQ((*jobs)[4].state, JobState::kCancelled);
  EXPECT_EQ(again.ListAllocations()->size(), 1u);
  EXPECT_EQ(again.ListNodes()->size(), 1u);
}

TYPED_TEST(StateStoreTest, UnwritableStoreIsUnavailableAndStillServesReads) {
  StateStore& s = *this->store_;
  const JobId id = this->Submit(MakeSpec("before"));
  ASSERT_TRUE(TypeParam::MakeUnwritable(s).ok());
  Status failure;
  for (int i = 0; i < 2000 && failure.ok(); ++i) {
    JobSpec spec = MakeSpec("fill" + std::to_string(i));
    spec.env["PAD"] = std::string(2000, 'x');
    failure = s.SubmitJob(this->tenant_, spec, 1).status();
  }
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), StatusCode::kUnavailable) << failure.ToString();
  EXPECT_TRUE(IsStoreUnavailable(failure));
  JobSpec another = MakeSpec("after");
  another.env["PAD"] = std::string(4000, 'y');
  EXPECT_EQ(s.SubmitJob(this->tenant_, another, 2).status().code(), StatusCode::kUnavailable);
  // A reason that needs a new page (SQLite) / any write (PostgreSQL) is refused the same way.
  EXPECT_EQ(s.SetPendingReasons({{id, std::string(4096, 'z')}}).code(), StatusCode::kUnavailable);
  // Reads keep working.
  Result<JobRecord> job = s.GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_TRUE(s.ListJobs({}).ok());
  EXPECT_TRUE(s.ListNodes().ok());
  EXPECT_TRUE(s.ListAllocations().ok());
  EXPECT_TRUE(s.JobEvents(id).ok());
}

// PostgreSQL only: a connection killed by the server is reported as Unavailable (never a crash) and the store
// reconnects on the next call.
TEST(PostgresStoreTest, ReconnectsAfterTheServerDropsTheConnection) {
  Result<std::string> location = PostgresEnv::NewLocation();
  if (!location.ok() && location.status().code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "skipping: " << location.status().message();
  }
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  Result<std::unique_ptr<StateStore>> store = OpenStateStore(*location);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<TenantRecord> t = (*store)->CreateTenant("t", false, {}, 1);
  ASSERT_TRUE(t.ok());
  Result<std::unique_ptr<StateStore>> killer = OpenStateStore(*location);
  ASSERT_TRUE(killer.ok());
  auto* sql = dynamic_cast<store_internal::SqlStore*>(killer->get());
  ASSERT_TRUE(sql->QueryForTesting("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> "
                                   "pg_backend_pid() AND datname = current_database()")
                  .ok());
  Status first = (*store)->GetTenant(t->id).status();
  EXPECT_TRUE(first.ok() || first.code() == StatusCode::kUnavailable) << first.ToString();
  Result<TenantRecord> again = (*store)->GetTenant(t->id);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*store)->SubmitJob(t->id, MakeSpec("after-reconnect"), 2).ok());
}

}  // namespace
}  // namespace xpool::store_test
