#include "k8s/time_share.h"

#include <algorithm>
#include <ctime>
#include <initializer_list>

#include "common/units.h"
#include "k8s/internal/kube_json.h"
#include "model/job_spec.h"
#include "scheduler/queue/quota_amounts.h"

namespace xpool::k8s {
namespace {

using internal::Json;

Status CheckKeys(const Json& o, const std::string& where, std::initializer_list<std::string_view> allowed) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return InvalidArgumentError(where + ": unknown field \"" + it.key() + "\"");
    }
  }
  return Status::Ok();
}

Result<int64_t> NonNegativeInt(const Json& v, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return InvalidArgumentError(where + ": must be a non-negative integer");
  }
  return v.get<int64_t>();
}

// A quantity written as text ("80Gi", "500m") or as a plain integer (MiB, cores).
Result<int64_t> UnitField(const Json& v, const std::string& where, bool cpu) {
  if (v.is_number_integer()) {
    ASSIGN_OR_RETURN(int64_t n, NonNegativeInt(v, where));
    return cpu ? n * 1000 : n;
  }
  if (!v.is_string()) return InvalidArgumentError(where + ": must be a string such as \"80Gi\" or an integer");
  const std::string text = v.get<std::string>();
  Result<int64_t> parsed = cpu ? ParseCpuMilli(text) : ParseMemoryMiB(text);
  if (!parsed.ok()) return InvalidArgumentError(where + ": \"" + text + "\": " + parsed.status().message());
  if (*parsed < 0) return InvalidArgumentError(where + ": must not be negative");
  return parsed;
}

// The quota object as amounts, with the server's rules: `devices` counts 1000 compute-milli each and caps
// device_compute_milli when both are given; a field not given is `unset`.
Result<ResourceAmounts> AmountsFromJson(const Json& q, const std::string& where, int64_t unset) {
  if (!q.is_object()) return InvalidArgumentError(where + ": must be an object");
  RETURN_IF_ERROR(CheckKeys(q, where, {"devices", "device_memory", "device_compute_milli", "cpu"}));
  ResourceAmounts out = ResourceAmounts::Unlimited();
  out.gpu_compute_milli = out.gpu_memory_mib = out.cpu_milli = unset;
  int64_t devices = -1, compute = -1;
  if (q.contains("devices")) {
    ASSIGN_OR_RETURN(devices, NonNegativeInt(q["devices"], where + ".devices"));
  }
  if (q.contains("device_compute_milli")) {
    ASSIGN_OR_RETURN(compute, NonNegativeInt(q["device_compute_milli"], where + ".device_compute_milli"));
  }
  if (devices > 1'000'000) return InvalidArgumentError(where + ".devices: at most 1000000");
  out.gpu_compute_milli = QuotaGpuComputeMilli(devices, compute, unset);
  if (q.contains("device_memory")) {
    ASSIGN_OR_RETURN(out.gpu_memory_mib, UnitField(q["device_memory"], where + ".device_memory", false));
  }
  if (q.contains("cpu")) {
    ASSIGN_OR_RETURN(out.cpu_milli, UnitField(q["cpu"], where + ".cpu", true));
  }
  return out;
}

Result<int> PriorityField(const Json& v, const std::string& where) {
  if (v.is_number_integer()) {
    const int64_t p = v.get<int64_t>();
    if (p < kMinPriority || p > kMaxPriority) return InvalidArgumentError(where + ": must be 0..100");
    return static_cast<int>(p);
  }
  if (!v.is_string()) return InvalidArgumentError(where + ": must be 0..100, low, normal or high");
  Result<int> p = ParsePriority(v.get<std::string>());
  if (!p.ok()) return InvalidArgumentError(where + ": " + p.status().message());
  return p;
}

Result<Tenant> TenantFromJson(const Json& t, const std::string& where, TenantId id) {
  if (!t.is_object()) return InvalidArgumentError(where + ": must be an object");
  RETURN_IF_ERROR(CheckKeys(t, where, {"namespace", "guaranteed", "quota", "priority_quotas"}));
  Tenant out;
  out.id = id;
  if (!t.contains("namespace") || !t["namespace"].is_string() || t["namespace"].get<std::string>().empty()) {
    return InvalidArgumentError(where + ".namespace: must be a non-empty string");
  }
  out.name = t["namespace"].get<std::string>();
  if (t.contains("quota")) {
    ASSIGN_OR_RETURN(out.limit, AmountsFromJson(t["quota"], where + ".quota", kUnlimitedAmount));
  }
  if (t.contains("guaranteed")) {
    // As on the server: a guarantee names what it covers; the resources it does not name do not constrain it.
    ASSIGN_OR_RETURN(ResourceAmounts g, AmountsFromJson(t["guaranteed"], where + ".guaranteed", kUnlimitedAmount));
    out.guaranteed = CapGuaranteeAtLimit(g, out.limit);
  }
  if (t.contains("priority_quotas")) {
    const Json& list = t["priority_quotas"];
    if (!list.is_array()) return InvalidArgumentError(where + ".priority_quotas: must be a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = where + ".priority_quotas[" + std::to_string(i) + "]";
      const Json& b = list[i];
      if (!b.is_object()) return InvalidArgumentError(w + ": must be an object");
      RETURN_IF_ERROR(CheckKeys(b, w, {"min_priority", "max_priority", "quota"}));
      PriorityLimit band;
      if (b.contains("min_priority")) {
        ASSIGN_OR_RETURN(band.min_priority, PriorityField(b["min_priority"], w + ".min_priority"));
      }
      if (b.contains("max_priority")) {
        ASSIGN_OR_RETURN(band.max_priority, PriorityField(b["max_priority"], w + ".max_priority"));
      }
      if (!b.contains("quota")) return InvalidArgumentError(w + ".quota: is missing");
      ASSIGN_OR_RETURN(band.limit, AmountsFromJson(b["quota"], w + ".quota", kUnlimitedAmount));
      out.priority_limits.push_back(band);
    }
  }
  if (Status s = ValidateTenant(out); !s.ok()) return InvalidArgumentError(where + ": " + s.message());
  return out;
}

}  // namespace

Result<PodTerms> PodTermsOf(const PodInfo& pod) {
  PodTerms out;
  out.tenant = pod.namespace_name;
  if (pod.priority) out.priority = std::clamp<int>(*pod.priority, kMinPriority, kMaxPriority);
  auto priority = pod.annotations.find(std::string(kPriorityAnnotation));
  if (priority != pod.annotations.end()) {
    Result<int> p = ParsePriority(priority->second);
    if (!p.ok()) {
      return InvalidArgumentError("annotation " + std::string(kPriorityAnnotation) + ": \"" + priority->second +
                                  "\" is not a priority (0..100, low, normal or high)");
    }
    out.priority = *p;
  }
  auto preemptible = pod.annotations.find(std::string(kPreemptibleAnnotation));
  if (preemptible != pod.annotations.end()) {
    if (preemptible->second != "true" && preemptible->second != "false") {
      return InvalidArgumentError("annotation " + std::string(kPreemptibleAnnotation) + ": \"" + preemptible->second +
                                  "\" must be \"true\" or \"false\"");
    }
    out.preemptible = preemptible->second == "true";
  }
  for (const PodInfo::Owner& o : pod.owners) {
    if (o.controller) out.owner = o.kind + "/" + pod.namespace_name + "/" + o.name;
  }
  return out;
}

std::string QueueKey(const PodInfo& pod, const PodTerms& terms) {
  return terms.owner.empty() ? "Pod/" + pod.Key() : terms.owner;
}

Result<TenantConfig> TenantConfig::Parse(std::string_view text) {
  ASSIGN_OR_RETURN(Json root, internal::ParseJson(text, "the tenant configuration"));
  if (!root.is_object()) return InvalidArgumentError("tenant configuration: must be an object {\"tenants\": [...]}");
  RETURN_IF_ERROR(CheckKeys(root, "tenant configuration", {"tenants"}));
  TenantConfig out;
  if (!root.contains("tenants")) return out;
  const Json& list = root["tenants"];
  if (!list.is_array()) return InvalidArgumentError("tenants: must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "tenants[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(Tenant t, TenantFromJson(list[i], where, TenantId(static_cast<int64_t>(i) + 1)));
    if (!out.by_namespace_.emplace(t.name, out.tenants_.size()).second) {
      return InvalidArgumentError(where + ".namespace: \"" + t.name + "\" is listed twice");
    }
    out.tenants_.push_back(std::move(t));
  }
  return out;
}

const Tenant* TenantConfig::Find(const std::string& ns) const {
  auto it = by_namespace_.find(ns);
  return it == by_namespace_.end() ? nullptr : &tenants_[it->second];
}

std::string FormatRfc3339(TimeMicros us) {
  const std::time_t seconds = static_cast<std::time_t>(us / kMicrosPerSecond);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace xpool::k8s
