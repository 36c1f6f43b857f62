#include "k8s/device_plugin_core.h"

#include <gtest/gtest.h>

namespace xpool::k8s {
namespace {

PodInfo Bound(const std::string& name, const std::string& node, std::vector<int> devices_per_container,
              const std::string& bind_time = "") {
  PodInfo p;
  p.namespace_name = "ml";
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = "Pending";
  p.node_name = node;
  PodAssignment a;
  a.node = node;
  for (size_t c = 0; c < devices_per_container.size(); ++c) {
    ContainerAssignment ca;
    ca.name = "c" + std::to_string(c);
    for (int d = 0; d < devices_per_container[c]; ++d) {
      ca.devices.push_back({name + "-gpu" + std::to_string(d), d, Vendor::kNvidia, 4096, 300});
    }
    a.containers.push_back(ca);
  }
  p.annotations[std::string(kAllocationAnnotation)] = EncodeAssignment(a);
  if (!bind_time.empty()) p.annotations[std::string(kBindTimeAnnotation)] = bind_time;
  return p;
}

TEST(DevicePluginCoreTest, MatchesTheEarliestBoundPendingContainerWithThatManyDevices) {
  std::vector<PodInfo> pods = {Bound("late", "n1", {1}, "2000"), Bound("early", "n1", {1}, "999"),
                               Bound("two", "n1", {2}, "1"), Bound("elsewhere", "n2", {1}, "1")};
  PodInfo running = Bound("running", "n1", {1}, "1");
  running.phase = "Running";
  pods.push_back(running);
  std::set<std::string> allocated;
  Result<AllocateMatch> m = MatchAllocate(pods, "n1", 1, allocated);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->pod_key, "ml/early") << "999 < 2000 numerically";
  allocated.insert(m->allocated_key);
  m = MatchAllocate(pods, "n1", 1, allocated);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pod_key, "ml/late");
  allocated.insert(m->allocated_key);
  Result<AllocateMatch> none = MatchAllocate(pods, "n1", 1, allocated);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no pending pod on node n1"), std::string::npos);
  m = MatchAllocate(pods, "n1", 2, allocated);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pod_key, "ml/two");
}

TEST(DevicePluginCoreTest, ContainersOfOnePodInOrder) {
  std::vector<PodInfo> pods = {Bound("multi", "n1", {1, 1})};
  std::set<std::string> allocated;
  Result<AllocateMatch> first = MatchAllocate(pods, "n1", 1, allocated);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->container.name, "c0");
  allocated.insert(first->allocated_key);
  Result<AllocateMatch> second = MatchAllocate(pods, "n1", 1, allocated);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->container.name, "c1");
}

TEST(DevicePluginCoreTest, ContainersNamedInTheServedAnnotationAreSkipped) {
  PodInfo pod = Bound("multi", "n1", {1, 1});
  Result<AllocateMatch> first = MatchAllocate({pod}, "n1", 1, {});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->served, "c0");
  // A restarted plugin has an empty allocated set; the annotation written after the first answer remains.
  pod.annotations[std::string(kServedAnnotation)] = first->served;
  Result<AllocateMatch> second = MatchAllocate({pod}, "n1", 1, {});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->container.name, "c1");
  EXPECT_EQ(second->served, "c0,c1");
  pod.annotations[std::string(kServedAnnotation)] = second->served;
  EXPECT_FALSE(MatchAllocate({pod}, "n1", 1, {}).ok());
  pod.annotations[std::string(kServedAnnotation)] = "c00,c";  // names are compared whole
  Result<AllocateMatch> whole = MatchAllocate({pod}, "n1", 1, {});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->container.name, "c0");
}

TEST(DevicePluginCoreTest, EnvCarriesVisibleDevicesLimitsDeviceNodesAndThePreload) {
  Result<AllocateMatch> m = MatchAllocate({Bound("p", "n1", {2})}, "n1", 2, {});
  ASSERT_TRUE(m.ok());
  m->container.devices[1].compute_milli = 1000;  // a whole device: no core limit
  m->container.devices[1].index = 5;
  ContainerResponse r = ContainerEnv(*m, PluginPaths{});
  EXPECT_EQ(r.envs.at("CUDA_VISIBLE_DEVICES"), "p-gpu0,p-gpu1");
  // The NVIDIA container runtime mounts exactly these: an image's NVIDIA_VISIBLE_DEVICES=all is overridden.
  EXPECT_EQ(r.envs.at("NVIDIA_VISIBLE_DEVICES"), "p-gpu0,p-gpu1");
  EXPECT_EQ(r.envs.at("XPOOL_DEVICE_MEMORY_LIMIT_0"), "4096");
  EXPECT_EQ(r.envs.at("XPOOL_DEVICE_MEMORY_LIMIT_1"), "4096");
  EXPECT_EQ(r.envs.at("XPOOL_DEVICE_CORE_LIMIT_0"), "30");
  EXPECT_EQ(r.envs.count("XPOOL_DEVICE_CORE_LIMIT_1"), 0u);
  EXPECT_EQ(r.envs.at("XPOOL_SHARED_REGION"), "/tmp/xpool/region.cache");
  EXPECT_EQ(r.envs.count("LD_PRELOAD"), 0u) << "the preload is a mounted /etc/ld.so.preload, not an env var";
  std::vector<std::string> nodes;
  for (const DeviceNode& d : r.devices) {
    EXPECT_EQ("/dev" + d.container_path.substr(4), d.host_path);
    EXPECT_EQ(d.permissions, "rw");
    nodes.push_back(d.container_path);
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia5", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                             "/dev/nvidia-uvm-tools"}));
  EXPECT_TRUE(r.cdi_devices.empty());
  ASSERT_EQ(r.mounts.size(), 3u);
  // The shared region lives on the host, per pod and container, writable.
  EXPECT_EQ(r.mounts[0].host_path, "/var/lib/xpool/containers/uid-p_c0");
  EXPECT_EQ(r.mounts[0].container_path, "/tmp/xpool");
  EXPECT_FALSE(r.mounts[0].read_only);
  EXPECT_EQ(r.mounts[1].host_path, "/usr/local/xpool");
  EXPECT_TRUE(r.mounts[1].read_only);
  EXPECT_EQ(r.mounts[2].host_path, "/usr/local/xpool/ld.so.preload");
  EXPECT_EQ(r.mounts[2].container_path, "/etc/ld.so.preload");
  EXPECT_TRUE(r.mounts[2].read_only);

  PluginPaths paths;
  paths.cdi = true;
  paths.preload_file = "";
  paths.dev_root = "/host/dev";
  r = ContainerEnv(*m, paths);
  EXPECT_EQ(r.cdi_devices, (std::vector<std::string>{"nvidia.com/gpu=p-gpu0", "nvidia.com/gpu=p-gpu1"}));
  EXPECT_EQ(r.envs.at("LD_PRELOAD"), "/usr/local/xpool/libxpool-vgpu.so");
  EXPECT_EQ(r.devices[0].host_path, "/dev/nvidia0");  // the host's path, whatever the plugin sees it as
  EXPECT_EQ(r.mounts.size(), 2u);
}

TEST(DevicePluginCoreTest, OtherVendorsGetTheirVariableAndNoNvidiaNodes) {
  PodInfo pod = Bound("mlu", "n1", {1});
  PodAssignment a;
  a.node = "n1";
  a.containers.push_back({"c0", {{"MLU-1", 0, Vendor::kCambricon, 1024, 0}}});
  pod.annotations[std::string(kAllocationAnnotation)] = EncodeAssignment(a);
  Result<AllocateMatch> m = MatchAllocate({pod}, "n1", 1, {});
  ASSERT_TRUE(m.ok());
  ContainerResponse r = ContainerEnv(*m, PluginPaths{});
  EXPECT_EQ(r.envs.count("NVIDIA_VISIBLE_DEVICES"), 0u);
  EXPECT_TRUE(r.devices.empty());
}

TEST(DevicePluginCoreTest, SlotIds) {
  std::vector<Device> devices(2);
  devices[0].uuid = "a";
  devices[1].uuid = "b";
  EXPECT_EQ(SlotIds(devices, 2), (std::vector<std::string>{"a::0", "a::1", "b::0", "b::1"}));
}

}  // namespace
}  // namespace xpool::k8s
