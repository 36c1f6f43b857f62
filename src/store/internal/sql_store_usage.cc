// SqlStore: the usage history (minute rows, compacted into hour rows).
#include <string>

#include "store/internal/sql_rows.h"
#include "store/internal/sql_store.h"

namespace xpool::store_internal {
namespace {

constexpr int64_t kMinute = 60;
constexpr int64_t kHour = 3600;

constexpr const char* kUsageColumns =
    "width_s, bucket_us, job_id, node, device, tenant_id, seconds, measured_seconds, alloc_compute_milli_s, "
    "used_compute_milli_s, alloc_memory_mib_s, used_memory_mib_s";

// Adds to an existing row of the same key: amounts are integrals, so they sum.
constexpr const char* kAddUsage =
    "INSERT INTO usage_history (width_s, bucket_us, job_id, node, device, tenant_id, seconds, measured_seconds, "
    "alloc_compute_milli_s, used_compute_milli_s, alloc_memory_mib_s, used_memory_mib_s) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
    "ON CONFLICT (width_s, bucket_us, job_id, node, device) DO UPDATE SET "
    "seconds = usage_history.seconds + excluded.seconds, "
    "measured_seconds = usage_history.measured_seconds + excluded.measured_seconds, "
    "alloc_compute_milli_s = usage_history.alloc_compute_milli_s + excluded.alloc_compute_milli_s, "
    "used_compute_milli_s = usage_history.used_compute_milli_s + excluded.used_compute_milli_s, "
    "alloc_memory_mib_s = usage_history.alloc_memory_mib_s + excluded.alloc_memory_mib_s, "
    "used_memory_mib_s = usage_history.used_memory_mib_s + excluded.used_memory_mib_s";

Status CheckUsage(const UsageRecord& r) {
  if (r.width_s != kMinute && r.width_s != kHour) {
    return InvalidArgumentError("usage: width_s must be 60 or 3600, not " + std::to_string(r.width_s));
  }
  if (r.bucket_us < 0 || r.bucket_us % (r.width_s * kMicrosPerSecond) != 0) {
    return InvalidArgumentError("usage: bucket_us " + std::to_string(r.bucket_us) + " is not a multiple of " +
                                std::to_string(r.width_s) + " s");
  }
  for (int64_t v : {r.seconds, r.measured_seconds, r.alloc_compute_milli_s, r.used_compute_milli_s,
                    r.alloc_memory_mib_s, r.used_memory_mib_s}) {
    if (v < 0) return InvalidArgumentError("usage: amounts must not be negative");
  }
  return Status::Ok();
}

UsageRecord UsageFromRow(const SqlRow& row) {
  UsageRecord r;
  r.width_s = ColInt(row, 0);
  r.bucket_us = ColInt(row, 1);
  r.job = JobId(ColInt(row, 2));
  r.node = ColText(row, 3);
  r.device = static_cast<int>(ColInt(row, 4));
  r.tenant = TenantId(ColInt(row, 5));
  r.seconds = ColInt(row, 6);
  r.measured_seconds = ColInt(row, 7);
  r.alloc_compute_milli_s = ColInt(row, 8);
  r.used_compute_milli_s = ColInt(row, 9);
  r.alloc_memory_mib_s = ColInt(row, 10);
  r.used_memory_mib_s = ColInt(row, 11);
  return r;
}

}  // namespace

Status SqlStore::AddUsage(const std::vector<UsageRecord>& rows) {
  for (const UsageRecord& r : rows) RETURN_IF_ERROR(CheckUsage(r));
  if (rows.empty()) return Status::Ok();
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    for (const UsageRecord& r : rows) {
      const bool device_row = !r.job.valid();
      RETURN_IF_ERROR(
          db_->Query(kAddUsage, {Int(r.width_s), Int(r.bucket_us), Int(r.job.value()), Text(device_row ? r.node : ""),
                                 Int(device_row ? r.device : -1), Int(device_row ? 0 : r.tenant.value()),
                                 Int(r.seconds), Int(r.measured_seconds), Int(r.alloc_compute_milli_s),
                                 Int(r.used_compute_milli_s), Int(r.alloc_memory_mib_s), Int(r.used_memory_mib_s)}));
    }
    return Status::Ok();
  });
}

Result<std::vector<UsageRecord>> SqlStore::ListUsage(const UsageFilter& filter) {
  std::string sql = std::string("SELECT ") + kUsageColumns + " FROM usage_history WHERE bucket_us >= $1";
  std::vector<SqlValue> params = {Int(filter.since_us)};
  auto add = [&](const std::string& condition, SqlValue value) {
    params.push_back(std::move(value));
    sql += " AND " + condition + " $" + std::to_string(params.size());
  };
  if (filter.until_us > 0) add("bucket_us <", Int(filter.until_us));
  sql += filter.devices ? " AND job_id = 0" : " AND job_id <> 0";
  if (filter.tenant.valid()) add("tenant_id =", Int(filter.tenant.value()));
  if (filter.job.valid()) add("job_id =", Int(filter.job.value()));
  sql += " ORDER BY bucket_us, job_id, node, device, width_s";
  ReadConn conn(*this);
  ASSIGN_OR_RETURN(SqlResult result, conn.db().Query(sql, params));
  std::vector<UsageRecord> out;
  out.reserve(result.rows.size());
  for (const SqlRow& row : result.rows) out.push_back(UsageFromRow(row));
  return out;
}

Status SqlStore::CompactUsage(TimeMicros minutes_before, TimeMicros drop_before) {
  const int64_t hour_us = kHour * kMicrosPerSecond;
  // Whole hours only: an hour row is written once, from minute rows that are all older than the cut.
  const TimeMicros cut = minutes_before / hour_us * hour_us;
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult minutes, db_->Query(std::string("SELECT ") + kUsageColumns +
                                                       " FROM usage_history WHERE width_s = $1 AND bucket_us < $2",
                                                   {Int(kMinute), Int(cut)}));
    for (const SqlRow& row : minutes.rows) {
      UsageRecord r = UsageFromRow(row);
      r.width_s = kHour;
      r.bucket_us = r.bucket_us / hour_us * hour_us;
      RETURN_IF_ERROR(db_->Query(
          kAddUsage, {Int(r.width_s), Int(r.bucket_us), Int(r.job.value()), Text(r.node), Int(r.device),
                      Int(r.tenant.value()), Int(r.seconds), Int(r.measured_seconds), Int(r.alloc_compute_milli_s),
                      Int(r.used_compute_milli_s), Int(r.alloc_memory_mib_s), Int(r.used_memory_mib_s)}));
    }
    RETURN_IF_ERROR(
        db_->Query("DELETE FROM usage_history WHERE width_s = $1 AND bucket_us < $2", {Int(kMinute), Int(cut)}));
    RETURN_IF_ERROR(db_->Query("DELETE FROM usage_history WHERE bucket_us < $1", {Int(drop_before)}));
    return Status::Ok();
  });
}

}  // namespace xpool::store_internal
