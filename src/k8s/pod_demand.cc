#include "k8s/pod_demand.h"

#include <algorithm>
#include <limits>

#include "k8s/quantity.h"
#include "model/mig_profile.h"
#include "model/vendor.h"

namespace xpool::k8s {
namespace {

// The quantity a container gives for `resource`: limits first (what HAMi reads), else requests. nullptr if none.
const std::string* Lookup(const ContainerResources& c, std::string_view resource) {
  if (resource.empty()) return nullptr;
  auto it = c.limits.find(std::string(resource));
  if (it != c.limits.end()) return &it->second;
  it = c.requests.find(std::string(resource));
  if (it != c.requests.end()) return &it->second;
  return nullptr;
}

std::string Where(const ContainerResources& c, std::string_view resource, const std::string& value) {
  return "container \"" + c.name + "\": " + std::string(resource) + " \"" + value + "\"";
}

Result<int64_t> WholeNumber(const ContainerResources& c, std::string_view resource, const std::string& value,
                            std::string_view counts) {
  Result<int64_t> n = WholeQuantity(value, resource);
  if (!n.ok()) {
    return InvalidArgumentError("container \"" + c.name + "\": " + n.status().message() + " (it counts " +
                                std::string(counts) + ")");
  }
  return n;
}

// "A100, H100" → {"A100", "H100"}; empty items are an error (a stray comma usually hides a typo).
Result<std::vector<std::string>> SplitList(std::string_view annotation, std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.empty()) {
      return InvalidArgumentError("annotation " + std::string(annotation) + " \"" + std::string(text) +
                                  "\" has an empty item (write a comma-separated list)");
    }
    out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

bool NamesAny(const ContainerResources& c, const VendorProfile& p);
Status ApplyAnnotations(const PodInfo& pod, const VendorProfile& p, TaskRequest* r);

constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// The container's NVIDIA MIG resource (nvidia.com/mig-<profile>, as NVIDIA's device plugin names instances in its
// mixed strategy): its name and quantity, limits first; nullptr when it names none.
const std::pair<const std::string, std::string>* MigResource(const ContainerResources& c) {
  for (const auto* map : {&c.limits, &c.requests}) {
    for (const auto& entry : *map) {
      if (entry.first.starts_with(kMigResourcePrefix)) return &entry;
    }
  }
  return nullptr;
}

// A container asking for a MIG instance: one instance of the profile, held whole (the type and uuid annotations
// still apply). Mixing it with the count or share resources is an error, as is more than one instance.
Result<TaskRequest> MigContainerRequest(const PodInfo& pod, const ContainerResources& c,
                                        const std::pair<const std::string, std::string>& resource) {
  const VendorProfile& nvidia = ProfileFor(Vendor::kNvidia);
  if (NamesAny(c, nvidia)) {
    return InvalidArgumentError("container \"" + c.name + "\": give " + resource.first + " or " +
                                std::string(nvidia.count_resource) + " and its shares, not both");
  }
  Result<std::string> profile = MigProfileFromResourceName(resource.first);
  if (!profile.ok()) return InvalidArgumentError("container \"" + c.name + "\": " + profile.status().message());
  ASSIGN_OR_RETURN(int64_t n, WholeNumber(c, resource.first, resource.second, "MIG instances"));
  if (n == 0) return TaskRequest{};
  if (n > 1) {
    return InvalidArgumentError(Where(c, resource.first, resource.second) +
                                ": one MIG instance per container (a task runs on one instance)");
  }
  TaskRequest r;
  r.vendor = Vendor::kNvidia;
  r.device_count = 1;
  r.device_memory_percent = 100;
  r.device_compute_milli = kWholeDeviceMilli;
  r.mig_profile = *profile;
  RETURN_IF_ERROR(ApplyAnnotations(pod, nvidia, &r));
  if (Status s = ValidateTaskRequest(r); !s.ok()) {
    return InvalidArgumentError("container \"" + c.name + "\": " + s.message());
  }
  return r;
}

bool NamesAny(const ContainerResources& c, const VendorProfile& p) {
  for (std::string_view r : {p.count_resource, p.memory_resource, p.memory_percent_resource, p.cores_resource}) {
    if (Lookup(c, r) != nullptr) return true;
  }
  return false;
}

Status ApplyAnnotations(const PodInfo& pod, const VendorProfile& p, TaskRequest* r) {
  struct ListAnnotation {
    std::string_view name;
    std::vector<std::string>* target;
  };
  const ListAnnotation lists[] = {{p.use_type_annotation, &r->type_include},
                                  {p.nouse_type_annotation, &r->type_exclude},
                                  {p.use_uuid_annotation, &r->uuid_include},
                                  {p.nouse_uuid_annotation, &r->uuid_exclude}};
  for (const ListAnnotation& a : lists) {
    if (a.name.empty()) continue;
    auto it = pod.annotations.find(std::string(a.name));
    if (it == pod.annotations.end()) continue;
    ASSIGN_OR_RETURN(*a.target, SplitList(a.name, it->second));
  }
  auto numa = pod.annotations.find(std::string(kNumaBindAnnotation));
  if (numa != pod.annotations.end()) {
    if (numa->second != "true" && numa->second != "false") {
      return InvalidArgumentError("annotation " + std::string(kNumaBindAnnotation) + " \"" + numa->second +
                                  "\" must be \"true\" or \"false\"");
    }
    r->numa_bind = numa->second == "true";
  }
  return Status::Ok();
}

// The request of one container for one vendor (the container names at least one of its resources).
Result<TaskRequest> ContainerRequest(const PodInfo& pod, const ContainerResources& c, const VendorProfile& p) {
  TaskRequest r;
  r.vendor = p.vendor;
  r.device_count = 1;  // HAMi: memory or cores without a count means one device
  if (const std::string* v = Lookup(c, p.count_resource)) {
    ASSIGN_OR_RETURN(int64_t n, WholeNumber(c, p.count_resource, *v, "devices"));
    if (n == 0) return TaskRequest{};  // an explicit 0 asks for nothing
    if (n > 1024) return InvalidArgumentError(Where(c, p.count_resource, *v) + " is more devices than any node has");
    r.device_count = static_cast<int>(n);
  }
  const std::string* mem = Lookup(c, p.memory_resource);
  const std::string* pct = Lookup(c, p.memory_percent_resource);
  if (mem != nullptr && pct != nullptr) {
    return InvalidArgumentError("container \"" + c.name + "\": give " + std::string(p.memory_resource) + " or " +
                                std::string(p.memory_percent_resource) + ", not both");
  }
  if (mem != nullptr) {
    const std::string unit = p.memory_unit_mib == 1 ? "MiB" : "units of " + std::to_string(p.memory_unit_mib) + " MiB";
    ASSIGN_OR_RETURN(int64_t units, WholeNumber(c, p.memory_resource, *mem, unit));
    if (units == 0) return InvalidArgumentError(Where(c, p.memory_resource, *mem) + " must be positive");
    if (units > std::numeric_limits<int64_t>::max() / p.memory_unit_mib / 1024) {
      return InvalidArgumentError(Where(c, p.memory_resource, *mem) + " is too large");
    }
    r.device_memory_mib = units * p.memory_unit_mib;
  } else if (pct != nullptr) {
    ASSIGN_OR_RETURN(int64_t percent, WholeNumber(c, p.memory_percent_resource, *pct, "percent"));
    if (percent < 1 || percent > 100) {
      return InvalidArgumentError(Where(c, p.memory_percent_resource, *pct) + " must be 1..100");
    }
    r.device_memory_percent = static_cast<int>(percent);
  } else {
    r.device_memory_percent = 100;  // HAMi: no memory given = the whole device's memory
  }
  if (const std::string* cores = Lookup(c, p.cores_resource)) {
    ASSIGN_OR_RETURN(int64_t percent, WholeNumber(c, p.cores_resource, *cores, "percent of a device"));
    if (percent > 100) return InvalidArgumentError(Where(c, p.cores_resource, *cores) + " must be 0..100");
    r.device_compute_milli = percent * 10;
  }
  RETURN_IF_ERROR(ApplyAnnotations(pod, p, &r));
  if (Status s = ValidateTaskRequest(r); !s.ok()) {
    return InvalidArgumentError("container \"" + c.name + "\": " + s.message());
  }
  return r;
}

}  // namespace

bool RequestsManagedResources(const PodInfo& pod) {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerResources& c : *list) {
      if (MigResource(c) != nullptr) return true;
      for (const VendorProfile& p : AllVendorProfiles()) {
        if (NamesAny(c, p)) return true;
      }
    }
  }
  return false;
}

std::vector<std::string> ManagedResourceNames() {
  std::vector<std::string> out;
  for (const VendorProfile& p : AllVendorProfiles()) {
    for (std::string_view r : {p.count_resource, p.memory_resource, p.memory_percent_resource, p.cores_resource}) {
      if (!r.empty()) out.emplace_back(r);
    }
  }
  for (const MigModel& model : AllMigModels()) {
    for (const MigProfile& profile : model.profiles) {
      std::string name = MigResourceName(profile.name);
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
    }
  }
  return out;
}

Result<PodDemand> PodToDemand(const PodInfo& pod) {
  PodDemand demand;
  std::vector<std::pair<const ContainerResources*, ContainerPhase>> all;
  for (const ContainerResources& c : pod.init_containers) {
    all.emplace_back(&c, c.sidecar ? ContainerPhase::kSidecar : ContainerPhase::kInit);
  }
  for (const ContainerResources& c : pod.containers) all.emplace_back(&c, ContainerPhase::kApp);
  for (const auto& [container, phase] : all) {
    const ContainerResources& c = *container;
    if (const auto* mig = MigResource(c)) {
      ASSIGN_OR_RETURN(TaskRequest r, MigContainerRequest(pod, c, *mig));
      if (r.device_count > 0) demand.containers.push_back({c.name, std::move(r), phase});
      continue;
    }
    const VendorProfile* vendor = nullptr;
    for (const VendorProfile& p : AllVendorProfiles()) {
      if (!NamesAny(c, p)) continue;
      if (vendor != nullptr) {
        return InvalidArgumentError("container \"" + c.name + "\" asks for both " + std::string(vendor->name) +
                                    " and " + std::string(p.name) + " devices; use one vendor per container");
      }
      vendor = &p;
    }
    if (vendor == nullptr) continue;
    ASSIGN_OR_RETURN(TaskRequest r, ContainerRequest(pod, c, *vendor));
    if (r.device_count == 0) continue;
    demand.containers.push_back({c.name, std::move(r), phase});
  }
  for (std::string_view key : {kPolicyAnnotation, kHamiPolicyAnnotation}) {
    auto it = pod.annotations.find(std::string(key));
    if (it != pod.annotations.end() && demand.policy.empty()) demand.policy = it->second;
  }
  return demand;
}

}  // namespace xpool::k8s
