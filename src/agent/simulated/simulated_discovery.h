#pragma once
// Simulated discovery: a node described by a short spec or a YAML file, for machines without
// accelerators (development, demos, the end-to-end test). Every node it produces has
// Node::simulated = true, and every device a uuid "SIM-<node>-<i>", so nothing downstream can
// mistake it for hardware.
//
// Spec syntax (comma-separated groups):  COUNT x [VENDOR:] MODEL - MEMORY
//   "4xA100-80GB"             4 NVIDIA devices, model "A100-80GB", 81920 MiB each
//   "2xA100-80GB,2xT4-16GB"   two groups
//   "8xascend:910B-64GB"      a vendor other than NVIDIA (names as in model/vendor.h)
// MEMORY is the text after the last '-': "80GB"/"80G"/"80Gi" all mean 80 GiB (device makers' GB are
// GiB), "512MB"/"512Mi" mean 512 MiB; any other form accepted by ParseMemoryMiB (common/units.h) is
// used as is.
//
// YAML node file:
//   name: sim-a            # optional (default: host name)
//   cpu: 32                # optional, as ParseCpuMilli (default: this machine's)
//   memory: 256Gi          # optional (default: this machine's)
//   devices:
//     - {model: A100-SXM4-80GB, memory: 80Gi, count: 4, numa: 0, vendor: nvidia, max_sharers: 10}
//   links:                 # optional; device indexes in file order
//     - {a: 0, b: 1, nvlink: 12}      # or score: 1200, or pcie:
//     switch|multiswitch|hostbridge|numa|system|board
//
// Stateless functions and a value-type discovery; thread-compatible.
#include <string>
#include <string_view>

#include "agent/discovery.h"

namespace xpool::agent {

// Appends the spec's devices to `node` (its name is used in the uuids). Errors name the group and
// the problem.
Status AppendSimulatedDevices(std::string_view spec, Node* node);
// Parses a YAML node description (the text, not a path); `origin` names it in errors.
Result<Node> ParseNodeYaml(std::string_view text, std::string_view origin, const Node& defaults);

class SimulatedDiscovery final : public DeviceDiscovery {
 public:
  // Exactly one of spec / node_file is non-empty. `node_name` empty = the host name.
  SimulatedDiscovery(std::string spec, std::string node_file, std::string node_name);
  std::string_view name() const override { return "simulated"; }
  Result<DiscoveryReport> Discover() override;

 private:
  std::string spec_;
  std::string node_file_;
  std::string node_name_;
};

}  // namespace xpool::agent
