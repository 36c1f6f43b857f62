#pragma once
// TaskRequest: what one replica of a job asks for. Allocation: what it was given. Value types.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/vendor.h"

namespace xpool {

struct TaskRequest {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int device_count = 0;
  // Per device, at most one of these two; both 0 = no device memory reserved.
  int64_t device_memory_mib = 0;
  int device_memory_percent = 0;  // 1..100 of the device's memory
  // Per-device compute share in milli-devices (HAMi's gpucores × 10). 1000 = the whole device, exclusively;
  // 0 = no compute reserved (shares freely).
  int64_t device_compute_milli = 0;
  std::optional<Vendor> vendor;  // unset = any vendor
  // Device model filters: substring match on Device::model (as HAMi's use-gputype / nouse-gputype).
  std::vector<std::string> type_include;
  std::vector<std::string> type_exclude;
  std::vector<std::string> uuid_include;
  std::vector<std::string> uuid_exclude;
  bool numa_bind = false;  // all devices of the replica on one NUMA node
  // A MIG instance of this profile ("1g.10gb", model/mig_profile.h) instead of a device or a share of one; then
  // device_count is 1 and the instance is held whole: only a device that is an instance of this profile fits
  // (MigProfileOfDevice, docs/mig.md). "" = no MIG.
  std::string mig_profile;
  // Who the replica's processes run as, for devices in MPS mode (DeviceMode::kMps): an MPS server serves one
  // user at a time (a client of another uid waits until the running server's clients have ended), so a device in
  // MPS mode takes one mps_user's tasks at a time (ClusterState::Apply, FitDevice). The server sets its tenant's
  // id while the cluster has a device in MPS mode; 0 = unset (shares with other unset requests).
  uint64_t mps_user = 0;

  bool wants_devices() const { return device_count > 0; }
  bool exclusive() const { return device_compute_milli >= 1000; }
};

// Rejects requests no cluster could ever satisfy by their own contradictions: negative quantities, a percent
// above 100, compute above a whole device, device fields without devices, both memory forms at once, a MIG
// profile no model has or one asked for with a device count other than 1 or with a memory or compute share.
Status ValidateTaskRequest(const TaskRequest& request);

// True when a request for devices is one dynamic MIG serves with instances made for it (docs/mig.md, "Dynamic
// geometry"): NVIDIA devices (or any vendor) by memory and compute, no memory percentage, no MIG profile and no
// type or uuid selector (an instance not yet made cannot be matched against one).
bool AsksDynamicMigBySize(const TaskRequest& request);

// One device given to a task.
struct DeviceGrant {
  int device = 0;  // index into Node::devices
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
};

struct Allocation {
  int node = -1;  // index into ClusterState's nodes
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<DeviceGrant> devices;
  uint64_t mps_user = 0;  // TaskRequest::mps_user of the replica it was made for
};

}  // namespace xpool
