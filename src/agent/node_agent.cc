#include "agent/node_agent.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

#include "agent/task_shim.h"
#include "protocol/json_codec.h"
#include "protocol/log_relay.h"

namespace xpool::agent {
namespace {

// How long a task the server no longer lists gets between SIGTERM and SIGKILL.
constexpr TimeMicros kUnwantedGrace = 10 * kMicrosPerSecond;
// Output kept for a task while the server cannot take it; older output is dropped beyond this.
constexpr size_t kMaxPendingLog = 4 << 20;
// All log chunks of one heartbeat together (the server takes bodies up to 1 MiB; JSON escaping can grow text).
constexpr int64_t kMaxLogBytesPerHeartbeat = 256 << 10;
// With output left behind, the next heartbeat goes this soon after the last (NodeAgent::HasNews).
constexpr TimeMicros kLogBacklogBeat = kMicrosPerSecond / 2;
// Output re-sent after the server was unreachable or asked for a registration (it may have restarted).
constexpr size_t kResendTailBytes = protocol::kMaxLogChunkBytes;
// Forgotten tasks whose output is kept to ship or re-send, and the most unshipped output kept for each (what the
// server keeps of a task: LogRelayOptions::max_bytes_per_task).
constexpr size_t kMaxEndedLogs = 32;
constexpr size_t kMaxEndedPending = 1 << 20;

}  // namespace

NodeAgent::NodeAgent(Node node, ControlPlaneClient* client, Launcher* launcher)
    : node_(std::move(node)), client_(client), launcher_(launcher) {
  // Tasks of an earlier agent on this state dir: reported with the next heartbeat (running ones keep running).
  int running = 0, ended = 0;
  for (const AdoptedTask& t : launcher_->Adopt()) {
    meta_[t.status.task_id] = Meta{t.job_id, t.replica, t.restart_count, /*adopted=*/true, {}};
    (t.status.running() ? running : ended)++;
  }
  if (running + ended > 0) {
    notices_.push_back("adopted " + std::to_string(running) + " running and " + std::to_string(ended) +
                       " ended task(s) of an earlier agent");
  }
}

void NodeAgent::AttachLog(TaskReport* report) {
  LogShip& ship = logs_[report->status.task_id];
  if (!report->status.log_note.empty() && !ship.noted) {
    ship.noted = true;
    notices_.push_back("task " + report->status.task_id + ": " + report->status.log_note + " (the task keeps running)");
  }
  if (!ship.follower) {
    const std::string path = launcher_->LogPath(report->status.task_id);
    std::error_code ec;
    // Only a regular file is shipped (a log redirected to a device, e.g. /dev/full in tests, would never end).
    if (!std::filesystem::is_regular_file(path, ec)) return;
    // From the last kMaxPendingLog bytes of its stream, wherever they are kept, with the stream's offsets: a task
    // adopted after its log rotated (or a run appending to an earlier run's log) is shipped with the offsets the
    // server already counts in, so nothing is missed or repeated (the server drops what it has).
    auto follower = std::make_unique<LogFollower>(path);
    if (!follower->OpenTail(static_cast<int64_t>(kMaxPendingLog)).ok()) return;  // no log yet
    ship.offset = follower->offset();
    ship.follower = std::move(follower);
  }
  if (ship.offset + static_cast<int64_t>(ship.pending.size()) != ship.follower->offset()) {
    // The follower skipped output rotated away unread: what came before the gap goes out first, then the
    // stream goes on after it (the server starts its copy again there).
    if (!ship.pending.empty()) {
      AttachChunk(ship, report);
      return;
    }
    ship.offset = ship.follower->offset();
    ship.acked_tail.clear();  // no longer just before `offset`
  }
  auto fresh = ship.follower->ReadNew();
  if (fresh.ok()) ship.pending += *fresh;
  if (ship.pending.size() > kMaxPendingLog) {
    const size_t drop = ship.pending.size() - kMaxPendingLog;
    ship.pending.erase(0, drop);
    ship.offset += static_cast<int64_t>(drop);
  }
  AttachChunk(ship, report);
}

int64_t NodeAgent::LogEnd(const std::string& task_id) const {
  auto it = logs_.find(task_id);
  if (it == logs_.end() || !it->second.follower) return -1;
  const LogShip& ship = it->second;
  // The follower has read to the end of the files (AttachLog just did, after the shim wrote its exit line) and
  // skipped nothing since: what it read is the whole stream.
  const int64_t end = ship.offset + static_cast<int64_t>(ship.pending.size());
  return end == ship.follower->offset() ? end : -1;
}

void NodeAgent::AttachChunk(LogShip& ship, TaskReport* report) {
  if (ship.pending.empty()) return;
  if (ship.pending.size() > protocol::kMaxLogChunkBytes) log_backlog_ = true;  // the rest: next heartbeat
  const std::string_view chunk(ship.pending.data(), std::min<size_t>(ship.pending.size(), protocol::kMaxLogChunkBytes));
  size_t consumed = 0;
  report->log_data = protocol::SanitizeUtf8(chunk, /*hold_incomplete_tail=*/report->status.running(), &consumed);
  report->log_offset = ship.offset;
}

void NodeAgent::KeepEndedLog(const TaskStatus& status) {
  auto it = logs_.find(status.task_id);
  if (it == logs_.end()) return;
  LogShip& ship = it->second;
  if (ship.follower && ship.offset + static_cast<int64_t>(ship.pending.size()) == ship.follower->offset()) {
    auto rest = ship.follower->ReadNew();  // the task has ended: this is the end of its output (unless a gap)
    if (rest.ok()) ship.pending += *rest;
  }
  ship.follower.reset();
  if (ship.pending.size() > kMaxEndedPending) {
    const size_t drop = ship.pending.size() - kMaxEndedPending;
    ship.pending.erase(0, drop);
    ship.offset += static_cast<int64_t>(drop);
    ship.acked_tail.clear();  // no longer just before `offset`
  }
  if (ship.pending.empty() && ship.acked_tail.empty()) return;
  EndedLog& ended = ended_logs_[status.task_id];
  if (auto m = meta_.find(status.task_id); m != meta_.end()) {
    ended.report.job_id = m->second.job_id;
    ended.report.replica = m->second.replica;
    ended.report.restart_count = m->second.restart_count;
  }
  ended.report.status = status;
  ended.ship = std::move(ship);
  ended.seq = ended_seq_++;
  while (ended_logs_.size() > kMaxEndedLogs) {
    auto oldest = std::min_element(ended_logs_.begin(), ended_logs_.end(),
                                   [](const auto& a, const auto& b) { return a.second.seq < b.second.seq; });
    ended_logs_.erase(oldest);
  }
}

void NodeAgent::LogsAcknowledged(const std::vector<TaskReport>& sent) {
  for (const TaskReport& r : sent) {
    if (r.log_data.empty()) continue;
    LogShip* found = nullptr;
    if (auto it = logs_.find(r.status.task_id); it != logs_.end()) {
      found = &it->second;
    } else if (auto ended = ended_logs_.find(r.status.task_id); ended != ended_logs_.end()) {
      found = &ended->second.ship;
    }
    if (found == nullptr || found->offset != r.log_offset) continue;
    LogShip& ship = *found;
    ship.acked_tail.append(ship.pending, 0, r.log_data.size());
    if (ship.acked_tail.size() > kResendTailBytes) ship.acked_tail.erase(0, ship.acked_tail.size() - kResendTailBytes);
    ship.pending.erase(0, r.log_data.size());
    ship.offset += static_cast<int64_t>(r.log_data.size());
  }
}

void NodeAgent::ResendLogTails() {
  auto resend = [](LogShip& ship) {
    if (ship.acked_tail.empty()) return;
    ship.pending.insert(0, ship.acked_tail);
    ship.offset -= static_cast<int64_t>(ship.acked_tail.size());
    ship.acked_tail.clear();
  };
  for (auto& [id, ship] : logs_) resend(ship);
  for (auto& [id, ended] : ended_logs_) resend(ended.ship);
}

Status NodeAgent::Register() {
  resend_tails_ = true;
  return client_->Register(node_);
}

std::vector<std::string> NodeAgent::TakeNotices() {
  std::vector<std::string> out;
  out.swap(notices_);
  return out;
}

std::vector<TaskReport> NodeAgent::Reports() {
  std::vector<TaskReport> reports;
  int64_t log_budget = kMaxLogBytesPerHeartbeat;
  log_backlog_ = false;
  for (const TaskStatus& st : launcher_->List()) {
    TaskReport r;
    if (auto it = meta_.find(st.task_id); it != meta_.end()) {
      r.job_id = it->second.job_id;
      r.replica = it->second.replica;
      r.restart_count = it->second.restart_count;
    }
    r.status = st;
    if (log_budget > 0) {
      AttachLog(&r);
      if (static_cast<int64_t>(r.log_data.size()) > log_budget) {
        r.log_data.clear();  // next heartbeat
        log_backlog_ = true;
      }
      log_budget -= static_cast<int64_t>(r.log_data.size());
      if (!st.running()) r.log_end = LogEnd(st.task_id);
    } else {
      log_backlog_ = true;  // its output, if any, waits for the next heartbeat
    }
    reports.push_back(std::move(r));
  }
  for (const auto& [id, report] : start_errors_) reports.push_back(report);
  for (auto& [id, ended] : ended_logs_) {
    if (ended.ship.pending.empty()) continue;
    if (log_budget <= 0) {
      log_backlog_ = true;  // next heartbeat
      continue;
    }
    TaskReport r = ended.report;
    AttachChunk(ended.ship, &r);
    r.log_end = ended.ship.offset + static_cast<int64_t>(ended.ship.pending.size());  // no follower: complete
    if (static_cast<int64_t>(r.log_data.size()) > log_budget) {
      log_backlog_ = true;  // next heartbeat
      continue;
    }
    log_budget -= static_cast<int64_t>(r.log_data.size());
    reports.push_back(std::move(r));
  }
  return reports;
}

void NodeAgent::NoteError(const std::string& task_id, const Status& status) {
  // The next Tick asks again (the server keeps saying what it wants): a note is all there is to do.
  if (!status.ok()) notices_.push_back("task " + task_id + ": " + status.message());
}

Status NodeAgent::Tick() {
  launcher_->Poll();  // reap exits and send due signals; the reports below carry the results
  if (resend_tails_) {
    ResendLogTails();
    resend_tails_ = false;
  }
  std::vector<TaskReport> reports = Reports();
  MeasureUse(&reports);
  const TimeMicros sent_at = BootTimeMicros();  // the server saw the node alive no earlier than this
  last_beat_us_ = sent_at;
  auto answer = client_->Heartbeat(node_, reports, measured_);
  if (!answer.ok()) {
    resend_tails_ = true;
    return answer.status();
  }
  started_unreported_ = false;
  HeartbeatReply reply = std::move(*answer);
  generation_ = reply.generation;
  wanted_mig_geometry_ = std::move(reply.mig_geometry);
  if (reply.node_timeout_micros > 0) RenewLease(sent_at, reply.node_timeout_micros);
  LogsAcknowledged(reports);
  if (reply.interval_micros > 0) interval_micros_ = reply.interval_micros;
  if (reply.has_tasks) Reconcile(reply);
  return Status::Ok();
}

// The tasks' lease runs from when the answered heartbeat was sent (never later than the server's own count of
// the node's silence starts) for the server's node timeout; tasks started from now on are fenced by it.
void NodeAgent::RenewLease(TimeMicros sent_at, TimeMicros node_timeout) {
  Status s = launcher_->RenewLease(sent_at + node_timeout, node_timeout);
  if (!s.ok() && !lease_error_noted_) {
    lease_error_noted_ = true;
    notices_.push_back("cannot renew the tasks' lease (they stop themselves when it runs out): " + s.message());
  } else if (s.ok()) {
    lease_error_noted_ = false;
  }
}

void NodeAgent::MeasureUse(std::vector<TaskReport>* reports) {
  if (usage_probe_ == nullptr) return;
  std::vector<TaskOnNode> running;
  for (const TaskReport& r : *reports) {
    if (!r.status.running()) continue;
    TaskOnNode t{r.status.task_id, r.status.pid, {}, launcher_->TaskDir(r.status.task_id) + "/vgpu.region"};
    if (auto it = meta_.find(t.task_id); it != meta_.end()) t.devices = it->second.devices;
    running.push_back(std::move(t));
  }
  measured_.clear();
  auto sample = usage_probe_->Sample(node_, running);
  if (!sample.ok()) {
    if (!usage_error_noted_) notices_.push_back("cannot measure device use: " + sample.status().message());
    usage_error_noted_ = true;
    return;
  }
  usage_error_noted_ = false;
  for (const auto& [index, use] : sample->devices) {
    measured_.push_back(protocol::DeviceUsageSample{index, use.used_memory_mib, use.sm_permille});
  }
  for (TaskReport& r : *reports) {
    if (!r.status.running()) continue;
    if (auto it = sample->task_memory.find(r.status.task_id); it != sample->task_memory.end()) {
      r.used_memory_mib = it->second;
    }
  }
}

bool NodeAgent::HasNews() {
  if (started_unreported_) return true;
  if (log_backlog_ && BootTimeMicros() - last_beat_us_ >= kLogBacklogBeat) return true;
  return !launcher_->Poll().empty();
}

void NodeAgent::StartTask(const TaskAssignment& a) {
  const std::string& id = a.spec.task_id;
  started_unreported_ = true;
  Status s = launcher_->Start(a.spec);
  if (s.ok()) {
    meta_[id] = Meta{a.spec.job_id, a.spec.replica, a.spec.restart_count, /*adopted=*/false, a.spec.devices};
    start_errors_.erase(id);
    ended_logs_.erase(id);  // the new run's follower reads the stream's tail again, earlier output included
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
          if (failed == start_errors_.end() || failed->second.restart_count < a.spec.restart_count) StartTask(a);
        } else if (meta != meta_.end() && meta->second.restart_count < a.spec.restart_count) {
          // The server restarted the job (e.g. it requeued it while this agent was away): the earlier run is
          // stale. It is stopped first; the new run starts once it has ended, never beside it.
          if (current->running()) {
            if (stale_stopping_.insert(id).second) {
              notices_.push_back("task " + id + ": stopping its run " + std::to_string(meta->second.restart_count) +
                                 ", the server restarted it as run " + std::to_string(a.spec.restart_count));
            }
            NoteError(id, launcher_->Stop(id, a.grace_micros));
          } else {
            stale_stopping_.erase(id);
            StartTask(a);  // a restart of an ended task
          }
        } else if (!current->running() && current->state == TaskState::kStopped && !current->fenced &&
                   meta != meta_.end() && meta->second.adopted && meta->second.restart_count == a.spec.restart_count) {
          // Stopped with the earlier agent (`xpool agent --stop-tasks`, `xpool up` ending), not by the server,
          // which still wants it: it runs again, as a restarted agent always did before tasks were adopted.
          StartTask(a);
        }
        break;
      case TaskAssignment::Action::kStop:
        if (current.ok() && current->running()) NoteError(id, launcher_->Stop(id, a.grace_micros));
        break;
      case TaskAssignment::Action::kSuspend:
        if (current.ok() && current->running()) NoteError(id, launcher_->Suspend(id, a.grace_micros));
        break;
    }
  }
  // Not wanted any more: stop what runs; forget what ended (the server has seen its report).
  for (const TaskStatus& st : launcher_->List()) {
    if (wanted.count(st.task_id)) continue;
    if (st.running()) {
      NoteError(st.task_id, launcher_->Stop(st.task_id, kUnwantedGrace));
    } else {
      CheckOk(launcher_->Forget(st.task_id), "the task has ended");
      KeepEndedLog(st);
      meta_.erase(st.task_id);
      logs_.erase(st.task_id);
      stale_stopping_.erase(st.task_id);
    }
  }
  for (auto it = start_errors_.begin(); it != start_errors_.end();) {
    it = wanted.count(it->first) ? std::next(it) : start_errors_.erase(it);
  }
}

}  // namespace xpool::agent
