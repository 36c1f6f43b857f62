#include "server/agent_service.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "model/job_spec.h"
#include "server/interactive_proxy.h"
#include "server/internal/distributed_launch.h"

namespace xpool::server {
namespace {

// "10 (SIGUSR1)".
std::string SignalText(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return std::to_string(signal) + (abbrev != nullptr ? " (SIG" + std::string(abbrev) + ")" : "");
}

// "0.5 s".
std::string SecondsText(TimeMicros us) {
  const int64_t tenths = (us + 50'000) / 100'000;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

// What a task asked to suspend did, for the suspending → suspended event: how it ended (exit 0, the suspend
// signal itself, the stop after the grace, another signal or exit code), how much of its checkpoint grace it
// used, and whether the checkpoint was seen (the contract: checkpoint, then exit 0; docs/time-sharing.md).
std::string SuspendOutcome(const JobRecord& job, const protocol::TaskStatus& st) {
  const TimeMicros grace = static_cast<TimeMicros>(job.spec.checkpoint_grace_seconds) * kMicrosPerSecond;
  // The job went to suspending when it was asked (its last state change); the agent stamps the end.
  const TimeMicros used = st.ended_at > 0 && job.updated_us > 0 ? st.ended_at - job.updated_us : -1;
  const std::string after = used >= 0 ? " after " + SecondsText(used) : "";
  const std::string grace_text = std::to_string(job.spec.checkpoint_grace_seconds) + " s";
  if (st.signal == 0 && st.exit_code == 0) {
    return "checkpointed and exited 0" + after + " (grace " + grace_text + ")";
  }
  if (st.signal == 0) {
    return "exited with code " + std::to_string(st.exit_code) + after +
           " when asked to suspend; no checkpoint seen (the contract is: checkpoint, then exit 0)";
  }
  auto suspend_signal =
      CheckpointSignalNumber(job.spec.checkpoint_signal.empty() ? "SIGUSR1" : job.spec.checkpoint_signal);
  const bool within_grace = used >= 0 && used < grace;
  // The stop after the grace is SIGTERM (then SIGKILL): a suspend signal of SIGTERM past the grace is that stop.
  if (suspend_signal.ok() && st.signal == *suspend_signal && (st.signal != SIGTERM || within_grace || used < 0)) {
    return "killed by its suspend signal " + SignalText(st.signal) + after +
           (used >= 0 ? " of its " + grace_text + " grace" : " (grace " + grace_text + ")") +
           "; no checkpoint seen (the task has no handler for that signal)";
  }
  if ((st.signal == SIGTERM || st.signal == SIGKILL) && !within_grace) {
    return "did not exit within its " + grace_text + " checkpoint grace: stopped by signal " + SignalText(st.signal) +
           after + "; no checkpoint seen";
  }
  return "killed by signal " + SignalText(st.signal) + after + " while suspending; no checkpoint seen";
}

}  // namespace

TimeMicros HeartbeatInterval(TimeMicros node_timeout) {
  return std::clamp<TimeMicros>(node_timeout / 4, kMicrosPerSecond / 20, kMicrosPerSecond);
}

AgentService::AgentService(ControlPlane& control, StateStore& store, protocol::LogRelay* logs, MetricsRegistry* metrics)
    : control_(control), store_(store), logs_(logs), metrics_(metrics) {
  if (metrics_ != nullptr) {
    metrics_->CounterAdd("xpool_agent_stale_reports_total", {}, 0);
    metrics_->CounterAdd("xpool_agent_foreign_reports_total", {}, 0);
    metrics_->CounterAdd("xpool_agent_report_errors_total", {}, 0);
  }
}

void AgentService::DeclareMetrics(MetricsRegistry& metrics) {
  metrics.DeclareCounter("xpool_agent_stale_reports_total",
                         "Task reports (and their log chunks) refused because they carry an earlier placement epoch "
                         "than their job's (a run the server already gave up, e.g. on a node it counted lost).");
  metrics.DeclareCounter("xpool_agent_foreign_reports_total",
                         "Task reports (and their log chunks) refused because they name a task the server did not "
                         "assign to the reporting node (another node's task, an unknown job, or a task id that is "
                         "not its job's and replica's).");
  metrics.DeclareCounter("xpool_agent_report_errors_total",
                         "Task reports that could not be applied (the store failed, ...): the job is left as it was "
                         "and the agent's next report applies it.");
}

std::optional<AgentService::Vetted> AgentService::Vet(const std::string& node, const protocol::TaskReport& report) {
  auto job = store_.GetJob(JobId(report.job_id));
  const std::string task_id = "job" + std::to_string(report.job_id) + "-r" + std::to_string(report.replica);
  std::string foreign;
  TaskRecord task;
  if (!job.ok()) {
    foreign = "no such job";
  } else if (report.status.task_id != task_id) {
    foreign = "its task id is not " + task_id;
  } else if (report.restart_count < job->restart_count) {
    if (metrics_ != nullptr) metrics_->CounterAdd("xpool_agent_stale_reports_total", {});
    std::fprintf(stderr, "xpool server: refused a report of task %s from node %s: epoch %d, the job is at epoch %d\n",
                 report.status.task_id.c_str(), node.c_str(), report.restart_count, job->restart_count);
    return std::nullopt;
  } else {
    // The replica's task record names the node it was last placed on (kept after it ends, cleared when the job
    // goes back to the queue, which also moves the epoch on).
    auto tasks = store_.ListTasks(job->id);
    const TaskRecord* mine = nullptr;
    if (tasks.ok()) {
      for (const TaskRecord& t : *tasks) {
        if (t.replica == report.replica) mine = &t;
      }
    }
    if (mine == nullptr || mine->node != node) {
      foreign = mine == nullptr || mine->node.empty() ? "the replica is placed on no node"
                                                      : "the replica is placed on another node";
    } else {
      task = *mine;
    }
  }
  if (foreign.empty()) return Vetted{std::move(*job), std::move(task)};
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_agent_foreign_reports_total", {});
  std::fprintf(stderr, "xpool server: refused a report of task %s (job %lld, replica %d) from node %s: %s\n",
               report.status.task_id.c_str(), static_cast<long long>(report.job_id), report.replica, node.c_str(),
               foreign.c_str());
  return std::nullopt;
}

Status AgentService::Register(const Node& node) {
  Node agent_node = node;
  // An agent runs this node's tasks, simulated devices or not: jobs wait for its report.
  agent_node.simulated = false;
  return control_.RegisterNode(std::move(agent_node));
}

Status AgentService::ApplyReport(const protocol::TaskReport& report, const Vetted& vetted) {
  const JobRecord& job = vetted.job;
  const JobId id = job.id;
  if (IsTerminal(job.state)) return Status::Ok();
  if (report.restart_count != job.restart_count) return Status::Ok();  // a report from an earlier run
  const TimeMicros now = report.status.ended_at > 0 ? report.status.ended_at : report.status.started_at;
  const protocol::TaskState st = report.status.state;
  if (report.status.fenced && st != protocol::TaskState::kRunning && HoldsAllocation(job.state)) {
    // Its shim stopped it: the agent had lost the server for longer than the node timeout (and reports again
    // before the server gave the node up). The run is gone; the job runs again.
    return control_.Requeue(id, "replica " + std::to_string(report.replica) +
                                    " stopped itself: its agent had not reached the server for longer than the "
                                    "node timeout; back in the queue");
  }
  if (job.state == JobState::kScheduled) RETURN_IF_ERROR(control_.TaskStarted(id, now));
  if (job.state == JobState::kSuspending &&
      (st == protocol::TaskState::kSuspended || st == protocol::TaskState::kStopped)) {
    RETURN_IF_ERROR(store_.UpdateTask(id, report.replica, JobState::kSuspended, std::nullopt, now));
    ASSIGN_OR_RETURN(std::vector<TaskRecord> tasks, store_.ListTasks(id));
    for (const TaskRecord& t : tasks) {
      if (t.state != JobState::kSuspended) return Status::Ok();  // a replica of the gang still runs
    }
    return control_.SuspendDone(id, SuspendOutcome(job, report.status));
  }
  if (st == protocol::TaskState::kRunning) {
    const TaskRecord& task = vetted.task;
    if (task.state == JobState::kRunning && !task.exit_code && task.updated_us == now) return Status::Ok();
    return store_.UpdateTask(id, report.replica, JobState::kRunning, std::nullopt, now);
  }
  if (st == protocol::TaskState::kSucceeded) {
    RETURN_IF_ERROR(store_.UpdateTask(id, report.replica, JobState::kSucceeded, report.status.exit_code, now));
    ASSIGN_OR_RETURN(std::vector<TaskRecord> tasks, store_.ListTasks(id));
    for (const TaskRecord& t : tasks) {
      if (t.state != JobState::kSucceeded) return Status::Ok();  // other replicas still run
    }
    return control_.Finish(id, JobState::kSucceeded, "every replica exited 0").status();
  }
  if (st == protocol::TaskState::kFailed) {
    std::optional<int> code;  // the task record keeps a signal as -N (store/state_store.h)
    if (report.status.signal != 0) {
      code = -report.status.signal;
    } else if (report.status.exit_code >= 0) {
      code = report.status.exit_code;
    }
    RETURN_IF_ERROR(store_.UpdateTask(id, report.replica, JobState::kFailed, code, now));
    std::string reason = "replica " + std::to_string(report.replica);
    if (!report.status.error.empty()) {
      // Not retried: the same command, image and node would fail the same way.
      reason += " could not start: " + report.status.error;
      return control_.Finish(id, JobState::kFailed, reason).status();
    }
    std::string what;
    if (report.status.signal != 0) {
      reason += " was killed by signal " + SignalText(report.status.signal);
      what = "signal " + SignalText(report.status.signal);
    } else {
      reason += " exited with code " + std::to_string(report.status.exit_code);
      what = "exit code " + std::to_string(report.status.exit_code);
    }
    return control_.FailOrRetry(id, reason, what).status();
  }
  // kStopped / kSuspended of a job that is not suspending: the server asked for it (cancel, node lost).
  return Status::Ok();
}

void AgentService::NoteApplyError(const std::string& node, const protocol::TaskReport& report, const Status& error) {
  // The job moved on meanwhile (cancelled, finished, requeued): the next heartbeat reads its new state.
  if (error.code() == StatusCode::kFailedPrecondition) return;
  // Anything else (the store unavailable, ...) leaves the job as it was; the task stays listed while its job
  // holds it, so the agent reports it again and the next heartbeat applies it.
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_agent_report_errors_total", {});
  std::fprintf(stderr,
               "xpool server: applying the report of task %s from node %s: %s (applied again at its next "
               "report)\n",
               report.status.task_id.c_str(), node.c_str(), error.ToString().c_str());
}

Result<std::vector<protocol::TaskAssignment>> AgentService::Wanted(const Node& node) {
  std::map<JobId, std::vector<AllocationRecord>> gangs;  // every replica's allocation, for the distributed block
  std::vector<AllocationRecord> allocations;
  for (JobId id : control_.JobsOnNode(node.name)) {
    ASSIGN_OR_RETURN(std::vector<AllocationRecord> held, store_.JobAllocations(id));
    for (const AllocationRecord& a : held) {
      if (a.node == node.name) allocations.push_back(a);
    }
    gangs[id] = std::move(held);
  }
  std::vector<protocol::TaskAssignment> out;
  for (const AllocationRecord& a : allocations) {
    auto job = store_.GetJob(a.job);
    if (!job.ok()) continue;
    protocol::TaskAssignment t;
    t.grace_micros = static_cast<TimeMicros>(job->spec.checkpoint_grace_seconds) * kMicrosPerSecond;
    if (job->state == JobState::kScheduled || job->state == JobState::kRunning) {
      t.action = protocol::TaskAssignment::Action::kRun;
    } else if (job->state == JobState::kSuspending) {
      t.action = protocol::TaskAssignment::Action::kSuspend;
    } else {
      continue;
    }
    const JobSpec& spec = job->spec;
    protocol::LaunchSpec& s = t.spec;
    s.job_id = a.job.value();
    s.tenant_id = job->tenant.value();
    s.replica = a.replica;
    s.restart_count = job->restart_count;
    s.suspend_signal = spec.checkpoint_signal;
    s.image = spec.image;
    s.task_id = "job" + std::to_string(s.job_id) + "-r" + std::to_string(a.replica);
    if (spec.command_is_shell && !spec.command.empty()) {
      s.argv = {"/bin/sh", "-c", spec.command[0]};
    } else {
      s.argv = spec.command;
    }
    s.workdir = spec.workdir;  // empty: the task's own directory on the node, never the server's
    s.env = spec.env;
    if (spec.interactive) {  // docs/jobs.md, "Interactive jobs"
      s.env["XPOOL_INTERACTIVE_PORT"] = std::to_string(spec.interactive->port);
      s.env["XPOOL_PROXY_BASE"] = InteractiveProxyBase(a.job);
    }
    s.cpu_milli = a.cpu_milli;
    s.memory_mib = a.memory_mib;
    for (const DeviceGrantRecord& g : a.devices) {
      for (size_t i = 0; i < node.devices.size(); ++i) {
        const Device& d = node.devices[i];
        if (d.uuid != g.device_uuid) continue;
        s.vendor = d.vendor;
        protocol::TaskDevice td;
        td.index = static_cast<int>(i);
        td.memory_mib = g.memory_mib;
        td.core_percent = static_cast<int>(g.compute_milli / 10);
        if (td.core_percent >= 100) td.core_percent = 0;
        if (g.memory_mib < d.memory_mib || td.core_percent != 0) s.shares_device = true;
        s.devices.push_back(td);
      }
    }
    if (spec.replicas > 1) s.distributed = Distributed(gangs[a.job], a.replica);
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<protocol::DistributedEnv> AgentService::Distributed(const std::vector<AllocationRecord>& gang,
                                                                  int replica) {
  std::string master_addr;
  for (const AllocationRecord& a : gang) {
    if (a.replica != 0) continue;
    master_addr = a.node;  // a node registered without an address: its name
    auto master = control_.GetNode(a.node);
    if (master.ok()) {
      auto label = master->node.labels.find(protocol::kNodeAddressLabel);
      if (label != master->node.labels.end() && !label->second.empty()) master_addr = label->second;
    }
  }
  const JobId job = gang.empty() ? JobId() : gang[0].job;
  int port = control_.MasterPort(job);
  if (port == 0) port = internal::ChooseMasterPort(job.value(), {});
  return internal::DistributedFor(gang, replica, master_addr, port);
}

Result<protocol::HeartbeatReply> AgentService::Heartbeat(const Node& node,
                                                         const std::vector<protocol::TaskReport>& tasks,
                                                         const std::vector<protocol::DeviceUsageSample>& device_usage) {
  RETURN_IF_ERROR(control_.Heartbeat(node.name));
  std::vector<protocol::TaskReport> measured;  // vetted reports that carry measured use (the usage history)
  for (const protocol::TaskReport& r : tasks) {
    // Neither the state nor the output of a run the server already gave up, or of a task that is not this node's.
    const std::optional<Vetted> vetted = Vet(node.name, r);
    if (!vetted) continue;
    if (r.used_memory_mib >= 0) {  // without its log chunk
      protocol::TaskReport& m = measured.emplace_back();
      m.job_id = r.job_id;
      m.replica = r.replica;
      m.status.state = r.status.state;
      m.used_memory_mib = r.used_memory_mib;
    }
    if (logs_ != nullptr) {
      logs_->Append(r.status.task_id, r.log_offset, r.log_data);
      logs_->MarkEnd(r.status.task_id, r.log_end);
    }
    if (Status s = ApplyReport(r, *vetted); !s.ok()) NoteApplyError(node.name, r, s);
  }
  if (usage_ != nullptr) usage_->OnHeartbeat(node.name, device_usage, measured);
  protocol::HeartbeatReply reply;
  reply.has_tasks = true;
  reply.interval_micros = HeartbeatInterval(control_.node_timeout());
  reply.node_timeout_micros = control_.node_timeout();
  // Read before the task list: a change while it is built moves the generation on, so the agent's wait for a
  // generation other than this one returns at once (ChangeFeed).
  reply.generation = control_.changes().Generation(node.name);
  ASSIGN_OR_RETURN(reply.tasks, Wanted(node));
  reply.mig_geometry = control_.WantedMigGeometry(node.name);  // docs/mig.md: the agent takes it when it may
  return reply;
}

Result<int64_t> AgentService::WaitForChange(const Node& node, int64_t seen, TimeMicros timeout) {
  return control_.changes().Wait(node.name, seen, timeout);
}

}  // namespace xpool::server
