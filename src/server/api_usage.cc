// GET /api/v1/usage: GPU-hours allocated and used per tenant (and per job), and allocation against measured use over
// time, from the store's usage history (server/usage_recorder.h).
#include <algorithm>
#include <map>

#include "server/internal/api_impl.h"
#include "server/internal/json_codec.h"

namespace xpool::server {
namespace {

using internal::Json;

constexpr int64_t kMaxPoints = 240;  // the series is coarsened to at most this many points
constexpr TimeMicros kMaxRange = 366 * 86400 * kMicrosPerSecond;

// "90s", "30m", "24h", "7d" → microseconds (1 s .. 366 d).
Result<TimeMicros> ParseRange(const std::string& text) {
  const std::string why = "since must be a duration such as 30m, 24h or 7d (at most 366d), not \"" + text + "\"";
  if (text.size() < 2 || text.size() > 12) return InvalidArgumentError(why);
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      return InvalidArgumentError(why);
  }
  int64_t n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return InvalidArgumentError(why);
    n = n * 10 + (text[i] - '0');
  }
  const TimeMicros range = n * unit * kMicrosPerSecond;
  if (n <= 0 || range > kMaxRange) return InvalidArgumentError(why);
  return range;
}

// Sums of rows; the amounts the API reports are derived from them.
struct Sums {
  int64_t seconds = 0, measured_seconds = 0;
  int64_t alloc_compute = 0, used_compute = 0, alloc_memory = 0, used_memory = 0;  // milli-s, MiB-s
  void Add(const UsageRecord& r) {
    seconds += r.seconds;
    measured_seconds += r.measured_seconds;
    alloc_compute += r.alloc_compute_milli_s;
    used_compute += r.used_compute_milli_s;
    alloc_memory += r.alloc_memory_mib_s;
    used_memory += r.used_memory_mib_s;
  }
  // Accounting: milli-GPU-hours (1000 = one device for one hour) and MiB-hours, rounded to the nearest.
  Json Totals() const {
    auto hours = [](int64_t per_second) { return (per_second + 1800) / 3600; };
    return {{"allocated_gpu_milli_hours", hours(alloc_compute)},
            {"used_gpu_milli_hours", hours(used_compute)},
            {"allocated_memory_mib_hours", hours(alloc_memory)},
            {"used_memory_mib_hours", hours(used_memory)},
            {"job_seconds", seconds},
            {"measured_seconds", measured_seconds}};
  }
};

// Seconds per point: whole minutes, at most kMaxPoints points; whole hours once hour rows are in range.
int64_t StepSeconds(TimeMicros range, bool has_hour_rows) {
  const int64_t range_s = range / kMicrosPerSecond;
  int64_t step = std::max<int64_t>(60, (range_s / kMaxPoints + 59) / 60 * 60);
  if (has_hour_rows) step = std::max<int64_t>(3600, (step + 3599) / 3600 * 3600);
  return step;
}

}  // namespace

Result<ApiResponse> Api::Impl::Usage(const ApiRequest& req, const Caller& caller, const Params&) {
  TimeMicros range = 7 * 86400 * kMicrosPerSecond;
  if (auto it = req.query.find("since"); it != req.query.end() && !it->second.empty()) {
    ASSIGN_OR_RETURN(range, ParseRange(it->second));
  }
  const auto by = req.query.find("by");
  const bool by_job = by != req.query.end() && by->second == "job";
  if (by != req.query.end() && !by_job && !by->second.empty()) return InvalidArgumentError("by must be \"job\"");
  UsageFilter filter;
  const TimeMicros now = clock.NowMicros();
  filter.since_us = now - range;
  if (!caller.tenant.admin) filter.tenant = caller.tenant.id;
  if (auto it = req.query.find("tenant"); it != req.query.end() && !it->second.empty()) {
    ASSIGN_OR_RETURN(TenantRecord t, NamedTenant(caller, it->second));  // another tenant's: 404, as for GET
    filter.tenant = t.id;
  }
  ASSIGN_OR_RETURN(std::vector<UsageRecord> rows, store.ListUsage(filter));
  ASSIGN_OR_RETURN(std::vector<TenantRecord> tenants, store.ListTenants());
  std::map<int64_t, std::string> names;
  for (const TenantRecord& t : tenants) names[t.id.value()] = t.name;

  const bool has_hour_rows = std::any_of(rows.begin(), rows.end(), [](const UsageRecord& r) { return r.width_s > 60; });
  const int64_t step_s = StepSeconds(range, has_hour_rows);
  const TimeMicros step_us = step_s * kMicrosPerSecond;
  std::map<int64_t, Sums> per_tenant, per_job;
  std::map<TimeMicros, Sums> series;
  for (const UsageRecord& r : rows) {
    per_tenant[r.tenant.value()].Add(r);
    if (by_job) per_job[r.job.value()].Add(r);
    series[r.bucket_us / step_us * step_us].Add(r);
  }
  Json tenants_json = Json::array();
  for (const auto& [id, sums] : per_tenant) {
    Json t = sums.Totals();
    t["tenant"] = names.count(id) ? names[id] : std::to_string(id);
    tenants_json.push_back(std::move(t));
  }
  Json points = Json::array();
  for (const auto& [bucket, sums] : series) {  // averages over the step: devices (milli) and MiB
    points.push_back({{"t", internal::FormatTime(bucket)},
                      {"time_us", bucket},
                      {"allocated_compute_milli", sums.alloc_compute / step_s},
                      {"used_compute_milli", sums.used_compute / step_s},
                      {"allocated_memory_mib", sums.alloc_memory / step_s},
                      {"used_memory_mib", sums.used_memory / step_s}});
  }
  Json out = {{"since", internal::FormatTime(filter.since_us)},
              {"until", internal::FormatTime(now)},
              {"step_s", step_s},
              {"tenants", std::move(tenants_json)},
              {"series", std::move(points)}};
  if (by_job) {
    Json jobs_json = Json::array();
    for (const auto& [id, sums] : per_job) {
      Json j = sums.Totals();
      j["id"] = id;
      Result<JobRecord> job = store.GetJob(JobId(id));
      j["name"] = job.ok() ? job->spec.name : "";
      j["tenant"] = job.ok() && names.count(job->tenant.value()) ? names[job->tenant.value()] : "";
      jobs_json.push_back(std::move(j));
    }
    out["jobs"] = std::move(jobs_json);
  }
  return internal::JsonResponse(200, out);
}

}  // namespace xpool::server
