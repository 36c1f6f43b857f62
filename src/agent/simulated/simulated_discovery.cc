#include "agent/simulated/simulated_discovery.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "common/units.h"

namespace xpool::agent {
namespace {

constexpr int kMaxDevicesPerNode = 256;

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// "80GB" → "80Gi", "512MB" → "512Mi", "1TB" → "1Ti": device makers' GB are binary.
std::string NormaliseDeviceMemory(std::string_view text) {
  std::string s(text);
  auto ends_with = [&](std::string_view suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (auto [from, to] : {std::pair{"GB", "Gi"}, {"MB", "Mi"}, {"TB", "Ti"}, {"G", "Gi"}, {"M", "Mi"}, {"T", "Ti"}}) {
    if (ends_with(from)) return s.substr(0, s.size() - std::string_view(from).size()) + to;
  }
  return s;
}

Device MakeSimDevice(const Node& node, Vendor vendor, std::string model, int64_t memory_mib, int numa) {
  Device d;
  d.vendor = vendor;
  d.model = std::move(model);
  d.index = static_cast<int>(node.devices.size());
  d.uuid = "SIM-" + node.name + "-" + std::to_string(d.index);
  d.memory_mib = memory_mib;
  d.numa_node = numa;
  d.max_sharers = ProfileFor(vendor).default_max_sharers;
  return d;
}

Status ParseGroup(std::string_view group, Node* node) {
  const std::string where = "simulate group " + Quoted(group) + ": ";
  const size_t x = group.find('x');
  if (x == std::string_view::npos || x == 0) {
    return InvalidArgumentError(where + "expected COUNTxMODEL-MEMORY, e.g. 4xA100-80GB");
  }
  auto count = ParseNonNegativeInt(group.substr(0, x));
  if (!count.ok()) return InvalidArgumentError(where + "bad count: " + count.status().message());
  if (*count < 1) return InvalidArgumentError(where + "count must be at least 1");
  if (*count + static_cast<int64_t>(node->devices.size()) > kMaxDevicesPerNode) {
    return InvalidArgumentError(where + "more than " + std::to_string(kMaxDevicesPerNode) + " devices on one node");
  }
  std::string_view rest = group.substr(x + 1);
  Vendor vendor = Vendor::kNvidia;
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    auto v = ParseVendor(rest.substr(0, colon));
    if (!v.ok()) return InvalidArgumentError(where + v.status().message());
    vendor = *v;
    rest = rest.substr(colon + 1);
  }
  const size_t dash = rest.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size()) {
    return InvalidArgumentError(where + "expected MODEL-MEMORY after the count, e.g. A100-80GB");
  }
  auto memory = ParseMemoryMiB(NormaliseDeviceMemory(rest.substr(dash + 1)));
  if (!memory.ok()) return InvalidArgumentError(where + memory.status().message());
  if (*memory < 1) return InvalidArgumentError(where + "device memory must be positive");
  for (int64_t i = 0; i < *count; ++i) {
    node->devices.push_back(MakeSimDevice(*node, vendor, std::string(rest), *memory, 0));
  }
  return Status::Ok();
}

template <typename T>
Result<T> YamlAs(const YAML::Node& n, std::string_view field, std::string_view where) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgumentError(std::string(where) + ": field " + std::string(field) + " has a bad value (line " +
                                std::to_string(n.Mark().line + 1) + ")");
  }
}

Result<std::string> YamlString(const YAML::Node& n, std::string_view field, std::string_view where) {
  if (!n.IsScalar()) {
    return InvalidArgumentError(std::string(where) + ": field " + std::string(field) + " must be a value");
  }
  return n.Scalar();
}

Status ParseLink(const YAML::Node& link, std::string_view where, int device_count, LinkTable* links) {
  if (!link.IsMap()) return InvalidArgumentError(std::string(where) + ": expected {a: I, b: J, score|nvlink|pcie}");
  if (!link["a"] || !link["b"]) return InvalidArgumentError(std::string(where) + ": needs a and b");
  ASSIGN_OR_RETURN(int a, YamlAs<int>(link["a"], "a", where));
  ASSIGN_OR_RETURN(int b, YamlAs<int>(link["b"], "b", where));
  if (a < 0 || b < 0 || a >= device_count || b >= device_count || a == b) {
    return InvalidArgumentError(std::string(where) + ": a and b must be two different device indexes in 0.." +
                                std::to_string(device_count - 1));
  }
  int kinds = (link["score"] ? 1 : 0) + (link["nvlink"] ? 1 : 0) + (link["pcie"] ? 1 : 0);
  if (kinds != 1) return InvalidArgumentError(std::string(where) + ": give exactly one of score, nvlink, pcie");
  int score = 0;
  if (link["score"]) {
    ASSIGN_OR_RETURN(score, YamlAs<int>(link["score"], "score", where));
  } else if (link["nvlink"]) {
    ASSIGN_OR_RETURN(int lanes, YamlAs<int>(link["nvlink"], "nvlink", where));
    if (lanes < 1 || lanes > 64) return InvalidArgumentError(std::string(where) + ": nvlink lanes must be 1..64");
    score = lanes * kLinkNvlinkPerLane;
  } else {
    ASSIGN_OR_RETURN(std::string level, YamlString(link["pcie"], "pcie", where));
    auto s = ParsePcieLevel(level);
    if (!s.ok()) return InvalidArgumentError(std::string(where) + ": " + s.status().message());
    score = *s;
  }
  if (score < 0) return InvalidArgumentError(std::string(where) + ": score must not be negative");
  links->Set(a, b, score);
  return Status::Ok();
}

Status ParseDeviceEntry(const YAML::Node& entry, const std::string& where, Node* node) {
  if (!entry.IsMap()) return InvalidArgumentError(where + ": expected a map with model and memory");
  for (const auto& kv : entry) {
    const std::string key = kv.first.Scalar();
    if (key != "model" && key != "memory" && key != "count" && key != "numa" && key != "vendor" &&
        key != "max_sharers") {
      return InvalidArgumentError(where + ": unknown field " + Quoted(key) +
                                  " (known: model, memory, count, numa, vendor, max_sharers)");
    }
  }
  if (!entry["model"]) return InvalidArgumentError(where + ": model is missing");
  if (!entry["memory"]) return InvalidArgumentError(where + ": memory is missing");
  ASSIGN_OR_RETURN(std::string model, YamlString(entry["model"], "model", where));
  if (model.empty()) return InvalidArgumentError(where + ": model is empty");
  ASSIGN_OR_RETURN(std::string memory_text, YamlString(entry["memory"], "memory", where));
  auto memory = ParseMemoryMiB(NormaliseDeviceMemory(memory_text));
  if (!memory.ok()) return InvalidArgumentError(where + ": " + memory.status().message());
  if (*memory < 1) return InvalidArgumentError(where + ": memory must be positive");
  int count = 1, numa = 0;
  if (entry["count"]) {
    ASSIGN_OR_RETURN(count, YamlAs<int>(entry["count"], "count", where));
  }
  if (count < 1 || count + static_cast<int>(node->devices.size()) > kMaxDevicesPerNode) {
    return InvalidArgumentError(where + ": count must be 1.." + std::to_string(kMaxDevicesPerNode) +
                                " (devices per node)");
  }
  if (entry["numa"]) {
    ASSIGN_OR_RETURN(numa, YamlAs<int>(entry["numa"], "numa", where));
  }
  if (numa < 0) numa = 0;  // as sysfs: -1 = unknown → node 0
  Vendor vendor = Vendor::kNvidia;
  if (entry["vendor"]) {
    ASSIGN_OR_RETURN(std::string v, YamlString(entry["vendor"], "vendor", where));
    auto parsed = ParseVendor(v);
    if (!parsed.ok()) return InvalidArgumentError(where + ": " + parsed.status().message());
    vendor = *parsed;
  }
  for (int i = 0; i < count; ++i) node->devices.push_back(MakeSimDevice(*node, vendor, model, *memory, numa));
  if (entry["max_sharers"]) {
    ASSIGN_OR_RETURN(int sharers, YamlAs<int>(entry["max_sharers"], "max_sharers", where));
    if (sharers < 1) return InvalidArgumentError(where + ": max_sharers must be at least 1");
    for (size_t i = node->devices.size() - count; i < node->devices.size(); ++i) {
      node->devices[i].max_sharers = sharers;
    }
  }
  return Status::Ok();
}

Result<Node> ParseNodeYamlDocument(const YAML::Node& root, const std::string& origin, const Node& defaults) {
  if (!root.IsMap()) return InvalidArgumentError(origin + ": expected a map with a devices list");
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "name" && key != "cpu" && key != "memory" && key != "devices" && key != "links") {
      return InvalidArgumentError(origin + ": unknown field " + Quoted(key) +
                                  " (known: name, cpu, memory, devices, links)");
    }
  }
  Node node = defaults;
  node.devices.clear();
  node.links = LinkTable();
  node.simulated = true;
  if (root["name"]) {
    ASSIGN_OR_RETURN(node.name, YamlString(root["name"], "name", origin));
  }
  if (root["cpu"]) {
    ASSIGN_OR_RETURN(std::string cpu, YamlString(root["cpu"], "cpu", origin));
    auto milli = ParseCpuMilli(cpu);
    if (!milli.ok()) return InvalidArgumentError(origin + ": " + milli.status().message());
    node.cpu_milli = *milli;
  }
  if (root["memory"]) {
    ASSIGN_OR_RETURN(std::string mem, YamlString(root["memory"], "memory", origin));
    auto m = ParseMemoryMiB(mem);
    if (!m.ok()) return InvalidArgumentError(origin + ": " + m.status().message());
    node.memory_mib = *m;
  }
  const YAML::Node devices = root["devices"];
  if (!devices || !devices.IsSequence() || devices.size() == 0) {
    return InvalidArgumentError(origin + ": devices must be a non-empty list");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    RETURN_IF_ERROR(ParseDeviceEntry(devices[i], origin + ": devices[" + std::to_string(i) + "]", &node));
  }
  if (const YAML::Node links = root["links"]; links) {
    if (!links.IsSequence()) return InvalidArgumentError(origin + ": links must be a list");
    node.links = LinkTable(static_cast<int>(node.devices.size()));
    for (size_t i = 0; i < links.size(); ++i) {
      RETURN_IF_ERROR(ParseLink(links[i], origin + ": links[" + std::to_string(i) + "]",
                                static_cast<int>(node.devices.size()), &node.links));
    }
  }
  RETURN_IF_ERROR(ValidateNode(node).WithContext(origin));
  return node;
}

}  // namespace

Status AppendSimulatedDevices(std::string_view spec, Node* node) {
  if (spec.empty()) return InvalidArgumentError("simulate spec is empty (e.g. 4xA100-80GB)");
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view group = spec.substr(start, comma - start);
    while (!group.empty() && group.front() == ' ') group.remove_prefix(1);
    while (!group.empty() && group.back() == ' ') group.remove_suffix(1);
    if (group.empty()) return InvalidArgumentError("simulate spec " + Quoted(spec) + " has an empty group");
    RETURN_IF_ERROR(ParseGroup(group, node));
    start = comma + 1;
  }
  return Status::Ok();
}

Result<Node> ParseNodeYaml(std::string_view text, std::string_view origin, const Node& defaults) {
  const std::string where(origin);
  try {
    return ParseNodeYamlDocument(YAML::Load(std::string(text)), where, defaults);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(where + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

SimulatedDiscovery::SimulatedDiscovery(std::string spec, std::string node_file, std::string node_name)
    : spec_(std::move(spec)), node_file_(std::move(node_file)), node_name_(std::move(node_name)) {}

Result<DiscoveryReport> SimulatedDiscovery::Discover() {
  DiscoveryReport report;
  report.source = "simulated";
  Node defaults;
  FillHostInfo(&defaults);
  if (!node_name_.empty()) defaults.name = node_name_;
  if (!node_file_.empty()) {
    std::ifstream in(node_file_);
    if (!in) return NotFoundError("node file " + Quoted(node_file_) + " cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    ASSIGN_OR_RETURN(report.node, ParseNodeYaml(text.str(), node_file_, defaults));
    report.note = "simulated node from " + node_file_;
  } else {
    report.node = defaults;
    report.node.simulated = true;
    RETURN_IF_ERROR(AppendSimulatedDevices(spec_, &report.node));
    report.note = "simulated devices: " + spec_;
  }
  RETURN_IF_ERROR(ValidateNode(report.node));
  return report;
}

}  // namespace xpool::agent
