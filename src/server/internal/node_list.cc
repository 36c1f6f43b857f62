#include "server/internal/node_list.h"

#include <charconv>

#include "server/internal/json_codec.h"

namespace xpool::server::internal {

std::string NodeListCache::Render(const ControlPlane& control) {
  std::lock_guard lock(mu_);
  std::vector<TimeMicros> last_seen;
  control.VisitNodes([&](const ControlPlane::NodeVisit& v) {
    if (entries_.size() <= static_cast<size_t>(v.index)) entries_.resize(v.index + 1);
    Entry& e = entries_[v.index];
    if (!e.valid || e.state_identity != v.state_identity || e.generation != v.usage.generation) {
      e.head.clear();
      e.tail.clear();
      AppendNodeJsonHead(&e.head, v.node, v.usage);
      AppendNodeJsonTail(&e.tail, v.node, v.usage);
      e.valid = true;
      e.state_identity = v.state_identity;
      e.generation = v.usage.generation;
    }
    last_seen.push_back(v.last_seen_us);
  });
  entries_.resize(last_seen.size());
  size_t size = 16;
  for (const Entry& e : entries_) size += e.head.size() + e.tail.size() + 24;
  std::string out;
  out.reserve(size);
  out.append("{\"nodes\":[");
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(entries_[i].head);
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), last_seen[i]);
    out.append(digits, end);
    out.append(entries_[i].tail);
  }
  out.append("]}");
  return out;
}

}  // namespace xpool::server::internal
