#pragma once
// SqlStore: the StateStore written once in SQL, over a SqlBackend (SQLite or PostgreSQL). Both backends run
// the same statements ($1..$n parameters, INSERT ... RETURNING, ON CONFLICT), so the shared test suite checks
// one implementation against two databases.
//
// Owns its backends. Thread-safe: every change takes mu_ (the writer connection); each state change is one
// transaction, committed before the call returns. Reads (jobs, tasks, events, allocations, nodes, tenants) run
// on a reader connection when the backend added some (SQLite in WAL mode: readers see every committed write and
// do not wait for a commit's fsync), else on the writer under mu_. SubmitJob uses group commit: concurrent submissions
// share one transaction (and one fsync), and each caller returns only after that transaction committed; so do the
// single-job writes of running jobs (TransitionJob, CommitPlacement, UpdateTask: GroupWrite).
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/internal/group_commit.h"
#include "store/internal/sql_backend.h"
#include "store/state_store.h"

namespace xpool::store_internal {

class SqlStore final : public StateStore {
 public:
  explicit SqlStore(std::unique_ptr<SqlBackend> db) : db_(std::move(db)) {}

  // Migrates the schema to the latest version.
  Status Init();
  // Adds a connection to the same database that serves reads (call after Init, before any other call).
  void AddReader(std::unique_ptr<SqlBackend> reader);

  std::string_view Kind() const override { return db_->Kind(); }
  Result<int> SchemaVersion() override;
  Status Ping() override;

  Result<TenantRecord> CreateTenant(std::string_view name, bool admin, const TenantQuota& quota,
                                    TimeMicros now) override;
  Result<TenantRecord> GetTenant(TenantId id) override;
  Result<TenantRecord> FindTenant(std::string_view name) override;
  Result<std::vector<TenantRecord>> ListTenants() override;
  Status UpdateTenantQuota(TenantId id, const TenantQuota& quota) override;
  Status UpdateTenantGuarantee(TenantId id, const TenantQuota& guaranteed) override;
  Status SetTenantPriorityQuotas(TenantId id, const std::vector<TenantPriorityQuota>& quotas) override;
  Result<int64_t> AddToken(TenantId tenant, std::string_view plaintext, std::string_view label,
                           TimeMicros now) override;
  Result<TenantRecord> Authenticate(std::string_view plaintext) override;
  Result<std::vector<TokenRecord>> ListTokens(TenantId tenant) override;
  Status RevokeToken(int64_t token_id) override;

  Result<JobRecord> SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) override;
  std::vector<Result<JobRecord>> SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                            TimeMicros now) override;
  Result<JobRecord> GetJob(JobId id) override;
  Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected) override;
  Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                         TimeMicros now) override;
  Result<JobRecord> SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) override;
  Result<std::vector<std::pair<JobId, TimeMicros>>> SuspensionsSince(TimeMicros since) override;
  Status SetPendingReason(JobId id, std::string_view reason) override;
  Status SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) override;

  Result<std::vector<TaskRecord>> ListTasks(JobId job) override;
  Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) override;

  Result<std::vector<AllocationRecord>> ListAllocations() override;
  Result<std::vector<AllocationRecord>> JobAllocations(JobId job) override;
  Result<std::vector<AllocationRecord>> JobAllocationsBetween(JobId first, JobId last) override;

  Status UpsertNode(const Node& node, TimeMicros now) override;
  Result<NodeRecord> GetNode(std::string_view name) override;
  Result<std::vector<NodeRecord>> ListNodes() override;
  Status SetNodeCordoned(std::string_view name, bool cordoned, TimeMicros now) override;
  Status SetNodeReady(std::string_view name, bool ready, TimeMicros now) override;
  Status DeleteNode(std::string_view name) override;

  Result<EventRecord> AppendEvent(const EventRecord& event) override;
  Result<std::vector<EventRecord>> JobEvents(JobId job, int limit) override;
  Result<std::vector<EventRecord>> EventsSince(int64_t after_id, int limit) override;

  Status AddUsage(const std::vector<UsageRecord>& rows) override;
  Result<std::vector<UsageRecord>> ListUsage(const UsageFilter& filter) override;
  Status CompactUsage(TimeMicros minutes_before, TimeMicros drop_before) override;

  // Tests only: runs a statement on the store's own connection (e.g. to make the database full or read-only).
  Result<SqlResult> QueryForTesting(std::string_view sql);

 private:
  Status UpdateTenantAmounts(TenantId id, const TenantQuota& amounts, std::string_view column_prefix);
  // Fills each tenant's priority_quotas, reading on `db` (a reader, or the writer with mu_ held).
  Status AttachPriorityQuotas(SqlBackend& db, std::vector<TenantRecord>& tenants);
  struct PendingSubmit {
    TenantId tenant;
    const JobSpec* spec;
    std::string spec_json;
    TimeMicros now;
    Result<JobRecord> result;
    bool done;  // GroupCommit's
  };
  static constexpr size_t kMaxSubmitBatch = 256;      // submissions group commit puts in one transaction
  static constexpr size_t kReleaseAfterBatch = 1000;  // SubmitJobs of this many frees the writer's cache after

  // Inserts one job, its tasks and its event (its tenant is known to exist). Caller holds mu_ inside a transaction.
  Status InsertJob(const PendingSubmit& p, JobId* id);
  // Every job of `batch` into the open transaction: each tenant is looked up once and a job of an unknown tenant
  // is refused in `results`; the first failed insert is returned (the caller rolls everything back).
  Status InsertBatch(const std::vector<PendingSubmit*>& batch, std::vector<Status>* results, std::vector<JobId>* ids);
  void CommitBatch(const std::vector<PendingSubmit*>& batch);

  // Group commit of single-job writes (TransitionJob, CommitPlacement, UpdateTask): `body` runs on the writer with
  // mu_ held, inside a transaction shared with the writes queued meanwhile, each in its own savepoint (one that
  // fails is rolled back alone); one commit (one fsync) for all, and each caller returns after it with its own
  // body's result, or the commit's failure.
  Status GroupWrite(const std::function<Status()>& body);
  struct PendingWrite {
    const std::function<Status()>* body;
    Status result;
    bool done = false;  // GroupCommit's
  };
  void CommitWrites(const std::vector<PendingWrite*>& batch);
  static constexpr size_t kMaxWriteBatch = 256;

  // Runs `body` between Begin and Commit; rolls back when it fails. Caller holds mu_.
  template <typename Body>
  Status InTransaction(Body&& body);
  // The same for reads of several statements (a consistent snapshot).
  template <typename Body>
  Status InReadTransaction(SqlBackend& db, Body&& body);

  // A connection to read with: a free reader (else the next one, waited for), or the writer under mu_.
  class ReadConn {
   public:
    explicit ReadConn(SqlStore& store);
    SqlBackend& db() { return *db_; }

   private:
    std::unique_lock<std::mutex> lock_;
    SqlBackend* db_ = nullptr;
  };
  struct Reader {
    std::mutex mu;
    std::unique_ptr<SqlBackend> db;  // guarded by mu
  };

  Result<JobRecord> LoadJob(SqlBackend& db, JobId id);
  // A job row → record, its spec parsed from the canonical JSON. The server reads jobs from its job cache
  // (store/caching_state_store.h), which reads them from here once, at start.
  static Result<JobRecord> JobFromRow(const SqlRow& row);
  Result<std::vector<AllocationRecord>> LoadAllocations(SqlBackend& db, std::string_view where,
                                                        const std::vector<SqlValue>& params);
  Result<std::vector<NodeRecord>> LoadNodes(SqlBackend& db, std::string_view where,
                                            const std::vector<SqlValue>& params);
  Status InsertEvent(const EventRecord& event, int64_t* id);
  Status SetNodeFlag(std::string_view column, std::string_view name, bool value, TimeMicros now);

  std::mutex mu_;
  std::unique_ptr<SqlBackend> db_;                // guarded by mu_
  std::vector<std::unique_ptr<Reader>> readers_;  // filled before use, then fixed
  std::atomic<size_t> next_reader_{0};

  // Group commits of submissions and of single-job writes (each taken before mu_, never while holding it).
  GroupCommit<PendingSubmit> submits_{kMaxSubmitBatch};
  GroupCommit<PendingWrite> writes_{kMaxWriteBatch};
};

template <typename Body>
Status SqlStore::InTransaction(Body&& body) {
  RETURN_IF_ERROR(db_->Begin());
  Status s = body();
  if (s.ok()) s = db_->Commit();
  if (!s.ok()) db_->Rollback();
  return s;
}

template <typename Body>
Status SqlStore::InReadTransaction(SqlBackend& db, Body&& body) {
  RETURN_IF_ERROR(db.BeginRead());
  Status s = body();
  if (s.ok()) s = db.Commit();
  if (!s.ok()) db.Rollback();
  return s;
}

}  // namespace xpool::store_internal
