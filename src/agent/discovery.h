#pragma once
// DeviceDiscovery: how a node agent learns what accelerators its machine has.
//
// One implementation per source: NVML (nvml/nvml_discovery.h, loaded with dlopen at run time), the other
// vendors' management tools (vendor/tool_discovery.h: `npu-smi info`, `cnmon`, `hy-smi`, `ixsmi`, `mx-smi`), a
// simulated node (simulated/simulated_discovery.h: `--simulate 4xA100-80GB` or a YAML node file). Vendors' resource
// rules are data in model/vendor.h, so a new vendor needs only a Discover().
//
// Discover() returns a DiscoveryReport, not only a Node: "this machine has no NVML" is a normal
// answer (available = false, a note saying so), never an error. Errors are for broken input (a bad
// spec, a bad node file) or a driver that is present but fails.
//
// Implementations are owned by the agent; Discover() may be called again to refresh health. Not
// thread-safe: callers serialise calls on one instance.
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/device.h"

namespace xpool::agent {

struct DiscoveryReport {
  std::string source;     // "nvml", "simulated", or a vendor's name ("ascend", ...)
  bool available = true;  // false: the source found no driver; node.devices is empty
  std::string note;       // for people: "no NVML found (...)", "simulated: 4xA100-80GB"
  Node node;              // name, CPU, memory, devices, links; node.simulated for simulated sources
};

class DeviceDiscovery {
 public:
  virtual ~DeviceDiscovery() = default;
  virtual std::string_view name() const = 0;
  virtual Result<DiscoveryReport> Discover() = 0;
};

// The machine's own name, CPU (millicores, online CPUs) and memory (MiB, from /proc/meminfo). Fills
// a Node's name/cpu/memory; leaves devices alone. A failing probe leaves the field at 0
// (ValidateNode accepts 0).
void FillHostInfo(Node* node);

// The address a node registers (protocol/task.h, kNodeAddressLabel) when none is given: 127.0.0.1 when `peer`
// (the server's URL, or the address the server listens on for agents) is on the loopback — every node then runs
// on this machine — else this machine's host name.
std::string DefaultNodeAddress(std::string_view peer);

// Link scores written into LinkTable by every discovery source (one scale for the whole project;
// the topology policy compares them). Higher = faster path between two devices.
//   kLinkNvlinkPerLane × lanes   NVLink (e.g. 12 lanes on A100 SXM = 1200)
//   kLinkSameBoard               two devices on one board (multi-GPU card)
//   kLinkPcieSwitch              behind the same PCIe switch
//   kLinkPcieMultiSwitch         several PCIe switches, no host bridge crossed
//   kLinkPcieHostBridge          same host bridge
//   kLinkNuma                    same NUMA node, across host bridges
//   kLinkSystem                  across NUMA nodes / sockets (SMP interconnect) — same as unknown
inline constexpr int kLinkNvlinkPerLane = 100;
inline constexpr int kLinkSameBoard = 50;
inline constexpr int kLinkPcieSwitch = 40;
inline constexpr int kLinkPcieMultiSwitch = 30;
inline constexpr int kLinkPcieHostBridge = 20;
inline constexpr int kLinkNuma = 10;
inline constexpr int kLinkSystem = 0;

// "switch", "multiswitch", "hostbridge", "numa", "system", "board" → the score above.
Result<int> ParsePcieLevel(std::string_view name);

// What an agent uses to pick its discovery. Exactly one source is chosen:
//   simulate non-empty  → simulated from the spec ("4xA100-80GB,2xT4-16GB")
//   node_file non-empty → simulated from the YAML file
//   source "nvml"       → NVML from nvml_library
//   source a vendor     → that vendor's tool (agent/vendor/tool_discovery.h: "ascend" runs `npu-smi info`, ...;
//                         "nvidia" is NVML), from vendor_tool when given, else found as auto finds it
//   source "auto"       → NVML; when it finds no driver, the first vendor tool found (on PATH or where its vendor
//                         installs it, in the order of VendorTools()); when neither, the NVML report (no devices)
// When the chosen source (nvml or auto) finds no devices and fallback_simulate is non-empty: a simulated node from
// that spec, with a note saying why.
struct DiscoveryOptions {
  std::string simulate;
  std::string node_file;
  std::string source = "auto";  // "auto", "nvml", "simulated" (with simulate or node_file) or a vendor name
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string vendor_tool;          // the vendor tool's path or name (source a vendor); "" = its usual name
  int64_t tool_timeout_ms = 10000;  // a vendor tool still running after this is killed: an error
  std::string fallback_simulate;
  std::string node_name;  // overrides the host name when non-empty
  // NVML: GPUs in MIG mode are offered by start slot and the node labelled kMigDynamicLabel (--mig-dynamic;
  // nvml_discovery.h).
  bool mig_slots = false;
};

// "auto", "nvml", "simulated", then the vendors' names: what `source` accepts, for flag help.
std::string DiscoverySourceNames();

// Runs the chosen discovery once. Bad options (both simulate and node_file, an unknown source, a simulated source
// without a spec, vendor_tool without a vendor source) are InvalidArgument.
Result<DiscoveryReport> DiscoverNode(const DiscoveryOptions& options);

// An aligned, human-readable table of the node's devices (index, vendor, model, memory, NUMA, sharers, mode,
// health, uuid) and its links, with a header line naming the node and whether it is simulated.
std::string FormatDeviceTable(const DiscoveryReport& report);

}  // namespace xpool::agent
