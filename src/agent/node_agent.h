#pragma once
// NodeAgent: the agent's loop, independent of the transport to the server.
//
// Level-triggered: every Tick() reports all tasks this node knows (running and
// ended-but-unacknowledged) in a heartbeat, and the reply lists every task the server wants here.
// The agent then starts what is wanted and unknown (or wanted again with a higher restart count),
// stops or suspends what is marked so, stops what runs but is no longer wanted, and forgets ended
// tasks the server stopped listing (its acknowledgement). Nothing is lost when either side restarts
// or the connection drops: the next heartbeat reconciles both views. While the server cannot be
// reached the tasks keep running and Tick() returns the error.
//
// The contract is written down in docs/agent.md; ControlPlaneClient has an HTTP implementation
// (agent/http_client.h) and tests use a fake. NodeAgent is owned by the agent's main loop; not
// thread-safe.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/launcher.h"
#include "agent/usage/usage_probe.h"
#include "model/device.h"
#include "protocol/messages.h"
#include "protocol/task_log.h"

namespace xpool::agent {

using protocol::ControlPlaneClient;
using protocol::HeartbeatReply;
using protocol::TaskAssignment;
using protocol::TaskReport;

class NodeAgent {
 public:
  // `client` and `launcher` outlive the agent. Adopts the tasks an earlier agent left in the launcher's state
  // dir (Launcher::Adopt): the first heartbeat reports them — running ones with their task ids, ended ones with
  // their recorded end — and the reply decides (kept, stopped as no longer wanted, or stopped and run again
  // when the server restarted the job meanwhile).
  NodeAgent(Node node, ControlPlaneClient* client, Launcher* launcher);

  // Registers the node. Also makes the next heartbeat re-send the tail of every task's log (a server that forgot
  // the node may have lost its copy of the output too).
  Status Register();
  // One round: reap, heartbeat, reconcile. Errors from the server are returned; tasks are left as
  // they are.
  Status Tick();
  // Log notes (e.g. "logging stopped ... the log disk is full") not yet shown; each is returned once.
  std::vector<std::string> TakeNotices();
  // The interval the server asked for in its last reply.
  TimeMicros interval_micros() const { return interval_micros_; }
  // The generation of the task list in the server's last reply (0: none announced).
  int64_t generation() const { return generation_; }
  // The MIG geometry the server's last reply asked this node's GPUs to take (--mig-geometry's syntax; empty:
  // keep them), for an agent run with --mig-dynamic (docs/mig.md, "Dynamic geometry").
  const std::string& wanted_mig_geometry() const { return wanted_mig_geometry_; }
  // Whether the next Tick has news for the server now: a task ended (reaped here), or the last Tick started tasks
  // whose start it has not reported yet. Cheap (reads the shims' status files); the agent's loop calls it between
  // heartbeats so that an exit or a start is reported at once.
  bool HasNews();
  const Node& node() const { return node_; }
  // The node's description changed (its GPUs discovered again after a new MIG geometry): Register sends this one.
  // Its tasks and their logs stay as they are.
  void ReplaceNode(Node node) { node_ = std::move(node); }
  // Measures the devices' and tasks' actual use for every heartbeat from now on (null: none measured, the
  // default). `probe` outlives the agent.
  void SetUsageProbe(UsageProbe* probe) { usage_probe_ = probe; }

 private:
  struct LogShip;
  std::vector<TaskReport> Reports();
  void AttachLog(TaskReport* report);
  // Puts the next chunk of `ship`'s unacknowledged output into `report` (nothing when there is none); notes a
  // backlog (log_backlog_) when more is left.
  void AttachChunk(LogShip& ship, TaskReport* report);
  // An ended task's whole log length (TaskReport::log_end) once AttachLog has read it to the end; else -1.
  int64_t LogEnd(const std::string& task_id) const;
  // Moves a task the agent forgets into ended_logs_ when its output may still be wanted.
  void KeepEndedLog(const TaskStatus& status);
  void LogsAcknowledged(const std::vector<TaskReport>& sent);
  void ResendLogTails();
  void Reconcile(const HeartbeatReply& reply);
  // A notice for a Stop or Suspend the launcher refused.
  void NoteError(const std::string& task_id, const Status& status);
  void StartTask(const TaskAssignment& assignment);
  void RenewLease(TimeMicros sent_at, TimeMicros node_timeout);
  // Samples the usage probe into measured_ and the running tasks' reports (nothing measured on an error).
  void MeasureUse(std::vector<TaskReport>* reports);

  struct Meta {
    int64_t job_id = 0;
    int replica = 0;
    int restart_count = 0;
    bool adopted = false;                       // found running or ended when this agent started (Launcher::Adopt)
    std::vector<protocol::TaskDevice> devices;  // its grants; unknown (empty) when adopted
  };
  Node node_;
  ControlPlaneClient* client_;
  Launcher* launcher_;
  std::map<std::string, Meta> meta_;                // every task the launcher holds
  std::map<std::string, TaskReport> start_errors_;  // specs the launcher refused, reported until acknowledged
  TimeMicros interval_micros_ = 2 * kMicrosPerSecond;
  int64_t generation_ = 0;
  std::string wanted_mig_geometry_;
  bool started_unreported_ = false;  // the last Tick started a task: report it running at once
  // The last heartbeat left output behind (more than a chunk of one task, or past the heartbeat's budget): the
  // next one goes at most kLogBacklogBeat after it, not a whole interval later, so a chatty task's output keeps up.
  bool log_backlog_ = false;
  TimeMicros last_beat_us_ = 0;  // BootTimeMicros() when the last heartbeat was sent
  // Per task: its log read from the start and what is not yet acknowledged by a heartbeat.
  struct LogShip {
    std::unique_ptr<LogFollower> follower;
    int64_t offset = 0;      // stream offset of pending[0]
    std::string pending;     // read, not yet acknowledged
    std::string acked_tail;  // the last acknowledged bytes (up to kResendTailBytes), just before `offset`
    bool noted = false;      // its log note was shown
  };
  std::map<std::string, LogShip> logs_;
  // Tasks forgotten after the server's acknowledgement (their end) whose output may still be wanted: the rest not
  // yet shipped (a task that ended with more than a chunk unsent) and the acknowledged tail, re-sent after a
  // server restart like a running task's. Reported with their final status, only while they have output to send
  // (the server ignores a report of a job that has ended, or of an earlier run, and keeps its output). At most
  // kMaxEndedLogs, the oldest dropped first; a task started again leaves it.
  struct EndedLog {
    TaskReport report;  // job id, replica, restart count, final status
    LogShip ship;       // no follower: the output is complete
    uint64_t seq = 0;   // order of forgetting
  };
  std::map<std::string, EndedLog> ended_logs_;
  uint64_t ended_seq_ = 0;
  std::set<std::string> stale_stopping_;  // earlier runs being stopped for a restart the server wants
  std::vector<std::string> notices_;
  // Set by a failed heartbeat or a (re)registration: the server may have restarted and lost its in-memory copy
  // of the tasks' output (LogRelay), so the next heartbeat re-sends each task's acknowledged tail first; the
  // server drops what it already has by offset.
  bool resend_tails_ = false;
  bool lease_error_noted_ = false;
  UsageProbe* usage_probe_ = nullptr;
  std::vector<protocol::DeviceUsageSample> measured_;  // the devices' use for the next heartbeat
  bool usage_error_noted_ = false;
};

}  // namespace xpool::agent
