#include "protocol/grpc_codec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "agent/v1/agent.pb.h"
#include "model/job_spec.h"
#include "model/vendor.h"
#include "protocol/json_codec.h"

namespace xpool::protocol {
namespace {

constexpr int kMaxDevicesPerNode = 256;

v1::TaskState StateToProto(TaskState s) {
  switch (s) {
    case TaskState::kRunning:
      return v1::TASK_STATE_RUNNING;
    case TaskState::kSucceeded:
      return v1::TASK_STATE_SUCCEEDED;
    case TaskState::kFailed:
      return v1::TASK_STATE_FAILED;
    case TaskState::kStopped:
      return v1::TASK_STATE_STOPPED;
    case TaskState::kSuspended:
      return v1::TASK_STATE_SUSPENDED;
  }
  return v1::TASK_STATE_RUNNING;
}

Result<TaskState> StateFromProto(int s, const std::string& where) {
  switch (s) {
    case v1::TASK_STATE_RUNNING:
      return TaskState::kRunning;
    case v1::TASK_STATE_SUCCEEDED:
      return TaskState::kSucceeded;
    case v1::TASK_STATE_FAILED:
      return TaskState::kFailed;
    case v1::TASK_STATE_STOPPED:
      return TaskState::kStopped;
    case v1::TASK_STATE_SUSPENDED:
      return TaskState::kSuspended;
    default:
      return InvalidArgumentError("heartbeat: " + where + ".state " + std::to_string(s) + " is not a task state");
  }
}

Result<Vendor> VendorFromProto(const std::string& name, const std::string& where) {
  if (name.empty()) return Vendor::kNvidia;
  auto v = ParseVendor(name);
  if (!v.ok()) return InvalidArgumentError(where + ".vendor: " + v.status().message());
  return *v;
}

Result<Device> DeviceFromProto(const v1::Device& in, int index, const std::string& where) {
  Device d;
  d.index = index;
  d.uuid = in.uuid();
  d.model = in.model();
  ASSIGN_OR_RETURN(d.vendor, VendorFromProto(in.vendor(), where));
  d.memory_mib = in.memory_mib();
  if (!in.mode().empty()) {
    auto mode = ParseDeviceMode(in.mode());
    if (!mode.ok()) return InvalidArgumentError(where + ".mode: " + mode.status().message());
    d.mode = *mode;
  }
  // 0 is proto3's unset: a whole device, except for a free MIG slot, which has none.
  if (in.compute_milli() != 0 || d.mode == DeviceMode::kMigSlot) d.compute_milli = in.compute_milli();
  d.max_sharers = in.max_sharers() > 0 ? in.max_sharers() : ProfileFor(d.vendor).default_max_sharers;
  if (in.numa_node() < 0 || in.numa_node() > 63) return InvalidArgumentError(where + ".numa_node must be 0..63");
  d.numa_node = in.numa_node();
  d.healthy = in.healthy();
  return d;
}

}  // namespace

void NodeToProto(const Node& node, v1::Node* out) {
  out->set_name(node.name);
  out->set_cpu_milli(node.cpu_milli);
  out->set_memory_mib(node.memory_mib);
  out->set_simulated(node.simulated);
  for (const auto& [k, v] : node.labels) (*out->mutable_labels())[k] = v;
  for (const Device& d : node.devices) {
    v1::Device* p = out->add_devices();
    p->set_index(d.index);
    p->set_uuid(d.uuid);
    p->set_model(d.model);
    p->set_vendor(std::string(VendorName(d.vendor)));
    p->set_memory_mib(d.memory_mib);
    p->set_compute_milli(d.compute_milli);
    p->set_max_sharers(d.max_sharers);
    p->set_numa_node(d.numa_node);
    p->set_mode(std::string(DeviceModeName(d.mode)));
    p->set_healthy(d.healthy);
  }
  for (int a = 0; a < node.links.size(); ++a) {
    for (int b = 0; b < node.links.size(); ++b) out->add_link_scores(node.links.Score(a, b));
  }
}

Result<Node> NodeFromProto(const v1::Node& in) {
  Node n;
  n.name = in.name();
  if (n.name.empty()) return InvalidArgumentError("register: node.name is required");
  n.cpu_milli = in.cpu_milli();
  n.memory_mib = in.memory_mib();
  n.simulated = in.simulated();
  for (const auto& [k, v] : in.labels()) n.labels[k] = v;
  if (in.devices_size() > kMaxDevicesPerNode) return InvalidArgumentError("register: at most 256 devices per node");
  for (int i = 0; i < in.devices_size(); ++i) {
    ASSIGN_OR_RETURN(Device d, DeviceFromProto(in.devices(i), i, "register: node.devices[" + std::to_string(i) + "]"));
    if (d.uuid.empty()) d.uuid = n.name + "-gpu" + std::to_string(i);
    n.devices.push_back(std::move(d));
  }
  const int count = in.devices_size();
  if (in.link_scores_size() != 0) {
    if (in.link_scores_size() != count * count) {
      return InvalidArgumentError("register: node.link_scores has " + std::to_string(in.link_scores_size()) +
                                  " entries, " + std::to_string(count * count) + " expected (devices × devices)");
    }
    n.links = LinkTable(count);
    for (int a = 0; a < count; ++a) {
      for (int b = a + 1; b < count; ++b) n.links.Set(a, b, in.link_scores(a * count + b));
    }
  }
  Status valid = ValidateNode(n);
  if (!valid.ok()) return InvalidArgumentError("register: " + valid.message());
  return n;
}

void HeartbeatToProto(const Node& node, const std::vector<TaskReport>& tasks, v1::HeartbeatRequest* out,
                      const std::vector<DeviceUsageSample>& device_usage) {
  out->set_node(node.name);
  for (const Device& d : node.devices) {
    v1::DeviceHealth* h = out->add_devices();
    h->set_index(d.index);
    h->set_healthy(d.healthy);
    for (const DeviceUsageSample& u : device_usage) {
      if (u.index != d.index) continue;
      if (u.used_memory_mib >= 0) h->set_used_memory_mib(u.used_memory_mib);
      if (u.sm_permille >= 0) h->set_sm_permille(u.sm_permille);
    }
  }
  for (const TaskReport& r : tasks) {
    const TaskStatus& s = r.status;
    v1::TaskReport* t = out->add_tasks();
    t->set_task_id(s.task_id);
    t->set_job_id(r.job_id);
    t->set_replica(r.replica);
    t->set_restart_count(r.restart_count);
    t->set_state(StateToProto(s.state));
    t->set_exit_code(s.exit_code);
    t->set_signal(s.signal);
    t->set_error(s.error);
    t->set_log_note(s.log_note);
    t->set_pid(s.pid);
    t->set_started_at_us(s.started_at);
    t->set_ended_at_us(s.ended_at);
    t->set_fenced(s.fenced);
    if (!r.log_data.empty()) {
      t->set_log_offset(r.log_offset);
      t->set_log_data(r.log_data);
    }
    if (r.log_end >= 0) t->set_log_end(r.log_end);
    if (r.used_memory_mib >= 0) t->set_used_memory_mib(r.used_memory_mib);
  }
}

Result<HeartbeatRequest> HeartbeatFromProto(const v1::HeartbeatRequest& in) {
  HeartbeatRequest req;
  req.has_tasks = true;  // a gRPC agent always takes assignments
  for (int i = 0; i < in.devices_size(); ++i) {
    const v1::DeviceHealth& d = in.devices(i);
    req.device_health.emplace_back(d.index(), d.healthy());
    if (!d.has_used_memory_mib() && !d.has_sm_permille()) continue;
    const std::string where = "devices[" + std::to_string(i) + "]";
    DeviceUsageSample sample;
    sample.index = d.index();
    if (d.has_used_memory_mib()) {
      if (d.used_memory_mib() < 0) return InvalidArgumentError("heartbeat: " + where + ".used_memory_mib is negative");
      sample.used_memory_mib = d.used_memory_mib();
    }
    if (d.has_sm_permille()) {
      if (d.sm_permille() < 0 || d.sm_permille() > 1000) {
        return InvalidArgumentError("heartbeat: " + where + ".sm_permille is not in [0, 1000]");
      }
      sample.sm_permille = d.sm_permille();
    }
    req.device_usage.push_back(sample);
  }
  for (int i = 0; i < in.tasks_size(); ++i) {
    const v1::TaskReport& t = in.tasks(i);
    const std::string where = "tasks[" + std::to_string(i) + "]";
    TaskReport r;
    TaskStatus& s = r.status;
    s.task_id = t.task_id();
    if (s.task_id.empty()) return InvalidArgumentError("heartbeat: " + where + ".task_id is required");
    r.job_id = t.job_id();
    r.replica = t.replica();
    r.restart_count = t.restart_count();
    ASSIGN_OR_RETURN(s.state, StateFromProto(t.state(), where));
    s.exit_code = t.exit_code();
    s.signal = t.signal();
    s.error = t.error();
    s.log_note = t.log_note();
    s.pid = static_cast<pid_t>(t.pid());
    s.started_at = t.started_at_us();
    s.ended_at = t.ended_at_us();
    s.fenced = t.fenced();
    if (t.log_offset() < 0) return InvalidArgumentError("heartbeat: " + where + ".log_offset is negative");
    r.log_offset = t.log_offset();
    // Task output is not always UTF-8; the log relay and the JSON API carry text, so replace what is not.
    r.log_data = SanitizeUtf8(t.log_data(), /*hold_incomplete_tail=*/false, nullptr);
    if (t.has_log_end()) {
      if (t.log_end() < 0) return InvalidArgumentError("heartbeat: " + where + ".log_end is negative");
      r.log_end = t.log_end();
    }
    if (t.has_used_memory_mib()) {
      if (t.used_memory_mib() < 0) return InvalidArgumentError("heartbeat: " + where + ".used_memory_mib is negative");
      r.used_memory_mib = t.used_memory_mib();
    }
    req.tasks.push_back(std::move(r));
  }
  return req;
}

void ReplyToProto(const HeartbeatReply& reply, v1::HeartbeatReply* out) {
  out->set_heartbeat_interval_ms(reply.interval_micros / 1000);
  out->set_node_timeout_ms(reply.node_timeout_micros / 1000);
  out->set_generation(reply.generation);
  out->set_mig_geometry(reply.mig_geometry);
  for (const TaskAssignment& a : reply.tasks) {
    const LaunchSpec& s = a.spec;
    v1::TaskAssignment* t = out->add_tasks();
    switch (a.action) {
      case TaskAssignment::Action::kRun:
        t->set_action(v1::TaskAssignment::ACTION_RUN);
        break;
      case TaskAssignment::Action::kStop:
        t->set_action(v1::TaskAssignment::ACTION_STOP);
        break;
      case TaskAssignment::Action::kSuspend:
        t->set_action(v1::TaskAssignment::ACTION_SUSPEND);
        break;
    }
    t->set_task_id(s.task_id);
    t->set_job_id(s.job_id);
    t->set_tenant_id(s.tenant_id);
    t->set_replica(s.replica);
    t->set_restart_count(s.restart_count);
    for (const std::string& arg : s.argv) t->add_command(arg);
    t->set_workdir(s.workdir);
    for (const auto& [k, v] : s.env) (*t->mutable_env())[k] = v;
    t->set_vendor(std::string(VendorName(s.vendor)));
    t->set_cpu_milli(s.cpu_milli);
    t->set_memory_mib(s.memory_mib);
    t->set_grace_ms(a.grace_micros / 1000);
    t->set_suspend_signal(s.suspend_signal);
    t->set_image(s.image);
    for (const TaskDevice& d : s.devices) {
      v1::TaskDevice* p = t->add_devices();
      p->set_index(d.index);
      p->set_memory_mib(d.memory_mib);
      p->set_compute_milli(d.core_percent > 0 && d.core_percent < 100 ? d.core_percent * 10 : kWholeDeviceMilli);
      p->set_shared(s.shares_device);
    }
    if (s.distributed) {
      v1::Distributed* d = t->mutable_distributed();
      d->set_master_addr(s.distributed->master_addr);
      d->set_master_port(s.distributed->master_port);
      d->set_world_size(s.distributed->world_size);
      d->set_rank(s.distributed->rank);
      d->set_local_rank(s.distributed->local_rank);
      d->set_local_world_size(s.distributed->local_world_size);
      d->set_node_rank(s.distributed->node_rank);
    }
  }
}

Result<HeartbeatReply> ReplyFromProto(const v1::HeartbeatReply& in) {
  HeartbeatReply reply;
  reply.has_tasks = true;
  if (in.heartbeat_interval_ms() > 0) reply.interval_micros = in.heartbeat_interval_ms() * 1000;
  if (in.node_timeout_ms() > 0) reply.node_timeout_micros = in.node_timeout_ms() * 1000;
  reply.generation = in.generation();
  reply.mig_geometry = in.mig_geometry();
  for (int i = 0; i < in.tasks_size(); ++i) {
    const v1::TaskAssignment& t = in.tasks(i);
    const std::string where = "heartbeat reply: tasks[" + std::to_string(i) + "]";
    TaskAssignment a;
    switch (t.action()) {
      case v1::TaskAssignment::ACTION_RUN:
        a.action = TaskAssignment::Action::kRun;
        break;
      case v1::TaskAssignment::ACTION_STOP:
        a.action = TaskAssignment::Action::kStop;
        break;
      case v1::TaskAssignment::ACTION_SUSPEND:
        a.action = TaskAssignment::Action::kSuspend;
        break;
      default:
        return InvalidArgumentError(where + ".action " + std::to_string(t.action()) + " is not run/stop/suspend");
    }
    LaunchSpec& s = a.spec;
    s.task_id = t.task_id();
    s.job_id = t.job_id();
    s.tenant_id = t.tenant_id();
    s.replica = t.replica();
    s.restart_count = t.restart_count();
    s.argv.assign(t.command().begin(), t.command().end());
    s.workdir = t.workdir();
    for (const auto& [k, v] : t.env()) s.env[k] = v;
    ASSIGN_OR_RETURN(s.vendor, VendorFromProto(t.vendor(), where));
    s.cpu_milli = t.cpu_milli();
    s.memory_mib = t.memory_mib();
    a.grace_micros = t.grace_ms() * 1000;
    s.suspend_signal = t.suspend_signal();
    s.image = t.image();
    if (!s.suspend_signal.empty() && !CheckpointSignalNumber(s.suspend_signal).ok()) {
      return InvalidArgumentError(where + ".suspend_signal \"" + s.suspend_signal +
                                  "\" is not SIGUSR1, SIGUSR2, SIGINT, SIGTERM or SIGHUP");
    }
    for (const v1::TaskDevice& p : t.devices()) {
      TaskDevice d;
      d.index = p.index();
      d.memory_mib = p.memory_mib();
      const int64_t compute = p.compute_milli();
      if (compute > 0 && compute < kWholeDeviceMilli) d.core_percent = static_cast<int>((compute + 9) / 10);
      if (p.shared()) s.shares_device = true;
      s.devices.push_back(d);
    }
    if (t.has_distributed()) {
      const v1::Distributed& p = t.distributed();
      s.distributed = DistributedEnv{p.master_addr(), p.master_port(), p.world_size(),
                                     p.rank(),        p.local_rank(),  std::max(1, p.local_world_size()),
                                     p.node_rank()};
    }
    reply.tasks.push_back(std::move(a));
  }
  return reply;
}

}  // namespace xpool::protocol
