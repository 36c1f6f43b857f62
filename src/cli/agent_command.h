#pragma once
// `xpool agent`: the node agent (agent_command.cc). For now: device discovery (--print-devices) and
// a local one-task run through the launcher (--run -- CMD...); the loop with the server comes with
// the agent protocol.
#include <memory>
#include <string>

#include "agent/launcher.h"
#include "agent/mps.h"
#include "cli/commands.h"
#include "common/flags.h"

namespace xpool::cli {

// The task-identity flags `xpool agent` and `xpool up` share (docs/agent.md, "Task identity").
struct TaskIdentityFlags {
  std::string uid_range;  // --task-uid-range; empty = the default when root
  std::string task_root;  // --task-root; empty = the command's default
  std::string pass_env;   // --pass-env NAME,NAME
  void Add(FlagSet& flags);
  // Sets the launcher's isolation from the flags: as root, tasks run as their tenant's uid (the range checked:
  // well-formed, no account in it, the task root reachable); otherwise as this user, and a --task-uid-range is an
  // error. `root_task_root` is the default task root as root ("" = the state dir). InvalidArgument /
  // FailedPrecondition with the reason for a start-up error.
  Status Apply(agent::LauncherOptions* options, const std::string& root_task_root) const;
};

// The device-mode flags `xpool agent` and `xpool up` share: MPS and MIG (docs/agent.md "MPS mode", docs/mig.md).
struct DeviceModeFlags {
  std::string mps;  // --mps: "all" or device indexes
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mig_geometry;  // --mig-geometry, applied before discovery
  bool mig_dynamic = false;
  void Add(FlagSet& flags);
  // Before discovery: --mig-geometry through NVML. 0, or the exit code after saying why not.
  int ApplyBeforeDiscovery(const std::string& nvml_library) const;
  // After discovery: the --mps devices put in MPS mode; with --mig-dynamic, GPUs in MIG mode found (and no --mps).
  // 0, or the exit code after saying why not.
  int ApplyToNode(Node* node) const;
};

int RunAgent(const Args& args);

// ---- MPS and MIG for `xpool agent` and `xpool up` (docs/agent.md "MPS mode", docs/mig.md) ----
// Starts an MPS control daemon per device of `node` in MPS mode (agent/mps.h), under <dir>/mps, and says what runs
// and what was refused (those devices go back to shared); the launcher's tasks get the daemons' pipe directories,
// and the names of the node's MIG instances for their visible devices. The daemons quit when it is destroyed.
std::unique_ptr<agent::MpsDaemons> StartMps(Node* node, const std::string& control, const std::string& dir,
                                            agent::LauncherOptions* options);
// Asks the daemons to quit and says so.
void StopMps(agent::MpsDaemons& daemons);
// --mig-geometry: parses it and brings the GPUs to it through NVML. 0, or the exit code after saying why not.
int ApplyMigGeometryFlag(const std::string& text, const std::string& nvml_library);
// --mig-dynamic: OK when discovery (DiscoveryOptions::mig_slots) found GPUs in MIG mode and labelled the node with
// them; else FailedPrecondition saying how to turn MIG mode on.
Status CheckMigDynamic(const Node& node);
// --mig-dynamic: brings the GPUs to the geometry the server asked for. With tasks running, only a geometry that
// places every instance (the server planned around those in use), and only when the tasks outlive what follows
// (the caller says). True when the node must be discovered and registered again: applied, or refused by the
// driver (the server learns the geometry as it is).
bool TakeMigGeometry(const std::string& geometry, agent::Launcher& launcher, const std::string& nvml_library,
                     bool tasks_outlive_restart);
// `xpool task-shim`: internal, the per-task supervisor the agent starts (task_shim_command.cc).
int RunTaskShimCommand(const Args& args);

}  // namespace xpool::cli
