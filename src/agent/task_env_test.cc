#include "agent/task_env.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"

namespace xpool::agent {
namespace {

LaunchSpec BaseSpec() {
  LaunchSpec spec;
  spec.task_id = "job7-r1";
  spec.argv = {"/bin/true"};
  spec.workdir = "/tmp";
  spec.job_id = 7;
  spec.replica = 1;
  spec.restart_count = 2;
  return spec;
}

TEST(TaskEnvTest, DevicesLimitsIdentityAndPreload) {
  LaunchSpec spec = BaseSpec();
  spec.devices = {{3, 40960, 50}, {1, 8192, 0}};
  spec.shares_device = true;
  TaskPaths paths{"/run/t/vgpu.region", "/run/t/suspend", "/opt/xpool/lib/libxpool-vgpu.so", {}, {}};
  auto env = BuildTaskEnv(spec, paths, "/usr/lib/other.so");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "3,1");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "3,1");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["XPOOL_DEVICE_MEMORY_LIMIT_0"], "40960");
  EXPECT_EQ(env["XPOOL_DEVICE_CORE_LIMIT_0"], "50");
  EXPECT_EQ(env["XPOOL_DEVICE_MEMORY_LIMIT_1"], "8192");
  EXPECT_EQ(env.count("XPOOL_DEVICE_CORE_LIMIT_1"), 0u);
  EXPECT_EQ(env["XPOOL_SHARED_REGION"], "/run/t/vgpu.region");
  EXPECT_EQ(env["XPOOL_SUSPEND_FILE"], "/run/t/suspend");
  EXPECT_EQ(env["LD_PRELOAD"], "/opt/xpool/lib/libxpool-vgpu.so:/usr/lib/other.so");
  EXPECT_EQ(env["XPOOL_JOB_ID"], "7");
  EXPECT_EQ(env["XPOOL_REPLICA"], "1");
  EXPECT_EQ(env["XPOOL_RESTART_COUNT"], "2");
  EXPECT_EQ(env.count("MASTER_ADDR"), 0u);
  EXPECT_EQ(env.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);  // no device of this node runs MPS
}

TEST(TaskEnvTest, ExclusiveTaskGetsNoPreload) {
  LaunchSpec spec = BaseSpec();
  spec.devices = {{0, 0, 0}};
  spec.shares_device = false;
  auto env = BuildTaskEnv(spec, {"/r", "/s", "/lib.so", {}, {}}, "");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0");
  EXPECT_EQ(env.count("LD_PRELOAD"), 0u);
  EXPECT_EQ(env.count("XPOOL_SHARED_REGION"), 0u);
  EXPECT_EQ(env.count("XPOOL_DEVICE_MEMORY_LIMIT_0"), 0u);
}

TEST(TaskEnvTest, NoDevicesHidesAll) {
  auto env = BuildTaskEnv(BaseSpec(), {}, "");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "void");
}

TEST(TaskEnvTest, VendorVariableAndDistributed) {
  LaunchSpec spec = BaseSpec();
  spec.vendor = Vendor::kAscend;
  spec.devices = {{2, 0, 0}, {5, 0, 0}};
  spec.distributed = DistributedEnv{"10.0.0.5", 29400, 4, 3, 1, 2, 1};  // 2 replicas on each of 2 nodes
  auto env = BuildTaskEnv(spec, {}, "");
  EXPECT_EQ(env["ASCEND_VISIBLE_DEVICES"], "2,5");
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env.count("NVIDIA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.5");
  EXPECT_EQ(env["MASTER_PORT"], "29400");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["NODE_RANK"], "1");
  EXPECT_TRUE(ValidateLaunchSpec(spec).ok());
}

TEST(TaskEnvTest, DevicesFromGrants) {
  Node node = MakeNode("n").WithGpus(4, "A100", 81920).Build();
  bool shares = false;
  auto devices = TaskDevicesFromGrants(node, {{2, 40960, 500}, {3, 81920, 1000}}, &shares);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].index, 2);
  EXPECT_EQ(devices[0].memory_mib, 40960);
  EXPECT_EQ(devices[0].core_percent, 50);
  EXPECT_EQ(devices[1].core_percent, 0);
  EXPECT_TRUE(shares);
  TaskDevicesFromGrants(node, {{3, 81920, 1000}}, &shares);
  EXPECT_FALSE(shares);
  auto partial = TaskDevicesFromGrants(node, {{0, 1024, 0}}, &shares);  // memory share, no compute reserved
  EXPECT_TRUE(shares);
  EXPECT_EQ(partial[0].core_percent, 0);
  auto odd = TaskDevicesFromGrants(node, {{0, 1024, 333}}, &shares);
  EXPECT_EQ(odd[0].core_percent, 34);  // rounded up, never below the grant
}

TEST(ValidateLaunchSpecTest, RejectsBadSpecs) {
  struct Case {
    const char* what;
    void (*mutate)(LaunchSpec&);
    const char* error;
  };
  const Case cases[] = {
      {"empty id", [](LaunchSpec& s) { s.task_id = ""; }, "task id"},
      {"slash id", [](LaunchSpec& s) { s.task_id = "../x"; }, "task id"},
      {"dot id", [](LaunchSpec& s) { s.task_id = ".."; }, "task id"},
      {"no command", [](LaunchSpec& s) { s.argv.clear(); }, "no command"},
      {"bad env", [](LaunchSpec& s) { s.env["A=B"] = "1"; }, "environment variable"},
      {"bad core",
       [](LaunchSpec& s) {
         s.devices = {{0, 0, 150}};
       },
       "device limits"},
      {"bad rank",
       [](LaunchSpec& s) {
         s.distributed = DistributedEnv{"h", 1, 2, 2, 0};
       },
       "rank"},
      {"bad local rank", [](LaunchSpec& s) { s.distributed = DistributedEnv{"h", 29500, 4, 3, 1, 1, 1}; },
       "local_rank"},
  };
  EXPECT_TRUE(ValidateLaunchSpec(BaseSpec()).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    LaunchSpec spec = BaseSpec();
    c.mutate(spec);
    Status s = ValidateLaunchSpec(spec);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace xpool::agent
