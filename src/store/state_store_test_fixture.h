#pragma once
// The StateStore test fixture (test-only), shared by the files of the one typed suite in store_test, split by
// area: state_store_test.cc (schema, events, durability, PostgreSQL reconnect; it also installs SharedResources),
// state_store_jobs_test.cc, state_store_tenants_test.cc (tenants and tokens), state_store_nodes_test.cc (nodes
// and allocations). Every case runs against SQLite and against a real PostgreSQL server (started in a temp dir;
// the PostgreSQL cases skip with a message only when the binaries are not installed).
//
// Named namespace, not an anonymous one: gtest requires one fixture type per suite across the files.
// Each fixture object is owned by its test; not thread-safe (a case's own threads share its store only).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "store/internal/sql_store.h"
#include "store/state_store.h"
#include "store/testing/postgres_server.h"

namespace xpool::store_test {

// Holds what the whole binary shares: a temp dir for SQLite files and the PostgreSQL server (started on first
// use). Torn down after the last test. Owned by gtest (AddGlobalTestEnvironment), installed once, by
// state_store_test.cc; used from the test thread only.
class SharedResources : public ::testing::Environment {
 public:
  static SharedResources* Get() { return instance_; }
  static void Install() {
    instance_ = new SharedResources();
    ::testing::AddGlobalTestEnvironment(instance_);
  }

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

inline JobSpec MakeSpec(const std::string& name, int replicas = 1, int gpus = 0) {
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

inline Node MakeNode(const std::string& name, int gpus) {
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
      for (int g = 0; g < gpus_each; ++g)
        a.devices.push_back({node + "-GPU-" + std::to_string(r * gpus_each + g), 0, 500});
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

}  // namespace xpool::store_test
