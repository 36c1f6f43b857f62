#pragma once
// ClusterState: every node's capacity and what is allocated on it, per node and per device.
//
// Apply/Release of an Allocation cost time proportional to the devices it touches (no rebuild). Each node has a
// generation counter, bumped whenever its usage or condition changes, so schedulers can cache per-node results.
// Owned by whoever schedules (the server's loop, a simulator run); not thread-safe: callers serialise access.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "model/device.h"
#include "model/task_request.h"

namespace xpool {

struct DeviceUsage {
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
  int sharers = 0;         // tasks holding a grant on this device
  bool exclusive = false;  // held whole by one task (a grant of all its compute)
  // On a device in MPS mode: the Allocation::mps_user of the tasks holding it (all the same; 0 while none holds
  // it, or for tasks placed before the device was in MPS mode). Always 0 on other devices.
  uint64_t mps_user = 0;

  bool allocated() const { return sharers > 0 || memory_mib > 0 || compute_milli > 0; }
};

// True when `device` is in MPS mode and tasks of another MPS user than `user` hold it: its MPS server serves them
// until they have all ended (TaskRequest::mps_user). ClusterState::Apply refuses a grant there; FitDevice says why.
inline bool MpsServesAnotherUser(const Device& device, const DeviceUsage& usage, uint64_t user) {
  return device.mode == DeviceMode::kMps && usage.sharers > 0 && usage.mps_user != user;
}

struct NodeUsage {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  uint64_t generation = 0;
  std::vector<DeviceUsage> devices;
};

// Cluster-wide sums, kept incrementally.
struct ClusterTotals {
  int64_t device_count = 0;
  int64_t device_compute_capacity_milli = 0;
  int64_t device_compute_allocated_milli = 0;
  int64_t device_memory_capacity_mib = 0;
  int64_t device_memory_allocated_mib = 0;
  int64_t cpu_capacity_milli = 0;
  int64_t cpu_allocated_milli = 0;
  // The largest single node's capacity (policies normalise by it, e.g. BestFit). Kept on AddNode/UpdateNode.
  int64_t max_node_cpu_milli = 0;
  int64_t max_node_device_compute_milli = 0;  // sum over one node's devices
  int64_t max_device_memory_mib = 0;          // the largest single device's memory
  int64_t mps_device_count = 0;               // devices in DeviceMode::kMps
};

// A number no other object of the same kind in this process has had: a copy (or a move target, or an assigned
// object) draws a new one. Keys per-object caches that must not follow a copy.
class ObjectIdentity {
 public:
  ObjectIdentity() : value_(Next()) {}
  ObjectIdentity(const ObjectIdentity&) : value_(Next()) {}
  ObjectIdentity& operator=(const ObjectIdentity&) {
    value_ = Next();
    return *this;
  }
  uint64_t value() const { return value_; }

 private:
  static uint64_t Next();  // thread-safe
  uint64_t value_;
};

class ClusterState {
 public:
  ClusterState() = default;

  // Adds a node (validated); its name must be new. Returns its index, stable for the state's lifetime.
  Result<int> AddNode(Node node);
  // Replaces a node's description keeping its usage; the device list may change length only while unallocated,
  // and a device enter MPS mode only while unallocated (its tasks' users are unknown here).
  Status UpdateNode(int index, Node node);
  Status SetNodeReady(int index, bool ready);
  Status SetNodeCordoned(int index, bool cordoned);
  Status SetDeviceHealthy(int index, int device, bool healthy);

  int node_count() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int index) const { return nodes_[index]; }
  const NodeUsage& usage(int index) const { return usage_[index]; }
  uint64_t generation(int index) const { return usage_[index].generation; }
  // Generations are per object and a copy keeps them, so two copies changed differently can show the same
  // generation for different contents: a cache kept across states (a policy's) keys on identity() as well.
  uint64_t identity() const { return identity_.value(); }
  // -1 when unknown.
  int FindNode(std::string_view name) const;
  const ClusterTotals& totals() const { return totals_; }

  int64_t FreeCpu(int node) const { return nodes_[node].cpu_milli - usage_[node].cpu_milli; }
  int64_t FreeMemory(int node) const { return nodes_[node].memory_mib - usage_[node].memory_mib; }
  int64_t FreeDeviceMemory(int node, int device) const {
    return nodes_[node].devices[device].memory_mib - usage_[node].devices[device].memory_mib;
  }
  int64_t FreeDeviceCompute(int node, int device) const {
    return nodes_[node].devices[device].compute_milli - usage_[node].devices[device].compute_milli;
  }

  // Books an allocation. Checks every capacity first and changes nothing when one would be exceeded
  // (ResourceExhausted: also a device in MPS mode held by another Allocation::mps_user) or the allocation names
  // an unknown node/device (InvalidArgument).
  Status Apply(const Allocation& allocation);
  // Returns what Apply booked. Refuses (FailedPrecondition) to release more than is booked.
  Status Release(const Allocation& allocation);

  // Verifies usage never exceeds capacity and is never negative, and the totals match the per-node sums.
  Status CheckInvariants() const;

  // A journal of node changes for incremental indexes (the scheduler's): every change to a node (usage,
  // condition, description, addition) records its index. change_seq() counts the changes ever made.
  // NodesChangedSince(seq, &out) appends the nodes changed after `seq` (duplicates possible) and returns false
  // when the journal no longer reaches back that far; the caller must then rescan every node.
  uint64_t change_seq() const { return change_seq_; }
  // Changes whenever a node is added or its description replaced (UpdateNode); not on usage or conditions.
  uint64_t description_version() const { return description_version_; }
  bool NodesChangedSince(uint64_t seq, std::vector<int>* out) const;

 private:
  Status CheckAllocationShape(const Allocation& allocation) const;
  void Bump(int node) {
    ++usage_[node].generation;
    Journal(node);
  }
  void Journal(int node);
  void RecomputeMaxNode();

  std::vector<Node> nodes_;
  std::vector<NodeUsage> usage_;
  std::unordered_map<std::string, int> index_by_name_;
  ClusterTotals totals_;
  static constexpr uint64_t kJournalSize = 4096;
  std::vector<int> journal_;  // ring buffer, allocated on first change
  uint64_t change_seq_ = 0;
  uint64_t description_version_ = 0;
  ObjectIdentity identity_;
};

}  // namespace xpool
