// The one StateStore test suite, run against SQLite and against a real PostgreSQL server (started in a temp
// dir; the PostgreSQL cases skip with a message only when the binaries are not installed).
#include "store/state_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "store/internal/sql_store.h"
#include "store/testing/postgres_server.h"
#include "store/token.h"

namespace xpool {
namespace {

// Holds what the whole binary shares: a temp dir for SQLite files and the PostgreSQL server (started on first
// use). Torn down after the last test.
class SharedResources : public ::testing::Environment {
 public:
  static SharedResources* Get() { return instance_; }
  static void Install() { instance_ = new SharedResources(); ::testing::AddGlobalTestEnvironment(instance_); }

  const std::string& TempDir() {
    if (temp_dir_.empty()) {
      char tmpl[] = "/tmp/xpool-store-test-XXXXXX";
      if (::mkdtemp(tmpl) != nullptr) temp_dir_ = tmpl;
    }
    return temp_dir_;
  }
  Result<testing::PostgresServer*> Postgres() {
    if (!pg_started_) {
      pg_started_ = true;
      Result<std::unique_ptr<testing::PostgresServer>> server = testing::PostgresServer::Start();
      if (server.ok()) {
        pg_ = std::move(server).value();
      } else {
        pg_error_ = server.status();
      }
    }
    if (!pg_) return pg_error_;
    return pg_.get();
  }
  int NextId() { return ++counter_; }

  void TearDown() override {
    pg_.reset();
    if (!temp_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir_, ec);
    }
  }

 private:
  static inline SharedResources* instance_ = nullptr;
  std::string temp_dir_;
  bool pg_started_ = false;
  std::unique_ptr<testing::PostgresServer> pg_;
  Status pg_error_;
  int counter_ = 0;
};

const bool kInstalled = (SharedResources::Install(), true);

struct SqliteEnv {
  static Result<std::string> NewLocation() {
    const std::string& dir = SharedResources::Get()->TempDir();
    if (dir.empty()) return InternalError("cannot create a temp dir");
    return "sqlite:" + dir + "/store-" + std::to_string(SharedResources::Get()->NextId()) + ".db";
  }
  // Caps the file at its current size: the next write that needs a page fails with SQLITE_FULL.
  static Status MakeUnwritable(StateStore& store) {
    auto* sql = dynamic_cast<store_internal::SqlStore*>(&store);
    if (sql == nullptr) return InternalError("not a SqlStore");
    return sql->QueryForTesting("PRAGMA max_page_count = 1").status();
  }
};

struct PostgresEnv {
  static Result<std::string> NewLocation() {
    ASSIGN_OR_RETURN(testing::PostgresServer * server, SharedResources::Get()->Postgres());
    return server->CreateDatabase("xpool_test_" + std::to_string(SharedResources::Get()->NextId()));
  }
  // Every later transaction of this session is read-only (SQLSTATE 25006).
  static Status MakeUnwritable(StateStore& store) {
    auto* sql = dynamic_cast<store_internal::SqlStore*>(&store);
    if (sql == nullptr) return InternalError("not a SqlStore");
    return sql->QueryForTesting("SET default_transaction_read_only = on").status();
  }
};

JobSpec MakeSpec(const std::string& name, int replicas = 1, int gpus = 0) {
  JobSpec spec;
  spec.name = name;
  spec.replicas = replicas;
  spec.resources.cpu_milli = 1000;
  spec.resources.memory_mib = 2048;
  spec.resources.gpu = gpus;
  if (gpus > 0) spec.resources.gpucores = 50;
  spec.command = {"python", "train.py"};
  spec.env = {{"EPOCHS", "3"}};
  return spec;
}

Node MakeNode(const std::string& name, int gpus) {
  Node n;
  n.name = name;
  n.labels = {{"zone", "a"}, {"rack", "r1"}};
  n.cpu_milli = 64000;
  n.memory_mib = 262144;
  n.links = LinkTable(gpus);
  for (int i = 0; i < gpus; ++i) {
    Device d;
    d.model = "A100-SXM4-80GB";
    d.uuid = name + "-GPU-" + std::to_string(i);
    d.index = i;
    d.memory_mib = 81920;
    d.numa_node = i / 4;
    n.devices.push_back(d);
    if (i > 0) n.links.Set(i - 1, i, 100);
  }
  return n;
}

template <typename Env>
class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> location = Env::NewLocation();
    if (!location.ok() && location.status().code() == StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << "skipping: " << location.status().message();
    }
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    location_ = *location;
    Open();
    Result<TenantRecord> t = store_->CreateTenant("vision", false, TenantQuota{}, 1000);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tenant_ = t->id;
  }

  void Open() {
    Result<std::unique_ptr<StateStore>> store = OpenStateStore(location_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void Reopen() {
    store_.reset();
    Open();
  }

  JobId Submit(const JobSpec& spec, TimeMicros now = 2000) {
    Result<JobRecord> job = store_->SubmitJob(tenant_, spec, now);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : JobId();
  }

  std::vector<AllocationRecord> PlaceOn(JobId job, const std::string& node, int replicas, int gpus_each) {
    std::vector<AllocationRecord> out;
    for (int r = 0; r < replicas; ++r) {
      AllocationRecord a;
      a.job = job;
      a.replica = r;
      a.node = node;
      a.cpu_milli = 1000;
      a.memory_mib = 2048;
      for (int g = 0; g < gpus_each; ++g) a.devices.push_back({node + "-GPU-" + std::to_string(r * gpus_each + g), 0, 500});
      out.push_back(a);
    }
    return out;
  }

  std::string location_;
  std::unique_ptr<StateStore> store_;
  TenantId tenant_;
};

using Backends = ::testing::Types<SqliteEnv, PostgresEnv>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteEnv> ? "Sqlite" : "Postgres";
  }
};
TYPED_TEST_SUITE(StateStoreTest, Backends, BackendNames);

TYPED_TEST(StateStoreTest, SchemaIsMigratedOnceAndReopens) {
  Result<int> version = this->store_->SchemaVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, 4);
  EXPECT_TRUE(this->store_->Ping().ok());
  this->Reopen();
  EXPECT_EQ(*this->store_->SchemaVersion(), 4);
  EXPECT_TRUE(this->store_->FindTenant("vision").ok());
}

TYPED_TEST(StateStoreTest, Tenants) {
  StateStore& s = *this->store_;
  EXPECT_EQ(s.CreateTenant("vision", false, {}, 1).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.CreateTenant("Bad Name", false, {}, 1).status().code(), StatusCode::kInvalidArgument);
  TenantQuota quota{8, 8 * 81920, 8000, 64000, kUnlimited};
  Result<TenantRecord> admin = s.CreateTenant("admin", true, quota, 5);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  Result<TenantRecord> got = s.GetTenant(admin->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->name, "admin");
  EXPECT_TRUE(got->admin);
  EXPECT_EQ(got->quota, quota);
  EXPECT_EQ(got->created_us, 5);
  EXPECT_EQ(s.GetTenant(TenantId(999)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.FindTenant("nobody").status().code(), StatusCode::kNotFound);

  Result<std::vector<TenantRecord>> all = s.ListTenants();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "admin");  // by name
  EXPECT_EQ((*all)[1].name, "vision");

  TenantQuota smaller{2, 1024, 1000, 1000, 1024};
  ASSERT_TRUE(s.UpdateTenantQuota(this->tenant_, smaller).ok());
  EXPECT_EQ(s.GetTenant(this->tenant_)->quota, smaller);
  EXPECT_EQ(s.UpdateTenantQuota(TenantId(999), smaller).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.UpdateTenantQuota(this->tenant_, TenantQuota{-5, 0, 0, 0, 0}).code(), StatusCode::kInvalidArgument);

  // Guarantees: none by default; kept apart from the limits; seen through every read path.
  EXPECT_EQ(s.GetTenant(this->tenant_)->guaranteed, TenantQuota{});
  TenantQuota guaranteed{1, 512, 1000, 500, -1};
  ASSERT_TRUE(s.UpdateTenantGuarantee(this->tenant_, guaranteed).ok());
  EXPECT_EQ(s.GetTenant(this->tenant_)->guaranteed, guaranteed);
  EXPECT_EQ(s.GetTenant(this->tenant_)->quota, smaller);
  EXPECT_EQ(s.FindTenant("vision")->guaranteed, guaranteed);
  ASSERT_TRUE(s.AddToken(this->tenant_, "xpt_guarantee_probe", "probe", 1).ok());
  EXPECT_EQ(s.Authenticate("xpt_guarantee_probe")->guaranteed, guaranteed);
  EXPECT_EQ(s.UpdateTenantGuarantee(TenantId(999), guaranteed).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.UpdateTenantGuarantee(this->tenant_, TenantQuota{0, -7, 0, 0, 0}).code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StateStoreTest, PriorityQuotasAreReplacedAndReadEverywhere) {
  StateStore& s = *this->store_;
  EXPECT_TRUE(s.GetTenant(this->tenant_)->priority_quotas.empty());
  const std::vector<TenantPriorityQuota> quotas = {{80, 100, TenantQuota{8, -1, -1, -1, -1}},
                                                   {0, 49, TenantQuota{-1, -1, 2000, 4000, -1}}};
  ASSERT_TRUE(s.SetTenantPriorityQuotas(this->tenant_, quotas).ok());
  const std::vector<TenantPriorityQuota> sorted = {quotas[1], quotas[0]};  // by min_priority
  EXPECT_EQ(s.GetTenant(this->tenant_)->priority_quotas, sorted);
  EXPECT_EQ(s.FindTenant("vision")->priority_quotas, sorted);
  ASSERT_TRUE(s.AddToken(this->tenant_, "xpt_priority_quota_probe", "probe", 1).ok());
  EXPECT_EQ(s.Authenticate("xpt_priority_quota_probe")->priority_quotas, sorted);
  ASSERT_TRUE(s.CreateTenant("other", false, {}, 1).ok());
  Result<std::vector<TenantRecord>> all = s.ListTenants();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_TRUE((*all)[0].priority_quotas.empty());  // "other"
  EXPECT_EQ((*all)[1].priority_quotas, sorted);    // "vision"

  // Bad input leaves what was there.
  for (const TenantPriorityQuota& bad : {TenantPriorityQuota{-1, 10, {}}, TenantPriorityQuota{50, 101, {}},
                                         TenantPriorityQuota{60, 40, {}},
                                         TenantPriorityQuota{0, 100, TenantQuota{-2, -1, -1, -1, -1}}}) {
    EXPECT_EQ(s.SetTenantPriorityQuotas(this->tenant_, {bad}).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(s.SetTenantPriorityQuotas(TenantId(999), quotas).code(), StatusCode::kNotFound);
  this->Reopen();
  EXPECT_EQ(this->store_->GetTenant(this->tenant_)->priority_quotas, sorted);
  ASSERT_TRUE(this->store_->SetTenantPriorityQuotas(this->tenant_, {}).ok());
  EXPECT_TRUE(this->store_->GetTenant(this->tenant_)->priority_quotas.empty());
}

TYPED_TEST(StateStoreTest, TokensAreStoredHashedAndAuthenticate) {
  StateStore& s = *this->store_;
  Result<std::string> token = GenerateToken();
  ASSERT_TRUE(token.ok());
  Result<int64_t> id = s.AddToken(this->tenant_, *token, "ci", 10);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Result<TenantRecord> who = s.Authenticate(*token);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->id, this->tenant_);
  EXPECT_EQ(s.Authenticate(*token + "x").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.Authenticate("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.AddToken(this->tenant_, "short", "x", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AddToken(TenantId(999), *token + "2", "x", 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.AddToken(this->tenant_, *token, "again", 1).status().code(), StatusCode::kAlreadyExists);

  // Only the hash is in the database.
  auto* sql = dynamic_cast<store_internal::SqlStore*>(&s);
  ASSERT_NE(sql, nullptr);
  Result<store_internal::SqlResult> rows = sql->QueryForTesting("SELECT hash, label FROM tokens");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(*rows->rows[0][0], Sha256Hex(*token));
  EXPECT_EQ(rows->rows[0][0]->find(token->substr(4)), std::string::npos);

  Result<std::vector<TokenRecord>> list = s.ListTokens(this->tenant_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].label, "ci");
  ASSERT_TRUE(s.RevokeToken(*id).ok());
  EXPECT_EQ(s.Authenticate(*token).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(s.RevokeToken(*id).code(), StatusCode::kNotFound);
}

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
      {JobState::kQueued, JobState::kScheduled},     {JobState::kScheduled, JobState::kRunning},
      {JobState::kRunning, JobState::kSuspending},   {JobState::kSuspending, JobState::kSuspended},
      {JobState::kSuspended, JobState::kQueued},     {JobState::kQueued, JobState::kScheduled},
      {JobState::kScheduled, JobState::kRunning},    {JobState::kRunning, JobState::kSucceeded}};
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

TYPED_TEST(StateStoreTest, PlacementIsAllOrNothing) {
  StateStore& s = *this->store_;
  const JobId id = this->Submit(MakeSpec("gang", 3, 1));
  auto placement = this->PlaceOn(id, "n1", 3, 1);
  auto short_one = placement;
  short_one.pop_back();
  EXPECT_EQ(s.CommitPlacement(id, short_one, "", 1).code(), StatusCode::kInvalidArgument);
  auto repeated = placement;
  repeated[2].replica = 0;
  EXPECT_EQ(s.CommitPlacement(id, repeated, "", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.ListAllocations()->empty());
  EXPECT_EQ(s.GetJob(id)->state, JobState::kQueued);
  EXPECT_EQ(s.JobEvents(id)->size(), 1u);
  ASSERT_TRUE(s.CommitPlacement(id, placement, "", 1).ok());
  EXPECT_EQ(s.CommitPlacement(id, placement, "", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.ListAllocations()->size(), 3u);
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

TYPED_TEST(StateStoreTest, NodesAndDevices) {
  StateStore& s = *this->store_;
  Node n1 = MakeNode("n1", 4);
  n1.devices[2].healthy = false;
  n1.devices[3].mode = DeviceMode::kExclusive;
  ASSERT_TRUE(s.UpsertNode(n1, 100).ok());
  ASSERT_TRUE(s.UpsertNode(MakeNode("a0", 0), 101).ok());
  Result<NodeRecord> got = s.GetNode("n1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->node.labels, n1.labels);
  EXPECT_EQ(got->node.cpu_milli, n1.cpu_milli);
  ASSERT_EQ(got->node.devices.size(), 4u);
  EXPECT_EQ(got->node.devices[1].uuid, "n1-GPU-1");
  EXPECT_EQ(got->node.devices[1].memory_mib, 81920);
  EXPECT_EQ(got->node.devices[3].numa_node, 0);
  EXPECT_FALSE(got->node.devices[2].healthy);
  EXPECT_EQ(got->node.devices[3].mode, DeviceMode::kExclusive);
  EXPECT_EQ(got->node.links.Score(1, 2), 100);
  EXPECT_EQ(got->node.links.Score(0, 3), 0);
  EXPECT_EQ(got->registered_us, 100);

  n1.cpu_milli = 32000;
  n1.devices.pop_back();
  n1.links = LinkTable();
  ASSERT_TRUE(s.UpsertNode(n1, 200).ok());
  got = s.GetNode("n1");
  EXPECT_EQ(got->node.cpu_milli, 32000);
  EXPECT_EQ(got->node.devices.size(), 3u);
  EXPECT_TRUE(got->node.links.empty());
  EXPECT_EQ(got->registered_us, 100);
  EXPECT_EQ(got->updated_us, 200);

  ASSERT_TRUE(s.SetNodeCordoned("n1", true, 300).ok());
  ASSERT_TRUE(s.SetNodeReady("n1", false, 301).ok());
  got = s.GetNode("n1");
  EXPECT_TRUE(got->node.cordoned);
  EXPECT_FALSE(got->node.ready);
  EXPECT_EQ(s.SetNodeCordoned("zz", true, 1).code(), StatusCode::kNotFound);

  Node thief = MakeNode("n2", 1);
  thief.devices[0].uuid = "n1-GPU-0";
  EXPECT_EQ(s.UpsertNode(thief, 1).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.GetNode("n2").status().code(), StatusCode::kNotFound);  // rolled back whole
  Node invalid = MakeNode("", 1);
  EXPECT_EQ(s.UpsertNode(invalid, 1).code(), StatusCode::kInvalidArgument);

  Result<std::vector<NodeRecord>> all = s.ListNodes();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].node.name, "a0");
  EXPECT_EQ((*all)[1].node.devices.size(), 3u);
  ASSERT_TRUE(s.DeleteNode("n1").ok());
  EXPECT_EQ(s.DeleteNode("n1").code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.UpsertNode(MakeNode("n3", 1), 1).ok());
  EXPECT_TRUE(s.UpsertNode(thief, 1).ok());  // its uuid is free again
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
}  // namespace xpool
