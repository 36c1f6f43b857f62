#include "agent/discovery.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "agent/command.h"
#include "agent/nvml/nvml_discovery.h"
#include "agent/simulated/simulated_discovery.h"
#include "agent/vendor/tool_discovery.h"
#include "common/units.h"

namespace xpool::agent {

std::string DefaultNodeAddress(std::string_view peer) {
  const size_t scheme = peer.find("://");
  std::string_view host = scheme == std::string_view::npos ? peer : peer.substr(scheme + 3);
  host = host.substr(0, host.find('/'));
  if (host.rfind("127.", 0) == 0 || host.rfind("localhost", 0) == 0 || host.rfind("[::1]", 0) == 0) {
    return "127.0.0.1";
  }
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') return name;
  return "127.0.0.1";
}

void FillHostInfo(Node* node) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
    node->name = host;
  } else {
    node->name = "localhost";
  }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  node->cpu_milli = cpus > 0 ? static_cast<int64_t>(cpus) * 1000 : 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") {
      node->memory_mib = kib / 1024;
      break;
    }
  }
}

Result<int> ParsePcieLevel(std::string_view name) {
  struct Level {
    std::string_view name;
    int score;
  };
  static constexpr Level kLevels[] = {
      {"board", kLinkSameBoard},           {"switch", kLinkPcieSwitch}, {"multiswitch", kLinkPcieMultiSwitch},
      {"hostbridge", kLinkPcieHostBridge}, {"numa", kLinkNuma},         {"system", kLinkSystem}};
  for (const Level& l : kLevels) {
    if (l.name == name) return l.score;
  }
  return InvalidArgumentError("unknown pcie level \"" + std::string(name) +
                              "\" (known: board, switch, multiswitch, hostbridge, numa, system)");
}

std::string DiscoverySourceNames() {
  std::string names = "auto, nvml, simulated";
  for (const VendorProfile& p : AllVendorProfiles()) names += ", " + std::string(p.name);
  return names;
}

namespace {

// NVML, then (auto) the first vendor tool on PATH.
Result<DiscoveryReport> DiscoverHardware(const DiscoveryOptions& options, bool auto_detect) {
  NvmlDiscovery nvml(options.nvml_library, "/sys/bus/pci/devices", options.node_name);
  nvml.set_mig_slots(options.mig_slots);
  ASSIGN_OR_RETURN(DiscoveryReport report, nvml.Discover());
  if (report.available || !auto_detect) return report;
  std::string tried;
  for (const VendorTool& tool : VendorTools()) {
    if (!FindTool(tool).ok()) {
      tried += (tried.empty() ? "" : ", ") + std::string(tool.program);
      continue;
    }
    VendorToolDiscovery vendor(tool, "", options.tool_timeout_ms, options.node_name);
    ASSIGN_OR_RETURN(DiscoveryReport found, vendor.Discover());
    found.note = report.note + "; found " + std::string(tool.program) + ": " + found.note;
    return found;
  }
  report.note += "; no vendor tool found (" + tried + ")";
  return report;
}

}  // namespace

Result<DiscoveryReport> DiscoverNode(const DiscoveryOptions& options) {
  if (!options.simulate.empty() && !options.node_file.empty()) {
    return InvalidArgumentError("give either a simulate spec or a node file, not both");
  }
  const std::string& source = options.source.empty() ? std::string("auto") : options.source;
  const bool simulated = !options.simulate.empty() || !options.node_file.empty();
  if (simulated && source != "auto" && source != "simulated") {
    return InvalidArgumentError("discovery source \"" + source + "\" and a simulated node do not go together");
  }
  if (source == "simulated" && !simulated) {
    return InvalidArgumentError("discovery source \"simulated\" needs a simulate spec or a node file");
  }
  if (simulated) {
    SimulatedDiscovery sim(options.simulate, options.node_file, options.node_name);
    return sim.Discover();
  }
  std::optional<Vendor> vendor;
  if (source != "auto" && source != "nvml") {
    auto parsed = ParseVendor(source);
    if (!parsed.ok()) {
      return InvalidArgumentError("unknown discovery source \"" + source + "\" (known: " + DiscoverySourceNames() +
                                  ")");
    }
    vendor = *parsed;
  }
  if (!options.vendor_tool.empty() && (!vendor || *vendor == Vendor::kNvidia)) {
    return InvalidArgumentError("a vendor tool (\"" + options.vendor_tool +
                                "\") needs a vendor's discovery source (ascend, cambricon, hygon, iluvatar, metax)");
  }
  if (vendor && *vendor != Vendor::kNvidia) {
    ASSIGN_OR_RETURN(const VendorTool* tool, ToolFor(*vendor));
    VendorToolDiscovery discovery(*tool, options.vendor_tool, options.tool_timeout_ms, options.node_name);
    return discovery.Discover();
  }
  ASSIGN_OR_RETURN(DiscoveryReport report, DiscoverHardware(options, source == "auto"));
  if (report.available || options.fallback_simulate.empty()) return report;
  SimulatedDiscovery sim(options.fallback_simulate, "", options.node_name);
  ASSIGN_OR_RETURN(DiscoveryReport fallback, sim.Discover());
  fallback.note = report.note + "; using a SIMULATED node instead: " + options.fallback_simulate;
  return fallback;
}

namespace {

// Renders rows as columns padded to the widest cell.
std::string Align(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string FormatDeviceTable(const DiscoveryReport& report) {
  const Node& n = report.node;
  std::ostringstream out;
  out << "node " << n.name << (n.simulated ? " (SIMULATED)" : "") << ": " << n.devices.size() << " device(s), "
      << n.cpu_milli / 1000 << " CPUs, " << FormatMemoryMiB(n.memory_mib) << " memory; source " << report.source
      << "\n";
  if (!report.note.empty()) out << "note: " << report.note << "\n";
  if (n.devices.empty()) return out.str();
  std::vector<std::vector<std::string>> rows = {
      {"INDEX", "VENDOR", "MODEL", "MEMORY", "NUMA", "SHARERS", "MODE", "HEALTH", "UUID"}};
  for (const Device& d : n.devices) {
    rows.push_back({std::to_string(d.index), std::string(VendorName(d.vendor)), d.model, FormatMemoryMiB(d.memory_mib),
                    std::to_string(d.numa_node), std::to_string(d.max_sharers), std::string(DeviceModeName(d.mode)),
                    d.healthy ? "ok" : "UNHEALTHY", d.uuid});
  }
  out << "\n" << Align(rows);
  if (!n.links.empty()) {
    std::vector<std::vector<std::string>> links = {{"LINKS"}};
    for (const Device& d : n.devices) links[0].push_back(std::to_string(d.index));
    for (int a = 0; a < n.links.size(); ++a) {
      std::vector<std::string> row = {std::to_string(a)};
      for (int b = 0; b < n.links.size(); ++b) row.push_back(a == b ? "-" : std::to_string(n.links.Score(a, b)));
      links.push_back(std::move(row));
    }
    out << "\nlink scores (100 per NVLink lane; PCIe 50 board, 40 switch, 30 switches, 20 host "
           "bridge, 10 NUMA, "
           "0 system):\n"
        << Align(links);
  }
  return out.str();
}

}  // namespace xpool::agent
