#include "store/allocation_codec.h"

namespace xpool {

Result<AllocationRecord> ToAllocationRecord(const ClusterState& state, const Allocation& allocation, JobId job,
                                            int replica) {
  if (allocation.node < 0 || allocation.node >= state.node_count()) {
    return InvalidArgumentError("allocation names node index " + std::to_string(allocation.node) +
                                " which the cluster state does not have");
  }
  const Node& node = state.node(allocation.node);
  AllocationRecord record;
  record.job = job;
  record.replica = replica;
  record.node = node.name;
  record.cpu_milli = allocation.cpu_milli;
  record.memory_mib = allocation.memory_mib;
  for (const DeviceGrant& grant : allocation.devices) {
    if (grant.device < 0 || grant.device >= static_cast<int>(node.devices.size())) {
      return InvalidArgumentError("allocation names device " + std::to_string(grant.device) + " of node " + node.name +
                                  " which has " + std::to_string(node.devices.size()));
    }
    record.devices.push_back({node.devices[grant.device].uuid, grant.memory_mib, grant.compute_milli});
  }
  return record;
}

Result<Allocation> FromAllocationRecord(const ClusterState& state, const AllocationRecord& record) {
  const int node_index = state.FindNode(record.node);
  if (node_index < 0)
    return NotFoundError("allocation of job " + record.job.ToString() + " names unknown node " + record.node);
  const Node& node = state.node(node_index);
  Allocation allocation;
  allocation.node = node_index;
  allocation.cpu_milli = record.cpu_milli;
  allocation.memory_mib = record.memory_mib;
  for (const DeviceGrantRecord& grant : record.devices) {
    int found = -1;
    for (size_t i = 0; i < node.devices.size(); ++i) {
      if (node.devices[i].uuid == grant.device_uuid) found = static_cast<int>(i);
    }
    if (found < 0) {
      return NotFoundError("allocation of job " + record.job.ToString() + " names device " + grant.device_uuid +
                           " which node " + record.node + " does not have");
    }
    allocation.devices.push_back({found, grant.memory_mib, grant.compute_milli});
  }
  return allocation;
}

}  // namespace xpool
