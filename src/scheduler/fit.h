#pragma once
// Fit: the one filter every vendor goes through. Decides whether a node (and which of its devices) can take one
// replica of a TaskRequest, and if not, why, as a reason code that Schedule() aggregates over nodes.
//
// Rules, in the order they are checked (a device that fails a later rule came closer to fitting):
//   node: ready, not cordoned, CPU, memory, enough devices on the node;
//   device: vendor, type include / exclude (case-insensitive substring of Device::model, as HAMi's
//   use-gputype / nouse-gputype), uuid include / exclude (exact), the MIG profile a request names (the device must
//   be an instance of it: model/mig_profile.h MigProfileOfDevice), healthy, not cordoned, static capacity
//   (the grant is larger than the device), held exclusively by another task, busy (an exclusive grant needs an
//   idle device), in MPS mode and held by another TaskRequest::mps_user, max sharers, free memory, free compute;
//   node again: at least device_count fitting devices, all on one NUMA node when numa_bind.
// With `ignore_usage` the check asks "could it fit if the node were empty and healthy?" (transient conditions
// — not ready, cordoned, unhealthy — are then ignored): that separates *wait* from *never fits*.
//
// Free functions over a const ClusterState; no allocation on the fitting path except `fitting_devices`.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"

namespace xpool {

enum class FitReason : uint8_t {
  kFits = 0,
  // Node-level, checked before the devices.
  kNodeNotReady,
  kNodeCordoned,
  kNotEnoughCpu,
  kNotEnoughMemory,
  kTooFewDevicesOnNode,
  // Device-level, in check order.
  kVendorMismatch,
  kTypeNotIncluded,
  kTypeExcluded,
  kUuidNotIncluded,
  kUuidExcluded,
  kMigProfileMismatch,  // the request names a MIG profile; the device is not an instance of it
  kDeviceUnhealthy,
  kDeviceCordoned,
  kMigSlotFree,            // a start slot of a GPU in MIG mode where no instance is yet
  kDeviceMemoryTooSmall,   // the grant exceeds the device's total memory
  kDeviceComputeTooSmall,  // the grant exceeds the device's total compute
  kDeviceHeldExclusively,
  kDeviceBusy,      // an exclusive grant needs a device nobody holds
  kMpsAnotherUser,  // in MPS mode, held by tasks of another mps_user (one MPS server serves one user)
  kTooManySharers,
  kNotEnoughDeviceMemory,
  kNotEnoughDeviceCompute,
  // Node-level, after the devices.
  kMigInstanceToBeMade,   // dynamic MIG: only larger free instances than the one the server makes for it
  kTooFewFittingDevices,  // some devices fit, fewer than device_count
  kNumaSplit,             // enough devices fit, not enough of them on one NUMA node
  kPolicyVeto,            // the policy found no acceptable device choice (e.g. topology)
};
inline constexpr int kFitReasonCount = static_cast<int>(FitReason::kPolicyVeto) + 1;

// Why one node was turned down: a code plus the device whose failure is reported (-1 = none), used to name its
// model or vendor in the message.
struct NodeVerdict {
  FitReason reason = FitReason::kFits;
  int device = -1;
};

// What one device gets for one replica: whole device for exclusive requests (compute >= 1000) and for devices in
// DeviceMode::kExclusive; otherwise the requested compute and memory (MiB, or percent of the device's memory),
// memory rounded up to the vendor's granularity.
DeviceGrant GrantFor(const Device& device, const TaskRequest& request);

// One device against the request. `usage` nullptr = as if nothing were allocated (and transient conditions are
// ignored).
FitReason FitDevice(const Device& device, const DeviceUsage* usage, const TaskRequest& request);

// One node. On success fills `candidate` (node index and fitting devices, ascending) and returns true. On failure
// fills `verdict`, unless it is nullptr (a caller that needs no reason: devices a plain request does not fit are
// then not checked again for why). `request` must have passed ValidateTaskRequest.
bool FitNode(const ClusterState& state, int node, const TaskRequest& request, bool ignore_usage,
             NodeCandidate* candidate, NodeVerdict* verdict);

// Counts verdicts over nodes and renders "9 nodes: not enough device memory on any device; 3 nodes: type T4
// excluded", most frequent first. Thread-compatible value type.
class ReasonTally {
 public:
  explicit ReasonTally(const TaskRequest& request) : request_(&request) {}
  // `count` nodes turned down as `node` was (the detail is read from `node`'s device).
  void Add(const ClusterState& state, int node, const NodeVerdict& verdict, int count = 1);
  std::string Render() const;
  int total() const { return total_; }

 private:
  struct Entry {
    FitReason reason;
    std::string detail;
    int count;
  };
  const TaskRequest* request_;  // not owned; outlives the tally
  std::vector<Entry> entries_;
  int total_ = 0;
};

// The phrase for one reason ("not enough CPU"); `detail` names the device model / vendor where it matters.
std::string DescribeReason(FitReason reason, std::string_view detail, const TaskRequest& request);

}  // namespace xpool
