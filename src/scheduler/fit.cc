#include "scheduler/fit.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>

#include "model/mig_label.h"
#include "model/mig_profile.h"
#include "scheduler/mig/node_geometry.h"

namespace xpool {
namespace {

// Case-insensitive substring test (device models are written "A100", "a100-sxm4", "Tesla T4" by different tools).
bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > haystack.size()) return false;
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && lower(haystack[i + j]) == lower(needle[j])) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

bool AnyContains(std::string_view model, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (ContainsIgnoreCase(model, p)) return true;
  }
  return false;
}

bool AnyEquals(std::string_view uuid, const std::vector<std::string>& uuids) {
  return std::find(uuids.begin(), uuids.end(), uuid) != uuids.end();
}

int64_t RoundUp(int64_t value, int64_t step) {
  if (step <= 1 || value <= 0) return value;
  return (value + step - 1) / step * step;
}

// Devices passing every per-device rule must also satisfy NUMA binding: true when some NUMA node holds `count`
// of them.
bool NumaGroupLargeEnough(const Node& node, const std::vector<int>& fitting, int count) {
  // NUMA ids are small; count per id with a short linear table.
  std::array<std::pair<int, int>, 16> small{};
  int used = 0;
  for (int d : fitting) {
    const int numa = node.devices[d].numa_node;
    int i = 0;
    while (i < used && small[i].first != numa) ++i;
    if (i == used) {
      if (used == static_cast<int>(small.size())) return true;  // more NUMA ids than expected: do not veto
      small[used++] = {numa, 0};
    }
    if (++small[i].second >= count) return true;
  }
  return false;
}

// True when the request asks for devices by nothing but count and compute: no vendor, type, uuid or device memory.
bool PlainDeviceRequest(const TaskRequest& r) {
  return !r.vendor.has_value() && r.type_include.empty() && r.type_exclude.empty() && r.uuid_include.empty() &&
         r.uuid_exclude.empty() && r.device_memory_mib == 0 && r.device_memory_percent == 0 && r.mig_profile.empty();
}

// FitDevice(device, &usage, request) == kFits for a plain request (PlainDeviceRequest), inlined: the grant is the
// whole device (no device memory asked otherwise), so the vendor profile and the name checks drop out. The
// scoring scans call FitNode for every fresh (request, node state) pair; this is their common case.
inline bool PlainDeviceFits(const Device& device, const DeviceUsage& usage, const TaskRequest& request) {
  if (!DeviceOffered(device) || usage.exclusive) return false;
  const bool whole = request.exclusive() || device.mode == DeviceMode::kExclusive;
  const int64_t compute = whole ? device.compute_milli : request.device_compute_milli;
  const int64_t memory = whole ? device.memory_mib : 0;
  if (memory > device.memory_mib || compute > device.compute_milli) return false;
  if (compute >= device.compute_milli && usage.sharers > 0) return false;
  if (MpsServesAnotherUser(device, usage, request.mps_user)) return false;
  if (usage.sharers >= device.max_sharers) return false;
  if (device.memory_mib - usage.memory_mib < memory) return false;
  return device.compute_milli - usage.compute_milli >= compute;
}

}  // namespace

DeviceGrant GrantFor(const Device& device, const TaskRequest& request) {
  DeviceGrant grant;
  grant.device = device.index;
  if (request.exclusive() || device.mode == DeviceMode::kExclusive) {
    grant.memory_mib = device.memory_mib;
    grant.compute_milli = device.compute_milli;
    return grant;
  }
  grant.compute_milli = request.device_compute_milli;
  int64_t memory = request.device_memory_mib;
  if (memory == 0 && request.device_memory_percent > 0) {
    memory = (device.memory_mib * request.device_memory_percent + 99) / 100;
  }
  // Most requests ask for no device memory: skip the vendor profile lookup then.
  grant.memory_mib = memory > 0 ? RoundUp(memory, ProfileFor(device.vendor).memory_granularity_mib) : memory;
  return grant;
}

FitReason FitDevice(const Device& device, const DeviceUsage* usage, const TaskRequest& request) {
  if (request.vendor.has_value() && device.vendor != *request.vendor) return FitReason::kVendorMismatch;
  if (!request.type_include.empty() && !AnyContains(device.model, request.type_include)) {
    return FitReason::kTypeNotIncluded;
  }
  if (!request.type_exclude.empty() && AnyContains(device.model, request.type_exclude)) {
    return FitReason::kTypeExcluded;
  }
  if (!request.uuid_include.empty() && !AnyEquals(device.uuid, request.uuid_include)) {
    return FitReason::kUuidNotIncluded;
  }
  if (!request.uuid_exclude.empty() && AnyEquals(device.uuid, request.uuid_exclude)) {
    return FitReason::kUuidExcluded;
  }
  if (!request.mig_profile.empty() && MigProfileOfDevice(device) != request.mig_profile) {
    return FitReason::kMigProfileMismatch;
  }
  if (usage != nullptr) {
    if (!device.healthy) return FitReason::kDeviceUnhealthy;
    if (device.cordoned) return FitReason::kDeviceCordoned;
    if (device.mode == DeviceMode::kMigSlot) return FitReason::kMigSlotFree;
  }
  const DeviceGrant grant = GrantFor(device, request);
  if (grant.memory_mib > device.memory_mib) return FitReason::kDeviceMemoryTooSmall;
  if (grant.compute_milli > device.compute_milli) return FitReason::kDeviceComputeTooSmall;
  if (usage == nullptr) return FitReason::kFits;
  if (usage->exclusive) return FitReason::kDeviceHeldExclusively;
  // A grant of the whole device's compute makes it exclusive: nobody else may hold it (ClusterState::Apply).
  if (grant.compute_milli >= device.compute_milli && usage->sharers > 0) return FitReason::kDeviceBusy;
  if (MpsServesAnotherUser(device, *usage, request.mps_user)) return FitReason::kMpsAnotherUser;
  if (usage->sharers >= device.max_sharers) return FitReason::kTooManySharers;
  if (device.memory_mib - usage->memory_mib < grant.memory_mib) return FitReason::kNotEnoughDeviceMemory;
  if (device.compute_milli - usage->compute_milli < grant.compute_milli) return FitReason::kNotEnoughDeviceCompute;
  return FitReason::kFits;
}

namespace {

// On a node whose MIG geometry the server plans (kMigDynamicLabel, docs/mig.md "Dynamic geometry"), a request by
// size (AsksDynamicMigBySize) is offered only free instances of the profile the server would make for it
// (MigProfileForRequest on the instance's GPU model): a larger one stays for the requests that need it, and the
// request waits one plan for its own. That holds only while the planner could serve it on this node as it is
// (MigDemandCanBeServedOn): where every slice it could take is in use, or the node cannot be repartitioned now,
// the request takes what fits like any other. Other devices stay offered. How many instances it took out; -1 where
// the rule does not apply, as when `usage` is null (could it fit on the node empty? any instance covering it could
// serve it).
int KeepMigInstancesMadeFor(const Node& node, const NodeUsage* usage, const TaskRequest& request,
                            std::vector<int>* fitting) {
  const auto is_instance = [&](int d) { return node.devices[static_cast<size_t>(d)].mode == DeviceMode::kMig; };
  if (usage == nullptr || std::none_of(fitting->begin(), fitting->end(), is_instance) ||
      !AsksDynamicMigBySize(request) || !node.labels.contains(std::string(kMigDynamicLabel))) {
    return -1;
  }
  const auto made_for_request = [&](int d) {
    const Device& device = node.devices[static_cast<size_t>(d)];
    const size_t mig = device.model.rfind(" MIG ");
    const MigModel* model = mig == std::string::npos ? nullptr : FindMigModel(device.model.substr(0, mig));
    const MigProfile* made =
        model == nullptr ? nullptr
                         : MigProfileForRequest(*model, request.device_memory_mib, request.device_compute_milli);
    return made != nullptr && made->name == MigProfileOfDevice(device);
  };
  const auto other = [&](int d) { return is_instance(d) && !made_for_request(d); };
  const int own = static_cast<int>(std::count_if(fitting->begin(), fitting->end(), made_for_request));
  if (own < request.device_count) {
    const MigDemand demand{"", request.device_count, request.device_memory_mib, request.device_compute_milli};
    if (!MigDemandCanBeServedOn(node, *usage, demand)) return -1;
  }
  return static_cast<int>(std::erase_if(*fitting, other));
}

// HAMi's dynamic-mig rule for a request not naming a profile: of the MIG instances that fit, only those of the
// smallest kind (least compute, then memory, then without media extensions) are offered, so no policy gives a task
// that asks 8 GiB a 3g.40gb while a 1g.10gb is free. Other devices stay offered. Left as it is when that would
// leave fewer devices than the request asks for. True when it took instances out for dynamic MIG
// (KeepMigInstancesMadeFor).
bool KeepSmallestMigInstances(const Node& node, const NodeUsage* usage, const TaskRequest& request,
                              std::vector<int>* fitting) {
  if (!request.mig_profile.empty()) return false;
  if (const int taken = KeepMigInstancesMadeFor(node, usage, request, fitting); taken >= 0) return taken > 0;
  auto key = [&](int d) {
    const Device& device = node.devices[static_cast<size_t>(d)];
    const bool media = MigProfileOfDevice(device).ends_with("+me");
    return std::tuple(device.compute_milli, device.memory_mib, media);
  };
  int instances = 0, smallest = -1;
  for (int d : *fitting) {
    if (node.devices[static_cast<size_t>(d)].mode != DeviceMode::kMig) continue;
    ++instances;
    if (smallest < 0 || key(d) < key(smallest)) smallest = d;
  }
  if (instances < 2) return false;
  std::vector<int> kept;
  for (int d : *fitting) {
    if (node.devices[static_cast<size_t>(d)].mode != DeviceMode::kMig || key(d) == key(smallest)) kept.push_back(d);
  }
  if (static_cast<int>(kept.size()) >= request.device_count) fitting->swap(kept);
  return false;
}

}  // namespace

bool FitNode(const ClusterState& state, int node_index, const TaskRequest& request, bool ignore_usage,
             NodeCandidate* candidate, NodeVerdict* verdict) {
  const Node& node = state.node(node_index);
  const NodeUsage& usage = state.usage(node_index);
  auto fail = [verdict](FitReason reason, int device) {
    if (verdict != nullptr) {
      verdict->reason = reason;
      verdict->device = device;
    }
    return false;
  };
  if (!ignore_usage) {
    if (!node.ready) return fail(FitReason::kNodeNotReady, -1);
    if (node.cordoned) return fail(FitReason::kNodeCordoned, -1);
  }
  const int64_t used_cpu = ignore_usage ? 0 : usage.cpu_milli;
  const int64_t used_memory = ignore_usage ? 0 : usage.memory_mib;
  if (node.cpu_milli - used_cpu < request.cpu_milli) return fail(FitReason::kNotEnoughCpu, -1);
  if (node.memory_mib - used_memory < request.memory_mib) return fail(FitReason::kNotEnoughMemory, -1);
  candidate->node = node_index;
  candidate->fitting_devices.clear();
  if (!request.wants_devices()) return true;
  const int device_count = static_cast<int>(node.devices.size());
  if (device_count < request.device_count) return fail(FitReason::kTooFewDevicesOnNode, -1);

  FitReason closest = FitReason::kFits;
  int closest_device = -1;
  // A device the plain check accepts fits; any other takes the full check, which also says why not.
  const bool plain = !ignore_usage && PlainDeviceRequest(request);
  for (int d = 0; d < device_count; ++d) {
    if (plain && verdict == nullptr) {  // PlainDeviceFits is FitDevice's kFits; no reason wanted
      if (PlainDeviceFits(node.devices[d], usage.devices[d], request)) candidate->fitting_devices.push_back(d);
      continue;
    }
    const FitReason r = plain && PlainDeviceFits(node.devices[d], usage.devices[d], request)
                            ? FitReason::kFits
                            : FitDevice(node.devices[d], ignore_usage ? nullptr : &usage.devices[d], request);
    if (r == FitReason::kFits) {
      candidate->fitting_devices.push_back(d);
    } else if (closest == FitReason::kFits || r > closest) {
      closest = r;
      closest_device = d;
    }
  }
  const bool awaits_instance =
      KeepSmallestMigInstances(node, ignore_usage ? nullptr : &usage, request, &candidate->fitting_devices);
  const int fitting = static_cast<int>(candidate->fitting_devices.size());
  if (fitting == 0) return awaits_instance ? fail(FitReason::kMigInstanceToBeMade, -1) : fail(closest, closest_device);
  if (fitting < request.device_count) return fail(FitReason::kTooFewFittingDevices, -1);
  if (request.numa_bind && request.device_count > 1 &&
      !NumaGroupLargeEnough(node, candidate->fitting_devices, request.device_count)) {
    return fail(FitReason::kNumaSplit, -1);
  }
  return true;
}

std::string DescribeReason(FitReason reason, std::string_view detail, const TaskRequest& request) {
  const std::string n = std::to_string(request.device_count);
  const std::string d(detail);
  switch (reason) {
    case FitReason::kFits:
      return "fits";
    case FitReason::kNodeNotReady:
      return "node not ready";
    case FitReason::kNodeCordoned:
      return "node cordoned";
    case FitReason::kNotEnoughCpu:
      return "not enough CPU";
    case FitReason::kNotEnoughMemory:
      return "not enough memory";
    case FitReason::kTooFewDevicesOnNode:
      return "fewer than " + n + " devices on the node";
    case FitReason::kVendorMismatch:
      return "no device of the requested vendor (" + d + " only)";
    case FitReason::kTypeNotIncluded:
      return "type " + d + " not among the requested types";
    case FitReason::kTypeExcluded:
      return "type " + d + " excluded";
    case FitReason::kUuidNotIncluded:
      return "no device with a requested uuid";
    case FitReason::kUuidExcluded:
      return "device uuids excluded";
    case FitReason::kMigProfileMismatch:
      return "no MIG instance of the requested profile";
    case FitReason::kDeviceUnhealthy:
      return "devices unhealthy";
    case FitReason::kDeviceCordoned:
      return "devices cordoned";
    case FitReason::kMigSlotFree:
      return "free MIG slots without an instance";
    case FitReason::kDeviceMemoryTooSmall:
      return "device memory too small (" + d + ")";
    case FitReason::kDeviceComputeTooSmall:
      return "device compute too small (" + d + ")";
    case FitReason::kDeviceHeldExclusively:
      return "every device held exclusively";
    case FitReason::kDeviceBusy:
      return "no idle device for an exclusive request";
    case FitReason::kMpsAnotherUser:
      return "MPS devices in use by another tenant's tasks";
    case FitReason::kTooManySharers:
      return "every device already has its maximum number of tasks";
    case FitReason::kNotEnoughDeviceMemory:
      return "not enough device memory on any device";
    case FitReason::kNotEnoughDeviceCompute:
      return "not enough device compute on any device";
    case FitReason::kMigInstanceToBeMade:
      return "waiting for a MIG instance of its size to be made";
    case FitReason::kTooFewFittingDevices:
      return "fewer than " + n + " devices fit";
    case FitReason::kNumaSplit:
      return "no " + n + " fitting devices on one NUMA node";
    case FitReason::kPolicyVeto:
      return "no device choice acceptable to the policy";
  }
  return "unknown";
}

void ReasonTally::Add(const ClusterState& state, int node, const NodeVerdict& verdict, int count) {
  total_ += count;
  std::string_view detail;
  if (verdict.device >= 0) {
    const Device& dev = state.node(node).devices[verdict.device];
    switch (verdict.reason) {
      case FitReason::kVendorMismatch:
        detail = VendorName(dev.vendor);
        break;
      case FitReason::kTypeNotIncluded:
      case FitReason::kTypeExcluded:
      case FitReason::kDeviceMemoryTooSmall:
      case FitReason::kDeviceComputeTooSmall:
        detail = dev.model;
        break;
      default:
        break;
    }
  }
  for (Entry& e : entries_) {
    if (e.reason == verdict.reason && e.detail == detail) {
      e.count += count;
      return;
    }
  }
  entries_.push_back(Entry{verdict.reason, std::string(detail), count});
}

std::string ReasonTally::Render() const {
  std::vector<const Entry*> order;
  order.reserve(entries_.size());
  for (const Entry& e : entries_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->reason != b->reason) return a->reason < b->reason;
    return a->detail < b->detail;
  });
  std::string out;
  for (const Entry* e : order) {
    if (!out.empty()) out += "; ";
    out += std::to_string(e->count) + (e->count == 1 ? " node: " : " nodes: ");
    out += DescribeReason(e->reason, e->detail, *request_);
  }
  return out;
}

}  // namespace xpool
