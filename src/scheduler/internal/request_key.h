#pragma once
// Request shapes as hash keys: equality and a hash over every TaskRequest field a placement reads (resources,
// vendor, model and uuid selectors, NUMA binding, MPS user). One definition for the Scheduler's per-shape caches and
// the scheduling pass's shape table. Stateless; thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/task_request.h"

namespace xpool::scheduler_internal {

inline bool SameRequest(const TaskRequest& a, const TaskRequest& b) {
  return a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib && a.device_count == b.device_count &&
         a.device_memory_mib == b.device_memory_mib && a.device_memory_percent == b.device_memory_percent &&
         a.device_compute_milli == b.device_compute_milli && a.vendor == b.vendor && a.type_include == b.type_include &&
         a.type_exclude == b.type_exclude && a.uuid_include == b.uuid_include && a.uuid_exclude == b.uuid_exclude &&
         a.numa_bind == b.numa_bind && a.mig_profile == b.mig_profile && a.mps_user == b.mps_user;
}

inline size_t HashRequest(const TaskRequest& r) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields SameRequest compares
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(r.cpu_milli));
  mix(static_cast<uint64_t>(r.memory_mib));
  mix(static_cast<uint64_t>(r.device_count));
  mix(static_cast<uint64_t>(r.device_memory_mib));
  mix(static_cast<uint64_t>(r.device_memory_percent));
  mix(static_cast<uint64_t>(r.device_compute_milli));
  mix(r.vendor.has_value() ? static_cast<uint64_t>(*r.vendor) + 1 : 0);
  mix(r.numa_bind ? 1 : 0);
  mix(r.mps_user);
  mix(std::hash<std::string>()(r.mig_profile));
  for (const std::vector<std::string>* list : {&r.type_include, &r.type_exclude, &r.uuid_include, &r.uuid_exclude}) {
    mix(list->size());
    for (const std::string& s : *list) mix(std::hash<std::string>()(s));
  }
  return static_cast<size_t>(h);
}

struct RequestHash {
  size_t operator()(const TaskRequest& r) const { return HashRequest(r); }
};

struct RequestEq {
  bool operator()(const TaskRequest& a, const TaskRequest& b) const { return SameRequest(a, b); }
};

}  // namespace xpool::scheduler_internal
