#pragma once
// NodeListCache: the body of GET /api/v1/nodes, `{"nodes":[...]}` in node-name order, whole or a page of it
// (`{"next_cursor":"...","nodes":[...]}` while more follow), from per-node text kept between calls. A node's text is
// rendered again only when the node changed (its generation in the control plane's ClusterState); its last-seen
// time, which moves with every heartbeat, is written between the kept parts. A list of 1,500 nodes costs copies,
// not 1,500 JSON trees, and holds the control plane's lock only while it checks generations. For a client that takes
// gzip, each node's kept parts are also kept compressed (compressed when first asked after a change), and the list
// is those pieces with the last-seen times and commas between them as stored blocks (http::GzipWriter).
// Internal to src/server. Owned by the API; thread-safe (one list at a time).
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "http/gzip.h"
#include "server/control_plane.h"

namespace xpool::server::internal {

// Which part of the list: the nodes whose names sort after `after` ("" = from the first), at most `limit` of them
// (0 = all).
struct NodePage {
  std::string after;
  int limit = 0;
};

// A page's cursor, opaque to clients (docs/api.md): the last name of the page, in hex after a version tag.
std::string EncodeNodeCursor(const std::string& last_name);
// InvalidArgument for a text this server's EncodeNodeCursor did not give.
Result<std::string> DecodeNodeCursor(const std::string& cursor);

class NodeListCache {
 public:
  // The list (or the page) as NodeViewToJson would write each node; with `gzip`, that text as one gzip member.
  std::string Render(const ControlPlane& control, const NodePage& page = {}, bool gzip = false);

 private:
  struct Entry {
    bool valid = false;
    uint64_t state_identity = 0;
    uint64_t generation = 0;
    std::string name;
    std::string head;         // AppendNodeJsonHead
    std::string tail;         // AppendNodeJsonTail
    bool compressed = false;  // head_z and tail_z are head and tail's (set at the first gzip list after a change)
    http::DeflatedText head_z, tail_z;
  };
  using Span = std::pair<std::vector<int>::const_iterator, std::vector<int>::const_iterator>;
  // Renews the entries of nodes that changed; fills every node's last-seen time by index. Under mu_.
  void SyncLocked(const ControlPlane& control, std::vector<TimeMicros>* last_seen);
  // The entries of `page`, in name order. Under mu_.
  Span PageLocked(const NodePage& page) const;
  std::mutex mu_;
  http::Deflater deflater_;     // compresses the entries' parts; guarded by mu_
  std::vector<Entry> entries_;  // by node index; guarded by mu_
  std::vector<int> by_name_;    // indices into entries_ in name order (names never change); guarded by mu_
};

}  // namespace xpool::server::internal
