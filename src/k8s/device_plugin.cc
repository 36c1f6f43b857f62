#include "k8s/device_plugin.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/grpc_status.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "k8s/annotations.h"
#include "k8s/http_server.h"
#include "k8s/internal/prometheus.h"
#include "vgpu/vgpu_env.h"

namespace xpool::k8s {
namespace {

namespace pb = ::v1beta1;

// Identity of a file: kubelet recreates kubelet.sock when it restarts (new inode and change time).
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};

FileId Identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

// "<uuid>::<k>" → "<uuid>".
std::string SlotDevice(const std::string& slot) {
  const size_t p = slot.rfind("::");
  return p == std::string::npos ? slot : slot.substr(0, p);
}

// The preferred slots for one container: `must` first, then one free slot of each device the extender chose
// (`uuids`, may be empty), then any free slot, until `size`.
std::vector<std::string> PreferSlots(const std::vector<std::string>& available, const std::vector<std::string>& must,
                                     const std::vector<std::string>& uuids, size_t size) {
  std::vector<std::string> out;
  std::set<std::string> used;
  auto take = [&](const std::string& slot) {
    if (out.size() < size && used.insert(slot).second) out.push_back(slot);
  };
  for (const std::string& slot : must) take(slot);
  for (const std::string& uuid : uuids) {
    for (const std::string& slot : available) {
      if (SlotDevice(slot) == uuid && used.count(slot) == 0) {
        take(slot);
        break;
      }
    }
  }
  for (const std::string& slot : available) take(slot);
  return out;
}

}  // namespace

class PluginService;

struct DevicePluginServer::Impl {
  DevicePluginConfig config;
  std::unique_ptr<KubeApi> api;

  mutable std::mutex mu;  // guards the fields below; never held during I/O
  std::condition_variable cv;
  std::vector<Device> devices;
  uint64_t version = 1;            // of `devices`
  uint64_t published_version = 0;  // of the last accepted node annotation
  std::set<std::string> allocated;
  bool stopping = false;
  int registrations = 0;
  int64_t removed_dirs = 0;  // shared-region directories removed by sweeps

  std::mutex server_mu;  // guards service/server (Start, the watch thread, Stop)
  std::unique_ptr<PluginService> service;
  std::unique_ptr<grpc::Server> server;
  std::thread watcher;
  bool registered = false;  // watch thread only (and Start before it runs)
  FileId registered_kubelet;
  std::string last_problem;   // watch thread only: repeated failures are logged once
  HttpServer metrics_server;  // with config.metrics_listen; started before the watch thread, stopped after it
  int metrics_port = 0;

  std::string SocketPath() const { return config.plugin_dir + "/" + config.endpoint; }
  std::string KubeletPath() const { return config.plugin_dir + "/" + config.kubelet_socket; }
  void Log(const std::string& line) const { config.log(line); }
  void Problem(const std::string& line) {
    if (line != last_problem) Log(line);
    last_problem = line;
  }

  Status StartServer();
  void StopServer();
  Status Register();
  void Publish();
  void Tick();
  void WatchLoop();
  void Refresh();
  Status StartMetrics();
  std::string Metrics() const;
  Result<int> Sweep();

  pb::DevicePluginOptions Options() const {
    pb::DevicePluginOptions o;
    o.set_pre_start_required(false);
    o.set_get_preferred_allocation_available(true);
    return o;
  }
  void FillList(pb::ListAndWatchResponse* out) const;  // mu held
  // Drops the allocated entries of pods no longer on this node (`pods`: all of them); mu held.
  void Forget(const std::vector<PodInfo>& pods);
  // Writes config.paths.preload_file (the /etc/ld.so.preload containers get) when it does not name the library.
  void WritePreloadFile();
  grpc::Status Allocate(const pb::AllocateRequest& request, pb::AllocateResponse* response);
  grpc::Status Preferred(const pb::PreferredAllocationRequest& request, pb::PreferredAllocationResponse* response);
};

// The DevicePlugin service of one gRPC server instance (a new one after kubelet removed our socket).
class PluginService final : public pb::DevicePlugin::Service {
 public:
  explicit PluginService(DevicePluginServer::Impl* impl) : impl_(impl) {}
  // Ends the ListAndWatch streams of this instance (mu held by the caller or not: it notifies after).
  void Close() {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      closing_ = true;
    }
    impl_->cv.notify_all();
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const pb::Empty*, pb::DevicePluginOptions* out) override {
    *out = impl_->Options();
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const pb::Empty*,
                            grpc::ServerWriter<pb::ListAndWatchResponse>* writer) override {
    uint64_t sent = 0;
    for (;;) {
      pb::ListAndWatchResponse response;
      {
        std::unique_lock<std::mutex> lock(impl_->mu);
        impl_->cv.wait_for(lock, std::chrono::milliseconds(200),
                           [&] { return closing_ || impl_->stopping || impl_->version != sent; });
        if (closing_ || impl_->stopping) return grpc::Status::OK;
        if (impl_->version == sent) {
          if (context->IsCancelled()) return grpc::Status::CANCELLED;
          continue;
        }
        sent = impl_->version;
        impl_->FillList(&response);
      }
      if (!writer->Write(response)) return grpc::Status::OK;  // kubelet went away
    }
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*, const pb::PreferredAllocationRequest* request,
                                      pb::PreferredAllocationResponse* response) override {
    return impl_->Preferred(*request, response);
  }

  grpc::Status Allocate(grpc::ServerContext*, const pb::AllocateRequest* request,
                        pb::AllocateResponse* response) override {
    return impl_->Allocate(*request, response);
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const pb::PreStartContainerRequest*,
                                 pb::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  DevicePluginServer::Impl* impl_;
  bool closing_ = false;  // guarded by impl_->mu
};

void DevicePluginServer::Impl::FillList(pb::ListAndWatchResponse* out) const {
  for (const Device& d : devices) {
    for (const std::string& id : SlotIds({d}, config.split)) {
      pb::Device* slot = out->add_devices();
      slot->set_id(id);
      slot->set_health(d.healthy ? "Healthy" : "Unhealthy");
      slot->mutable_topology()->add_nodes()->set_id(d.numa_node);
    }
  }
}

grpc::Status DevicePluginServer::Impl::Allocate(const pb::AllocateRequest& request, pb::AllocateResponse* response) {
  std::vector<std::string> taken;  // rolled back when a later container of this call fails
  auto fail = [&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& key : taken) allocated.erase(key);
    Log("Allocate failed: " + s.message());
    return ToGrpc(s);
  };
  for (const pb::ContainerAllocateRequest& container : request.container_requests()) {
    Result<std::vector<PodInfo>> pods = api->ListPodsOnNode(config.node_name);  // no lock held: I/O
    if (!pods.ok()) return fail(pods.status().WithContext("cannot list the pods of node " + config.node_name));
    Result<AllocateMatch> match = [&] {
      std::lock_guard<std::mutex> lock(mu);
      Forget(*pods);
      Result<AllocateMatch> m = MatchAllocate(*pods, config.node_name, container.devices_ids_size(), allocated);
      if (m.ok()) {
        allocated.insert(m->allocated_key);
        taken.push_back(m->allocated_key);
      }
      return m;
    }();
    if (!match.ok()) return fail(match.status());
    const ContainerResponse env = ContainerEnv(*match, config.paths);
    pb::ContainerAllocateResponse* out = response->add_container_responses();
    for (const auto& [name, value] : env.envs) (*out->mutable_envs())[name] = value;
    for (const Mount& m : env.mounts) {
      pb::Mount* mount = out->add_mounts();
      mount->set_host_path(m.host_path);
      mount->set_container_path(m.container_path);
      mount->set_read_only(m.read_only);
    }
    for (const DeviceNode& d : env.devices) {
      std::error_code ec;
      const std::string seen = config.paths.dev_root + d.host_path.substr(std::string_view("/dev").size());
      if (!std::filesystem::exists(seen, ec)) {  // e.g. no nvidia-uvm-tools on this host: skip, say so
        Log("Allocate: no device node " + seen + " on this host; not passed to the container");
        continue;
      }
      pb::DeviceSpec* spec = out->add_devices();
      spec->set_host_path(d.host_path);
      spec->set_container_path(d.container_path);
      spec->set_permissions(d.permissions);
    }
    for (const std::string& name : env.cdi_devices) out->add_cdi_devices()->set_name(name);
    // The shared region's host directory: the node reads usage there; a restarted container finds it again.
    const std::string region = SharedRegionHostDir(config.paths, match->pod_uid, match->container.name);
    std::error_code ec;
    std::filesystem::create_directories(region, ec);
    if (ec) Log("Allocate: cannot create the shared region directory " + region + ": " + ec.message());
    std::string uuids;
    for (const AssignedDevice& d : match->container.devices) uuids += (uuids.empty() ? "" : ",") + d.uuid;
    Log("Allocate: pod " + match->pod_key + " container " + match->container.name + " gets " + uuids);
    // Remembered on the pod too, for a restarted plugin; the in-memory set already covers this process.
    const size_t slash = match->pod_key.find('/');
    Status noted = api->PatchPodAnnotations(match->pod_key.substr(0, slash), match->pod_key.substr(slash + 1),
                                            {{std::string(kServedAnnotation), match->served}});
    if (!noted.ok()) Log("cannot note the served container on pod " + match->pod_key + ": " + noted.message());
  }
  return grpc::Status::OK;
}

void DevicePluginServer::Impl::WritePreloadFile() {
  const std::string& file = config.paths.preload_file;
  if (file.empty()) return;
  const std::string line = config.paths.container_library_dir + "/" + XPOOL_VGPU_LIBRARY_NAME + "\n";
  std::ifstream in(file);
  std::string current((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (current == line) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  std::ofstream out(file, std::ios::trunc);
  out << line;
  if (!out.good()) Log("cannot write " + file + " (the ld.so.preload containers get): " + std::strerror(errno));
}

void DevicePluginServer::Impl::Forget(const std::vector<PodInfo>& pods) {
  std::set<std::string> uids;
  for (const PodInfo& p : pods) uids.insert(p.uid);
  for (auto it = allocated.begin(); it != allocated.end();) {
    it = uids.count(it->substr(0, it->find('/'))) == 0 ? allocated.erase(it) : std::next(it);
  }
}

grpc::Status DevicePluginServer::Impl::Preferred(const pb::PreferredAllocationRequest& request,
                                                 pb::PreferredAllocationResponse* response) {
  // A hint only: when the API server cannot be asked, kubelet still gets a valid preference.
  Result<std::vector<PodInfo>> pods = api->ListPodsOnNode(config.node_name);
  std::set<std::string> skip;
  {
    std::lock_guard<std::mutex> lock(mu);
    skip = allocated;
  }
  for (const pb::ContainerPreferredAllocationRequest& c : request.container_requests()) {
    const std::vector<std::string> available(c.available_deviceids().begin(), c.available_deviceids().end());
    const std::vector<std::string> must(c.must_include_deviceids().begin(), c.must_include_deviceids().end());
    const size_t size = static_cast<size_t>(std::max(0, c.allocation_size()));
    std::vector<std::string> uuids;
    if (pods.ok()) {
      Result<AllocateMatch> m = MatchAllocate(*pods, config.node_name, static_cast<int>(size), skip);
      if (m.ok()) {
        skip.insert(m->allocated_key);
        for (const AssignedDevice& d : m->container.devices) uuids.push_back(d.uuid);
      }
    }
    pb::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    for (const std::string& slot : PreferSlots(available, must, uuids, size)) out->add_deviceids(slot);
  }
  return grpc::Status::OK;
}

Status DevicePluginServer::Impl::StartServer() {
  std::lock_guard<std::mutex> lock(server_mu);
  ::unlink(SocketPath().c_str());  // a stale socket from an earlier run would make the bind fail
  auto svc = std::make_unique<PluginService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + SocketPath(), grpc::InsecureServerCredentials());
  builder.RegisterService(svc.get());
  std::unique_ptr<grpc::Server> srv = builder.BuildAndStart();
  if (srv == nullptr) return UnavailableError("cannot serve the device plugin on unix socket " + SocketPath());
  service = std::move(svc);
  server = std::move(srv);
  return Status::Ok();
}

void DevicePluginServer::Impl::StopServer() {
  std::lock_guard<std::mutex> lock(server_mu);
  if (server == nullptr) return;
  service->Close();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  server.reset();
  service.reset();
}

Status DevicePluginServer::Impl::Register() {
  auto channel = grpc::CreateChannel("unix:" + KubeletPath(), grpc::InsecureChannelCredentials());
  std::unique_ptr<pb::Registration::Stub> stub = pb::Registration::NewStub(channel);
  pb::RegisterRequest request;
  request.set_version(std::string(kDevicePluginApiVersion));
  request.set_endpoint(config.endpoint);
  request.set_resource_name(config.resource_name);
  *request.mutable_options() = Options();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(config.register_timeout_ms));
  pb::Empty reply;
  grpc::Status s = stub->Register(&context, request, &reply);
  if (!s.ok()) {
    return UnavailableError("Register with kubelet at " + KubeletPath() + " failed: " + s.error_message());
  }
  return Status::Ok();
}

void DevicePluginServer::Impl::Publish() {
  if (config.node_name.empty()) return;
  std::string text;
  uint64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (published_version == version) return;
    text = EncodeNodeDevices(devices);
    v = version;
  }
  Status s = api->PatchNodeAnnotations(config.node_name, {{std::string(kNodeDevicesAnnotation), text}});
  if (!s.ok()) {
    Problem("cannot publish " + std::string(kNodeDevicesAnnotation) + " on node " + config.node_name + ": " +
            s.message());
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  published_version = std::max(published_version, v);
  Log("published " + std::string(kNodeDevicesAnnotation) + " on node " + config.node_name + " (" +
      std::to_string(devices.size()) + " device(s))");
}

Status DevicePluginServer::Impl::StartMetrics() {
  if (config.metrics_listen.empty()) return Status::Ok();
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(ParseListenAddress(config.metrics_listen, &host, &port));
  metrics_server.Get("/metrics", [this](std::string_view) {
    return HttpReply{200, Metrics(), "text/plain; version=0.0.4"};
  });
  metrics_server.Get("/healthz", [](std::string_view) { return HttpReply{200, "ok\n", "text/plain"}; });
  ASSIGN_OR_RETURN(metrics_port, metrics_server.Start(host, port));
  return Status::Ok();
}

std::string DevicePluginServer::Impl::Metrics() const {
  std::vector<Device> snapshot;
  int64_t removed = 0;
  int registered_count = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    snapshot = devices;
    removed = removed_dirs;
    registered_count = registrations;
  }
  Result<std::vector<PodInfo>> pods = api->ListPodsOnNode(config.node_name);  // no lock held: I/O
  const std::vector<RegionUsage> regions = config.read_regions ? config.read_regions() : std::vector<RegionUsage>{};
  std::string out = UsageMetrics(config.node_name, snapshot, pods.ok() ? *pods : std::vector<PodInfo>{}, regions);
  const std::string node = "{node=\"" + internal::PromLabel(config.node_name) + "\"} ";
  out += internal::PromHeader("xpool_device_plugin_api_up",
                              "1 when the pods of the node could be listed for this scrape (else no usage is "
                              "attributed to pods)") +
         "xpool_device_plugin_api_up" + node + (pods.ok() ? "1" : "0") + "\n";
  out += internal::PromHeader("xpool_device_plugin_registrations_total", "successful registrations with kubelet",
                              "counter") +
         "xpool_device_plugin_registrations_total" + node + std::to_string(registered_count) + "\n";
  out += internal::PromHeader("xpool_device_plugin_region_dirs_removed_total",
                              "shared-region directories of pods gone from the node, removed", "counter") +
         "xpool_device_plugin_region_dirs_removed_total" + node + std::to_string(removed) + "\n";
  return out;
}

Result<int> DevicePluginServer::Impl::Sweep() {
  const std::string& root = config.paths.shared_region_host_dir;
  // Pods first, then the directories, then the allocated set: a container allocated meanwhile is in the set.
  Result<std::vector<PodInfo>> pods = api->ListPodsOnNode(config.node_name);
  if (!pods.ok()) return pods.status().WithContext("cannot list the pods of node " + config.node_name);
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec) && !entry.is_symlink(type_ec)) names.push_back(entry.path().filename());
  }
  if (ec) return 0;  // no host directory yet: nothing to remove
  std::set<std::string> allocated_now;
  {
    std::lock_guard<std::mutex> lock(mu);
    allocated_now = allocated;
  }
  int removed = 0;
  for (const std::string& name : StaleRegionDirs(names, *pods, allocated_now)) {
    std::filesystem::remove_all(std::filesystem::path(root) / name, ec);
    if (ec) {
      Log("cannot remove the shared region directory " + root + "/" + name + ": " + ec.message());
      continue;
    }
    Log("removed the shared region directory " + root + "/" + name + " (its pod is gone from the node)");
    ++removed;
  }
  std::lock_guard<std::mutex> lock(mu);
  removed_dirs += removed;
  return removed;
}

void DevicePluginServer::Impl::Refresh() {
  Result<std::vector<Device>> fresh = config.refresh();
  if (!fresh.ok()) {
    Problem("device discovery failed: " + fresh.status().message());
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (EncodeNodeDevices(*fresh) == EncodeNodeDevices(devices)) return;
  devices = std::move(*fresh);
  ++version;
  cv.notify_all();
}

// One round of the watch thread: serve again if kubelet removed our socket, (re-)register when kubelet is new
// or registration failed, refresh the devices when due, publish the annotation when it is stale.
void DevicePluginServer::Impl::Tick() {
  if (!Identify(SocketPath()).exists) {
    Log("socket " + SocketPath() + " was removed (kubelet restarted?): serving it again");
    StopServer();
    if (Status s = StartServer(); !s.ok()) {
      Problem(s.message());
      return;
    }
    registered = false;
  }
  const FileId kubelet = Identify(KubeletPath());
  if (registered && kubelet.exists && !(kubelet == registered_kubelet)) {
    Log(KubeletPath() + " was recreated (kubelet restarted): registering again");
    registered = false;
  }
  if (!registered && kubelet.exists) {
    if (Status s = Register(); s.ok()) {
      registered = true;
      registered_kubelet = kubelet;
      last_problem.clear();
      std::lock_guard<std::mutex> lock(mu);
      ++registrations;
      Log("registered " + config.resource_name + " with kubelet (endpoint " + config.endpoint + ")");
    } else {
      Problem(s.message());
    }
  }
  Publish();
}

void DevicePluginServer::Impl::WatchLoop() {
  auto next_refresh = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.refresh_interval_ms);
  auto next_sweep = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.sweep_interval_ms);
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    cv.wait_for(lock, std::chrono::milliseconds(config.watch_interval_ms), [&] { return stopping; });
    if (stopping) break;
    lock.unlock();
    if (config.refresh && config.refresh_interval_ms > 0 && std::chrono::steady_clock::now() >= next_refresh) {
      Refresh();
      next_refresh = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.refresh_interval_ms);
    }
    Tick();
    if (config.sweep_interval_ms > 0 && std::chrono::steady_clock::now() >= next_sweep) {
      if (Result<int> swept = Sweep(); !swept.ok()) Problem("region sweep: " + swept.status().message());
      next_sweep = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.sweep_interval_ms);
    }
    lock.lock();
  }
}

DevicePluginServer::DevicePluginServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DevicePluginServer::~DevicePluginServer() { Stop(); }

Result<std::unique_ptr<DevicePluginServer>> DevicePluginServer::Start(DevicePluginConfig config,
                                                                      std::unique_ptr<KubeApi> api,
                                                                      std::vector<Device> devices) {
  if (api == nullptr) return InvalidArgumentError("device plugin: no API server client");
  if (config.split < 1) return InvalidArgumentError("device plugin: split count must be at least 1");
  if (config.resource_name.empty()) return InvalidArgumentError("device plugin: empty resource name");
  if (config.endpoint.empty() || config.endpoint.find('/') != std::string::npos) {
    return InvalidArgumentError("device plugin: endpoint must be a plain file name, got \"" + config.endpoint + "\"");
  }
  if (config.plugin_dir.size() + config.endpoint.size() + 1 > 107) {
    return InvalidArgumentError("device plugin: socket path " + config.plugin_dir + "/" + config.endpoint +
                                " is longer than a unix socket allows (107 bytes)");
  }
  if (config.watch_interval_ms < 1) config.watch_interval_ms = 1;
  if (!config.log) {
    config.log = [](const std::string& line) { std::fprintf(stderr, "xpool device-plugin: %s\n", line.c_str()); };
  }
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  impl->api = std::move(api);
  impl->devices = std::move(devices);
  struct stat st {};
  if (::stat(impl->config.plugin_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPreconditionError("device plugin directory " + impl->config.plugin_dir + " does not exist");
  }
  impl->WritePreloadFile();
  RETURN_IF_ERROR(impl->StartMetrics());
  RETURN_IF_ERROR(impl->StartServer());
  impl->Log("serving " + impl->config.resource_name + " on " + impl->SocketPath() + " (" +
            std::to_string(impl->devices.size()) + " device(s) x " + std::to_string(impl->config.split) + " slots)");
  impl->Tick();  // register and publish now; the thread retries what failed
  Impl* raw = impl.get();
  impl->watcher = std::thread([raw] { raw->WatchLoop(); });
  return std::unique_ptr<DevicePluginServer>(new DevicePluginServer(std::move(impl)));
}

void DevicePluginServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->watcher.joinable()) impl_->watcher.join();
  impl_->metrics_server.Stop();
  impl_->StopServer();
  ::unlink(impl_->SocketPath().c_str());
}

void DevicePluginServer::SetDevices(std::vector<Device> devices) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->devices = std::move(devices);
    ++impl_->version;
  }
  impl_->cv.notify_all();
}

int DevicePluginServer::registrations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->registrations;
}

bool DevicePluginServer::published() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->published_version == impl_->version;
}

std::string DevicePluginServer::socket_path() const { return impl_->SocketPath(); }

Result<int> DevicePluginServer::SweepRegionDirs() { return impl_->Sweep(); }

std::string DevicePluginServer::Metrics() const { return impl_->Metrics(); }

int DevicePluginServer::metrics_port() const { return impl_->metrics_port; }

}  // namespace xpool::k8s
