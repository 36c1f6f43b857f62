#pragma once
// UnfitFrontier: the smallest plain requests known not to fit the cluster as it is now. Fit is
// monotone in a plain request's numbers — more CPU, memory, devices, device memory, device compute
// or replicas never fit where less did not — so a request at least as large in every number as a
// recorded one does not fit either, and the pass answers it without asking the placer. Only plain
// requests take part: no vendor, type, uuid or NUMA selector, device memory in MiB, no MPS user (a request of
// one user fits an MPS device another's does not). Keeps only
// minimal entries (at most kMaxEntries). Cleared whenever room appears. Reasons are kept as views: their texts
// must outlive the frontier (the pass keeps them in its result's TextArena). Not thread-safe.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/task_request.h"

namespace xpool::internal {

class UnfitFrontier {
 public:
  static constexpr int kMaxEntries = 64;

  static bool Eligible(const TaskRequest& r) {
    return !r.vendor && r.type_include.empty() && r.type_exclude.empty() && r.uuid_include.empty() &&
           r.uuid_exclude.empty() && !r.numa_bind && r.device_memory_percent == 0 && r.mig_profile.empty() &&
           r.mps_user == 0;
  }
  // A request's numbers as the frontier compares them (callers may keep it instead of the request).
  using Vec = std::array<int64_t, 6>;
  static Vec ToVec(const TaskRequest& r, int replicas) {
    return {r.cpu_milli, r.memory_mib, r.device_count, r.device_memory_mib, r.device_compute_milli, replicas};
  }
  // The reason recorded for a request this one is at least as large as; nullptr when none.
  const std::string_view* Covering(const TaskRequest& r, int replicas) const { return Covering(ToVec(r, replicas)); }
  const std::string_view* Covering(const Vec& v) const {
    for (const Entry& e : entries_) {
      if (AtLeast(v, e.v)) return &e.reason;
    }
    return nullptr;
  }
  void Add(const TaskRequest& r, int replicas, std::string_view reason) {
    const Vec v = ToVec(r, replicas);
    for (const Entry& e : entries_) {
      if (AtLeast(v, e.v)) return;  // already covered
    }
    std::erase_if(entries_, [&](const Entry& e) { return AtLeast(e.v, v); });
    if (static_cast<int>(entries_.size()) < kMaxEntries) entries_.push_back({v, reason});
  }
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    Vec v;
    std::string_view reason;
  };
  static bool AtLeast(const Vec& a, const Vec& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] < b[i]) return false;
    }
    return true;
  }
  std::vector<Entry> entries_;
};

}  // namespace xpool::internal
