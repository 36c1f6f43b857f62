#pragma once
// AgentService: the server side of the agent loop, in-process (protocol::ControlPlaneClient over a ControlPlane).
//
// `xpool up` runs the server and one NodeAgent in the same process and connects them through this class instead
// of HTTP. Register() registers the agent's node as agent-run (never "simulated" to the control plane, so its jobs
// wait for the agent's report instead of starting at once). Heartbeat() applies the agent's task reports (running
// → job running; succeeded/failed → job finished with the exit code, devices released; every replica of a
// suspending job ended → ControlPlane::SuspendDone) and answers with the full list of tasks the server wants on
// the node: every job holding an allocation there (scheduled/running → run, suspending → suspend within the
// job's checkpoint.grace); each replica of a gang gets its distributed block (RANK, WORLD_SIZE, NODE_RANK,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR = replica 0's node address, MASTER_PORT = ControlPlane::MasterPort). A job
// that is no longer listed (cancelled, finished, requeued after its node was lost) is stopped by the agent by omission,
// which is also the acknowledgement of its ended tasks. Contract: docs/agent.md, "Agent ↔ server"; the suspend
// contract: docs/time-sharing.md.
//
// A node reports only its own tasks: a report (and its log chunk) naming a task the server did not place on the
// reporting node is refused, logged and counted (Vet), so one node's token cannot fail, stop or write into the log
// of another node's job.
//
// Owned by `xpool up` (in-process agent) or the Server (agents over HTTP). The control plane and store outlive
// it. Thread-safe: it keeps no mutable state, so heartbeats of different nodes may arrive concurrently (the
// control plane and the store serialise what they change).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/log_relay.h"
#include "protocol/messages.h"
#include "server/control_plane.h"
#include "server/metrics.h"
#include "server/usage_recorder.h"
#include "store/state_store.h"

namespace xpool::server {

// The heartbeat interval the server asks agents for: a quarter of the node timeout, at most 1 s. Agents report
// starts and exits at once and wait for changes on a long-poll (WaitForChange), so the interval bounds only how
// soon a silent node is noticed, how fresh measured use is and how late log output arrives (an agent with a log
// backlog beats every 0.5 s). 1,500 agents at 1 s are 1,500 heartbeats a second.
TimeMicros HeartbeatInterval(TimeMicros node_timeout);

class AgentService : public protocol::ControlPlaneClient {
 public:
  // `logs` keeps the reports' log chunks (GET /jobs/{id}/logs); `metrics` counts refusals. Either may be null
  // (tests). A job that names no workdir runs in its task's own directory on the node.
  AgentService(ControlPlane& control, StateStore& store, protocol::LogRelay* logs = nullptr,
               MetricsRegistry* metrics = nullptr);
  // Hands every heartbeat's measured use (devices' and tasks') to `recorder` (the usage history); set before the
  // first heartbeat. Null: measurements are dropped.
  void SetUsageRecorder(UsageRecorder* recorder) { usage_ = recorder; }
  static void DeclareMetrics(MetricsRegistry& metrics);

  Status Register(const Node& node) override;
  using ControlPlaneClient::Heartbeat;
  Result<protocol::HeartbeatReply> Heartbeat(const Node& node, const std::vector<protocol::TaskReport>& tasks,
                                             const std::vector<protocol::DeviceUsageSample>& device_usage) override;
  // In process (`xpool up`): waits on the control plane's ChangeFeed for the node's generation to leave `seen`.
  Result<int64_t> WaitForChange(const Node& node, int64_t seen, TimeMicros timeout) override;

 private:
  // A report Vet accepted: its job's record and its replica's task record, as the store holds them.
  struct Vetted {
    JobRecord job;
    TaskRecord task;
  };
  // Whether `node` may report `report` (its state and its log chunk): its job's and task's records when it may;
  // nullopt for a
  // report of an earlier placement of its job than the current one (stale), or of a task the server did not place
  // on `node` (another node's replica, an unknown job, a task id that is not "job<ID>-r<REPLICA>"). Counts and logs
  // each refusal (xpool_agent_stale_reports_total, xpool_agent_foreign_reports_total).
  std::optional<Vetted> Vet(const std::string& node, const protocol::TaskReport& report);
  // Applies a vetted report to its job (running, ended, suspended, fenced). Errors leave the job as it was.
  // `vetted` holds the records Vet read (two store reads per report); a running task's report that repeats its
  // task record (every heartbeat of a running task) writes nothing.
  Status ApplyReport(const protocol::TaskReport& report, const Vetted& vetted);
  // Logs and counts (xpool_agent_report_errors_total) an ApplyReport error, except a job that moved on meanwhile.
  void NoteApplyError(const std::string& node, const protocol::TaskReport& report, const Status& error);
  Result<std::vector<protocol::TaskAssignment>> Wanted(const Node& node);
  // MASTER_ADDR (replica 0's node address), MASTER_PORT and the ranks of `replica` of a gang.
  std::optional<protocol::DistributedEnv> Distributed(const std::vector<AllocationRecord>& gang, int replica);

  ControlPlane& control_;
  StateStore& store_;
  protocol::LogRelay* logs_;
  MetricsRegistry* metrics_;
  UsageRecorder* usage_ = nullptr;
};

}  // namespace xpool::server
