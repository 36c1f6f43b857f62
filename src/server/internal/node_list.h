#pragma once
// NodeListCache: the body of GET /api/v1/nodes, `{"nodes":[...]}`, from per-node text kept between calls. A node's
// text is rendered again only when the node changed (its generation in the control plane's ClusterState); its
// last-seen time, which moves with every heartbeat, is written between the kept parts. A list of 1,500 nodes costs
// copies, not 1,500 JSON trees, and holds the control plane's lock only while it checks generations.
// Internal to src/server. Owned by the API; thread-safe (one list at a time).
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "server/control_plane.h"

namespace xpool::server::internal {

class NodeListCache {
 public:
  // The list as NodeViewToJson would write it for every node, in the control plane's node order.
  std::string Render(const ControlPlane& control);

 private:
  struct Entry {
    bool valid = false;
    uint64_t state_identity = 0;
    uint64_t generation = 0;
    std::string head;  // AppendNodeJsonHead
    std::string tail;  // AppendNodeJsonTail
  };
  std::mutex mu_;
  std::vector<Entry> entries_;  // by node index; guarded by mu_
};

}  // namespace xpool::server::internal
