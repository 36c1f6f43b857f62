#pragma once
// The agent protocol's messages, as xpool's structs: what a heartbeat reports about each task (TaskReport), what
// the server answers (HeartbeatReply: the tasks it wants on the node), and ControlPlaneClient, the agent's view of
// the server — implemented by the agent's transports (gRPC, HTTP) and, under `xpool up`, by the server's
// in-process AgentService. The contract is written down in docs/agent.md ("Agent ↔ server"). Value types;
// thread-compatible.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/device.h"
#include "protocol/task.h"

namespace xpool::protocol {

// The largest chunk of a task's output an agent sends per task per heartbeat.
inline constexpr int64_t kMaxLogChunkBytes = 64 << 10;

struct TaskAssignment {
  enum class Action { kRun, kStop, kSuspend };
  Action action = Action::kRun;
  LaunchSpec spec;
  TimeMicros grace_micros = 30 * kMicrosPerSecond;
};

struct TaskReport {
  int64_t job_id = 0;
  int replica = 0;
  int restart_count = 0;
  TaskStatus status;
  // Output the task wrote since the server last acknowledged (bytes [log_offset, log_offset + size) of its log
  // stream; at most kMaxLogChunkBytes; invalid UTF-8 replaced by '?'). Empty when nothing is new.
  int64_t log_offset = 0;
  std::string log_data;
  // Once the task has ended and its log was read to the end (the exit line included): the length of its whole
  // output stream; the server's copy is complete when it holds bytes up to here. -1 while it may still grow.
  int64_t log_end = -1;
  // Device memory the task's processes hold, summed over its devices (MiB), as the agent measured it (the runtime
  // library's shared region, else NVML's per-process accounting); -1 = not measured.
  int64_t used_memory_mib = -1;
};

struct HeartbeatReply {
  // False when the server did not send a task list (a server without assignments yet): the agent
  // then leaves its tasks alone instead of reading "no tasks wanted".
  bool has_tasks = true;
  std::vector<TaskAssignment> tasks;
  TimeMicros interval_micros = 2 * kMicrosPerSecond;
  // The server's node timeout: a node silent this long is lost and its jobs run elsewhere. The agent renews its
  // tasks' lease with it (fencing, docs/agent.md); 0 = not sent (the tasks are not fenced).
  TimeMicros node_timeout_micros = 0;
  // The generation of the task list (ControlPlaneClient::WaitForChange); 0 = the server announces no changes.
  int64_t generation = 0;
  // For an agent run with --mig-dynamic (node label kMigDynamicLabel): the MIG geometry to bring its GPUs to, in
  // --mig-geometry's syntax; empty = keep them as they are.
  std::string mig_geometry;
};

// One device's measured use in a heartbeat (Device::used_memory_mib, Device::sm_permille); -1 = not measured.
struct DeviceUsageSample {
  int index = 0;
  int64_t used_memory_mib = -1;
  int64_t sm_permille = -1;
};

// What one heartbeat carries: per-device health (by index), the devices' measured use, and every task report.
struct HeartbeatRequest {
  std::vector<std::pair<int, bool>> device_health;  // (index, healthy)
  std::vector<DeviceUsageSample> device_usage;      // only devices with a measurement; old agents send none
  std::vector<TaskReport> tasks;
  // True when the body had a "tasks" list: an agent that takes assignments. A bare `{}` (a load tool, an old
  // agent) only marks the node seen.
  bool has_tasks = false;
};

class ControlPlaneClient {
 public:
  virtual ~ControlPlaneClient() = default;
  // Registers (or re-registers) the node with its devices and links.
  virtual Status Register(const Node& node) = 0;
  // Reports device health, the devices' measured use (only those measured; empty = none) and every task; returns
  // the tasks the server wants on this node. Implementations say `using ControlPlaneClient::Heartbeat;` to keep
  // the two-argument form below.
  virtual Result<HeartbeatReply> Heartbeat(const Node& node, const std::vector<TaskReport>& tasks,
                                           const std::vector<DeviceUsageSample>& device_usage) = 0;
  // The same with nothing measured.
  Result<HeartbeatReply> Heartbeat(const Node& node, const std::vector<TaskReport>& tasks) {
    return Heartbeat(node, tasks, {});
  }
  // Whether the transport holds a working connection to the server now (it may try to connect). Lets the agent
  // cut a backoff short when an unreachable server comes back, before the server's node timeout runs out.
  // False when the transport cannot tell.
  virtual bool Connected() { return false; }
  // Waits until the tasks the server wants on `node` have a generation other than `seen` (the one the last
  // HeartbeatReply carried) or `timeout` passes; returns the generation then (`seen` when nothing changed). Called
  // from a thread of its own (agent/change_watcher.h), concurrently with the other calls. FailedPrecondition when
  // the transport or the server cannot announce changes: the agent then polls.
  virtual Result<int64_t> WaitForChange(const Node& /*node*/, int64_t /*seen*/, TimeMicros /*timeout*/) {
    return FailedPreconditionError("this transport does not announce changes");
  }
};

}  // namespace xpool::protocol
