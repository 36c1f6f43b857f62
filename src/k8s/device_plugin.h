#pragma once
// DevicePluginServer: `xpool k8s device-plugin` — the kubelet device plugin API v1beta1 over gRPC
// (proto/deviceplugin/v1beta1/api.proto), around the decisions of device_plugin_core.h.
//
//   serve     DevicePlugin on the unix socket <plugin_dir>/<endpoint>: GetDevicePluginOptions, ListAndWatch (each
//             device as `split` slots "<uuid>::<k>", the whole list again whenever health changes),
//             GetPreferredAllocation (the slots of the devices the extender chose for the next pending pod),
//             Allocate (finds the pod through the API server — pods bound to this node with xpool.io/allocation,
//             earliest bind first — and returns its container's env and mounts), PreStartContainer (no-op).
//   register  Registration.Register on <plugin_dir>/kubelet.sock (version v1beta1, endpoint, resource name,
//             options). A watch thread re-registers when kubelet restarts (kubelet.sock is recreated, or kubelet
//             removed our socket: the server is then restarted first) and retries while kubelet is not there.
//   publish   the node's devices as the xpool.io/node-devices annotation (read by the extender), again after
//             every device change, retried until the API server accepts it.
//   observe   with `metrics_listen`, GET /metrics: the device memory really in use, read from the containers'
//             shared regions (node_monitor.h) through `read_regions`, and GET /healthz.
//   sweep     every `sweep_interval_ms`, the shared-region directories of pods gone from the node (or
//             terminated) are removed from the host directory (node_monitor.h, StaleRegionDirs).
//
// Pod matching needs no node-wide lock: one mutex guards the in-memory "containers already answered" set for
// microseconds, and no I/O happens under it. Owns its gRPC server, its thread and the KubeApi. Thread-safe.
// gRPC headers stay in device_plugin.cc.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/device_plugin_core.h"
#include "k8s/kube_api.h"
#include "k8s/node_monitor.h"
#include "model/device.h"

namespace xpool::k8s {

inline constexpr std::string_view kDevicePluginApiVersion = "v1beta1";
inline constexpr std::string_view kDefaultDevicePluginDir = "/var/lib/kubelet/device-plugins";

struct DevicePluginConfig {
  std::string plugin_dir = std::string(kDefaultDevicePluginDir);
  std::string kubelet_socket = "kubelet.sock";  // file name inside plugin_dir
  std::string endpoint = "xpool.sock";          // our socket's file name inside plugin_dir
  std::string resource_name = "nvidia.com/gpu";
  std::string node_name;  // the Node this plugin runs on (pods are matched and the annotation written for it)
  int split = 10;         // schedulable slots per device
  PluginPaths paths;
  int64_t watch_interval_ms = 1000;    // how often the sockets are checked (and refresh is considered)
  int64_t register_timeout_ms = 5000;  // deadline of one Register call
  int64_t refresh_interval_ms = 0;     // 0: never call refresh
  // Re-discovers the devices (health); a changed list is streamed and published. May be empty.
  std::function<Result<std::vector<Device>>()> refresh;
  // Where progress and problems are reported (default: stderr, one line each).
  std::function<void(const std::string&)> log;
  // "host:port" of the HTTP server for GET /metrics and /healthz ("" = none; port 0 = any free port).
  std::string metrics_listen;
  // Reads the shared regions under paths.shared_region_host_dir (the caller links vgpu's region reader, which
  // k8s does not). Empty: /metrics reports no usage (every device at zero).
  std::function<std::vector<RegionUsage>()> read_regions;
  int64_t sweep_interval_ms = 60'000;  // 0: never remove region directories
};

class DevicePluginServer {
 public:
  // Serves on the socket (a stale file there is replaced) and starts the watch thread. Registration and the
  // annotation are tried at once and retried by the thread; they do not fail Start. Fails on a bad config or a
  // socket that cannot be served.
  static Result<std::unique_ptr<DevicePluginServer>> Start(DevicePluginConfig config, std::unique_ptr<KubeApi> api,
                                                           std::vector<Device> devices);
  ~DevicePluginServer();
  void Stop();

  // Replaces the device list (e.g. a device became unhealthy): ListAndWatch streams send the new list and the
  // node annotation is republished.
  void SetDevices(std::vector<Device> devices);

  // Removes the shared-region directories of pods no longer on the node (what the watch thread does every
  // sweep_interval_ms). Returns how many were removed; Unavailable when the pods cannot be listed (then nothing
  // is removed).
  Result<int> SweepRegionDirs();
  // The /metrics text (also served on metrics_listen); it lists the node's pods through the API server.
  std::string Metrics() const;
  int metrics_port() const;  // 0 without metrics_listen

  // Successful Register calls so far (1 after start, +1 per kubelet restart).
  int registrations() const;
  // Whether the node annotation matches the current device list.
  bool published() const;
  std::string socket_path() const;

  struct Impl;

 private:
  explicit DevicePluginServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::k8s
