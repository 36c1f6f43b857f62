#include "model/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace xpool {
namespace {

std::string DeviceWhere(const Node& node, int device) {
  return "node " + node.name + " device " + std::to_string(device);
}

}  // namespace

uint64_t ObjectIdentity::Next() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Result<int> ClusterState::AddNode(Node node) {
  RETURN_IF_ERROR(ValidateNode(node));
  if (index_by_name_.count(node.name) != 0) return AlreadyExistsError("node " + node.name + " already exists");
  const int index = node_count();
  NodeUsage usage;
  usage.devices.resize(node.devices.size());
  totals_.cpu_capacity_milli += node.cpu_milli;
  for (const Device& d : node.devices) {
    ++totals_.device_count;
    totals_.device_compute_capacity_milli += d.compute_milli;
    totals_.device_memory_capacity_mib += d.memory_mib;
    if (d.mode == DeviceMode::kMps) ++totals_.mps_device_count;
  }
  int64_t node_compute = 0;
  for (const Device& d : node.devices) {
    node_compute += d.compute_milli;
    totals_.max_device_memory_mib = std::max(totals_.max_device_memory_mib, d.memory_mib);
  }
  totals_.max_node_cpu_milli = std::max(totals_.max_node_cpu_milli, node.cpu_milli);
  totals_.max_node_device_compute_milli = std::max(totals_.max_node_device_compute_milli, node_compute);
  index_by_name_.emplace(node.name, index);
  nodes_.push_back(std::move(node));
  usage_.push_back(std::move(usage));
  ++description_version_;
  Journal(index);
  return index;
}

Status ClusterState::UpdateNode(int index, Node node) {
  if (index < 0 || index >= node_count()) return NotFoundError("node index " + std::to_string(index));
  RETURN_IF_ERROR(ValidateNode(node));
  Node& old = nodes_[index];
  if (node.name != old.name) return InvalidArgumentError("node " + old.name + " cannot be renamed");
  NodeUsage& u = usage_[index];
  const bool new_device_list = node.devices.size() != old.devices.size();
  if (new_device_list) {
    // Positions name devices in allocations: another list is taken only while no device holds one.
    for (size_t d = 0; d < u.devices.size(); ++d) {
      if (u.devices[d].allocated()) {
        return FailedPreconditionError(
            "node " + old.name + " cannot change its device count (" + std::to_string(old.devices.size()) + " to " +
            std::to_string(node.devices.size()) + ") while " + DeviceWhere(old, static_cast<int>(d)) + " is allocated");
      }
    }
  }
  if (node.cpu_milli < u.cpu_milli || node.memory_mib < u.memory_mib) {
    return FailedPreconditionError("node " + old.name + " would have less capacity than is allocated");
  }
  for (size_t d = 0; d < node.devices.size() && !new_device_list; ++d) {
    // Another device at an allocated position (a MIG instance made where one in use was) is not the one granted.
    if (u.devices[d].allocated() && node.devices[d].uuid != old.devices[d].uuid) {
      return FailedPreconditionError(DeviceWhere(old, static_cast<int>(d)) + " is allocated and would become " +
                                     node.devices[d].uuid);
    }
    // Its tasks' users are not known here: an MPS device's user is set by the Apply of the first of them.
    if (u.devices[d].allocated() && node.devices[d].mode == DeviceMode::kMps &&
        old.devices[d].mode != DeviceMode::kMps) {
      return FailedPreconditionError(DeviceWhere(old, static_cast<int>(d)) +
                                     " cannot enter MPS mode while tasks hold it");
    }
    if (node.devices[d].memory_mib < u.devices[d].memory_mib ||
        node.devices[d].compute_milli < u.devices[d].compute_milli) {
      return FailedPreconditionError(DeviceWhere(old, static_cast<int>(d)) +
                                     " would have less capacity than is allocated");
    }
  }
  totals_.cpu_capacity_milli += node.cpu_milli - old.cpu_milli;
  for (const Device& d : old.devices) {
    totals_.device_compute_capacity_milli -= d.compute_milli;
    totals_.device_memory_capacity_mib -= d.memory_mib;
    if (d.mode == DeviceMode::kMps) --totals_.mps_device_count;
  }
  for (const Device& d : node.devices) {
    totals_.device_compute_capacity_milli += d.compute_milli;
    totals_.device_memory_capacity_mib += d.memory_mib;
    if (d.mode == DeviceMode::kMps) ++totals_.mps_device_count;
  }
  if (new_device_list) {
    totals_.device_count += static_cast<int64_t>(node.devices.size()) - static_cast<int64_t>(old.devices.size());
    u.devices.assign(node.devices.size(), DeviceUsage{});
  }
  for (size_t d = 0; d < node.devices.size() && !new_device_list; ++d) {
    if (node.devices[d].mode != DeviceMode::kMps) u.devices[d].mps_user = 0;  // it left MPS mode
  }
  old = std::move(node);
  ++description_version_;
  RecomputeMaxNode();
  Bump(index);
  return Status::Ok();
}

void ClusterState::Journal(int node) {
  if (journal_.empty()) journal_.resize(kJournalSize);
  journal_[change_seq_ % kJournalSize] = node;
  ++change_seq_;
}

bool ClusterState::NodesChangedSince(uint64_t seq, std::vector<int>* out) const {
  if (seq > change_seq_) return false;
  if (change_seq_ - seq > kJournalSize) return false;
  for (uint64_t s = seq; s < change_seq_; ++s) out->push_back(journal_[s % kJournalSize]);
  return true;
}

void ClusterState::RecomputeMaxNode() {
  int64_t max_cpu = 0;
  int64_t max_compute = 0;
  int64_t max_device_memory = 0;
  for (const Node& n : nodes_) {
    int64_t compute = 0;
    for (const Device& d : n.devices) {
      compute += d.compute_milli;
      max_device_memory = std::max(max_device_memory, d.memory_mib);
    }
    max_cpu = std::max(max_cpu, n.cpu_milli);
    max_compute = std::max(max_compute, compute);
  }
  totals_.max_node_cpu_milli = max_cpu;
  totals_.max_node_device_compute_milli = max_compute;
  totals_.max_device_memory_mib = max_device_memory;
}

Status ClusterState::SetNodeReady(int index, bool ready) {
  if (index < 0 || index >= node_count()) return NotFoundError("node index " + std::to_string(index));
  nodes_[index].ready = ready;
  Bump(index);
  return Status::Ok();
}

Status ClusterState::SetNodeCordoned(int index, bool cordoned) {
  if (index < 0 || index >= node_count()) return NotFoundError("node index " + std::to_string(index));
  nodes_[index].cordoned = cordoned;
  Bump(index);
  return Status::Ok();
}

Status ClusterState::SetDeviceHealthy(int index, int device, bool healthy) {
  if (index < 0 || index >= node_count()) return NotFoundError("node index " + std::to_string(index));
  if (device < 0 || device >= static_cast<int>(nodes_[index].devices.size())) {
    return NotFoundError(DeviceWhere(nodes_[index], device));
  }
  nodes_[index].devices[device].healthy = healthy;
  Bump(index);
  return Status::Ok();
}

int ClusterState::FindNode(std::string_view name) const {
  auto it = index_by_name_.find(std::string(name));
  return it == index_by_name_.end() ? -1 : it->second;
}

Status ClusterState::CheckAllocationShape(const Allocation& a) const {
  if (a.node < 0 || a.node >= node_count()) {
    return InvalidArgumentError("allocation names unknown node index " + std::to_string(a.node));
  }
  if (a.cpu_milli < 0 || a.memory_mib < 0) return InvalidArgumentError("allocation has negative amounts");
  const Node& node = nodes_[a.node];
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const DeviceGrant& g = a.devices[i];
    if (g.device < 0 || g.device >= static_cast<int>(node.devices.size())) {
      return InvalidArgumentError("allocation names unknown " + DeviceWhere(node, g.device));
    }
    if (g.memory_mib < 0 || g.compute_milli < 0) {
      return InvalidArgumentError("allocation has negative amounts on " + DeviceWhere(node, g.device));
    }
    for (size_t j = 0; j < i; ++j) {
      if (a.devices[j].device == g.device) {
        return InvalidArgumentError("allocation names " + DeviceWhere(node, g.device) + " twice");
      }
    }
  }
  return Status::Ok();
}

Status ClusterState::Apply(const Allocation& a) {
  RETURN_IF_ERROR(CheckAllocationShape(a));
  const Node& node = nodes_[a.node];
  NodeUsage& u = usage_[a.node];
  if (u.cpu_milli + a.cpu_milli > node.cpu_milli) {
    return ResourceExhaustedError("node " + node.name + ": not enough cpu");
  }
  if (u.memory_mib + a.memory_mib > node.memory_mib) {
    return ResourceExhaustedError("node " + node.name + ": not enough memory");
  }
  for (const DeviceGrant& g : a.devices) {
    const Device& d = node.devices[g.device];
    const DeviceUsage& du = u.devices[g.device];
    if (du.memory_mib + g.memory_mib > d.memory_mib) {
      return ResourceExhaustedError(DeviceWhere(node, g.device) + ": not enough device memory");
    }
    if (du.compute_milli + g.compute_milli > d.compute_milli) {
      return ResourceExhaustedError(DeviceWhere(node, g.device) + ": not enough device compute");
    }
    if (du.sharers + 1 > d.max_sharers) {
      return ResourceExhaustedError(DeviceWhere(node, g.device) + ": too many tasks share it");
    }
    if (du.exclusive || (g.compute_milli >= d.compute_milli && du.sharers > 0)) {
      return ResourceExhaustedError(DeviceWhere(node, g.device) + ": held exclusively");
    }
    if (MpsServesAnotherUser(d, du, a.mps_user)) {
      return ResourceExhaustedError(DeviceWhere(node, g.device) + ": its MPS server serves another user");
    }
  }
  u.cpu_milli += a.cpu_milli;
  u.memory_mib += a.memory_mib;
  totals_.cpu_allocated_milli += a.cpu_milli;
  for (const DeviceGrant& g : a.devices) {
    DeviceUsage& du = u.devices[g.device];
    du.memory_mib += g.memory_mib;
    du.compute_milli += g.compute_milli;
    du.sharers += 1;
    du.exclusive = g.compute_milli >= node.devices[g.device].compute_milli;
    if (node.devices[g.device].mode == DeviceMode::kMps) du.mps_user = a.mps_user;
    totals_.device_compute_allocated_milli += g.compute_milli;
    totals_.device_memory_allocated_mib += g.memory_mib;
  }
  Bump(a.node);
  return Status::Ok();
}

Status ClusterState::Release(const Allocation& a) {
  RETURN_IF_ERROR(CheckAllocationShape(a));
  const Node& node = nodes_[a.node];
  NodeUsage& u = usage_[a.node];
  if (u.cpu_milli < a.cpu_milli || u.memory_mib < a.memory_mib) {
    return FailedPreconditionError("node " + node.name + ": releasing more than is allocated");
  }
  for (const DeviceGrant& g : a.devices) {
    const DeviceUsage& du = u.devices[g.device];
    if (du.memory_mib < g.memory_mib || du.compute_milli < g.compute_milli || du.sharers < 1) {
      return FailedPreconditionError(DeviceWhere(node, g.device) + ": releasing more than is allocated");
    }
  }
  u.cpu_milli -= a.cpu_milli;
  u.memory_mib -= a.memory_mib;
  totals_.cpu_allocated_milli -= a.cpu_milli;
  for (const DeviceGrant& g : a.devices) {
    DeviceUsage& du = u.devices[g.device];
    du.memory_mib -= g.memory_mib;
    du.compute_milli -= g.compute_milli;
    du.sharers -= 1;
    if (g.compute_milli >= node.devices[g.device].compute_milli) du.exclusive = false;
    if (du.sharers == 0) du.mps_user = 0;
    totals_.device_compute_allocated_milli -= g.compute_milli;
    totals_.device_memory_allocated_mib -= g.memory_mib;
  }
  Bump(a.node);
  return Status::Ok();
}

Status ClusterState::CheckInvariants() const {
  ClusterTotals sums;
  for (int n = 0; n < node_count(); ++n) {
    const Node& node = nodes_[n];
    const NodeUsage& u = usage_[n];
    if (u.cpu_milli < 0 || u.cpu_milli > node.cpu_milli) {
      return InternalError("node " + node.name + ": cpu usage out of range");
    }
    if (u.memory_mib < 0 || u.memory_mib > node.memory_mib) {
      return InternalError("node " + node.name + ": memory usage out of range");
    }
    if (u.devices.size() != node.devices.size()) return InternalError("node " + node.name + ": device count");
    sums.cpu_capacity_milli += node.cpu_milli;
    sums.cpu_allocated_milli += u.cpu_milli;
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const Device& dev = node.devices[d];
      const DeviceUsage& du = u.devices[d];
      const std::string where = DeviceWhere(node, static_cast<int>(d));
      if (du.memory_mib < 0 || du.memory_mib > dev.memory_mib) {
        return InternalError(where + ": memory usage out of range");
      }
      if (du.compute_milli < 0 || du.compute_milli > dev.compute_milli) {
        return InternalError(where + ": compute usage out of range");
      }
      if (du.sharers < 0 || du.sharers > dev.max_sharers) return InternalError(where + ": sharers out of range");
      if (du.exclusive && du.sharers != 1) return InternalError(where + ": exclusive but shared");
      if (du.sharers == 0 && (du.memory_mib != 0 || du.compute_milli != 0)) {
        return InternalError(where + ": usage without a holder");
      }
      if (du.mps_user != 0 && (dev.mode != DeviceMode::kMps || du.sharers == 0)) {
        return InternalError(where + ": an MPS user without MPS tasks");
      }
      if (dev.mode == DeviceMode::kMps) ++sums.mps_device_count;
      ++sums.device_count;
      sums.device_compute_capacity_milli += dev.compute_milli;
      sums.device_compute_allocated_milli += du.compute_milli;
      sums.device_memory_capacity_mib += dev.memory_mib;
      sums.device_memory_allocated_mib += du.memory_mib;
      sums.max_device_memory_mib = std::max(sums.max_device_memory_mib, dev.memory_mib);
    }
  }
  const ClusterTotals& t = totals_;
  if (sums.device_count != t.device_count || sums.cpu_capacity_milli != t.cpu_capacity_milli ||
      sums.cpu_allocated_milli != t.cpu_allocated_milli ||
      sums.device_compute_capacity_milli != t.device_compute_capacity_milli ||
      sums.device_compute_allocated_milli != t.device_compute_allocated_milli ||
      sums.device_memory_capacity_mib != t.device_memory_capacity_mib ||
      sums.device_memory_allocated_mib != t.device_memory_allocated_mib ||
      sums.max_device_memory_mib != t.max_device_memory_mib || sums.mps_device_count != t.mps_device_count) {
    return InternalError("cluster totals do not match the per-node sums");
  }
  return Status::Ok();
}

}  // namespace xpool
