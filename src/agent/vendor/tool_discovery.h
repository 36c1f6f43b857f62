#pragma once
// VendorToolDiscovery: the devices of a non-NVIDIA vendor, from its management tool's standard output (the tools
// and parsers: vendor/smi_parsers.h). The tool runs once per Discover(), with a deadline (default 10 s; a tool
// that hangs on a wedged driver is killed). Unlike NVML, this source is chosen on purpose (`--discovery ascend`,
// or found on PATH by auto-detection), so a missing tool, a tool that fails or times out, and output that is not
// the tool's listing are errors that name the tool; a tool that lists no device is a report with available =
// false. Owned by the agent; not thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/discovery.h"

namespace xpool::agent {

// A vendor's tool: its program name, its arguments, the parser of what it prints, and where the vendor's installer
// puts it when that is not on PATH (an agent started by systemd has a short PATH).
struct VendorTool {
  Vendor vendor;
  std::string_view program;  // "npu-smi"
  std::vector<std::string> args;
  Result<std::vector<Device>> (*parse)(std::string_view text, std::vector<std::string>* notes);
  std::vector<std::string> install_dirs;  // searched after PATH, in order
};

// One per vendor other than NVIDIA (whose devices NVML reports), in auto-detection order: ascend, cambricon,
// hygon, iluvatar, metax.
std::span<const VendorTool> VendorTools();
// The tool of `vendor`; NotFound for NVIDIA.
Result<const VendorTool*> ToolFor(Vendor vendor);
// The tool's path: its name on this process's PATH, else in its install_dirs. NotFound says where it looked.
Result<std::string> FindTool(const VendorTool& tool);

class VendorToolDiscovery final : public DeviceDiscovery {
 public:
  // `program` empty = FindTool; else a path, or a name searched on PATH. `node_name` empty = the host name.
  VendorToolDiscovery(const VendorTool& tool, std::string program, int64_t timeout_ms, std::string node_name);
  std::string_view name() const override { return VendorName(tool_.vendor); }
  Result<DiscoveryReport> Discover() override;

 private:
  const VendorTool& tool_;
  std::string program_;
  int64_t timeout_ms_;
  std::string node_name_;
};

}  // namespace xpool::agent
