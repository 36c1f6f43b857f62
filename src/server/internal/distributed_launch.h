#pragma once
// The distributed-training block of a multi-replica job's launch (torchrun's variables, protocol/task.h): ranks
// from where the gang was placed, and the rendezvous port the server chooses per placement. Pure functions;
// thread-safe.
#include <optional>
#include <string>
#include <vector>

#include "protocol/task.h"
#include "store/state_store.h"

namespace xpool::server::internal {

// MASTER_PORT is taken from [kMasterPortBase, kMasterPortBase + kMasterPortRange).
inline constexpr int kMasterPortBase = 29500;
inline constexpr int kMasterPortRange = 10000;

// The job's rendezvous port: the first port from base + job id (mod the range) on that is not in `taken` (the
// ports of the other gangs whose replica 0 is on the same node). Wraps around the range; 0 when all are taken.
int ChooseMasterPort(int64_t job_id, const std::vector<int>& taken);

// Replica `replica`'s block given every replica's allocation (`replicas`, any order, each naming its replica
// and node): RANK = replica, WORLD_SIZE = the replica count, NODE_RANK = the node's index in the order of the
// nodes' lowest replica, LOCAL_RANK / LOCAL_WORLD_SIZE among the replicas on its node. nullopt for a job of
// one replica or when `replica` is not among `replicas`.
std::optional<protocol::DistributedEnv> DistributedFor(const std::vector<AllocationRecord>& replicas, int replica,
                                                       const std::string& master_addr, int master_port);

}  // namespace xpool::server::internal
