#include "agent/vendor/tool_discovery.h"

#include <array>

#include "agent/command.h"
#include "agent/vendor/smi_parsers.h"

namespace xpool::agent {
namespace {

const std::array<VendorTool, 5>& Tools() {
  static const std::array<VendorTool, 5> tools = {{
      {Vendor::kAscend, "npu-smi", {"info"}, &ParseNpuSmiInfo, {"/usr/local/sbin"}},
      {Vendor::kCambricon, "cnmon", {}, &ParseCnmon, {"/usr/bin"}},
      {Vendor::kHygon,
       "hy-smi",
       {"--showproductname", "--showmeminfo", "vram", "--showbus", "--showuniqueid"},
       &ParseHySmi,
       {"/opt/hyhal/bin"}},
      {Vendor::kIluvatar, "ixsmi", {}, &ParseIxsmi, {"/usr/local/corex/bin"}},
      {Vendor::kMetax, "mx-smi", {}, &ParseMxSmi, {"/opt/mxdriver/bin", "/opt/maca/bin"}},
  }};
  return tools;
}

}  // namespace

std::span<const VendorTool> VendorTools() { return Tools(); }

Result<const VendorTool*> ToolFor(Vendor vendor) {
  for (const VendorTool& t : Tools()) {
    if (t.vendor == vendor) return &t;
  }
  return NotFoundError(std::string(VendorName(vendor)) + " devices are discovered through NVML, not a tool");
}

Result<std::string> FindTool(const VendorTool& tool) {
  const std::string name(tool.program);
  auto on_path = ResolveProgram(name);
  if (on_path.ok()) return on_path;
  std::string dirs;
  for (const std::string& d : tool.install_dirs) dirs += (dirs.empty() ? "" : ":") + d;
  if (dirs.empty()) return on_path.status();
  if (std::string found = SearchPath(name, dirs); !found.empty()) return found;
  return NotFoundError(on_path.status().message() + ", nor in " + dirs);
}

VendorToolDiscovery::VendorToolDiscovery(const VendorTool& tool, std::string program, int64_t timeout_ms,
                                         std::string node_name)
    : tool_(tool), program_(std::move(program)), timeout_ms_(timeout_ms), node_name_(std::move(node_name)) {}

Result<DiscoveryReport> VendorToolDiscovery::Discover() {
  const std::string vendor(VendorName(tool_.vendor));
  auto program = program_.empty() ? FindTool(tool_) : ResolveProgram(program_);
  if (!program.ok()) {
    return Status(program.status().code(), "discovery " + vendor + ": its tool " + program.status().message() +
                                               "; install the vendor's driver tools or give the tool's path");
  }
  CommandSpec spec;
  spec.program = *program;
  spec.args = tool_.args;
  spec.timeout_ms = timeout_ms_;
  auto run = RunCommand(spec);
  if (!run.ok()) return run.status().WithContext("discovery " + vendor);
  const CommandOutput& out = *run;
  if (out.exit_code != 0) {
    const std::string said = Complaint(out);
    return UnavailableError("discovery " + vendor + ": " + CommandLine(spec) + " exited with " +
                            std::to_string(out.exit_code) + (said.empty() ? "" : ": " + said));
  }
  std::vector<std::string> problems;
  auto devices = tool_.parse(out.out, &problems);
  if (!devices.ok()) return devices.status().WithContext("discovery " + vendor + " (" + *program + ")");
  DiscoveryReport report;
  report.source = vendor;
  FillHostInfo(&report.node);
  if (!node_name_.empty()) report.node.name = node_name_;
  report.node.devices = std::move(*devices);
  const size_t count = report.node.devices.size();
  report.available = count > 0;
  report.note = CommandLine(spec) + ": " + std::to_string(count) + " device(s)";
  if (count == 0) report.note += "; no " + vendor + " devices on this node";
  for (size_t i = 0; i < problems.size(); ++i) report.note += (i == 0 ? "; unhealthy: " : ", ") + problems[i];
  RETURN_IF_ERROR(ValidateNode(report.node));
  return report;
}

}  // namespace xpool::agent
