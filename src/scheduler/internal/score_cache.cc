#include "scheduler/internal/score_cache.h"

namespace xpool::scheduler_internal {

Capacity CapacityOf(const ClusterState& state, int node) {
  Capacity c;
  const Node& n = state.node(node);
  const NodeUsage& u = state.usage(node);
  c.free_cpu = state.FreeCpu(node);
  c.free_memory = state.FreeMemory(node);
  // FitNode then agrees with MayFit: the node takes tasks, and every device takes a whole-device grant and at
  // least one sharer of any share below a whole device (not so in MPS mode: it takes one user's tasks at a time).
  c.exact = n.ready && !n.cordoned;
  for (size_t d = 0; d < n.devices.size(); ++d) {
    const Device& dev = n.devices[d];
    const DeviceUsage& du = u.devices[d];
    c.exact = c.exact && dev.compute_milli >= 1000 && dev.max_sharers >= 1 && dev.mode != DeviceMode::kMps;
    if (!DeviceOffered(dev)) continue;
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
  free_.clear();
  std::fill(slot_of_state_.begin(), slot_of_state_.end(), -1);
  node_slot_.assign(node_count, -1);
  for (std::vector<int>& p : part_slots_) p.clear();
  slot_pos_.clear();
}

void LiveStates::Move(int node, uint32_t state, const Capacity& capacity) {
  if (static_cast<size_t>(node) >= node_slot_.size()) node_slot_.resize(node + 1, -1);
  const int old = node_slot_[node];
  if (old >= 0 && slots_[old].state == state) return;
  if (old >= 0) {
    std::vector<int>& list = nodes_[old];
    list.erase(std::lower_bound(list.begin(), list.end(), node));
    if (--slots_[old].count == 0) {  // free the slot
      std::vector<int>& part = part_slots_[CapacityPart(slots_[old].capacity)];
      const int pos = slot_pos_[old];
      part[pos] = part.back();
      slot_pos_[part[pos]] = pos;
      part.pop_back();
      slot_of_state_[slots_[old].state] = -1;
      slots_[old].state = kNoState;
      free_.push_back(old);
    }
  }
  if (state >= slot_of_state_.size()) {
    slot_of_state_.resize(std::max<size_t>(state + 1, 2 * slot_of_state_.size()), -1);
  }
  int s = slot_of_state_[state];
  if (s < 0) {
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = static_cast<int>(slots_.size());
      slots_.emplace_back();
      nodes_.emplace_back();
      slot_pos_.push_back(-1);
    }
    slot_of_state_[state] = s;
    slots_[s] = Slot{capacity, state, 0};
    nodes_[s].clear();
    std::vector<int>& part = part_slots_[CapacityPart(capacity)];
    slot_pos_[s] = static_cast<int>(part.size());
    part.push_back(s);
  }
  node_slot_[node] = s;
  std::vector<int>& list = nodes_[s];
  list.insert(std::lower_bound(list.begin(), list.end(), node), node);
  ++slots_[s].count;
}

void EligibleParts(const TaskRequest& r, std::vector<int>* parts) {
  parts->clear();
  if (!r.wants_devices()) {
    for (int p = 0; p < kParts; ++p) parts->push_back(p);
    return;
  }
  const int min_idle = r.exclusive() ? std::min(r.device_count, kIdleParts) : 1;
  if (!r.exclusive()) {
    const int64_t bucket = std::min<int64_t>(r.device_compute_milli / 100, kComputeBuckets - 1);
    for (int p = static_cast<int>(bucket); p < kComputeBuckets; ++p) parts->push_back(p);
  }
  for (int p = kComputeBuckets + min_idle - 1; p < kParts; ++p) parts->push_back(p);
}

}  // namespace xpool::scheduler_internal
