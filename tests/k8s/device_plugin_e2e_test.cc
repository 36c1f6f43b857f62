// `xpool k8s device-plugin` against a fake kubelet: a gRPC Registration server on kubelet.sock in a temporary
// device-plugins directory. The fake receives Register, connects back to the plugin's socket like kubelet does,
// reads ListAndWatch, asks GetPreferredAllocation and calls Allocate; the pods come from an in-memory API server
// (FakeKubeApi) holding what the extender wrote at bind. Kubelet restarts must lead to a new registration.
// The last test runs the whole chain over HTTP: plugin publishes the node's devices → extender binds a pod →
// kubelet's Allocate gets the device the extender chose.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fake_api_server.h"
#include "k8s/annotations.h"
#include "k8s/device_plugin.h"
#include "k8s/fake_kube_api.h"
#include "k8s/http_kube_api.h"
#include "k8s/internal/prometheus.h"
#include "k8s/scheduler_service.h"
#include "model/node_builder.h"
#include "promtool_check.h"

namespace xpool::k8s {
namespace {

namespace pb = ::v1beta1;
using std::chrono::milliseconds;

// Plays kubelet's side of registration: serves Registration on <dir>/kubelet.sock and records the requests.
class FakeKubelet final : public pb::Registration::Service {
 public:
  explicit FakeKubelet(std::string dir) : dir_(std::move(dir)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeKubelet() override { Stop(); }
  bool serving() const { return server_ != nullptr; }
  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + milliseconds(200));
    server_->Wait();
    server_.reset();
    ::unlink((dir_ + "/kubelet.sock").c_str());
  }

  grpc::Status Register(grpc::ServerContext*, const pb::RegisterRequest* request, pb::Empty*) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(*request);
    cv_.notify_all();
    return grpc::Status::OK;
  }

  // The n-th request (1-based) once it arrived within `timeout`, else nullopt.
  std::optional<pb::RegisterRequest> WaitForRegistration(size_t n, milliseconds timeout = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; })) return std::nullopt;
    return requests_[n - 1];
  }

  // Connects back to the plugin's endpoint, as kubelet does after Register.
  std::unique_ptr<pb::DevicePlugin::Stub> Connect(const std::string& endpoint) const {
    return pb::DevicePlugin::NewStub(
        grpc::CreateChannel("unix:" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials()));
  }

 private:
  std::string dir_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pb::RegisterRequest> requests_;
};

class DevicePluginE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/xpool-dp-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    plugin_.reset();
    std::filesystem::remove_all(dir_);
  }

  static std::vector<Device> TwoGpus() {
    std::vector<Device> devices(2);
    for (int i = 0; i < 2; ++i) {
      devices[i].uuid = "GPU-" + std::to_string(i);
      devices[i].index = i;
      devices[i].model = "A100-SXM4-80GB";
      devices[i].memory_mib = 81920;
      devices[i].numa_node = i;
      devices[i].max_sharers = 4;
    }
    return devices;
  }

  // A pod the extender bound to `node` with one container using `uuids` (40 GiB, 50% each).
  static PodInfo BoundPod(const std::string& name, const std::string& node, const std::vector<std::string>& uuids,
                          const std::string& bind_time) {
    PodInfo p;
    p.namespace_name = "ml";
    p.name = name;
    p.uid = "uid-" + name;
    p.phase = "Pending";
    p.node_name = node;
    PodAssignment a;
    a.node = node;
    ContainerAssignment c;
    c.name = "main";
    for (const std::string& u : uuids) c.devices.push_back({u, u == "GPU-1" ? 1 : 0, Vendor::kNvidia, 40960, 500});
    a.containers.push_back(c);
    p.annotations[std::string(kAllocationAnnotation)] = EncodeAssignment(a);
    p.annotations[std::string(kBindTimeAnnotation)] = bind_time;
    return p;
  }

  void StartPlugin(std::unique_ptr<FakeKubeApi> api, std::vector<Device> devices = TwoGpus(),
                   const std::function<void(DevicePluginConfig*)>& adjust = nullptr) {
    DevicePluginConfig config;
    config.plugin_dir = dir_;
    config.node_name = "n1";
    config.split = 4;
    config.watch_interval_ms = 20;
    config.paths.library_dir = "/opt/xpool/lib";
    config.paths.preload_file = dir_ + "/lib/ld.so.preload";
    config.paths.shared_region_host_dir = dir_ + "/regions";
    config.paths.dev_root = dir_ + "/dev";  // holds nvidia1, nvidiactl, nvidia-uvm (no nvidia0, no uvm-tools)
    std::filesystem::create_directories(dir_ + "/dev");
    for (const char* node : {"nvidia1", "nvidiactl", "nvidia-uvm"}) std::ofstream(dir_ + "/dev/" + node) << "";
    config.log = [](const std::string&) {};
    if (adjust) adjust(&config);
    Result<std::unique_ptr<DevicePluginServer>> started =
        DevicePluginServer::Start(config, std::move(api), std::move(devices));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    plugin_ = std::move(*started);
  }

  std::string dir_;
  std::unique_ptr<DevicePluginServer> plugin_;
};

bool WaitFor(const std::function<bool()>& done, milliseconds timeout = milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

TEST_F(DevicePluginE2eTest, RegistersListsAndAllocatesThePodTheExtenderBound) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.serving());
  auto api = std::make_unique<FakeKubeApi>();
  FakeKubeApi* fake = api.get();
  fake->PutPod(BoundPod("late", "n1", {"GPU-0"}, "2000"));
  fake->PutPod(BoundPod("early", "n1", {"GPU-1"}, "1000"));
  fake->PutPod(BoundPod("other-node", "n2", {"GPU-0"}, "1"));
  StartPlugin(std::move(api));

  std::optional<pb::RegisterRequest> reg = kubelet.WaitForRegistration(1);
  ASSERT_TRUE(reg.has_value());
  EXPECT_EQ(reg->version(), "v1beta1");
  EXPECT_EQ(reg->endpoint(), "xpool.sock");
  EXPECT_EQ(reg->resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(reg->options().get_preferred_allocation_available());
  EXPECT_FALSE(reg->options().pre_start_required());

  // The node annotation the extender reads.
  ASSERT_TRUE(WaitFor([&] { return plugin_->published(); }));
  Result<std::vector<Device>> published =
      DecodeNodeDevices(fake->NodeAnnotations("n1").at(std::string(kNodeDevicesAnnotation)));
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ASSERT_EQ(published->size(), 2u);
  EXPECT_EQ((*published)[1].uuid, "GPU-1");
  EXPECT_EQ((*published)[1].memory_mib, 81920);

  auto stub = kubelet.Connect(reg->endpoint());
  {
    grpc::ClientContext ctx;
    pb::Empty empty;
    pb::DevicePluginOptions options;
    ASSERT_TRUE(stub->GetDevicePluginOptions(&ctx, empty, &options).ok());
    EXPECT_TRUE(options.get_preferred_allocation_available());
  }

  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::Empty empty;
  std::unique_ptr<grpc::ClientReader<pb::ListAndWatchResponse>> watch = stub->ListAndWatch(&watch_ctx, empty);
  pb::ListAndWatchResponse list;
  ASSERT_TRUE(watch->Read(&list));
  ASSERT_EQ(list.devices_size(), 8) << "2 devices x 4 slots";
  std::vector<std::string> slots;
  for (const pb::Device& d : list.devices()) {
    EXPECT_EQ(d.health(), "Healthy");
    slots.push_back(d.id());
  }
  EXPECT_EQ(slots[0], "GPU-0::0");
  EXPECT_EQ(slots[7], "GPU-1::3");
  EXPECT_EQ(list.devices(5).topology().nodes(0).id(), 1) << "GPU-1 is on NUMA node 1";

  {  // The preferred slot is on the device the extender chose for the earliest-bound pod (GPU-1), not the first.
    grpc::ClientContext ctx;
    pb::PreferredAllocationRequest request;
    pb::ContainerPreferredAllocationRequest* c = request.add_container_requests();
    for (const std::string& s : slots) c->add_available_deviceids(s);
    c->set_allocation_size(1);
    pb::PreferredAllocationResponse response;
    ASSERT_TRUE(stub->GetPreferredAllocation(&ctx, request, &response).ok());
    ASSERT_EQ(response.container_responses_size(), 1);
    ASSERT_EQ(response.container_responses(0).deviceids_size(), 1);
    EXPECT_EQ(response.container_responses(0).deviceids(0), "GPU-1::0");
  }

  auto allocate = [&](const std::string& slot, pb::AllocateResponse* response) {
    grpc::ClientContext ctx;
    pb::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(slot);
    return stub->Allocate(&ctx, request, response);
  };
  pb::AllocateResponse first;
  grpc::Status s = allocate("GPU-1::0", &first);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(first.container_responses_size(), 1);
  const auto& envs = first.container_responses(0).envs();
  EXPECT_EQ(envs.at("CUDA_VISIBLE_DEVICES"), "GPU-1") << "the earliest-bound pod (early) is served first";
  EXPECT_EQ(envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-1");
  EXPECT_EQ(envs.at("XPOOL_DEVICE_MEMORY_LIMIT_0"), "40960");
  EXPECT_EQ(envs.at("XPOOL_DEVICE_CORE_LIMIT_0"), "50");
  EXPECT_EQ(envs.at("XPOOL_SHARED_REGION"), "/tmp/xpool/region.cache");
  EXPECT_EQ(envs.count("LD_PRELOAD"), 0u);
  const auto& answer = first.container_responses(0);
  std::vector<std::string> specs;
  for (const pb::DeviceSpec& d : answer.devices()) {
    EXPECT_EQ(d.host_path(), d.container_path());
    EXPECT_EQ(d.permissions(), "rw");
    specs.push_back(d.container_path());
  }
  // Only the node's own device and the control nodes that exist on this host.
  EXPECT_EQ(specs, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"}));
  ASSERT_EQ(answer.mounts_size(), 3);
  EXPECT_EQ(answer.mounts(0).host_path(), dir_ + "/regions/uid-early_main");
  EXPECT_EQ(answer.mounts(0).container_path(), "/tmp/xpool");
  EXPECT_FALSE(answer.mounts(0).read_only());
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/regions/uid-early_main")) << "created on the host";
  EXPECT_EQ(answer.mounts(1).host_path(), "/opt/xpool/lib");
  EXPECT_EQ(answer.mounts(1).container_path(), "/usr/local/xpool");
  EXPECT_TRUE(answer.mounts(1).read_only());
  EXPECT_EQ(answer.mounts(2).host_path(), dir_ + "/lib/ld.so.preload");
  EXPECT_EQ(answer.mounts(2).container_path(), "/etc/ld.so.preload");
  EXPECT_TRUE(answer.mounts(2).read_only());
  std::ifstream preload(dir_ + "/lib/ld.so.preload");
  std::string preload_line;
  std::getline(preload, preload_line);
  EXPECT_EQ(preload_line, "/usr/local/xpool/libxpool-vgpu.so") << "written by the plugin at start";

  // Noted on the pod, so that a restarted plugin does not serve the container again.
  EXPECT_EQ(fake->Pod("ml/early")->annotations.at(std::string(kServedAnnotation)), "main");

  pb::AllocateResponse second;
  ASSERT_TRUE(allocate("GPU-0::1", &second).ok());
  EXPECT_EQ(second.container_responses(0).envs().at("CUDA_VISIBLE_DEVICES"), "GPU-0") << "then late";

  pb::AllocateResponse none;
  s = allocate("GPU-0::2", &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("no pending pod on node n1"), std::string::npos) << s.error_message();

  // A device turns unhealthy: the stream sends the new list and the annotation follows.
  std::vector<Device> devices = TwoGpus();
  devices[1].healthy = false;
  plugin_->SetDevices(devices);
  ASSERT_TRUE(watch->Read(&list));
  ASSERT_EQ(list.devices_size(), 8);
  EXPECT_EQ(list.devices(0).health(), "Healthy");
  EXPECT_EQ(list.devices(4).health(), "Unhealthy");
  ASSERT_TRUE(WaitFor([&] { return plugin_->published(); }));
  published = DecodeNodeDevices(fake->NodeAnnotations("n1").at(std::string(kNodeDevicesAnnotation)));
  ASSERT_TRUE(published.ok());
  EXPECT_FALSE((*published)[1].healthy);
  watch_ctx.TryCancel();
  (void)watch->Finish();
}

TEST_F(DevicePluginE2eTest, AllocateFailsClearlyWhenTheApiServerIsDown) {
  FakeKubelet kubelet(dir_);
  auto api = std::make_unique<FakeKubeApi>();
  api->PutPod(BoundPod("p", "n1", {"GPU-0"}, "1"));
  FakeKubeApi* fake = api.get();
  fake->before_list = [] { return UnavailableError("connection refused"); };
  StartPlugin(std::move(api));
  ASSERT_TRUE(kubelet.WaitForRegistration(1).has_value());
  auto stub = kubelet.Connect("xpool.sock");
  grpc::ClientContext ctx;
  pb::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("GPU-0::0");
  pb::AllocateResponse response;
  grpc::Status s = stub->Allocate(&ctx, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("cannot list the pods of node n1"), std::string::npos) << s.error_message();
  // Nothing was marked as served: once the API server is back the same container is allocated.
  fake->before_list = nullptr;
  grpc::ClientContext again;
  pb::AllocateResponse ok;
  ASSERT_TRUE(stub->Allocate(&again, request, &ok).ok());
  EXPECT_EQ(ok.container_responses(0).envs().at("CUDA_VISIBLE_DEVICES"), "GPU-0");
}

// GET /metrics on the plugin's own port: the memory in use that the containers' shared regions report, on the
// devices their allocation names (CUDA ordinal order), every device present, in valid exposition format.
TEST_F(DevicePluginE2eTest, ServesUsageFromTheSharedRegionsOnItsMetricsPort) {
  FakeKubelet kubelet(dir_);
  auto api = std::make_unique<FakeKubeApi>();
  api->PutPod(BoundPod("p", "n1", {"GPU-1"}, "1"));
  StartPlugin(std::move(api), TwoGpus(), [](DevicePluginConfig* c) {
    c->metrics_listen = "127.0.0.1:0";
    c->read_regions = [] { return std::vector<RegionUsage>{{"uid-p_main", {123 << 20}, 1}}; };
  });
  ASSERT_GT(plugin_->metrics_port(), 0);
  httplib::Client http("127.0.0.1", plugin_->metrics_port());
  auto reply = http.Get("/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  const std::string& text = reply->body;
  const Status valid = internal::CheckExposition(text);
  EXPECT_TRUE(valid.ok()) << valid.message() << "\n" << text;
  EXPECT_EQ(testing::PromtoolCheck(text).value_or(""), "") << text;  // "": accepted, or no promtool
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  };
  const std::string device1 =
      "node=\"n1\",nodeid=\"n1\",Hostname=\"n1\",deviceuuid=\"GPU-1\",UUID=\"GPU-1\",deviceidx=\"1\","
      "model=\"A100-SXM4-80GB\",gpu=\"1\",device=\"nvidia1\"";
  has("xpool_device_memory_used_bytes{" + device1 + "} " + std::to_string(123 << 20));
  has("xpool_device_memory_used_bytes{node=\"n1\",nodeid=\"n1\",Hostname=\"n1\",deviceuuid=\"GPU-0\",UUID=\"GPU-0\","
      "deviceidx=\"0\",model=\"A100-SXM4-80GB\",gpu=\"0\",device=\"nvidia0\"} 0");
  has("xpool_pod_device_memory_used_bytes{podnamespace=\"ml\",podname=\"p\",poduid=\"uid-p\",container=\"main\"," +
      device1 + "} " + std::to_string(123 << 20));
  has("xpool_device_plugin_api_up{node=\"n1\"} 1");
  EXPECT_EQ(http.Get("/healthz")->status, 200);
}

// Region directories of pods gone from the node (or terminated) are removed by the watch thread; those of pods
// still there, and anything not named like a container's, stay; nothing is removed while the API is down.
TEST_F(DevicePluginE2eTest, RemovesTheRegionDirectoriesOfPodsGoneFromTheNode) {
  FakeKubelet kubelet(dir_);
  auto api = std::make_unique<FakeKubeApi>();
  FakeKubeApi* fake = api.get();
  fake->PutPod(BoundPod("p", "n1", {"GPU-0"}, "1"));
  auto down = std::make_shared<std::atomic<bool>>(false);  // the hook is set once: the watch thread calls it
  fake->before_list = [down] { return *down ? UnavailableError("connection refused") : Status::Ok(); };
  const std::string regions = dir_ + "/regions";
  for (const char* d : {"uid-p_main", "uid-gone_main", "notours"}) {
    std::filesystem::create_directories(regions + "/" + d);
    std::ofstream(regions + "/" + d + "/region.cache") << "x";
  }
  StartPlugin(std::move(api), TwoGpus(), [](DevicePluginConfig* c) { c->sweep_interval_ms = 20; });
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(regions + "/uid-gone_main"); }));
  EXPECT_TRUE(std::filesystem::exists(regions + "/uid-p_main"));
  EXPECT_TRUE(std::filesystem::exists(regions + "/notours"));
  // The counter is raised just after the removal.
  EXPECT_TRUE(WaitFor([&] {
    return plugin_->Metrics().find("xpool_device_plugin_region_dirs_removed_total{node=\"n1\"} 1\n") !=
           std::string::npos;
  }));

  *down = true;
  PodInfo done = BoundPod("p", "n1", {"GPU-0"}, "1");
  done.phase = "Succeeded";
  fake->PutPod(done);
  Result<int> swept = plugin_->SweepRegionDirs();
  EXPECT_EQ(swept.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(std::filesystem::exists(regions + "/uid-p_main"));
  *down = false;
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(regions + "/uid-p_main"); }));
  EXPECT_TRUE(std::filesystem::exists(regions + "/notours"));
}

TEST_F(DevicePluginE2eTest, ReRegistersWhenKubeletRestarts) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_);
  StartPlugin(std::make_unique<FakeKubeApi>());
  ASSERT_TRUE(kubelet->WaitForRegistration(1).has_value());
  EXPECT_TRUE(WaitFor([&] { return plugin_->registrations() == 1; }));

  // Kubelet restarts the way it does: it stops, removes every socket in the directory, serves kubelet.sock anew.
  kubelet->Stop();
  kubelet.reset();
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.is_socket()) std::filesystem::remove(entry.path());
  }
  kubelet = std::make_unique<FakeKubelet>(dir_);
  std::optional<pb::RegisterRequest> reg = kubelet->WaitForRegistration(1);
  ASSERT_TRUE(reg.has_value()) << "no registration with the restarted kubelet";
  EXPECT_TRUE(WaitFor([&] { return plugin_->registrations() == 2; })) << plugin_->registrations();
  // The plugin serves its socket again: the new kubelet can list the devices.
  auto stub = kubelet->Connect(reg->endpoint());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pb::Empty empty;
  auto watch = stub->ListAndWatch(&ctx, empty);
  pb::ListAndWatchResponse list;
  ASSERT_TRUE(watch->Read(&list));
  EXPECT_EQ(list.devices_size(), 8);
  ctx.TryCancel();
  (void)watch->Finish();

  // A restart that leaves our socket alone but recreates kubelet.sock is noticed too.
  kubelet->Stop();
  kubelet = std::make_unique<FakeKubelet>(dir_);
  ASSERT_TRUE(kubelet->WaitForRegistration(1).has_value());
  EXPECT_TRUE(WaitFor([&] { return plugin_->registrations() == 3; })) << plugin_->registrations();
}

TEST_F(DevicePluginE2eTest, WaitsForAKubeletThatStartsLater) {
  StartPlugin(std::make_unique<FakeKubeApi>());
  EXPECT_EQ(plugin_->registrations(), 0);
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.WaitForRegistration(1).has_value());
  EXPECT_TRUE(WaitFor([&] { return plugin_->registrations() == 1; })) << plugin_->registrations();
}

TEST_F(DevicePluginE2eTest, BadConfigurationIsAClearError) {
  DevicePluginConfig config;
  config.plugin_dir = dir_ + "/missing";
  Result<std::unique_ptr<DevicePluginServer>> r =
      DevicePluginServer::Start(config, std::make_unique<FakeKubeApi>(), TwoGpus());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos) << r.status().message();
  config.plugin_dir = dir_;
  config.split = 0;
  r = DevicePluginServer::Start(config, std::make_unique<FakeKubeApi>(), TwoGpus());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("split count"), std::string::npos);
  config.split = 4;
  config.endpoint = "../escape.sock";
  r = DevicePluginServer::Start(config, std::make_unique<FakeKubeApi>(), TwoGpus());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("plain file name"), std::string::npos);
}

// The whole chain over the fake API server (HTTP): the plugin publishes the devices, the extender (the service
// `xpool k8s scheduler` runs) sees them through its watch and binds a pod, kubelet's Allocate gets what it chose.
TEST_F(DevicePluginE2eTest, ExtenderBindsAndThePluginAllocatesWhatTheExtenderChose) {
  using nlohmann::json;
  testing::FakeApiServer api;
  ASSERT_GT(api.Start(), 0);
  api.AddNode({{"metadata", {{"name", "gpu-1"}}},
               {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
  KubeApiConfig http;
  http.server = api.url();
  http.timeout_seconds = 2;
  http.watch_timeout_seconds = 2;

  FakeKubelet kubelet(dir_);
  DevicePluginConfig config;
  config.plugin_dir = dir_;
  config.node_name = "gpu-1";
  config.split = 4;
  config.watch_interval_ms = 20;
  config.log = [](const std::string&) {};
  std::vector<Device> devices = MakeNode("gpu-1").WithGpus(2, "A100", 16384).Build().devices;
  Result<std::unique_ptr<DevicePluginServer>> plugin =
      DevicePluginServer::Start(config, MakeHttpKubeApi(http), devices);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  ASSERT_TRUE(WaitFor([&] {
    const json node = api.Node("gpu-1");
    return node["metadata"].contains("annotations") &&
           node["metadata"]["annotations"].contains(std::string(kNodeDevicesAnnotation));
  })) << "the plugin publishes the node's devices";

  SchedulerServiceOptions options;
  options.listen = "127.0.0.1:0";
  options.url_prefix = "/scheduler";
  options.watch.initial_backoff_ms = 50;
  options.watch.max_backoff_ms = 200;
  Result<std::unique_ptr<SchedulerService>> extender = SchedulerService::Start(options, MakeHttpKubeApi(http));
  ASSERT_TRUE(extender.ok()) << extender.status().ToString();
  const json pod = {
      {"metadata", {{"name", "train"}, {"namespace", "ml"}, {"uid", "uid-train"}}},
      {"spec",
       {{"schedulerName", "xpool-scheduler"},
        {"containers",
         json::array(
             {{{"name", "main"},
               {"resources",
                {{"limits",
                  {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}, {"nvidia.com/gpucores", "30"}}}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
  api.AddPod(pod);
  httplib::Client c("127.0.0.1", (*extender)->port());
  std::string last;
  ASSERT_TRUE(WaitFor([&] {  // until the extender's watch has the node's devices
    auto f = c.Post("/scheduler/filter", json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"gpu-1"}}}.dump(),
                    "application/json");
    last = f ? f->body : "transport error";
    return f && f->status == 200 && json::parse(f->body)["NodeNames"].size() == 1;
  })) << last;
  auto b = c.Post("/scheduler/bind",
                  json{{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "gpu-1"}}.dump(),
                  "application/json");
  ASSERT_TRUE(b && b->status == 200);
  ASSERT_EQ(json::parse(b->body)["Error"], "");
  Result<PodAssignment> chosen = DecodeAssignment(
      api.Pod("ml", "train")["metadata"]["annotations"][std::string(kAllocationAnnotation)].get<std::string>());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  ASSERT_EQ(chosen->containers.at(0).devices.size(), 1u);

  ASSERT_TRUE(kubelet.WaitForRegistration(1).has_value());
  auto stub = kubelet.Connect("xpool.sock");
  grpc::ClientContext ctx;
  pb::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(devices[1].uuid + "::0");  // kubelet's pick does not matter
  pb::AllocateResponse response;
  grpc::Status s = stub->Allocate(&ctx, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const auto& envs = response.container_responses(0).envs();
  EXPECT_EQ(envs.at("CUDA_VISIBLE_DEVICES"), chosen->containers[0].devices[0].uuid);
  EXPECT_EQ(envs.at("XPOOL_DEVICE_MEMORY_LIMIT_0"), "8000");
  EXPECT_EQ(envs.at("XPOOL_DEVICE_CORE_LIMIT_0"), "30");
  (*extender)->Stop();
  (*plugin)->Stop();
}

}  // namespace
}  // namespace xpool::k8s
