// End to end with the real clients: a HAMi user's pods, built and sent by python3-kubernetes, scheduled by the
// extender service, and allocated by the device plugin to a python3-grpcio kubelet (tests/k8s/hami_cluster_e2e.py).
// This binary starts xpool's side — the fake API server (canonical quantities, the webhook on create), the
// extender service and the device plugin over 8 simulated A100s — and runs the script against them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fake_api_server.h"
#include "k8s/device_plugin.h"
#include "k8s/http_kube_api.h"
#include "k8s/scheduler_service.h"
#include "k8s/webhook.h"

namespace xpool::k8s {
namespace {

TEST(HamiE2eTest, HamiExamplePodsScheduleBindAndAllocateThroughTheRealClients) {
  char templ[] = "/tmp/xpool-hami-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::filesystem::create_directories(dir + "/plugins");
  std::filesystem::create_directories(dir + "/dev");
  for (int i = 0; i < 8; ++i) std::ofstream(dir + "/dev/nvidia" + std::to_string(i)) << "";
  for (const char* node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) std::ofstream(dir + "/dev/" + node) << "";

  testing::FakeApiServer api;
  ASSERT_GT(api.Start(), 0);
  api.SetMutatingWebhook(
      [](const std::string& review) { return HandleAdmissionReview(review, WebhookOptions{}).body; });
  KubeApiConfig api_config;
  api_config.server = api.url();
  api_config.timeout_seconds = 2;
  api_config.watch_timeout_seconds = 2;

  SchedulerServiceOptions options;
  options.listen = "127.0.0.1:0";
  options.url_prefix = "/scheduler/";
  options.watch.initial_backoff_ms = 50;
  Result<std::unique_ptr<SchedulerService>> service = SchedulerService::Start(options, MakeHttpKubeApi(api_config));
  ASSERT_TRUE(service.ok()) << service.status().ToString();

  std::vector<Device> devices(8);
  for (int i = 0; i < 8; ++i) {
    devices[i].uuid = "GPU-a100-" + std::to_string(i);
    devices[i].index = i;
    devices[i].model = "A100-SXM4-80GB";
    devices[i].memory_mib = 81920;
    devices[i].max_sharers = 10;
  }
  DevicePluginConfig plugin_config;
  plugin_config.plugin_dir = dir + "/plugins";
  plugin_config.node_name = "gpu-node-1";
  plugin_config.split = 10;
  plugin_config.watch_interval_ms = 50;
  plugin_config.paths.library_dir = dir + "/lib";
  plugin_config.paths.preload_file = dir + "/lib/ld.so.preload";
  plugin_config.paths.shared_region_host_dir = dir + "/regions";
  plugin_config.paths.dev_root = dir + "/dev";
  plugin_config.log = [](const std::string&) {};
  Result<std::unique_ptr<DevicePluginServer>> plugin =
      DevicePluginServer::Start(plugin_config, MakeHttpKubeApi(api_config), devices);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();

  const std::string command =
      "/usr/bin/python3 " XPOOL_SOURCE_DIR "/tests/k8s/hami_cluster_e2e.py --api " + api.url() +
      " --extender http://127.0.0.1:" + std::to_string((*service)->port()) + "/scheduler --plugin-dir " + dir +
      "/plugins --proto " XPOOL_SOURCE_DIR "/proto/deviceplugin/v1beta1/api.proto --node gpu-node-1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  EXPECT_TRUE((*service)->cluster().CheckInvariants().ok());
  (*plugin)->Stop();
  (*service)->Stop();
  api.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::k8s
