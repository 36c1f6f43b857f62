#include "agent/nvml/nvml_discovery.h"

#include <dlfcn.h>

#include <cctype>
#include <fstream>
#include <utility>
#include <vector>

#include "agent/internal/nvml_api.h"
#include "agent/nvml/internal/nvml_symbols.h"
#include "agent/nvml/nvml_mig.h"

namespace xpool::agent {
namespace {

// The resolved NVML entry points. Required ones fail the load when missing; optional ones may be
// null.
struct NvmlApi : nvml_internal::Basics {
  // Optional.
  xpool_nvmlDeviceGetNumaNodeId_fn get_numa = nullptr;
  xpool_nvmlDeviceGetPciInfo_v3_fn get_pci = nullptr;
  xpool_nvmlDeviceGetTopologyCommonAncestor_fn get_ancestor = nullptr;
  xpool_nvmlDeviceGetNvLinkState_fn get_nvlink_state = nullptr;
  xpool_nvmlDeviceGetNvLinkRemotePciInfo_v2_fn get_nvlink_remote = nullptr;
};

// dlopen handle owner: closes on scope exit.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* get() const { return handle_; }

 private:
  void* handle_;
};

using nvml_internal::Resolve;

Status LoadApi(void* lib, NvmlApi* api) {
  std::string missing;
  nvml_internal::RequireBasics(lib, api, &missing);
  if (!missing.empty()) return FailedPreconditionError("NVML library lacks " + missing);
  Resolve(lib, "nvmlDeviceGetNumaNodeId", &api->get_numa);
  Resolve(lib, "nvmlDeviceGetPciInfo_v3", &api->get_pci);
  Resolve(lib, "nvmlDeviceGetTopologyCommonAncestor", &api->get_ancestor);
  Resolve(lib, "nvmlDeviceGetNvLinkState", &api->get_nvlink_state);
  Resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->get_nvlink_remote);
  return Status::Ok();
}

// "00000000:3B:00.0" → "0000:3b:00.0" (sysfs form: 4-digit domain, lower case).
std::string SysfsBusId(const char* nvml_bus_id) {
  std::string s(nvml_bus_id);
  if (s.size() > 12) s = s.substr(s.size() - 12);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// NVML's common-ancestor level → the project's link scale.
int ScoreForTopologyLevel(int level) {
  switch (level) {
    case XPOOL_NVML_TOPOLOGY_INTERNAL:
      return kLinkSameBoard;
    case XPOOL_NVML_TOPOLOGY_SINGLE:
      return kLinkPcieSwitch;
    case XPOOL_NVML_TOPOLOGY_MULTIPLE:
      return kLinkPcieMultiSwitch;
    case XPOOL_NVML_TOPOLOGY_HOSTBRIDGE:
      return kLinkPcieHostBridge;
    case XPOOL_NVML_TOPOLOGY_NODE:
      return kLinkNuma;
    default:
      return kLinkSystem;
  }
}

struct Probed {
  xpool_nvmlDevice_t handle = nullptr;
  std::string bus_id;  // sysfs form; empty when unknown
  Device device;
};

int NumaNode(const NvmlApi& api, const Probed& p, const std::string& pci_sysfs) {
  if (api.get_numa) {
    unsigned int numa = 0;
    if (api.get_numa(p.handle, &numa) == XPOOL_NVML_SUCCESS && numa < 4096) return static_cast<int>(numa);
  }
  if (p.bus_id.empty()) return 0;
  std::ifstream in(pci_sysfs + "/" + p.bus_id + "/numa_node");
  int numa = -1;
  if (!(in >> numa) || numa < 0) return 0;
  return numa;
}

Probed ProbeDevice(const NvmlApi& api, unsigned int index, const std::string& pci_sysfs, std::string* note) {
  Probed p;
  p.device.vendor = Vendor::kNvidia;
  p.device.index = static_cast<int>(index);
  p.device.max_sharers = ProfileFor(Vendor::kNvidia).default_max_sharers;
  const std::string where = "device " + std::to_string(index) + ": ";
  if (xpool_nvmlReturn_t rc = api.get_handle(index, &p.handle); rc != XPOOL_NVML_SUCCESS) {
    p.handle = nullptr;
    p.device.healthy = false;
    p.device.uuid = "NVML-UNKNOWN-" + std::to_string(index);
    p.device.model = "unknown";
    *note += where + api.Error(rc) + "; ";
    return p;
  }
  char buf[XPOOL_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
  if (api.get_uuid(p.handle, buf, sizeof buf) == XPOOL_NVML_SUCCESS) p.device.uuid = buf;
  if (p.device.uuid.empty()) p.device.uuid = "NVML-UNKNOWN-" + std::to_string(index);
  char name[XPOOL_NVML_DEVICE_NAME_BUFFER_SIZE] = {};
  if (api.get_name(p.handle, name, sizeof name) == XPOOL_NVML_SUCCESS) p.device.model = name;
  // "NVIDIA A100-SXM4-80GB" → "A100-SXM4-80GB": the vendor is a field of its own.
  if (p.device.model.rfind("NVIDIA ", 0) == 0) p.device.model = p.device.model.substr(7);
  if (p.device.model.empty()) p.device.model = "unknown";
  xpool_nvmlMemory_t memory = {};
  if (xpool_nvmlReturn_t rc = api.get_memory(p.handle, &memory); rc != XPOOL_NVML_SUCCESS) {
    p.device.healthy = false;
    *note += where + api.Error(rc) + "; ";
  } else {
    p.device.memory_mib = static_cast<int64_t>(memory.total >> 20);
  }
  if (api.get_pci) {
    xpool_nvmlPciInfo_t pci = {};
    if (api.get_pci(p.handle, &pci) == XPOOL_NVML_SUCCESS) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      p.bus_id = SysfsBusId(pci.busId);
    }
  }
  p.device.numa_node = NumaNode(api, p, pci_sysfs);
  return p;
}

// NVLink lanes from a to b: active links of a whose remote end is b's PCI bus id.
int NvlinkLanes(const NvmlApi& api, const Probed& a, const Probed& b) {
  if (!api.get_nvlink_state || !api.get_nvlink_remote || b.bus_id.empty()) return 0;
  int lanes = 0;
  for (unsigned int link = 0; link < XPOOL_NVML_NVLINK_MAX_LINKS; ++link) {
    int state = XPOOL_NVML_FEATURE_DISABLED;
    if (api.get_nvlink_state(a.handle, link, &state) != XPOOL_NVML_SUCCESS) break;  // past the last link
    if (state != XPOOL_NVML_FEATURE_ENABLED) continue;
    xpool_nvmlPciInfo_t remote = {};
    if (api.get_nvlink_remote(a.handle, link, &remote) != XPOOL_NVML_SUCCESS) continue;
    remote.busId[sizeof remote.busId - 1] = '\0';
    if (SysfsBusId(remote.busId) == b.bus_id) ++lanes;
  }
  return lanes;
}

LinkTable ProbeLinks(const NvmlApi& api, const std::vector<Probed>& devices) {
  const int n = static_cast<int>(devices.size());
  LinkTable links(n);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (!devices[a].handle || !devices[b].handle) continue;
      int score = kLinkSystem;
      if (const int lanes = NvlinkLanes(api, devices[a], devices[b]); lanes > 0) {
        score = lanes * kLinkNvlinkPerLane;
      } else if (api.get_ancestor) {
        int level = XPOOL_NVML_TOPOLOGY_SYSTEM;
        if (api.get_ancestor(devices[a].handle, devices[b].handle, &level) == XPOOL_NVML_SUCCESS) {
          score = ScoreForTopologyLevel(level);
        }
      }
      links.Set(a, b, score);
    }
  }
  return links;
}

}  // namespace

void NvmlDiscovery::ExpandMig(DiscoveryReport* report) const {
  auto nvml = NvmlMig::Open(library_);
  if (!nvml.ok()) return;  // a driver without MIG calls: no GPU is in MIG mode
  auto gpus = (*nvml)->ReadGpus();
  if (!gpus.ok()) {
    report->note += "; MIG state unreadable: " + gpus.status().message();
    return;
  }
  int mig_gpus = 0;
  for (const MigGpuInfo& gpu : *gpus) mig_gpus += gpu.mig_enabled && gpu.model != nullptr ? 1 : 0;
  if (mig_gpus == 0) return;
  if (!mig_slots_) {
    report->node = ExpandMigDevices(report->node, *gpus);
    report->note += "; " + std::to_string(mig_gpus) + " GPU(s) in MIG mode, offered as their instances";
    return;
  }
  std::vector<MigGpuGeometry> slotted;
  report->node = ExpandMigDevices(report->node, *gpus, &slotted);
  report->node.labels[std::string(kMigDynamicLabel)] = FormatMigDynamicLabel(slotted);
  report->note += "; " + std::to_string(mig_gpus) + " GPU(s) in MIG mode, offered by start slot";
}

NvmlDiscovery::NvmlDiscovery(std::string library, std::string pci_sysfs, std::string node_name)
    : library_(std::move(library)), pci_sysfs_(std::move(pci_sysfs)), node_name_(std::move(node_name)) {}

Result<DiscoveryReport> NvmlDiscovery::Discover() {
  DiscoveryReport report;
  report.source = "nvml";
  FillHostInfo(&report.node);
  if (!node_name_.empty()) report.node.name = node_name_;
  dlerror();
  Library lib(dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib.get()) {
    const char* why = dlerror();
    report.available = false;
    report.note = "no NVML found (" + (why ? std::string(why) : library_) + "): no NVIDIA devices on this node";
    return report;
  }
  NvmlApi api;
  RETURN_IF_ERROR(LoadApi(lib.get(), &api).WithContext(library_));
  if (xpool_nvmlReturn_t rc = api.init(); rc != XPOOL_NVML_SUCCESS) {
    if (rc == XPOOL_NVML_ERROR_DRIVER_NOT_LOADED) {
      report.available = false;
      report.note = "NVML found but the NVIDIA driver is not loaded: no NVIDIA devices on this node";
      return report;
    }
    return UnavailableError("nvmlInit failed: " + api.Error(rc));
  }
  unsigned int count = 0;
  if (xpool_nvmlReturn_t rc = api.get_count(&count); rc != XPOOL_NVML_SUCCESS) {
    Status s = UnavailableError("nvmlDeviceGetCount failed: " + api.Error(rc));
    (void)api.shutdown();
    return s;
  }
  std::string problems;
  std::vector<Probed> probed;
  for (unsigned int i = 0; i < count && i < 256; ++i) probed.push_back(ProbeDevice(api, i, pci_sysfs_, &problems));
  for (const Probed& p : probed) report.node.devices.push_back(p.device);
  if (probed.size() > 1) report.node.links = ProbeLinks(api, probed);
  (void)api.shutdown();
  report.note = "NVML: " + std::to_string(count) + " device(s)";
  ExpandMig(&report);
  if (!problems.empty()) report.note += "; problems: " + problems.substr(0, problems.size() - 2);
  RETURN_IF_ERROR(ValidateNode(report.node));
  return report;
}

}  // namespace xpool::agent
