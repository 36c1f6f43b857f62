#include "store/internal/schema.h"

namespace xpool::store_internal {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> migrations = {
      {1, R"(
CREATE TABLE tenants (
  id {{ID}},
  name TEXT NOT NULL UNIQUE,
  admin INTEGER NOT NULL,
  quota_devices BIGINT NOT NULL,
  quota_device_memory_mib BIGINT NOT NULL,
  quota_device_compute_milli BIGINT NOT NULL,
  quota_cpu_milli BIGINT NOT NULL,
  quota_memory_mib BIGINT NOT NULL,
  created_us BIGINT NOT NULL);
CREATE TABLE tokens (
  id {{ID}},
  tenant_id BIGINT NOT NULL REFERENCES tenants(id),
  hash TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  created_us BIGINT NOT NULL);
CREATE TABLE jobs (
  id {{ID}},
  tenant_id BIGINT NOT NULL REFERENCES tenants(id),
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  priority INTEGER NOT NULL,
  submitted_us BIGINT NOT NULL,
  updated_us BIGINT NOT NULL,
  restart_count INTEGER NOT NULL DEFAULT 0,
  pending_reason TEXT NOT NULL DEFAULT '',
  state_reason TEXT NOT NULL DEFAULT '');
CREATE INDEX jobs_tenant ON jobs(tenant_id, id);
CREATE TABLE tasks (
  id {{ID}},
  job_id BIGINT NOT NULL REFERENCES jobs(id),
  replica INTEGER NOT NULL,
  state TEXT NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  updated_us BIGINT NOT NULL,
  UNIQUE (job_id, replica));
CREATE TABLE allocations (
  job_id BIGINT NOT NULL REFERENCES jobs(id),
  replica INTEGER NOT NULL,
  node TEXT NOT NULL,
  cpu_milli BIGINT NOT NULL,
  memory_mib BIGINT NOT NULL,
  PRIMARY KEY (job_id, replica));
CREATE TABLE allocation_devices (
  job_id BIGINT NOT NULL,
  replica INTEGER NOT NULL,
  ordinal INTEGER NOT NULL,
  device_uuid TEXT NOT NULL,
  memory_mib BIGINT NOT NULL,
  compute_milli BIGINT NOT NULL,
  PRIMARY KEY (job_id, replica, ordinal),
  FOREIGN KEY (job_id, replica) REFERENCES allocations(job_id, replica) ON DELETE CASCADE);
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  labels TEXT NOT NULL,
  cpu_milli BIGINT NOT NULL,
  memory_mib BIGINT NOT NULL,
  links TEXT NOT NULL,
  ready INTEGER NOT NULL,
  cordoned INTEGER NOT NULL,
  simulated INTEGER NOT NULL,
  registered_us BIGINT NOT NULL,
  updated_us BIGINT NOT NULL);
CREATE TABLE devices (
  node TEXT NOT NULL REFERENCES nodes(name) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  uuid TEXT NOT NULL UNIQUE,
  vendor TEXT NOT NULL,
  model TEXT NOT NULL,
  memory_mib BIGINT NOT NULL,
  compute_milli BIGINT NOT NULL,
  max_sharers INTEGER NOT NULL,
  numa_node INTEGER NOT NULL,
  mode TEXT NOT NULL,
  healthy INTEGER NOT NULL,
  cordoned INTEGER NOT NULL,
  PRIMARY KEY (node, idx));
CREATE TABLE events (
  id {{ID}},
  time_us BIGINT NOT NULL,
  job_id BIGINT NOT NULL DEFAULT 0,
  kind TEXT NOT NULL,
  from_state TEXT NOT NULL DEFAULT '',
  to_state TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL);
CREATE INDEX events_job ON events(job_id, id);
)"},
      // v2: the scheduling loop reads the queue by state; keep that an index scan.
      {2, R"(
CREATE INDEX jobs_state ON jobs(state, priority, submitted_us);
)"},
      // v3: tenant guarantees (time-sharing); -1 = none.
      {3, R"(
ALTER TABLE tenants ADD COLUMN guar_devices BIGINT NOT NULL DEFAULT -1;
ALTER TABLE tenants ADD COLUMN guar_device_memory_mib BIGINT NOT NULL DEFAULT -1;
ALTER TABLE tenants ADD COLUMN guar_device_compute_milli BIGINT NOT NULL DEFAULT -1;
ALTER TABLE tenants ADD COLUMN guar_cpu_milli BIGINT NOT NULL DEFAULT -1;
ALTER TABLE tenants ADD COLUMN guar_memory_mib BIGINT NOT NULL DEFAULT -1;
)"},
      // v4: what the no-thrash rules count survives a restart: the last start (min-runtime; jobs running at the
      // upgrade started at their last state change at the latest) and every suspension (the per-hour cap);
      // per-priority tenant limits.
      {4, R"(
ALTER TABLE jobs ADD COLUMN last_start_us BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET last_start_us = updated_us WHERE state IN ('running', 'suspending');
CREATE TABLE job_suspensions (
  job_id BIGINT NOT NULL REFERENCES jobs(id),
  time_us BIGINT NOT NULL);
CREATE INDEX job_suspensions_time ON job_suspensions(time_us);
CREATE TABLE tenant_priority_quotas (
  tenant_id BIGINT NOT NULL REFERENCES tenants(id),
  min_priority INTEGER NOT NULL,
  max_priority INTEGER NOT NULL,
  devices BIGINT NOT NULL,
  device_memory_mib BIGINT NOT NULL,
  device_compute_milli BIGINT NOT NULL,
  cpu_milli BIGINT NOT NULL,
  memory_mib BIGINT NOT NULL);
CREATE INDEX tenant_priority_quotas_tenant ON tenant_priority_quotas(tenant_id, min_priority);
)"},
      // v5: the usage history (StateStore::AddUsage): minute rows, compacted into hour rows. Jobs' rows have
      // node '' and device -1; devices' rows have tenant 0 and job 0.
      {5, R"(
CREATE TABLE usage_history (
  width_s INTEGER NOT NULL,
  bucket_us BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  node TEXT NOT NULL,
  device INTEGER NOT NULL,
  tenant_id BIGINT NOT NULL,
  seconds BIGINT NOT NULL,
  measured_seconds BIGINT NOT NULL,
  alloc_compute_milli_s BIGINT NOT NULL,
  used_compute_milli_s BIGINT NOT NULL,
  alloc_memory_mib_s BIGINT NOT NULL,
  used_memory_mib_s BIGINT NOT NULL,
  PRIMARY KEY (width_s, bucket_us, job_id, node, device));
CREATE INDEX usage_history_bucket ON usage_history(bucket_us);
CREATE INDEX usage_history_tenant ON usage_history(tenant_id, bucket_us);
)"},
  };
  return migrations;
}

namespace {

std::string Expand(const std::string& sql, std::string_view id_column) {
  std::string out = sql;
  const std::string token = "{{ID}}";
  for (size_t pos = out.find(token); pos != std::string::npos; pos = out.find(token, pos)) {
    out.replace(pos, token.size(), id_column);
    pos += id_column.size();
  }
  return out;
}

}  // namespace

Result<int> CurrentSchemaVersion(SqlBackend& db) {
  RETURN_IF_ERROR(db.ExecScript("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  ASSIGN_OR_RETURN(SqlResult r, db.Query("SELECT MAX(version) FROM schema_version", {}));
  if (r.rows.empty() || r.rows[0].empty() || !r.rows[0][0]) return 0;
  return std::stoi(*r.rows[0][0]);
}

Status Migrate(SqlBackend& db, int target) {
  if (target < 0) target = LatestSchemaVersion();
  RETURN_IF_ERROR(db.ExecScript("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  for (const Migration& m : Migrations()) {
    if (m.version > target) break;
    RETURN_IF_ERROR(db.Begin());
    Status s = [&]() -> Status {
      RETURN_IF_ERROR(db.LockForMigration());
      ASSIGN_OR_RETURN(int current, CurrentSchemaVersion(db));
      if (current > LatestSchemaVersion()) {
        return FailedPreconditionError("the database has schema version " + std::to_string(current) +
                                       ", newer than this binary knows (" + std::to_string(LatestSchemaVersion()) +
                                       ")");
      }
      if (current < m.version) {  // else applied already (perhaps by another server)
        RETURN_IF_ERROR(
            db.ExecScript(Expand(m.sql, db.IdColumn())).WithContext("schema migration " + std::to_string(m.version)));
        RETURN_IF_ERROR(db.Query("INSERT INTO schema_version (version) VALUES ($1)", {SqlValue::Int(m.version)}));
      }
      return db.Commit();
    }();
    if (!s.ok()) {
      db.Rollback();
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace xpool::store_internal
