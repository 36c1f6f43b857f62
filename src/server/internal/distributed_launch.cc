#include "server/internal/distributed_launch.h"

#include <algorithm>

namespace xpool::server::internal {

int ChooseMasterPort(int64_t job_id, const std::vector<int>& taken) {
  const int64_t start = job_id < 0 ? 0 : job_id % kMasterPortRange;
  for (int64_t i = 0; i < kMasterPortRange; ++i) {
    const int port = kMasterPortBase + static_cast<int>((start + i) % kMasterPortRange);
    if (std::find(taken.begin(), taken.end(), port) == taken.end()) return port;
  }
  return 0;
}

std::optional<protocol::DistributedEnv> DistributedFor(const std::vector<AllocationRecord>& replicas, int replica,
                                                       const std::string& master_addr, int master_port) {
  if (replicas.size() < 2) return std::nullopt;
  std::vector<const AllocationRecord*> by_replica;
  for (const AllocationRecord& a : replicas) by_replica.push_back(&a);
  std::sort(by_replica.begin(), by_replica.end(),
            [](const AllocationRecord* a, const AllocationRecord* b) { return a->replica < b->replica; });
  const AllocationRecord* self = nullptr;
  for (const AllocationRecord* a : by_replica) {
    if (a->replica == replica) self = a;
  }
  if (self == nullptr) return std::nullopt;
  protocol::DistributedEnv d;
  d.master_addr = master_addr;
  d.master_port = master_port;
  d.world_size = static_cast<int>(by_replica.size());
  d.rank = replica;
  d.local_rank = 0;
  d.local_world_size = 0;
  std::vector<std::string> nodes;  // in the order of their lowest replica
  for (const AllocationRecord* a : by_replica) {
    if (std::find(nodes.begin(), nodes.end(), a->node) == nodes.end()) nodes.push_back(a->node);
    if (a->node != self->node) continue;
    if (a->replica < replica) ++d.local_rank;
    ++d.local_world_size;
  }
  d.node_rank = static_cast<int>(std::find(nodes.begin(), nodes.end(), self->node) - nodes.begin());
  return d;
}

}  // namespace xpool::server::internal
