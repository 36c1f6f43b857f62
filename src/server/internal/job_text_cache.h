#pragma once
// JobTextCache: each listed job's JSON text (AppendJobJson) kept between GET /api/v1/jobs calls and written again
// only when something it shows changed: the job's record (the job cache hands out a new record for every change
// of a job, so a record still alive and the same means the same job fields), its tenant's name, its pending reason
// or its placement. A 1,000-job page then costs lookups and copies, not 1,000 renderings.
// Internal to src/server. Owned by the API; thread-safe (one mutex, held for lookups and stores, not renderings).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/state_store.h"

namespace xpool::server::internal {

class JobTextCache {
 public:
  // At most this many jobs' texts are kept (~1 KB each); past it the cache starts over.
  static constexpr size_t kMaxEntries = 16384;

  // Appends the text AppendJobJson(out, *job, tenant_name, reason, placement, spec_text) would append.
  void Append(std::string* out, const std::shared_ptr<const JobRecord>& job, const std::string& tenant_name,
              const std::string& reason, const std::vector<AllocationRecord>& placement, std::string_view spec_text);

  size_t size() const;

 private:
  struct Entry {
    // Identity only. The job cache makes its records with make_shared, so while this weak_ptr lives the storage of
    // a replaced record (not its strings) stays allocated: at most one record per entry, until the job is listed
    // again or the cache starts over.
    std::weak_ptr<const JobRecord> record;
    std::string tenant_name;
    std::string reason;
    std::vector<AllocationRecord> placement;
    std::shared_ptr<const std::string> text;
  };
  mutable std::mutex mu_;
  std::unordered_map<int64_t, Entry> entries_;  // by job id; guarded by mu_
};

}  // namespace xpool::server::internal
