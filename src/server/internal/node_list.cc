#include "server/internal/node_list.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <string_view>

#include "server/internal/json_codec.h"

namespace xpool::server::internal {
namespace {

constexpr std::string_view kCursorTag = "n1.";  // then hex digits only: a JSON string needing no escapes
constexpr size_t kMaxCursorName = 1024;

}  // namespace

std::string EncodeNodeCursor(const std::string& last_name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kCursorTag);
  for (unsigned char c : last_name) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

Result<std::string> DecodeNodeCursor(const std::string& cursor) {
  const Status bad = InvalidArgumentError("cursor: not a cursor this server gave (pass next_cursor back unchanged)");
  const std::string_view hex = std::string_view(cursor).substr(std::min(cursor.size(), kCursorTag.size()));
  if (!cursor.starts_with(kCursorTag) || hex.empty() || hex.size() % 2 != 0 || hex.size() > 2 * kMaxCursorName) {
    return bad;
  }
  std::string name;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (ec != std::errc() || end != hex.data() + i + 2) return bad;
    name.push_back(static_cast<char>(value));
  }
  return name;
}

void NodeListCache::SyncLocked(const ControlPlane& control, std::vector<TimeMicros>* last_seen) {
  control.VisitNodes([&](const ControlPlane::NodeVisit& v) {
    if (entries_.size() <= static_cast<size_t>(v.index)) entries_.resize(v.index + 1);
    Entry& e = entries_[v.index];
    if (!e.valid || e.state_identity != v.state_identity || e.generation != v.usage.generation) {
      e.head.clear();
      e.tail.clear();
      AppendNodeJsonHead(&e.head, v.node, v.usage);
      AppendNodeJsonTail(&e.tail, v.node, v.usage);
      e.name = v.node.name;
      e.valid = true;
      e.compressed = false;
      e.state_identity = v.state_identity;
      e.generation = v.usage.generation;
    }
    last_seen->push_back(v.last_seen_us);
  });
  entries_.resize(last_seen->size());
  if (by_name_.size() != entries_.size()) {  // nodes are only ever added, and keep their names
    by_name_.resize(entries_.size());
    std::iota(by_name_.begin(), by_name_.end(), 0);
    std::sort(by_name_.begin(), by_name_.end(), [&](int a, int b) { return entries_[a].name < entries_[b].name; });
  }
}

NodeListCache::Span NodeListCache::PageLocked(const NodePage& page) const {
  const auto first = page.after.empty()
                         ? by_name_.begin()
                         : std::upper_bound(by_name_.begin(), by_name_.end(), page.after,
                                            [&](const std::string& after, int i) { return after < entries_[i].name; });
  const auto last = page.limit > 0 && by_name_.end() - first > page.limit ? first + page.limit : by_name_.end();
  return {first, last};
}

std::string NodeListCache::Render(const ControlPlane& control, const NodePage& page, bool gzip) {
  std::lock_guard lock(mu_);
  std::vector<TimeMicros> last_seen;
  SyncLocked(control, &last_seen);
  const auto [first, last] = PageLocked(page);
  std::string head = "{";
  if (last != by_name_.end()) {  // keys in sorted order, as nlohmann writes them
    head.append("\"next_cursor\":\"").append(EncodeNodeCursor(entries_[*(last - 1)].name)).append("\",");
  }
  head.append("\"nodes\":[");
  // Between a node's kept parts: its last-seen time.
  auto append_seen = [&](std::string* to, std::vector<int>::const_iterator it) {
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), last_seen[static_cast<size_t>(*it)]);
    to->append(digits, end);
  };
  if (gzip) {
    http::GzipWriter out;
    out.AppendPlain(head);
    std::string seen;
    for (auto it = first; it != last; ++it) {
      if (it != first) out.AppendPlain(",");
      Entry& e = entries_[*it];
      if (!e.compressed) {
        e.head_z = deflater_.Deflate(e.head);
        e.tail_z = deflater_.Deflate(e.tail);
        e.compressed = true;
      }
      out.Append(e.head_z);
      seen.clear();
      append_seen(&seen, it);
      out.AppendPlain(seen);
      out.Append(e.tail_z);
    }
    out.AppendPlain("]}");
    return std::move(out).Finish();
  }
  size_t size = head.size() + 2;
  for (auto it = first; it != last; ++it) size += entries_[*it].head.size() + entries_[*it].tail.size() + 24;
  std::string out;
  out.reserve(size);
  out.append(head);
  for (auto it = first; it != last; ++it) {
    if (it != first) out.push_back(',');
    out.append(entries_[*it].head);
    append_seen(&out, it);
    out.append(entries_[*it].tail);
  }
  out.append("]}");
  return out;
}

}  // namespace xpool::server::internal
