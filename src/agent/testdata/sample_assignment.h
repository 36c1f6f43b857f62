#pragma once
// A sample task assignment for the agent protocol's codec tests (JSON in protocol_test.cc, protobuf in
// grpc_codec_test.cc): a suspend of a task that shares device 3 (40 GiB, 50 % cores) in a 2-replica job, with
// every optional field set. Header-only; tests only.
#include "agent/protocol.h"

namespace xpool::agent::test_data {

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
  a.spec.distributed = DistributedEnv{"h", 29400, 2, 1, 0};
  a.spec.suspend_signal = "SIGUSR2";
  return a;
}

}  // namespace xpool::agent::test_data
