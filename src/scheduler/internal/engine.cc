#include "scheduler/internal/engine.h"

namespace xpool::scheduler_internal {

bool ChangedNodes::Since(const ClusterState& state, uint64_t seq) {
  nodes_.clear();
  raw_.clear();
  if (!state.NodesChangedSince(seq, &raw_)) return false;
  if (stamp_.size() < static_cast<size_t>(state.node_count())) stamp_.resize(state.node_count(), 0);
  ++clock_;
  for (int n : raw_) {
    if (stamp_[n] == clock_) continue;
    stamp_[n] = clock_;
    nodes_.push_back(n);
  }
  return true;
}

}  // namespace xpool::scheduler_internal
