#include "agent/mps.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "agent/command.h"
#include "common/units.h"

namespace xpool::agent {
namespace {

// Creates `path` and its parents, each new one and `path` itself mode 0755 (the umask aside).
Status MakeDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return InternalError("cannot create " + path + ": " + ec.message());
  if (::chmod(path.c_str(), 0755) != 0) return InternalError("cannot set the mode of " + path);
  return Status::Ok();
}

std::string IndexList(const std::vector<int>& indexes) {
  std::string out;
  for (int i : indexes) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

}  // namespace

Status SetMpsMode(std::string_view devices, Node* node) {
  const std::string where = "--mps \"" + std::string(devices) + "\": ";
  std::set<int> chosen;
  if (devices == "all") {
    for (const Device& d : node->devices) {
      if (d.vendor == Vendor::kNvidia) chosen.insert(d.index);
    }
  } else {
    size_t start = 0;
    while (start <= devices.size()) {
      size_t comma = devices.find(',', start);
      if (comma == std::string_view::npos) comma = devices.size();
      auto index = ParseNonNegativeInt(devices.substr(start, comma - start));
      if (!index.ok()) return InvalidArgumentError(where + "expected \"all\" or device indexes like 0,2");
      chosen.insert(static_cast<int>(*index));
      start = comma + 1;
    }
  }
  for (int index : chosen) {
    Device* device = nullptr;
    for (Device& d : node->devices) {
      if (d.index == index) device = &d;
    }
    if (!device) return InvalidArgumentError(where + "this node has no device " + std::to_string(index));
    if (device->vendor != Vendor::kNvidia) {
      return InvalidArgumentError(where + "device " + std::to_string(index) + " is " +
                                  std::string(VendorName(device->vendor)) + "; MPS is NVIDIA's");
    }
  }
  for (Device& d : node->devices) {
    if (chosen.count(d.index)) d.mode = DeviceMode::kMps;
  }
  return Status::Ok();
}

MpsDaemons::MpsDaemons(MpsOptions options) : options_(std::move(options)) {}

// Problems quitting are the agent's to print when it calls Stop() itself; at destruction there is no one to tell,
// and an allocation failure while building the quit commands must not escape a destructor.
MpsDaemons::~MpsDaemons() {
  try {
    Stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing left to do but not terminate
  }
}

std::map<std::string, std::string> MpsDaemons::DaemonEnv(int index) const {
  const std::string base = options_.dir + "/" + std::to_string(index);
  return {{"CUDA_VISIBLE_DEVICES", std::to_string(index)},
          {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
          {"CUDA_MPS_PIPE_DIRECTORY", base + "/pipe"},
          {"CUDA_MPS_LOG_DIRECTORY", base + "/log"}};
}

Status MpsDaemons::StartOne(const std::string& program, int index) {
  std::map<std::string, std::string> env = DaemonEnv(index);
  RETURN_IF_ERROR(MakeDir(env["CUDA_MPS_PIPE_DIRECTORY"]));
  RETURN_IF_ERROR(MakeDir(env["CUDA_MPS_LOG_DIRECTORY"]));
  CommandSpec spec;
  spec.program = program;
  spec.env = env;
  spec.timeout_ms = options_.timeout_ms;
  // A daemon an earlier agent left on this pipe directory answers a query: take it over.
  struct stat control {};
  if (::stat((env["CUDA_MPS_PIPE_DIRECTORY"] + "/control").c_str(), &control) == 0) {
    CommandSpec query = spec;
    query.input = "get_server_list\n";
    auto answer = RunCommand(query);
    if (answer.ok() && answer->exit_code == 0) {
      pipe_dirs_[index] = env["CUDA_MPS_PIPE_DIRECTORY"];
      return Status::Ok();
    }
  }
  spec.args = {"-d"};
  ASSIGN_OR_RETURN(CommandOutput out, RunCommand(spec));
  if (out.exit_code != 0) {
    const std::string said = Complaint(out);
    return UnavailableError(CommandLine(spec) + " exited with " + std::to_string(out.exit_code) +
                            (said.empty() ? "" : ": " + said));
  }
  pipe_dirs_[index] = env["CUDA_MPS_PIPE_DIRECTORY"];
  return Status::Ok();
}

std::vector<std::string> MpsDaemons::Start(Node* node) {
  std::vector<std::string> lines;
  std::vector<int> wanted;
  for (const Device& d : node->devices) {
    if (d.mode == DeviceMode::kMps) wanted.push_back(d.index);
  }
  if (wanted.empty()) return lines;
  std::vector<int> running;
  std::string refused;
  auto program = ResolveProgram(options_.control_program);
  if (!program.ok()) {
    refused =
        "MPS refused for devices " + IndexList(wanted) + ": the MPS control program " + program.status().message();
  } else if (options_.dir.empty()) {
    refused = "MPS refused for devices " + IndexList(wanted) + ": no directory for the daemons' pipes and logs";
  } else {
    program_ = *program;
    for (int index : wanted) {
      if (Status s = StartOne(program_, index); !s.ok()) {
        refused += (refused.empty() ? "" : "; ") + std::string("MPS refused for device ") + std::to_string(index) +
                   ": " + s.message();
      } else {
        running.push_back(index);
      }
    }
  }
  for (Device& d : node->devices) {
    if (d.mode == DeviceMode::kMps && !pipe_dirs_.count(d.index)) d.mode = DeviceMode::kShared;
  }
  std::string label;
  if (!running.empty()) {
    label = "devices " + IndexList(running);
    lines.push_back("MPS control daemons run for devices " + IndexList(running) + " (" + program_ + ", pipes under " +
                    options_.dir + ")");
  }
  if (!refused.empty()) {
    label += (label.empty() ? "" : "; ") + refused;
    lines.push_back(refused + " (those devices are shared without MPS)");
  }
  node->labels[kMpsLabel] = label;
  return lines;
}

std::vector<std::string> MpsDaemons::Stop() {
  std::vector<std::string> problems;
  for (const auto& [index, pipe] : pipe_dirs_) {
    CommandSpec spec;
    spec.program = program_;
    spec.env = DaemonEnv(index);
    spec.input = "quit\n";
    spec.timeout_ms = options_.timeout_ms;
    auto out = RunCommand(spec);
    if (!out.ok()) {
      problems.push_back("MPS device " + std::to_string(index) + ": quit: " + out.status().message());
    } else if (out->exit_code != 0) {
      problems.push_back("MPS device " + std::to_string(index) + ": quit exited with " +
                         std::to_string(out->exit_code) + ": " + Complaint(*out));
    }
  }
  pipe_dirs_.clear();
  return problems;
}

}  // namespace xpool::agent
