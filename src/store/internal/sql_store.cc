// SqlStore: tenants, tokens, jobs, tasks and events. Nodes and allocations are in sql_store_nodes.cc.
#include "store/internal/sql_store.h"

#include <map>

#include "store/internal/schema.h"
#include "store/internal/sql_rows.h"
#include "store/token.h"

namespace xpool::store_internal {
namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 512;

Status CheckTenantName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() != '-' && name.back() != '-';
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!ok) {
    return InvalidArgumentError(
        "tenant name must be 1..63 characters of a-z, 0-9 and '-', starting and ending "
        "with a letter or digit");
  }
  return Status::Ok();
}

Status CheckQuota(const TenantQuota& q) {
  for (int64_t v : {q.devices, q.device_memory_mib, q.device_compute_milli, q.cpu_milli, q.memory_mib}) {
    if (v < kUnlimited) return InvalidArgumentError("quota values must be >= 0 (or -1 for unlimited)");
  }
  return Status::Ok();
}

constexpr const char* kTenantColumns =
    "id, name, admin, quota_devices, quota_device_memory_mib, quota_device_compute_milli, quota_cpu_milli, "
    "quota_memory_mib, created_us, guar_devices, guar_device_memory_mib, guar_device_compute_milli, "
    "guar_cpu_milli, guar_memory_mib";

TenantRecord TenantFromRow(const SqlRow& r, size_t base = 0) {
  TenantRecord t;
  t.id = TenantId(ColInt(r, base + 0));
  t.name = ColText(r, base + 1);
  t.admin = ColBool(r, base + 2);
  t.quota.devices = ColInt(r, base + 3);
  t.quota.device_memory_mib = ColInt(r, base + 4);
  t.quota.device_compute_milli = ColInt(r, base + 5);
  t.quota.cpu_milli = ColInt(r, base + 6);
  t.quota.memory_mib = ColInt(r, base + 7);
  t.created_us = ColInt(r, base + 8);
  t.guaranteed.devices = ColInt(r, base + 9);
  t.guaranteed.device_memory_mib = ColInt(r, base + 10);
  t.guaranteed.device_compute_milli = ColInt(r, base + 11);
  t.guaranteed.cpu_milli = ColInt(r, base + 12);
  t.guaranteed.memory_mib = ColInt(r, base + 13);
  return t;
}

constexpr const char* kJobColumns =
    "id, tenant_id, spec, state, priority, submitted_us, updated_us, restart_count, pending_reason, state_reason, "
    "last_start_us";

// Everything but the spec (SqlStore::JobFromRow adds it).
Result<JobRecord> JobFromRowWithoutSpec(const SqlRow& r) {
  JobRecord j;
  j.id = JobId(ColInt(r, 0));
  j.tenant = TenantId(ColInt(r, 1));
  Result<JobState> state = ParseJobState(ColText(r, 3));
  if (!state.ok()) return InternalError("job " + j.id.ToString() + " has an unknown state " + ColText(r, 3));
  j.state = *state;
  j.priority = static_cast<int>(ColInt(r, 4));
  j.submitted_us = ColInt(r, 5);
  j.updated_us = ColInt(r, 6);
  j.restart_count = static_cast<int>(ColInt(r, 7));
  j.pending_reason = ColText(r, 8);
  j.state_reason = ColText(r, 9);
  j.last_start_us = ColInt(r, 10);
  return j;
}

Result<std::optional<JobState>> OptionalState(const std::string& text) {
  if (text.empty()) return std::optional<JobState>();
  ASSIGN_OR_RETURN(JobState s, ParseJobState(text));
  return std::optional<JobState>(s);
}

Result<EventRecord> EventFromRow(const SqlRow& r) {
  EventRecord e;
  e.id = ColInt(r, 0);
  e.time_us = ColInt(r, 1);
  e.job = JobId(ColInt(r, 2));
  e.kind = ColText(r, 3);
  ASSIGN_OR_RETURN(e.from, OptionalState(ColText(r, 4)));
  ASSIGN_OR_RETURN(e.to, OptionalState(ColText(r, 5)));
  e.reason = ColText(r, 6);
  return e;
}

// The events a SELECT of (id, time_us, job_id, kind, from_state, to_state, reason) returns, in its order.
Result<std::vector<EventRecord>> QueryEvents(SqlBackend& db, const std::string& sql,
                                             const std::vector<SqlValue>& params) {
  ASSIGN_OR_RETURN(SqlResult r, db.Query(sql, params));
  std::vector<EventRecord> out;
  for (const SqlRow& row : r.rows) {
    ASSIGN_OR_RETURN(EventRecord e, EventFromRow(row));
    out.push_back(std::move(e));
  }
  return out;
}

std::string StateText(std::optional<JobState> s) { return s ? std::string(JobStateName(*s)) : std::string(); }

}  // namespace

Result<JobRecord> SqlStore::JobFromRow(const SqlRow& row) {
  ASSIGN_OR_RETURN(JobRecord j, JobFromRowWithoutSpec(row));
  Result<JobSpec> spec = ParseJobSpec(ColText(row, 2));
  if (!spec.ok())
    return InternalError("job " + j.id.ToString() + " has an unreadable spec: " + spec.status().message());
  j.spec = std::move(spec).value();
  return j;
}

Status SqlStore::Init() {
  std::lock_guard lock(mu_);
  return Migrate(*db_);
}

void SqlStore::AddReader(std::unique_ptr<SqlBackend> reader) {
  auto r = std::make_unique<Reader>();
  r->db = std::move(reader);
  readers_.push_back(std::move(r));
}

SqlStore::ReadConn::ReadConn(SqlStore& store) {
  if (store.readers_.empty()) {
    lock_ = std::unique_lock(store.mu_);
    db_ = store.db_.get();
    return;
  }
  const size_t n = store.readers_.size();
  const size_t start = store.next_reader_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < n; ++k) {
    Reader& r = *store.readers_[(start + k) % n];
    std::unique_lock lock(r.mu, std::try_to_lock);
    if (lock.owns_lock()) {
      lock_ = std::move(lock);
      db_ = r.db.get();
      return;
    }
  }
  Reader& r = *store.readers_[start % n];
  lock_ = std::unique_lock(r.mu);
  db_ = r.db.get();
}

Result<int> SqlStore::SchemaVersion() {
  std::lock_guard lock(mu_);
  return CurrentSchemaVersion(*db_);
}

Status SqlStore::Ping() {
  std::lock_guard lock(mu_);
  return db_->Query("SELECT 1", {}).status();
}

Result<SqlResult> SqlStore::QueryForTesting(std::string_view sql) {
  std::lock_guard lock(mu_);
  return db_->Query(sql, {});
}

// ---- Tenants and tokens ----

Result<TenantRecord> SqlStore::CreateTenant(std::string_view name, bool admin, const TenantQuota& quota,
                                            TimeMicros now) {
  RETURN_IF_ERROR(CheckTenantName(name));
  RETURN_IF_ERROR(CheckQuota(quota));
  std::lock_guard lock(mu_);
  TenantRecord tenant;
  Status s = InTransaction([&]() -> Status {
    Result<SqlResult> r = db_->Query(
        "INSERT INTO tenants (name, admin, quota_devices, quota_device_memory_mib, quota_device_compute_milli, "
        "quota_cpu_milli, quota_memory_mib, created_us) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        {Text(name), Bool(admin), Int(quota.devices), Int(quota.device_memory_mib), Int(quota.device_compute_milli),
         Int(quota.cpu_milli), Int(quota.memory_mib), Int(now)});
    if (r.status().code() == StatusCode::kAlreadyExists) {
      return AlreadyExistsError("tenant '" + std::string(name) + "' already exists");
    }
    RETURN_IF_ERROR(r);
    tenant = TenantRecord{TenantId(ColInt(r->rows.at(0), 0)), std::string(name), admin, quota, now, {}, {}};
    return Status::Ok();
  });
  RETURN_IF_ERROR(s);
  return tenant;
}

Result<TenantRecord> SqlStore::GetTenant(TenantId id) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  ASSIGN_OR_RETURN(SqlResult r, db.Query(std::string("SELECT ") + kTenantColumns + " FROM tenants WHERE id = $1",
                                         {Int(id.value())}));
  if (r.rows.empty()) return NotFoundError("no tenant with id " + id.ToString());
  std::vector<TenantRecord> one = {TenantFromRow(r.rows[0])};
  RETURN_IF_ERROR(AttachPriorityQuotas(db, one));
  return std::move(one[0]);
}

Result<TenantRecord> SqlStore::FindTenant(std::string_view name) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  ASSIGN_OR_RETURN(SqlResult r,
                   db.Query(std::string("SELECT ") + kTenantColumns + " FROM tenants WHERE name = $1", {Text(name)}));
  if (r.rows.empty()) return NotFoundError("no tenant named '" + Printable(name) + "'");
  std::vector<TenantRecord> one = {TenantFromRow(r.rows[0])};
  RETURN_IF_ERROR(AttachPriorityQuotas(db, one));
  return std::move(one[0]);
}

Result<std::vector<TenantRecord>> SqlStore::ListTenants() {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  ASSIGN_OR_RETURN(SqlResult r, db.Query(std::string("SELECT ") + kTenantColumns + " FROM tenants ORDER BY name", {}));
  std::vector<TenantRecord> out;
  for (const SqlRow& row : r.rows) out.push_back(TenantFromRow(row));
  RETURN_IF_ERROR(AttachPriorityQuotas(db, out));
  return out;
}

Status SqlStore::AttachPriorityQuotas(SqlBackend& db, std::vector<TenantRecord>& tenants) {
  if (tenants.empty()) return Status::Ok();
  const std::string columns =
      "SELECT tenant_id, min_priority, max_priority, devices, device_memory_mib, "
      "device_compute_milli, cpu_milli, memory_mib FROM tenant_priority_quotas";
  const std::string order = " ORDER BY tenant_id, min_priority, max_priority";
  ASSIGN_OR_RETURN(SqlResult r, tenants.size() == 1
                                    ? db.Query(columns + " WHERE tenant_id = $1" + order, {Int(tenants[0].id.value())})
                                    : db.Query(columns + order, {}));
  std::map<int64_t, std::vector<TenantPriorityQuota>> by_tenant;
  for (const SqlRow& row : r.rows) {
    TenantPriorityQuota q;
    q.min_priority = static_cast<int>(ColInt(row, 1));
    q.max_priority = static_cast<int>(ColInt(row, 2));
    q.quota = TenantQuota{ColInt(row, 3), ColInt(row, 4), ColInt(row, 5), ColInt(row, 6), ColInt(row, 7)};
    by_tenant[ColInt(row, 0)].push_back(q);
  }
  for (TenantRecord& t : tenants) {
    auto it = by_tenant.find(t.id.value());
    t.priority_quotas = it == by_tenant.end() ? std::vector<TenantPriorityQuota>() : std::move(it->second);
  }
  return Status::Ok();
}

Status SqlStore::SetTenantPriorityQuotas(TenantId id, const std::vector<TenantPriorityQuota>& quotas) {
  for (const TenantPriorityQuota& q : quotas) {
    if (q.min_priority < 0 || q.max_priority > kMaxPriority || q.min_priority > q.max_priority) {
      return InvalidArgumentError("a priority band must lie within 0..100, low end first (got " +
                                  std::to_string(q.min_priority) + ".." + std::to_string(q.max_priority) + ")");
    }
    RETURN_IF_ERROR(CheckQuota(q.quota));
  }
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult t, db_->Query("SELECT id FROM tenants WHERE id = $1", {Int(id.value())}));
    if (t.rows.empty()) return NotFoundError("no tenant with id " + id.ToString());
    RETURN_IF_ERROR(db_->Query("DELETE FROM tenant_priority_quotas WHERE tenant_id = $1", {Int(id.value())}));
    for (const TenantPriorityQuota& q : quotas) {
      RETURN_IF_ERROR(
          db_->Query("INSERT INTO tenant_priority_quotas (tenant_id, min_priority, max_priority, devices, "
                     "device_memory_mib, device_compute_milli, cpu_milli, memory_mib) "
                     "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                     {Int(id.value()), Int(q.min_priority), Int(q.max_priority), Int(q.quota.devices),
                      Int(q.quota.device_memory_mib), Int(q.quota.device_compute_milli), Int(q.quota.cpu_milli),
                      Int(q.quota.memory_mib)}));
    }
    return Status::Ok();
  });
}

Status SqlStore::UpdateTenantQuota(TenantId id, const TenantQuota& quota) {
  return UpdateTenantAmounts(id, quota, "quota");
}

Status SqlStore::UpdateTenantGuarantee(TenantId id, const TenantQuota& guaranteed) {
  return UpdateTenantAmounts(id, guaranteed, "guar");
}

// Writes the five amount columns named `<prefix>_devices`, `<prefix>_device_memory_mib`, ... of one tenant.
Status SqlStore::UpdateTenantAmounts(TenantId id, const TenantQuota& q, std::string_view prefix) {
  RETURN_IF_ERROR(CheckQuota(q));
  const std::string p(prefix);
  const std::string sql = "UPDATE tenants SET " + p + "_devices = $2, " + p + "_device_memory_mib = $3, " + p +
                          "_device_compute_milli = $4, " + p + "_cpu_milli = $5, " + p +
                          "_memory_mib = $6 WHERE id = $1";
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r, db_->Query(sql, {Int(id.value()), Int(q.devices), Int(q.device_memory_mib),
                                                   Int(q.device_compute_milli), Int(q.cpu_milli), Int(q.memory_mib)}));
    if (r.affected == 0) return NotFoundError("no tenant with id " + id.ToString());
    return Status::Ok();
  });
}

Result<int64_t> SqlStore::AddToken(TenantId tenant, std::string_view plaintext, std::string_view label,
                                   TimeMicros now) {
  if (plaintext.size() < kMinTokenBytes || plaintext.size() > kMaxTokenBytes) {
    return InvalidArgumentError("a token must be 16..512 bytes");
  }
  const std::string hash = Sha256Hex(plaintext);
  std::lock_guard lock(mu_);
  int64_t id = 0;
  RETURN_IF_ERROR(InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult t, db_->Query("SELECT id FROM tenants WHERE id = $1", {Int(tenant.value())}));
    if (t.rows.empty()) return NotFoundError("no tenant with id " + tenant.ToString());
    Result<SqlResult> r =
        db_->Query("INSERT INTO tokens (tenant_id, hash, label, created_us) VALUES ($1, $2, $3, $4) RETURNING id",
                   {Int(tenant.value()), Text(hash), Text(ClipReason(label)), Int(now)});
    if (r.status().code() == StatusCode::kAlreadyExists) return AlreadyExistsError("this token is already in use");
    RETURN_IF_ERROR(r);
    id = ColInt(r->rows.at(0), 0);
    return Status::Ok();
  }));
  return id;
}

Result<TenantRecord> SqlStore::Authenticate(std::string_view plaintext) {
  if (plaintext.empty() || plaintext.size() > kMaxTokenBytes) return UnauthenticatedError("invalid token");
  const std::string hash = Sha256Hex(plaintext);
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(SqlResult r,
                   db_->Query("SELECT t.id, t.name, t.admin, t.quota_devices, t.quota_device_memory_mib, "
                              "t.quota_device_compute_milli, t.quota_cpu_milli, t.quota_memory_mib, t.created_us, "
                              "t.guar_devices, t.guar_device_memory_mib, t.guar_device_compute_milli, "
                              "t.guar_cpu_milli, t.guar_memory_mib "
                              "FROM tokens k JOIN tenants t ON t.id = k.tenant_id WHERE k.hash = $1",
                              {Text(hash)}));
  if (r.rows.empty()) return UnauthenticatedError("invalid token");
  std::vector<TenantRecord> one = {TenantFromRow(r.rows[0])};
  RETURN_IF_ERROR(AttachPriorityQuotas(*db_, one));
  return std::move(one[0]);
}

Result<std::vector<TokenRecord>> SqlStore::ListTokens(TenantId tenant) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(SqlResult r, db_->Query("SELECT id, tenant_id, label, created_us FROM tokens "
                                           "WHERE tenant_id = $1 ORDER BY id",
                                           {Int(tenant.value())}));
  std::vector<TokenRecord> out;
  for (const SqlRow& row : r.rows) {
    out.push_back({ColInt(row, 0), TenantId(ColInt(row, 1)), ColText(row, 2), ColInt(row, 3)});
  }
  return out;
}

Status SqlStore::RevokeToken(int64_t token_id) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r, db_->Query("DELETE FROM tokens WHERE id = $1", {Int(token_id)}));
    if (r.affected == 0) return NotFoundError("no token with id " + std::to_string(token_id));
    return Status::Ok();
  });
}

// ---- Jobs ----

Status SqlStore::InsertEvent(const EventRecord& e, int64_t* id) {
  ASSIGN_OR_RETURN(SqlResult r, db_->Query("INSERT INTO events (time_us, job_id, kind, from_state, to_state, reason) "
                                           "VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                                           {Int(e.time_us), Int(e.job.value()), Text(e.kind), Text(StateText(e.from)),
                                            Text(StateText(e.to)), Text(ClipReason(e.reason))}));
  if (id != nullptr) *id = ColInt(r.rows.at(0), 0);
  return Status::Ok();
}

Result<JobRecord> SqlStore::LoadJob(SqlBackend& db, JobId id) {
  ASSIGN_OR_RETURN(SqlResult r,
                   db.Query(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = $1", {Int(id.value())}));
  if (r.rows.empty()) return NotFoundError("no job with id " + id.ToString());
  return JobFromRow(r.rows[0]);
}

Status SqlStore::InsertJob(const PendingSubmit& p, JobId* id) {
  const JobSpec& spec = *p.spec;
  ASSIGN_OR_RETURN(SqlResult r, db_->Query("INSERT INTO jobs (tenant_id, name, spec, state, priority, submitted_us, "
                                           "updated_us) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
                                           {Int(p.tenant.value()), Text(spec.name), Text(p.spec_json),
                                            Text(JobStateName(JobState::kQueued)), Int(spec.priority), Int(p.now)}));
  *id = JobId(ColInt(r.rows.at(0), 0));
  for (int replica = 0; replica < spec.replicas; ++replica) {
    RETURN_IF_ERROR(db_->Query("INSERT INTO tasks (job_id, replica, state, updated_us) VALUES ($1, $2, $3, $4)",
                               {Int(id->value()), Int(replica), Text(JobStateName(JobState::kQueued)), Int(p.now)}));
  }
  EventRecord e;
  e.time_us = p.now;
  e.job = *id;
  e.kind = "submitted";
  e.to = JobState::kQueued;
  e.reason = "submitted with priority " + std::to_string(spec.priority) + ", " + std::to_string(spec.replicas) +
             (spec.replicas == 1 ? " replica" : " replicas");
  return InsertEvent(e, nullptr);
}

Status SqlStore::InsertBatch(const std::vector<PendingSubmit*>& batch, std::vector<Status>* results,
                             std::vector<JobId>* ids) {
  std::map<int64_t, bool> tenant_exists;
  for (size_t i = 0; i < batch.size(); ++i) {
    const TenantId tenant = batch[i]->tenant;
    auto [known, added] = tenant_exists.try_emplace(tenant.value(), false);
    if (added) {
      ASSIGN_OR_RETURN(SqlResult t, db_->Query("SELECT id FROM tenants WHERE id = $1", {Int(tenant.value())}));
      known->second = !t.rows.empty();
    }
    if (!known->second) {
      (*results)[i] = NotFoundError("no tenant with id " + tenant.ToString());
      continue;
    }
    RETURN_IF_ERROR(InsertJob(*batch[i], &(*ids)[i]));
    (*results)[i] = Status::Ok();
  }
  return Status::Ok();
}

// One transaction for the whole batch, three statements a job (no savepoint each: what a job may be refused for,
// an unknown tenant, is checked before its rows are written; specs were validated before). An insert that fails
// anyway is the database refusing writes, and every job of the batch fails with it. Results are published only
// after COMMIT returned.
void SqlStore::CommitBatch(const std::vector<PendingSubmit*>& batch) {
  std::lock_guard lock(mu_);
  std::vector<Status> results(batch.size());
  std::vector<JobId> ids(batch.size());
  Status commit = InTransaction([&] { return InsertBatch(batch, &results, &ids); });
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingSubmit& p = *batch[i];
    if (!commit.ok()) {
      p.result = commit;
    } else if (!results[i].ok()) {
      p.result = results[i];
    } else {
      JobRecord job;
      job.id = ids[i];
      job.tenant = p.tenant;
      job.spec = *p.spec;
      job.state = JobState::kQueued;
      job.priority = p.spec->priority;
      job.submitted_us = p.now;
      job.updated_us = p.now;
      p.result = std::move(job);
    }
  }
}

Result<JobRecord> SqlStore::SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) {
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  PendingSubmit pending{tenant, &spec, JobSpecToJson(spec), now, InternalError("not committed"), false};
  // Group commit (GroupCommit): the queued submissions share one transaction and one fsync.
  submits_.Run(&pending, [this](const std::vector<PendingSubmit*>& batch) { CommitBatch(batch); });
  return std::move(pending.result);
}

std::vector<Result<JobRecord>> SqlStore::SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                                    TimeMicros now) {
  std::vector<Result<JobRecord>> results(jobs.size(), Result<JobRecord>(InternalError("not committed")));
  std::vector<PendingSubmit> pending;
  std::vector<size_t> index;  // pending[k] is jobs[index[k]]
  pending.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    Status valid = ValidateJobSpec(jobs[i].second);
    if (!valid.ok()) {
      results[i] = valid;
      continue;
    }
    pending.push_back(PendingSubmit{jobs[i].first, &jobs[i].second, JobSpecToJson(jobs[i].second), now,
                                    InternalError("not committed"), false});
    index.push_back(i);
  }
  // One transaction for all of them (the contract; one fsync), however many: kMaxSubmitBatch bounds only what
  // group commit gathers from concurrent single submissions.
  std::vector<PendingSubmit*> batch;
  batch.reserve(pending.size());
  for (PendingSubmit& p : pending) batch.push_back(&p);
  if (!batch.empty()) CommitBatch(batch);
  if (batch.size() >= kReleaseAfterBatch) {
    // The batch filled the writer's page cache (up to its limit, 64 MiB for SQLite): give those pages back
    // rather than hold them until the next batch, so a server's memory follows the jobs it holds.
    std::lock_guard lock(mu_);
    db_->ReleaseMemory();
  }
  for (size_t k = 0; k < pending.size(); ++k) results[index[k]] = std::move(pending[k].result);
  return results;
}

Result<JobRecord> SqlStore::GetJob(JobId id) {
  ReadConn conn(*this);
  return LoadJob(conn.db(), id);
}

Result<std::vector<JobRecord>> SqlStore::ListJobs(const JobFilter& filter) {
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id > $1";
  std::vector<SqlValue> params = {Int(filter.after.value())};
  if (filter.tenant) {
    params.push_back(Int(filter.tenant->value()));
    sql += " AND tenant_id = $" + std::to_string(params.size());
  }
  if (!filter.states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < filter.states.size(); ++i) {
      params.push_back(Text(JobStateName(filter.states[i])));
      sql += (i ? ", $" : "$") + std::to_string(params.size());
    }
    sql += ")";
  }
  sql += " ORDER BY id";
  if (filter.limit > 0) {
    params.push_back(Int(filter.limit));
    sql += " LIMIT $" + std::to_string(params.size());
  }
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  ASSIGN_OR_RETURN(SqlResult r, db.Query(sql, params));
  std::vector<JobRecord> out;
  out.reserve(r.rows.size());
  for (const SqlRow& row : r.rows) {
    ASSIGN_OR_RETURN(JobRecord job, JobFromRow(row));
    out.push_back(std::move(job));
  }
  return out;
}

Status SqlStore::TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                               std::optional<JobState> expected) {
  return GroupWrite([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r, db_->Query(std::string("SELECT state, restart_count FROM jobs WHERE id = $1") +
                                                 std::string(db_->ForUpdate()),
                                             {Int(id.value())}));
    if (r.rows.empty()) return NotFoundError("no job with id " + id.ToString());
    ASSIGN_OR_RETURN(JobState from, ParseJobState(ColText(r.rows[0], 0)));
    if (expected && *expected != from) {
      return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(from)) + ", not " +
                                     std::string(JobStateName(*expected)));
    }
    RETURN_IF_ERROR(CheckTransition(from, to).WithContext("job " + id.ToString()));
    if (to == JobState::kScheduled) {
      return FailedPreconditionError("job " + id.ToString() +
                                     ": a job becomes scheduled only with its placement "
                                     "(CommitPlacement)");
    }
    // restart_count is the job's placement epoch (docs/agent.md, "Fencing"): every way back to the queue bumps it,
    // a scheduled job's too (its agent may have started it), so no two placements share one.
    int64_t restarts = ColInt(r.rows[0], 1);
    if (to == JobState::kQueued) ++restarts;
    // → running also sets the last start (min-runtime counts from it).
    RETURN_IF_ERROR(
        db_->Query(to == JobState::kRunning ? "UPDATE jobs SET state = $2, updated_us = $3, restart_count = $4, "
                                              "pending_reason = '', state_reason = $5, last_start_us = $3 WHERE id = $1"
                                            : "UPDATE jobs SET state = $2, updated_us = $3, restart_count = $4, "
                                              "pending_reason = '', state_reason = $5 WHERE id = $1",
                   {Int(id.value()), Text(JobStateName(to)), Int(now), Int(restarts), Text(ClipReason(reason))}));
    if (to == JobState::kSuspending) {
      RETURN_IF_ERROR(
          db_->Query("INSERT INTO job_suspensions (job_id, time_us) VALUES ($1, $2)", {Int(id.value()), Int(now)}));
    }
    if (HoldsAllocation(from) && !HoldsAllocation(to)) {
      RETURN_IF_ERROR(db_->Query("DELETE FROM allocation_devices WHERE job_id = $1", {Int(id.value())}));
      RETURN_IF_ERROR(db_->Query("DELETE FROM allocations WHERE job_id = $1", {Int(id.value())}));
    }
    if (to == JobState::kQueued || to == JobState::kSuspended) {
      RETURN_IF_ERROR(
          db_->Query("UPDATE tasks SET state = $2, node = '', exit_code = NULL, updated_us = $3 "
                     "WHERE job_id = $1",
                     {Int(id.value()), Text(JobStateName(to)), Int(now)}));
    } else if (IsTerminal(to)) {
      RETURN_IF_ERROR(
          db_->Query("UPDATE tasks SET state = $2, updated_us = $3 WHERE job_id = $1 "
                     "AND state NOT IN ('succeeded', 'failed', 'cancelled')",
                     {Int(id.value()), Text(JobStateName(to)), Int(now)}));
    }
    EventRecord e;
    e.time_us = now;
    e.job = id;
    e.kind = "transition";
    e.from = from;
    e.to = to;
    e.reason = std::string(reason);
    return InsertEvent(e, nullptr);
  });
}

Result<JobRecord> SqlStore::SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) {
  if (priority < 0 || priority > kMaxPriority) {
    return InvalidArgumentError("priority must be 0..100 (or low, normal, high), not " + std::to_string(priority));
  }
  std::lock_guard lock(mu_);
  JobRecord job;
  RETURN_IF_ERROR(InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r,
                     db_->Query(std::string("SELECT state FROM jobs WHERE id = $1") + std::string(db_->ForUpdate()),
                                {Int(id.value())}));
    if (r.rows.empty()) return NotFoundError("no job with id " + id.ToString());
    ASSIGN_OR_RETURN(JobState state, ParseJobState(ColText(r.rows[0], 0)));
    if (IsTerminal(state)) {
      return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(state)) +
                                     "; only an unfinished job's priority can change");
    }
    RETURN_IF_ERROR(db_->Query("UPDATE jobs SET priority = $2 WHERE id = $1", {Int(id.value()), Int(priority)}));
    EventRecord e;
    e.time_us = now;
    e.job = id;
    e.kind = "priority";
    e.reason = std::string(reason);
    RETURN_IF_ERROR(InsertEvent(e, nullptr));
    ASSIGN_OR_RETURN(job, LoadJob(*db_, id));  // the writer: sees the update above
    return Status::Ok();
  }));
  return job;
}

Result<std::vector<std::pair<JobId, TimeMicros>>> SqlStore::SuspensionsSince(TimeMicros since) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(SqlResult r, db_->Query("SELECT job_id, time_us FROM job_suspensions WHERE time_us >= $1 "
                                           "ORDER BY job_id, time_us",
                                           {Int(since)}));
  std::vector<std::pair<JobId, TimeMicros>> out;
  out.reserve(r.rows.size());
  for (const SqlRow& row : r.rows) out.emplace_back(JobId(ColInt(row, 0)), ColInt(row, 1));
  return out;
}

Status SqlStore::SetPendingReason(JobId id, std::string_view reason) {
  const std::string clipped = ClipReason(reason);
  std::lock_guard lock(mu_);
  // No explicit transaction: one statement is atomic, and when the reason is unchanged nothing is written.
  ASSIGN_OR_RETURN(SqlResult r, db_->Query("UPDATE jobs SET pending_reason = $2 WHERE id = $1 AND "
                                           "pending_reason <> $2",
                                           {Int(id.value()), Text(clipped)}));
  if (r.affected > 0) return Status::Ok();
  ASSIGN_OR_RETURN(SqlResult exists, db_->Query("SELECT id FROM jobs WHERE id = $1", {Int(id.value())}));
  if (exists.rows.empty()) return NotFoundError("no job with id " + id.ToString());
  return Status::Ok();
}

Status SqlStore::SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) {
  if (reasons.empty()) return Status::Ok();
  std::lock_guard lock(mu_);
  // A transaction that changes nothing writes nothing (no fsync) on either backend.
  return InTransaction([&]() -> Status {
    for (const auto& [id, reason] : reasons) {
      RETURN_IF_ERROR(
          db_->Query("UPDATE jobs SET pending_reason = $2 WHERE id = $1 AND state = 'queued' AND "
                     "pending_reason <> $2",
                     {Int(id.value()), Text(ClipReason(reason))}));
    }
    return Status::Ok();
  });
}

// ---- Tasks ----

Result<std::vector<TaskRecord>> SqlStore::ListTasks(JobId job) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  ASSIGN_OR_RETURN(SqlResult r, db.Query("SELECT id, job_id, replica, state, node, exit_code, updated_us "
                                         "FROM tasks WHERE job_id = $1 ORDER BY replica",
                                         {Int(job.value())}));
  if (r.rows.empty()) {
    ASSIGN_OR_RETURN(SqlResult exists, db.Query("SELECT id FROM jobs WHERE id = $1", {Int(job.value())}));
    if (exists.rows.empty()) return NotFoundError("no job with id " + job.ToString());
  }
  std::vector<TaskRecord> out;
  for (const SqlRow& row : r.rows) {
    TaskRecord t;
    t.id = TaskId(ColInt(row, 0));
    t.job = JobId(ColInt(row, 1));
    t.replica = static_cast<int>(ColInt(row, 2));
    ASSIGN_OR_RETURN(t.state, ParseJobState(ColText(row, 3)));
    t.node = ColText(row, 4);
    if (!ColNull(row, 5)) t.exit_code = static_cast<int>(ColInt(row, 5));
    t.updated_us = ColInt(row, 6);
    out.push_back(std::move(t));
  }
  return out;
}

Status SqlStore::UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) {
  return GroupWrite([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r, db_->Query("UPDATE tasks SET state = $3, exit_code = $4, updated_us = $5 "
                                             "WHERE job_id = $1 AND replica = $2",
                                             {Int(job.value()), Int(replica), Text(JobStateName(state)),
                                              exit_code ? Int(*exit_code) : SqlValue::Null(), Int(now)}));
    if (r.affected == 0) {
      return NotFoundError("job " + job.ToString() + " has no replica " + std::to_string(replica));
    }
    return Status::Ok();
  });
}

// ---- Events ----

Result<EventRecord> SqlStore::AppendEvent(const EventRecord& event) {
  if (event.kind.empty() || event.kind.size() > 64) return InvalidArgumentError("event kind must be 1..64 bytes");
  std::lock_guard lock(mu_);
  EventRecord stored = event;
  stored.reason = ClipReason(event.reason);
  RETURN_IF_ERROR(InTransaction([&]() { return InsertEvent(stored, &stored.id); }));
  return stored;
}

Result<std::vector<EventRecord>> SqlStore::JobEvents(JobId job, int limit) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  // The most recent `limit` events, returned oldest first.
  std::string sql = "SELECT id, time_us, job_id, kind, from_state, to_state, reason FROM events WHERE job_id = $1";
  std::vector<SqlValue> params = {Int(job.value())};
  if (limit > 0) {
    sql = "SELECT * FROM (" + sql + " ORDER BY id DESC LIMIT $2) AS recent ORDER BY id";
    params.push_back(Int(limit));
  } else {
    sql += " ORDER BY id";
  }
  return QueryEvents(db, sql, params);
}

Result<std::vector<EventRecord>> SqlStore::EventsSince(int64_t after_id, int limit) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::string sql =
      "SELECT id, time_us, job_id, kind, from_state, to_state, reason FROM events WHERE id > $1 "
      "ORDER BY id";
  std::vector<SqlValue> params = {Int(after_id)};
  if (limit > 0) {
    sql += " LIMIT $2";
    params.push_back(Int(limit));
  }
  return QueryEvents(db, sql, params);
}

}  // namespace xpool::store_internal
