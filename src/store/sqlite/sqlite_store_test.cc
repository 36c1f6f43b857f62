// SQLite-only behaviour: durability pragmas, migrations from an older schema, a newer schema refused,
// an unopenable file reported as Unavailable.
#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "store/internal/schema.h"
#include "store/internal/sql_store.h"
#include "store/sqlite/sqlite_backend.h"

namespace xpool {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xpool-sqlite-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/xpool.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
  std::string path_;
};

std::string One(store_internal::SqlStore& store, const std::string& sql) {
  Result<store_internal::SqlResult> r = store.QueryForTesting(sql);
  if (!r.ok() || r->rows.empty() || r->rows[0].empty() || !r->rows[0][0]) return "<none>";
  return *r->rows[0][0];
}

TEST_F(SqliteStoreTest, WalAndFullSync) {
  Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto& sql = dynamic_cast<store_internal::SqlStore&>(**store);
  EXPECT_EQ(One(sql, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(One(sql, "PRAGMA synchronous"), "2");  // FULL
  EXPECT_EQ(One(sql, "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(One(sql, "PRAGMA temp_store"), "2");       // MEMORY: a batch's savepoints write no temp file
  EXPECT_EQ(One(sql, "PRAGMA cache_size"), "-65536");  // KiB: a 10,000-job batch is not spilled mid-way
  EXPECT_EQ((*store)->Kind(), "sqlite");
}

TEST_F(SqliteStoreTest, MigratesAnOlderSchema) {
  {
    Result<std::unique_ptr<store_internal::SqlBackend>> db = store_internal::OpenSqliteBackend(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(store_internal::Migrate(**db, 1).ok());
    EXPECT_EQ(*store_internal::CurrentSchemaVersion(**db), 1);
    ASSERT_TRUE((*db)
                    ->Query("INSERT INTO tenants (name, admin, quota_devices, quota_device_memory_mib, "
                            "quota_device_compute_milli, quota_cpu_milli, quota_memory_mib, created_us) "
                            "VALUES ('old', 0, -1, -1, -1, -1, -1, 7)",
                            {})
                    .ok());
  }
  Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->SchemaVersion(), store_internal::LatestSchemaVersion());
  auto& sql = dynamic_cast<store_internal::SqlStore&>(**store);
  EXPECT_EQ(One(sql, "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'jobs_state'"), "jobs_state");
  EXPECT_EQ((*store)->FindTenant("old")->created_us, 7);  // data kept
}

TEST_F(SqliteStoreTest, SchemaV4TakesTheLastStartOfRunningJobsFromTheirLastChange) {
  {
    Result<std::unique_ptr<store_internal::SqlBackend>> db = store_internal::OpenSqliteBackend(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(store_internal::Migrate(**db, 3).ok());
    ASSERT_TRUE((*db)
                    ->Query("INSERT INTO tenants (name, admin, quota_devices, quota_device_memory_mib, "
                            "quota_device_compute_milli, quota_cpu_milli, quota_memory_mib, created_us) "
                            "VALUES ('old', 0, -1, -1, -1, -1, -1, 7)",
                            {})
                    .ok());
    for (const char* row : {"(1, 1, 'r', '{}', 'running', 50, 10, 77)", "(2, 1, 'q', '{}', 'queued', 50, 10, 88)"}) {
      ASSERT_TRUE((*db)
                      ->Query(std::string("INSERT INTO jobs (id, tenant_id, name, spec, state, priority, "
                                          "submitted_us, updated_us) VALUES ") +
                                  row,
                              {})
                      .ok());
    }
  }
  Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto& sql = dynamic_cast<store_internal::SqlStore&>(**store);
  EXPECT_EQ(One(sql, "SELECT last_start_us FROM jobs WHERE id = 1"), "77");
  EXPECT_EQ(One(sql, "SELECT last_start_us FROM jobs WHERE id = 2"), "0");
  EXPECT_TRUE((*store)->SuspensionsSince(0)->empty());
}

TEST_F(SqliteStoreTest, RefusesANewerSchema) {
  {
    Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
    ASSERT_TRUE(store.ok());
    auto& sql = dynamic_cast<store_internal::SqlStore&>(**store);
    ASSERT_TRUE(sql.QueryForTesting("INSERT INTO schema_version (version) VALUES (99)").ok());
  }
  Result<std::unique_ptr<StateStore>> again = OpenSqliteStore(path_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("newer"), std::string::npos);
}

TEST_F(SqliteStoreTest, UnopenablePathIsUnavailable) {
  Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(dir_ + "/missing-dir/xpool.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().ToString();
  EXPECT_EQ(OpenStateStore("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStateStore("sqlite:").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, ASecondProcessHoldingTheLockIsUnavailableNotAHang) {
  Result<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_TRUE(store.ok());
  Result<TenantRecord> t = (*store)->CreateTenant("t", false, {}, 1);
  ASSERT_TRUE(t.ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  JobSpec spec;
  spec.name = "x";
  spec.resources.cpu_milli = 1000;
  spec.command = {"true"};
  Result<JobRecord> job = (*store)->SubmitJob(t->id, spec, 1);  // waits the busy timeout, then gives up
  EXPECT_EQ(job.status().code(), StatusCode::kUnavailable) << job.status().ToString();
  EXPECT_TRUE((*store)->GetTenant(t->id).ok());  // reads are not blocked by a writer in WAL mode
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_TRUE((*store)->SubmitJob(t->id, spec, 1).ok());
}

// sqlite:PATH?max_size_mib=N caps the file: writes past it are Unavailable with a clear reason, reads still work,
// and the cap is per open (a reopen without it writes again).
TEST_F(SqliteStoreTest, SizeCapMakesWritesUnavailableAndKeepsReads) {
  Result<std::unique_ptr<StateStore>> store = OpenStateStore("sqlite:" + path_ + "?max_size_mib=1");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<TenantRecord> t = (*store)->CreateTenant("t", false, TenantQuota{}, 1);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  JobSpec spec;
  spec.name = "big";
  spec.resources.cpu_milli = 1000;
  spec.command = {"true"};
  for (int i = 0; i < 8; ++i) spec.env["PAD" + std::to_string(i)] = std::string(30000, static_cast<char>('a' + i));
  Status failure;
  int accepted = 0;
  for (; accepted < 100 && failure.ok(); ++accepted) failure = (*store)->SubmitJob(t->id, spec, 1).status();
  ASSERT_FALSE(failure.ok()) << "1 MiB cap never reached";
  EXPECT_GT(accepted, 1);
  EXPECT_EQ(failure.code(), StatusCode::kUnavailable) << failure.ToString();
  EXPECT_NE(failure.message().find("database is full"), std::string::npos) << failure.message();
  Result<std::vector<JobRecord>> jobs = (*store)->ListJobs({});
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->size(), static_cast<size_t>(accepted - 1));
  EXPECT_LE(std::filesystem::file_size(path_), 1u << 20);
  store->reset();
  Result<std::unique_ptr<StateStore>> again = OpenStateStore(path_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->SubmitJob(t->id, spec, 2).ok());
}

// A batch is one transaction: when the database refuses part of it (here the size cap, midway through), every job
// of the batch fails with the reason and none of them is left behind, nor its tasks or events.
TEST_F(SqliteStoreTest, ABatchTheDatabaseRefusesMidwayLeavesNothing) {
  Result<std::unique_ptr<StateStore>> store = OpenStateStore("sqlite:" + path_ + "?max_size_mib=1");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<TenantRecord> t = (*store)->CreateTenant("t", false, TenantQuota{}, 1);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  JobSpec small;
  small.name = "small";
  small.command = {"true"};
  small.resources.cpu_milli = 100;
  Result<JobRecord> first = (*store)->SubmitJob(t->id, small, 1);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  JobSpec big = small;
  big.name = "big";
  for (int i = 0; i < 4; ++i) big.env["PAD" + std::to_string(i)] = std::string(30000, static_cast<char>('a' + i));
  std::vector<std::pair<TenantId, JobSpec>> batch(20, {t->id, small});
  for (size_t i = 5; i < batch.size(); ++i) batch[i].second = big;  // ~120 KB each from the 6th on: past 1 MiB
  std::vector<Result<JobRecord>> results = (*store)->SubmitJobs(batch, 2);
  ASSERT_EQ(results.size(), batch.size());
  for (const Result<JobRecord>& r : results) {
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  }
  Result<std::vector<JobRecord>> jobs = (*store)->ListJobs({});
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(jobs->front().spec.name, "small");
  Result<std::vector<EventRecord>> events = (*store)->EventsSince(0);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  for (const EventRecord& e : *events) EXPECT_EQ(e.job, jobs->front().id);
  Result<std::vector<TaskRecord>> tasks = (*store)->ListTasks(JobId(jobs->front().id.value() + 1));
  EXPECT_TRUE(!tasks.ok() || tasks->empty());
}

TEST_F(SqliteStoreTest, BadStoreOptionsAreRefused) {
  for (const std::string bad : {"?max_size_mib=0", "?max_size_mib=x", "?max_size_mib=", "?size=5", "?max_size_mib=5&x",
                                "?max_size_mib=99999999999999999999"}) {
    Result<std::unique_ptr<StateStore>> store = OpenStateStore("sqlite:" + path_ + bad);
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(std::filesystem::exists(path_));
}

}  // namespace
}  // namespace xpool
