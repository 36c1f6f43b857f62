#pragma once
// Device and Node: what a machine offers. Plain value types; thread-compatible.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/vendor.h"

namespace xpool {

inline constexpr int64_t kWholeDeviceMilli = 1000;

enum class DeviceMode : uint8_t {
  kShared,     // several tasks, each with a memory and compute share (the default)
  kExclusive,  // one task at a time takes the whole device
  kMig,        // hardware partitions (MIG); treated as shared slices by the scheduler
  kMps,        // CUDA MPS; shared
  // A start slot of a GPU in MIG mode where no instance starts (agent --mig-dynamic, docs/mig.md): it keeps the
  // slot's place in the node's device list, so positions stay when instances are made; never offered to a task.
  kMigSlot,
};
std::string_view DeviceModeName(DeviceMode mode);
Result<DeviceMode> ParseDeviceMode(std::string_view name);

struct Device {
  Vendor vendor = Vendor::kNvidia;
  std::string model;  // "A100-SXM4-80GB", "T4", "G2"
  std::string uuid;
  int index = 0;  // index on its node, as the driver numbers it
  int64_t memory_mib = 0;
  int64_t compute_milli = kWholeDeviceMilli;
  int max_sharers = 10;
  int numa_node = 0;
  DeviceMode mode = DeviceMode::kShared;
  bool healthy = true;
  bool cordoned = false;
};

// True when the device may be given to a task now and then: healthy, not cordoned, not a free MIG slot.
inline bool DeviceOffered(const Device& d) { return d.healthy && !d.cordoned && d.mode != DeviceMode::kMigSlot; }

// Link quality between two devices of a node, as a score: higher = faster. Symmetric; the diagonal is unused.
// Suggested scale: 0 = unknown / cross-socket, 10 = PCIe same switch or host bridge, 100 per NVLink lane.
class LinkTable {
 public:
  LinkTable() = default;
  explicit LinkTable(int device_count)
      : n_(device_count), scores_(static_cast<size_t>(device_count) * device_count, 0) {}
  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int Score(int a, int b) const { return scores_[static_cast<size_t>(a) * n_ + b]; }
  void Set(int a, int b, int score) {
    scores_[static_cast<size_t>(a) * n_ + b] = score;
    scores_[static_cast<size_t>(b) * n_ + a] = score;
  }

 private:
  int n_ = 0;
  std::vector<int> scores_;
};

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<Device> devices;
  LinkTable links;    // empty = no topology known
  bool ready = true;  // false when the node's agent is lost
  bool cordoned = false;
  bool simulated = false;
};

// Checks a node description before it joins a cluster (names, positive capacities, unique device uuids, a link
// table matching the device count).
Status ValidateNode(const Node& node);

}  // namespace xpool
