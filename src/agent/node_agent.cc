#include "agent/node_agent.h"

#include <set>
#include <utility>

namespace xpool::agent {
namespace {

// How long a task the server no longer lists gets between SIGTERM and SIGKILL.
constexpr TimeMicros kUnwantedGrace = 10 * kMicrosPerSecond;

}  // namespace

NodeAgent::NodeAgent(Node node, ControlPlaneClient* client, Launcher* launcher)
    : node_(std::move(node)), client_(client), launcher_(launcher) {}

std::vector<TaskReport> NodeAgent::Reports() const {
  std::vector<TaskReport> reports;
  for (const TaskStatus& st : launcher_->List()) {
    TaskReport r;
    if (auto it = meta_.find(st.task_id); it != meta_.end()) {
      r.job_id = it->second.job_id;
      r.replica = it->second.replica;
      r.restart_count = it->second.restart_count;
    }
    r.status = st;
    reports.push_back(std::move(r));
  }
  for (const auto& [id, report] : start_errors_) reports.push_back(report);
  return reports;
}

Status NodeAgent::Tick() {
  (void)launcher_->Poll();  // reap exits and send due signals; the reports below carry the results
  ASSIGN_OR_RETURN(HeartbeatReply reply, client_->Heartbeat(node_, Reports()));
  if (reply.interval_micros > 0) interval_micros_ = reply.interval_micros;
  if (reply.has_tasks) Reconcile(reply);
  return Status::Ok();
}

void NodeAgent::StartTask(const TaskAssignment& a) {
  const std::string& id = a.spec.task_id;
  Status s = launcher_->Start(a.spec);
  if (s.ok()) {
    meta_[id] = Meta{a.spec.job_id, a.spec.replica, a.spec.restart_count};
    start_errors_.erase(id);
    return;
  }
  // The launcher refused the spec itself (bad task id, no command, ...): the task failed to start.
  TaskReport r;
  r.job_id = a.spec.job_id;
  r.replica = a.spec.replica;
  r.restart_count = a.spec.restart_count;
  r.status.task_id = id;
  r.status.state = TaskState::kFailed;
  r.status.exit_code = 127;
  r.status.error = s.message();
  start_errors_[id] = std::move(r);
}

void NodeAgent::Reconcile(const HeartbeatReply& reply) {
  std::set<std::string> wanted;
  for (const TaskAssignment& a : reply.tasks) {
    const std::string& id = a.spec.task_id;
    wanted.insert(id);
    auto current = launcher_->Get(id);
    const auto meta = meta_.find(id);
    switch (a.action) {
      case TaskAssignment::Action::kRun:
        if (!current.ok()) {
          const auto failed = start_errors_.find(id);
          if (failed == start_errors_.end() || failed->second.restart_count < a.spec.restart_count)
            StartTask(a);
        } else if (!current->running() && meta != meta_.end() &&
                   meta->second.restart_count < a.spec.restart_count) {
          StartTask(a);  // a restart of an ended task
        }
        break;
      case TaskAssignment::Action::kStop:
        if (current.ok() && current->running()) (void)launcher_->Stop(id, a.grace_micros);
        break;
      case TaskAssignment::Action::kSuspend:
        if (current.ok() && current->running()) (void)launcher_->Suspend(id, a.grace_micros);
        break;
    }
  }
  // Not wanted any more: stop what runs; forget what ended (the server has seen its report).
  for (const TaskStatus& st : launcher_->List()) {
    if (wanted.count(st.task_id)) continue;
    if (st.running()) {
      (void)launcher_->Stop(st.task_id, kUnwantedGrace);
    } else {
      (void)launcher_->Forget(st.task_id);
      meta_.erase(st.task_id);
    }
  }
  for (auto it = start_errors_.begin(); it != start_errors_.end();) {
    it = wanted.count(it->first) ? std::next(it) : start_errors_.erase(it);
  }
}

}  // namespace xpool::agent
