#pragma once
// Sample messages for the agent protocol's codec tests (JSON in json_codec_test.cc, protobuf in grpc_codec_test.cc),
// so that both codecs are held to the same messages: a task assignment and a heartbeat's task report, each with
// every field set to a value that is not the default. Header-only; tests only; stateless.
#include <gtest/gtest.h>

#include "protocol/json_codec.h"

namespace xpool::protocol::test_data {

// A suspend of a task that shares device 3 (40 GiB, 50 % cores) in a 2-replica job.
inline TaskAssignment SampleSharedSuspend() {
  TaskAssignment a;
  a.action = TaskAssignment::Action::kSuspend;
  a.grace_micros = 1'500'000;
  a.spec.task_id = "job7-r1";
  a.spec.job_id = 7;
  a.spec.replica = 1;
  a.spec.restart_count = 2;
  a.spec.argv = {"/bin/sh", "-c", "echo hi"};
  a.spec.workdir = "/w";
  a.spec.env = {{"A", "1"}};
  a.spec.cpu_milli = 500;
  a.spec.memory_mib = 64;
  a.spec.devices = {{3, 40960, 50}};
  a.spec.shares_device = true;
  a.spec.distributed = DistributedEnv{"h", 29400, 4, 3, 1, 2, 1};  // rank 3: local rank 1 of 2 on node 1
  a.spec.suspend_signal = "SIGUSR2";
  a.spec.tenant_id = 17;
  a.spec.image = "registry.example:5000/team/train:v2";
  return a;
}

// EXPECTs that `got` carries every field of `want`.
inline void ExpectSameAssignment(const TaskAssignment& got, const TaskAssignment& want) {
  EXPECT_EQ(got.action, want.action);
  EXPECT_EQ(got.grace_micros, want.grace_micros);
  const LaunchSpec& g = got.spec;
  const LaunchSpec& w = want.spec;
  EXPECT_EQ(g.task_id, w.task_id);
  EXPECT_EQ(g.job_id, w.job_id);
  EXPECT_EQ(g.tenant_id, w.tenant_id);
  EXPECT_EQ(g.replica, w.replica);
  EXPECT_EQ(g.restart_count, w.restart_count);
  EXPECT_EQ(g.argv, w.argv);
  EXPECT_EQ(g.workdir, w.workdir);
  EXPECT_EQ(g.env, w.env);
  EXPECT_EQ(g.vendor, w.vendor);
  EXPECT_EQ(g.cpu_milli, w.cpu_milli);
  EXPECT_EQ(g.memory_mib, w.memory_mib);
  EXPECT_EQ(g.suspend_signal, w.suspend_signal);
  EXPECT_EQ(g.shares_device, w.shares_device);
  ASSERT_EQ(g.devices.size(), w.devices.size());
  for (size_t i = 0; i < w.devices.size(); ++i) {
    SCOPED_TRACE("device " + std::to_string(i));
    EXPECT_EQ(g.devices[i].index, w.devices[i].index);
    EXPECT_EQ(g.devices[i].memory_mib, w.devices[i].memory_mib);
    EXPECT_EQ(g.devices[i].core_percent, w.devices[i].core_percent);
  }
  EXPECT_EQ(g.image, w.image);
  ASSERT_EQ(g.distributed.has_value(), w.distributed.has_value());
  if (w.distributed) {
    EXPECT_EQ(g.distributed->master_addr, w.distributed->master_addr);
    EXPECT_EQ(g.distributed->master_port, w.distributed->master_port);
    EXPECT_EQ(g.distributed->world_size, w.distributed->world_size);
    EXPECT_EQ(g.distributed->rank, w.distributed->rank);
    EXPECT_EQ(g.distributed->local_rank, w.distributed->local_rank);
    EXPECT_EQ(g.distributed->local_world_size, w.distributed->local_world_size);
    EXPECT_EQ(g.distributed->node_rank, w.distributed->node_rank);
  }
}

// A task that failed to start (exit 3, an exec error, logging stopped), with a log chunk at offset 100.
inline TaskReport SampleFailedReport() {
  TaskReport r;
  r.job_id = 42;
  r.replica = 1;
  r.restart_count = 3;
  r.status.task_id = "job42-r1";
  r.status.state = TaskState::kFailed;
  r.status.exit_code = 3;
  r.status.signal = 9;
  r.status.error = "exec \"nope\": No such file or directory";
  r.status.log_note = "logging stopped";
  r.status.pid = 1234;
  r.status.started_at = 10;
  r.status.ended_at = 20;
  r.status.fenced = true;
  r.log_offset = 100;
  r.log_data = "step 1\nstep 2\n";
  r.log_end = 114;
  return r;
}

// EXPECTs that `got` carries every field of `want` but its log data (which a codec may sanitize: the caller
// checks it).
inline void ExpectSameReportButLog(const TaskReport& got, const TaskReport& want) {
  EXPECT_EQ(got.job_id, want.job_id);
  EXPECT_EQ(got.replica, want.replica);
  EXPECT_EQ(got.restart_count, want.restart_count);
  EXPECT_EQ(got.status.task_id, want.status.task_id);
  EXPECT_EQ(got.status.state, want.status.state);
  EXPECT_EQ(got.status.exit_code, want.status.exit_code);
  EXPECT_EQ(got.status.signal, want.status.signal);
  EXPECT_EQ(got.status.error, want.status.error);
  EXPECT_EQ(got.status.log_note, want.status.log_note);
  EXPECT_EQ(got.status.pid, want.status.pid);
  EXPECT_EQ(got.status.started_at, want.status.started_at);
  EXPECT_EQ(got.status.ended_at, want.status.ended_at);
  EXPECT_EQ(got.status.fenced, want.status.fenced);
  EXPECT_EQ(got.log_offset, want.log_offset);
  EXPECT_EQ(got.log_end, want.log_end);
}

}  // namespace xpool::protocol::test_data
