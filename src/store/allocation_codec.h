#pragma once
// Conversion between the scheduler's Allocation (node and device *indices* into one ClusterState) and the
// store's AllocationRecord (node *name* and device *uuids*, stable across restarts).
// Stateless functions over a const ClusterState; thread-compatible.
#include "model/cluster_state.h"
#include "model/task_request.h"
#include "store/state_store.h"

namespace xpool {

// InvalidArgument if the allocation names a node or device the state does not have.
Result<AllocationRecord> ToAllocationRecord(const ClusterState& state, const Allocation& allocation, JobId job,
                                            int replica);
// NotFound if the record names a node or device uuid the state does not have.
Result<Allocation> FromAllocationRecord(const ClusterState& state, const AllocationRecord& record);

}  // namespace xpool
