#include "server/internal/job_text_cache.h"

#include <utility>

#include "server/internal/json_codec.h"

namespace xpool::server::internal {

void JobTextCache::Append(std::string* out, const std::shared_ptr<const JobRecord>& job, const std::string& tenant_name,
                          const std::string& reason, const std::vector<AllocationRecord>& placement,
                          std::string_view spec_text) {
  const int64_t id = job->id.value();
  std::shared_ptr<const std::string> kept;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      const Entry& e = it->second;
      // An expired record is never equal: its memory may hold a newer record by now.
      if (e.record.lock() == job && e.tenant_name == tenant_name && e.reason == reason && e.placement == placement) {
        kept = e.text;
      }
    }
  }
  if (kept != nullptr) {
    out->append(*kept);
    return;
  }
  std::string text;
  AppendJobJson(&text, *job, tenant_name, reason, &placement, spec_text);
  out->append(text);
  auto made = std::make_shared<const std::string>(std::move(text));
  std::lock_guard lock(mu_);
  if (entries_.size() >= kMaxEntries && !entries_.contains(id)) entries_.clear();
  entries_[id] = Entry{job, tenant_name, reason, placement, std::move(made)};
}

size_t JobTextCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace xpool::server::internal
