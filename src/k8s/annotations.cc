#include "k8s/annotations.h"

#include "k8s/internal/kube_json.h"

namespace xpool::k8s {
namespace {

using internal::Field;
using internal::Json;

Result<int64_t> IntField(const Json& o, std::string_view name, std::string_view where, bool required,
                         int64_t fallback = 0) {
  const Json* v = Field(o, name);
  if (v == nullptr) {
    if (required) return InvalidArgumentError(std::string(where) + "." + std::string(name) + " is missing");
    return fallback;
  }
  if (!v->is_number_integer()) {
    return InvalidArgumentError(std::string(where) + "." + std::string(name) + " must be an integer");
  }
  return v->get<int64_t>();
}

Result<Vendor> VendorField(const Json& o, std::string_view where) {
  ASSIGN_OR_RETURN(std::string name, internal::StringField(o, "vendor", where));
  if (name.empty()) return Vendor::kNvidia;
  Result<Vendor> v = ParseVendor(name);
  if (!v.ok()) return v.status().WithContext(where);
  return v;
}

Result<Device> DeviceFromJson(const Json& d, const std::string& where) {
  if (!d.is_object()) return InvalidArgumentError(where + " must be an object");
  Device out;
  ASSIGN_OR_RETURN(out.uuid, internal::StringField(d, "uuid", where));
  if (out.uuid.empty()) return InvalidArgumentError(where + ".uuid is missing");
  ASSIGN_OR_RETURN(out.vendor, VendorField(d, where));
  ASSIGN_OR_RETURN(out.model, internal::StringField(d, "model", where));
  ASSIGN_OR_RETURN(int64_t index, IntField(d, "index", where, true));
  ASSIGN_OR_RETURN(out.memory_mib, IntField(d, "memoryMiB", where, true));
  ASSIGN_OR_RETURN(out.compute_milli, IntField(d, "computeMilli", where, false, kWholeDeviceMilli));
  ASSIGN_OR_RETURN(int64_t sharers,
                   IntField(d, "maxSharers", where, false, ProfileFor(out.vendor).default_max_sharers));
  ASSIGN_OR_RETURN(int64_t numa, IntField(d, "numa", where, false));
  if (index < 0 || index > 4096) return InvalidArgumentError(where + ".index is out of range");
  if (sharers < 1 || sharers > 1024) return InvalidArgumentError(where + ".maxSharers must be 1..1024");
  if (numa < 0 || numa > 1024) return InvalidArgumentError(where + ".numa is out of range");
  if (out.memory_mib < 0) return InvalidArgumentError(where + ".memoryMiB must not be negative");
  out.index = static_cast<int>(index);
  out.max_sharers = static_cast<int>(sharers);
  out.numa_node = static_cast<int>(numa);
  ASSIGN_OR_RETURN(std::string mode, internal::StringField(d, "mode", where));
  if (!mode.empty()) {
    Result<DeviceMode> m = ParseDeviceMode(mode);
    if (!m.ok()) return m.status().WithContext(where);
    out.mode = *m;
  }
  // A free MIG slot (docs/mig.md) has no compute; every other device some.
  if (out.compute_milli < 0 || (out.compute_milli == 0 && out.mode != DeviceMode::kMigSlot)) {
    return InvalidArgumentError(where + ".computeMilli must be positive");
  }
  const Json* healthy = Field(d, "healthy");
  if (healthy != nullptr) {
    if (!healthy->is_boolean()) return InvalidArgumentError(where + ".healthy must be true or false");
    out.healthy = healthy->get<bool>();
  }
  return out;
}

Result<int> CheckVersion(const Json& root, std::string_view what) {
  ASSIGN_OR_RETURN(int64_t version, IntField(root, "version", what, false, 1));
  if (version != 1) {
    return InvalidArgumentError(std::string(what) + " has version " + std::to_string(version) +
                                "; this xpool reads version 1");
  }
  return 1;
}

}  // namespace

std::string EncodeNodeDevices(const std::vector<Device>& devices) {
  Json list = Json::array();
  for (const Device& d : devices) {
    list.push_back({{"uuid", d.uuid},
                    {"index", d.index},
                    {"vendor", std::string(VendorName(d.vendor))},
                    {"model", d.model},
                    {"memoryMiB", d.memory_mib},
                    {"computeMilli", d.compute_milli},
                    {"maxSharers", d.max_sharers},
                    {"numa", d.numa_node},
                    {"mode", std::string(DeviceModeName(d.mode))},
                    {"healthy", d.healthy}});
  }
  return Json{{"version", 1}, {"devices", list}}.dump();
}

Result<std::vector<Device>> DecodeNodeDevices(std::string_view text) {
  const std::string what(kNodeDevicesAnnotation);
  ASSIGN_OR_RETURN(Json root, internal::ParseJson(text, "annotation " + what));
  RETURN_IF_ERROR(CheckVersion(root, what));
  const Json* list = Field(root, "devices");
  if (list == nullptr || !list->is_array()) return InvalidArgumentError(what + ": devices must be a list");
  std::vector<Device> out;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(Device d, DeviceFromJson((*list)[i], what + ": devices[" + std::to_string(i) + "]"));
    out.push_back(std::move(d));
  }
  return out;
}

Result<Node> NodeFromKube(const KubeNode& kube) {
  Node node;
  node.name = kube.name;
  node.labels = kube.labels;
  node.ready = kube.ready;
  node.cordoned = kube.unschedulable;
  auto it = kube.annotations.find(std::string(kNodeDevicesAnnotation));
  if (it != kube.annotations.end()) {
    Result<std::vector<Device>> devices = DecodeNodeDevices(it->second);
    if (!devices.ok()) return devices.status().WithContext("node " + kube.name);
    node.devices = std::move(devices).value();
  }
  if (Status s = ValidateNode(node); !s.ok()) return s;
  return node;
}

std::string EncodeAssignment(const PodAssignment& a) {
  Json containers = Json::array();
  for (const ContainerAssignment& c : a.containers) {
    Json devices = Json::array();
    for (const AssignedDevice& d : c.devices) {
      devices.push_back({{"uuid", d.uuid},
                         {"index", d.index},
                         {"vendor", std::string(VendorName(d.vendor))},
                         {"memoryMiB", d.memory_mib},
                         {"computeMilli", d.compute_milli}});
    }
    Json entry = {{"name", c.name}, {"devices", devices}};
    if (c.init) entry["init"] = true;
    if (c.sidecar) entry["sidecar"] = true;
    containers.push_back(std::move(entry));
  }
  return Json{{"version", 1}, {"node", a.node}, {"containers", containers}}.dump();
}

Result<PodAssignment> DecodeAssignment(std::string_view text) {
  const std::string what(kAllocationAnnotation);
  ASSIGN_OR_RETURN(Json root, internal::ParseJson(text, "annotation " + what));
  RETURN_IF_ERROR(CheckVersion(root, what));
  PodAssignment out;
  ASSIGN_OR_RETURN(out.node, internal::StringField(root, "node", what));
  if (out.node.empty()) return InvalidArgumentError(what + ": node is missing");
  const Json* containers = Field(root, "containers");
  if (containers == nullptr || !containers->is_array()) {
    return InvalidArgumentError(what + ": containers must be a list");
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    const std::string where = what + ": containers[" + std::to_string(i) + "]";
    const Json& c = (*containers)[i];
    ContainerAssignment ca;
    ASSIGN_OR_RETURN(ca.name, internal::StringField(c, "name", where));
    for (auto [name, target] : {std::pair{"init", &ca.init}, std::pair{"sidecar", &ca.sidecar}}) {
      const Json* flag = Field(c, name);
      if (flag == nullptr) continue;
      if (!flag->is_boolean()) return InvalidArgumentError(where + "." + name + " must be true or false");
      *target = flag->get<bool>();
    }
    const Json* devices = Field(c, "devices");
    if (devices == nullptr || !devices->is_array()) return InvalidArgumentError(where + ".devices must be a list");
    for (size_t j = 0; j < devices->size(); ++j) {
      const std::string dwhere = where + ".devices[" + std::to_string(j) + "]";
      const Json& d = (*devices)[j];
      AssignedDevice ad;
      ASSIGN_OR_RETURN(ad.uuid, internal::StringField(d, "uuid", dwhere));
      ASSIGN_OR_RETURN(int64_t index, IntField(d, "index", dwhere, true));
      if (index < 0 || index > 4096) return InvalidArgumentError(dwhere + ".index is out of range");
      ad.index = static_cast<int>(index);
      ASSIGN_OR_RETURN(ad.vendor, VendorField(d, dwhere));
      ASSIGN_OR_RETURN(ad.memory_mib, IntField(d, "memoryMiB", dwhere, true));
      ASSIGN_OR_RETURN(ad.compute_milli, IntField(d, "computeMilli", dwhere, false));
      if (ad.memory_mib < 0 || ad.compute_milli < 0) {
        return InvalidArgumentError(dwhere + " has a negative amount");
      }
      ca.devices.push_back(std::move(ad));
    }
    out.containers.push_back(std::move(ca));
  }
  return out;
}

}  // namespace xpool::k8s
