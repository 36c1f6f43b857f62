#include "scheduler/internal/score_cache.h"

namespace xpool::scheduler_internal {

Capacity CapacityOf(const ClusterState& state, int node) {
  Capacity c;
  const Node& n = state.node(node);
  const NodeUsage& u = state.usage(node);
  c.free_cpu = state.FreeCpu(node);
  c.free_memory = state.FreeMemory(node);
  // FitNode then agrees with MayFit: the node takes tasks, and every device takes a whole-device grant and at
  // least one sharer of any share below a whole device.
  c.exact = n.ready && !n.cordoned;
  for (size_t d = 0; d < n.devices.size(); ++d) {
    const Device& dev = n.devices[d];
    const DeviceUsage& du = u.devices[d];
    c.exact = c.exact && dev.compute_milli >= 1000 && dev.max_sharers >= 1;
    if (!dev.healthy || dev.cordoned) continue;
    if (du.sharers == 0) {
      ++c.idle;
      continue;
    }
    if (du.exclusive || du.sharers >= dev.max_sharers || dev.mode == DeviceMode::kExclusive) continue;
    c.best_share = std::max(c.best_share, dev.compute_milli - du.compute_milli);
  }
  return c;
}

void LiveStates::Reset(int node_count) {
  slots_.clear();
  nodes_.clear();
  first_.clear();
  last_.clear();
  bounds_dirty_.clear();
  free_.clear();
  std::fill(slot_of_state_.begin(), slot_of_state_.end(), -1);
  node_slot_.assign(node_count, -1);
  node_pos_.assign(node_count, 0);
}

void LiveStates::Move(int node, uint32_t state, const Capacity& capacity) {
  if (static_cast<size_t>(node) >= node_slot_.size()) {
    node_slot_.resize(node + 1, -1);
    node_pos_.resize(node + 1, 0);
  }
  const int old = node_slot_[node];
  if (old >= 0 && slots_[old].state == state) return;
  if (old >= 0) {
    // Swap-remove the node from its old slot; free the slot when it empties.
    std::vector<int>& list = nodes_[old];
    const int pos = node_pos_[node];
    list[pos] = list.back();
    node_pos_[list[pos]] = pos;
    list.pop_back();
    if (--slots_[old].count == 0) {
      slot_of_state_[slots_[old].state] = -1;
      slots_[old].state = kNoState;
      free_.push_back(old);
    } else if (node == first_[old] || node == last_[old]) {
      bounds_dirty_[old] = 1;
    }
  }
  if (state >= slot_of_state_.size()) slot_of_state_.resize(std::max<size_t>(state + 1, 2 * slot_of_state_.size()), -1);
  int s = slot_of_state_[state];
  if (s < 0) {
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = static_cast<int>(slots_.size());
      slots_.emplace_back();
      nodes_.emplace_back();
      first_.push_back(0);
      last_.push_back(0);
      bounds_dirty_.push_back(0);
    }
    slot_of_state_[state] = s;
    slots_[s] = Slot{capacity, state, 0};
    nodes_[s].clear();
    first_[s] = std::numeric_limits<int>::max();
    last_[s] = -1;
    bounds_dirty_[s] = 0;
  }
  node_slot_[node] = s;
  node_pos_[node] = static_cast<int>(nodes_[s].size());
  nodes_[s].push_back(node);
  ++slots_[s].count;
  if (!bounds_dirty_[s]) {
    first_[s] = std::min(first_[s], node);
    last_[s] = std::max(last_[s], node);
  }
}

void LiveStates::RecomputeBounds(int s) {
  const std::vector<int>& list = nodes_[s];
  first_[s] = *std::min_element(list.begin(), list.end());
  last_[s] = *std::max_element(list.begin(), list.end());
  bounds_dirty_[s] = 0;
}

}  // namespace xpool::scheduler_internal
