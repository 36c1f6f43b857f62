#pragma once
// BuildTaskEnv: the environment xpool gives a task (protocol/task.h's LaunchSpec: one replica of a job on this
// node) — its devices, their limits for the runtime library (names from vgpu/vgpu_env.h, shared with that
// library), its identity and distributed-training variables. Value types and pure functions; thread-compatible.
#include <map>
#include <string>

#include "protocol/task.h"

namespace xpool::agent {

// The task's description comes from the agent protocol; the agent names its types as its own.
using protocol::DistributedEnv;
using protocol::kNodeAddressLabel;
using protocol::LaunchSpec;
using protocol::TaskDevice;
using protocol::TaskDevicesFromGrants;
using protocol::ValidateLaunchSpec;

// Paths the launcher chose for the task (empty = not set).
struct TaskPaths {
  std::string shared_region;  // XPOOL_SHARED_REGION
  std::string suspend_file;   // XPOOL_SUSPEND_FILE
  std::string vgpu_library;   // LD_PRELOAD'ed when the task shares a device; empty = library not found
  // Device index → the pipe directory of its MPS control daemon, for this node's devices that run MPS (mps.h).
  std::map<int, std::string> mps_pipe_dirs;
  // Device position → what the visible-devices variables call it, on a node where positions are not the driver's
  // numbers (VisibleDeviceNames); empty = the position itself.
  std::map<int, std::string> visible_names;
};

// For a node with MIG instances among its devices (nvml/mig_layout.h): each device position → its uuid ("MIG-..."
// for an instance, "GPU-..." for a whole GPU; CUDA takes both in CUDA_VISIBLE_DEVICES), since positions are no
// longer the driver's numbers there. Empty when no device is a MIG instance.
std::map<int, std::string> VisibleDeviceNames(const Node& node);

// xpool's variables for the task: visible devices (the vendor's variable; for NVIDIA also
// NVIDIA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers devices as NVML does),
// per-device limits, XPOOL_JOB_ID / XPOOL_REPLICA / XPOOL_RESTART_COUNT / XPOOL_SUSPEND_FILE,
// XPOOL_SHARED_REGION and LD_PRELOAD (shared devices only; `inherited_ld_preload` is kept after
// ours), CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for an
// NVIDIA task given devices that run MPS (mps.h), and MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
// LOCAL_WORLD_SIZE, NODE_RANK for distributed jobs.
std::map<std::string, std::string> BuildTaskEnv(const LaunchSpec& spec, const TaskPaths& paths,
                                                const std::string& inherited_ld_preload);

}  // namespace xpool::agent
