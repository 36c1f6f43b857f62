#include "scheduler/queue/tenant_ledger.h"

#include <algorithm>
#include <string>

#include "common/units.h"

namespace xpool {
namespace {

// How an amount is shown in a reason (common/units.h): GPU compute in devices, memory in GiB, CPU in cores.
enum class Shown { kDevices, kGiB, kCores, kCount };

struct Dimension {
  const char* name;
  Shown shown;
  int64_t ResourceAmounts::*field;
};
constexpr Dimension kDimensions[] = {
    {"gpu", Shown::kDevices, &ResourceAmounts::gpu_compute_milli},
    {"gpu memory", Shown::kGiB, &ResourceAmounts::gpu_memory_mib},
    {"cpu", Shown::kCores, &ResourceAmounts::cpu_milli},
    {"running jobs", Shown::kCount, &ResourceAmounts::running_jobs},
};

std::string Amount(Shown shown, int64_t v) {
  switch (shown) {
    case Shown::kDevices:
    case Shown::kCores:
      return FormatMilliUnits(v);
    case Shown::kGiB:
      return FormatGiB(v);
    case Shown::kCount:
      break;
  }
  return std::to_string(v);
}

const char* Unit(Shown shown) {
  switch (shown) {
    case Shown::kDevices:
      return " devices";
    case Shown::kGiB:
      return " GiB";
    case Shown::kCores:
      return " cores";
    case Shown::kCount:
      break;
  }
  return "";
}

// True when used + demand exceeds limit in some dimension the demand uses (FirstBreach's test, without its text:
// a pass asks this for every waiting job, and most stay within their limits).
bool Breaches(const ResourceAmounts& used, const ResourceAmounts& demand, const ResourceAmounts& limit) {
  for (const Dimension& d : kDimensions) {
    const int64_t want = demand.*d.field;
    const int64_t cap = limit.*d.field;
    if (want != 0 && cap != kUnlimitedAmount && used.*d.field + want > cap) return true;
  }
  return false;
}

// The first dimension where used + demand exceeds limit, as a readable reason; "" when none.
std::string FirstBreach(const std::string& tenant, const std::string& scope, const ResourceAmounts& used,
                        const ResourceAmounts& demand, const ResourceAmounts& limit) {
  for (const Dimension& d : kDimensions) {
    const int64_t u = used.*d.field;
    const int64_t want = demand.*d.field;
    const int64_t cap = limit.*d.field;
    if (want == 0 || cap == kUnlimitedAmount || u + want <= cap) continue;
    std::string reason = "tenant " + tenant + " at its " + d.name + " limit" + scope + " (" + Amount(d.shown, u) + "/" +
                         Amount(d.shown, cap) + Unit(d.shown);
    if (u < cap) reason += ", job needs " + Amount(d.shown, want);
    return reason + ")";
  }
  return "";
}

bool InBand(const PriorityLimit& band, int priority) {
  return priority >= band.min_priority && priority <= band.max_priority;
}

// usage / capacity in parts per billion; 0 when the cluster has none of the resource.
int64_t SharePpb(int64_t usage, int64_t capacity) {
  if (capacity <= 0 || usage <= 0) return 0;
  return static_cast<int64_t>(static_cast<__int128>(usage) * 1'000'000'000 / capacity);
}

}  // namespace

TenantLedger::TenantLedger(const std::vector<Tenant>& tenants) {
  tenants_.reserve(tenants.size());
  for (const Tenant& t : tenants) {
    const int i = size();
    tenants_.push_back(&t);
    limited_.push_back(t.limit != ResourceAmounts::Unlimited() || !t.priority_limits.empty());
    usage_.emplace_back();
    version_.push_back(0);
    band_usage_.emplace_back(t.priority_limits.size());
    Status s = ValidateTenant(t);
    if (s.ok() && !index_.emplace(t.id, i).second) {
      s = InvalidArgumentError("tenant id " + t.id.ToString() + " is listed twice");
      errors_[index_[t.id]] = s;
    } else if (!s.ok()) {
      index_.emplace(t.id, i);
    }
    errors_.push_back(std::move(s));
  }
}

int TenantLedger::IndexOf(TenantId id) const {
  auto it = index_.find(id);
  return it == index_.end() ? -1 : it->second;
}

void TenantLedger::Add(int index, int priority, const ResourceAmounts& amounts) {
  usage_[index].Add(amounts);
  ++version_[index];
  const std::vector<PriorityLimit>& bands = tenants_[index]->priority_limits;
  for (size_t b = 0; b < bands.size(); ++b) {
    if (InBand(bands[b], priority)) band_usage_[index][b].Add(amounts);
  }
}

void TenantLedger::Remove(int index, int priority, const ResourceAmounts& amounts) {
  usage_[index].Subtract(amounts);
  ++version_[index];
  const std::vector<PriorityLimit>& bands = tenants_[index]->priority_limits;
  for (size_t b = 0; b < bands.size(); ++b) {
    if (InBand(bands[b], priority)) band_usage_[index][b].Subtract(amounts);
  }
}

std::string TenantLedger::FirstLimitBreach(int index, int priority, const ResourceAmounts& demand) const {
  const Tenant& t = *tenants_[index];
  if (Breaches(usage_[index], demand, t.limit)) return FirstBreach(t.name, "", usage_[index], demand, t.limit);
  for (size_t b = 0; b < t.priority_limits.size(); ++b) {
    const PriorityLimit& band = t.priority_limits[b];
    if (!InBand(band, priority) || !Breaches(band_usage_[index][b], demand, band.limit)) continue;
    const std::string scope =
        " for priority " + std::to_string(band.min_priority) + ".." + std::to_string(band.max_priority);
    return FirstBreach(t.name, scope, band_usage_[index][b], demand, band.limit);
  }
  return "";
}

bool TenantLedger::AboveGuarantee(int index) const {
  const ResourceAmounts& u = usage_[index];
  const ResourceAmounts& g = tenants_[index]->guaranteed;
  return u.gpu_compute_milli > g.gpu_compute_milli || u.gpu_memory_mib > g.gpu_memory_mib || u.cpu_milli > g.cpu_milli;
}

int64_t TenantLedger::DominantSharePpb(int index, const ClusterTotals& totals) const {
  const ResourceAmounts& u = usage_[index];
  return std::max({SharePpb(u.gpu_compute_milli, totals.device_compute_capacity_milli),
                   SharePpb(u.gpu_memory_mib, totals.device_memory_capacity_mib),
                   SharePpb(u.cpu_milli, totals.cpu_capacity_milli)});
}

}  // namespace xpool
