#include "server/internal/pass_undo.h"

#include <algorithm>

namespace xpool::server::internal {

void UndoPass(ClusterState& state, const std::vector<QueueJob>& jobs, const PassResult& result) {
  for (const JobDecision& d : result.decisions) {
    if (d.kind != DecisionKind::kPlace && d.kind != DecisionKind::kPreempt) continue;
    for (const Allocation& a : d.allocations) CheckOk(state.Release(a), "the pass booked this placement");
  }
  for (const SuspendDecision& s : result.suspensions) {
    for (const Allocation& a : s.move_to) CheckOk(state.Release(a), "the pass booked this move");
  }
  for (const SuspendDecision& s : result.suspensions) {
    for (const Allocation& a : jobs[s.job].allocations) CheckOk(state.Apply(a), "the pass released this victim");
  }
}

int FirstUsageDifference(const ClusterState& a, const ClusterState& b) {
  for (int i = 0; i < std::max(a.node_count(), b.node_count()); ++i) {
    if (i >= a.node_count() || i >= b.node_count()) return i;
    const NodeUsage& x = a.usage(i);
    const NodeUsage& y = b.usage(i);
    if (x.cpu_milli != y.cpu_milli || x.memory_mib != y.memory_mib || x.devices.size() != y.devices.size()) {
      return i;
    }
    for (size_t d = 0; d < x.devices.size(); ++d) {
      const DeviceUsage& p = x.devices[d];
      const DeviceUsage& q = y.devices[d];
      if (p.memory_mib != q.memory_mib || p.compute_milli != q.compute_milli || p.sharers != q.sharers ||
          p.exclusive != q.exclusive || p.mps_user != q.mps_user) {
        return i;
      }
    }
  }
  return -1;
}

}  // namespace xpool::server::internal
