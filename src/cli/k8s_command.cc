// `xpool k8s scheduler`, `xpool k8s webhook` and `xpool k8s device-plugin`: run until SIGINT / SIGTERM.
#include "cli/k8s_command.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "agent/discovery.h"
#include "cli/stop_signals.h"
#include "common/flags.h"
#include "k8s/device_plugin.h"
#include "k8s/http_kube_api.h"
#include "k8s/http_server.h"
#include "k8s/scheduler_service.h"
#include "k8s/webhook.h"
#include "model/vendor.h"
#include "scheduler/policy.h"
#include "vgpu/region_reader.h"

namespace xpool::cli {
namespace {

int WaitForSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "xpool k8s: %s\n", s.message().c_str());
  return 1;
}

// The flags that say how to reach the API server (shared by the extender and the device plugin).
struct ApiFlags {
  std::string api_server, token_file, ca_file;
  bool insecure = false;
  int64_t timeout = 10;

  void Add(FlagSet* flags) {
    flags->String("api-server", &api_server, "API server URL (default: the in-cluster service account)");
    flags->String("token-file", &token_file, "file holding a bearer token for --api-server");
    flags->String("ca-file", &ca_file, "CA bundle that signs the API server's certificate");
    flags->Bool("insecure-skip-tls-verify", &insecure, "do not verify the API server's certificate (testing only)");
    flags->Int("api-timeout", &timeout, "seconds before an API call times out");
  }

  Result<k8s::KubeApiConfig> Config() const {
    k8s::KubeApiConfig api;
    if (api_server.empty()) {
      ASSIGN_OR_RETURN(api, k8s::InClusterConfig());
    } else {
      api.server = api_server;
      if (!token_file.empty()) {
        std::ifstream in(token_file);
        if (!in) return InvalidArgumentError("cannot read --token-file " + token_file);
        std::stringstream ss;
        ss << in.rdbuf();
        api.token = ss.str();
        while (!api.token.empty() && (api.token.back() == '\n' || api.token.back() == ' ')) api.token.pop_back();
      }
      api.ca_file = ca_file;
    }
    api.insecure_skip_verify = insecure;
    api.timeout_seconds = timeout;
    return api;
  }
};

std::string PolicyList() {
  std::string out;
  for (std::string_view n : PolicyNames()) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

int RunScheduler(const Args& args) {
  FlagSet flags("xpool k8s scheduler",
                "Runs the kube-scheduler extender (filter, prioritize, bind, preempt) for xpool-managed devices.");
  std::string listen = "127.0.0.1:8888", prefix = "/", policy = "default";
  std::string tls_cert, tls_key;
  int64_t seed = 1;
  ApiFlags api_flags;
  flags.String("listen", &listen,
               "address to serve the extender on (host:port; default 127.0.0.1:8888: only a kube-scheduler on this "
               "host, e.g. beside it in its pod, can call bind; :8888 serves every address, so restrict it)");
  flags.String("url-prefix", &prefix, "path the verbs are served under (the extender's urlPrefix path)");
  std::string metrics_listen;
  flags.String("metrics-listen", &metrics_listen,
               "serve /metrics, /healthz and /readyz on this address instead (then --listen can be loopback)");
  api_flags.Add(&flags);
  flags.String("policy", &policy,
               "default placement policy (" + PolicyList() +
                   "; pods may choose with "
                   "the xpool.io/policy annotation)");
  flags.Int("seed", &seed, "seed of the policies' random source");
  flags.String("tls-cert", &tls_cert, "serve HTTPS with this certificate (PEM)");
  flags.String("tls-key", &tls_key, "the certificate's private key (PEM)");
  bool no_time_sharing = false;
  std::string tenants_file, scheduler_name = "xpool-scheduler";
  int64_t min_runtime = 600, max_suspensions = 3, interval_ms = 2000;
  flags.Bool("no-time-sharing", &no_time_sharing,
             "never suspend pods (time-sharing: docs/kubernetes.md; only pods annotated "
             "xpool.io/preemptible: \"true\" are ever suspended)");
  flags.String("tenants", &tenants_file, "JSON file of per-namespace guarantees and limits (docs/kubernetes.md)");
  flags.Int("min-runtime", &min_runtime, "seconds a pod runs before it may be suspended");
  flags.Int("max-suspensions-per-hour", &max_suspensions, "suspensions of one owner (Job, ...) per hour, at most");
  flags.Int("time-share-interval-ms", &interval_ms, "milliseconds between passes of the time-sharing loop");
  flags.String("scheduler-name", &scheduler_name, "schedulerName of the pods the time-sharing loop serves");
  int exit_code = 0;
  if (!ParseFlagsOrExit(flags, args, &exit_code)) return exit_code;

  Result<k8s::KubeApiConfig> api_config = api_flags.Config();
  if (!api_config.ok()) return Fail(api_config.status());
  const k8s::KubeApiConfig& api = *api_config;
  if (min_runtime < 0 || max_suspensions < 0 || interval_ms < 10) {
    return Fail(InvalidArgumentError(
        "--min-runtime and --max-suspensions-per-hour must not be negative; --time-share-interval-ms is at least 10"));
  }
  k8s::TimeShareOptions time_share;
  time_share.rules.min_runtime = min_runtime * kMicrosPerSecond;
  time_share.rules.max_suspensions_per_hour = static_cast<int>(std::min<int64_t>(max_suspensions, 1'000'000));
  time_share.interval_ms = interval_ms;
  time_share.scheduler_name = scheduler_name;
  if (!tenants_file.empty()) {
    std::ifstream in(tenants_file);
    if (!in) return Fail(InvalidArgumentError("--tenants: cannot read " + tenants_file));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<k8s::TenantConfig> tenants = k8s::TenantConfig::Parse(text);
    if (!tenants.ok()) return Fail(tenants.status().WithContext("--tenants " + tenants_file));
    time_share.tenants = std::move(tenants).value();
  }

  k8s::SchedulerServiceOptions options;
  options.listen = listen;
  options.url_prefix = prefix;
  options.metrics_listen = metrics_listen;
  options.tls_cert = tls_cert;
  options.tls_key = tls_key;
  options.cluster.default_policy = policy;
  options.cluster.seed = static_cast<uint64_t>(seed);
  if (no_time_sharing) {
    options.time_share.reset();
  } else {
    options.time_share = std::move(time_share);
  }
  const sigset_t set = BlockStopSignals();
  Result<std::unique_ptr<k8s::SchedulerService>> service =
      k8s::SchedulerService::Start(options, k8s::MakeHttpKubeApi(api));
  if (!service.ok()) return Fail(service.status());
  std::fprintf(stderr, "xpool k8s scheduler: serving the extender on port %d (API server %s, policy %s)\n",
               (*service)->port(), api.server.c_str(), policy.c_str());
  const int sig = WaitForSignal(set);
  std::fprintf(stderr, "xpool k8s scheduler: signal %d, stopping\n", sig);
  (*service)->Stop();
  return 0;
}

int RunWebhook(const Args& args) {
  FlagSet flags("xpool k8s webhook",
                "Runs the mutating admission webhook: sends pods using xpool devices to xpool's scheduler.");
  std::string listen = "0.0.0.0:8443", tls_cert, tls_key, scheduler = "xpool-scheduler";
  bool plain_http = false;
  flags.String("listen", &listen, "address to serve on (host:port)");
  flags.String("tls-cert", &tls_cert, "certificate (PEM); the API server only calls webhooks over HTTPS");
  flags.String("tls-key", &tls_key, "the certificate's private key (PEM)");
  flags.String("scheduler-name", &scheduler, "schedulerName set on managed pods");
  flags.Bool("plain-http", &plain_http, "serve without TLS (tests only)");
  int64_t reload_seconds = 60;
  flags.Int("tls-reload-seconds", &reload_seconds,
            "check the certificate files this often and serve a changed pair (a rotated Secret); 0: never");
  int exit_code = 0;
  if (!ParseFlagsOrExit(flags, args, &exit_code)) return exit_code;
  if (!plain_http && (tls_cert.empty() || tls_key.empty())) {
    std::fprintf(stderr, "xpool k8s webhook: --tls-cert and --tls-key are required (or --plain-http)\n");
    return 2;
  }
  std::string host;
  int port = 0;
  if (Status s = k8s::ParseListenAddress(listen, &host, &port); !s.ok()) return Fail(s);
  k8s::WebhookOptions options;
  options.scheduler_name = scheduler;
  k8s::HttpServer server;
  server.Post("/mutate", [options](std::string_view body) { return k8s::HandleAdmissionReview(body, options); });
  server.Get("/healthz", [](std::string_view) { return k8s::HttpReply{200, "ok\n", "text/plain"}; });
  server.SetCertificateReload(reload_seconds * 1000);
  const sigset_t set = BlockStopSignals();
  Result<int> bound = server.Start(host, port, plain_http ? "" : tls_cert, plain_http ? "" : tls_key);
  if (!bound.ok()) return Fail(bound.status());
  std::fprintf(stderr, "xpool k8s webhook: serving /mutate on port %d\n", *bound);
  WaitForSignal(set);
  server.Stop();
  return 0;
}

// The devices discovery reports, each advertised with `split` sharers (what the extender and kubelet count).
Result<std::vector<Device>> DiscoverDevices(const agent::DiscoveryOptions& options, int split) {
  ASSIGN_OR_RETURN(agent::DiscoveryReport report, agent::DiscoverNode(options));
  std::vector<Device> devices = report.node.devices;
  for (Device& d : devices) d.max_sharers = split;
  return devices;
}

// The containers' shared regions under the plugin's host directory (<dir>/<pod uid>_<container>/region.cache),
// read with vgpu's reader: k8s cannot link vgpu, so the command hands them over as plain values.
std::vector<k8s::RegionUsage> ReadRegions(const std::string& dir) {
  std::vector<std::string> skipped;  // not regions of this version: left out of the usage
  std::vector<k8s::RegionUsage> out;
  for (const vgpu::RegionSnapshot& r : vgpu::ReadRegionsUnder(dir, 1, &skipped)) {
    k8s::RegionUsage u;
    u.directory = std::filesystem::path(r.path).parent_path().filename();
    for (uint64_t bytes : r.used) u.used_bytes.push_back(static_cast<int64_t>(bytes));
    for (const vgpu::RegionProcess& p : r.processes) u.live_processes += p.alive ? 1 : 0;
    out.push_back(std::move(u));
  }
  return out;
}

int RunDevicePlugin(const Args& args) {
  FlagSet flags("xpool k8s device-plugin",
                "Runs the kubelet device plugin (API v1beta1) for this node's accelerators: registers with kubelet, "
                "advertises each device as --split-count slots, publishes the node's devices for the extender and "
                "gives containers the limits the extender chose.");
  std::string plugin_dir(k8s::kDefaultDevicePluginDir), resource, node_name, library_dir = "/usr/local/xpool";
  std::string simulate, node_file, nvml_library = "libnvidia-ml.so.1", endpoint = "xpool.sock";
  std::string metrics_listen;
  int64_t split = 0, health_interval = 30, sweep_interval = 60;
  ApiFlags api_flags;
  flags.String("device-plugin-dir", &plugin_dir, "kubelet's device-plugins directory (kubelet.sock is there)");
  flags.String("endpoint", &endpoint, "file name of this plugin's socket in that directory");
  flags.String("resource-name", &resource,
               "extended resource to serve (default: the devices' vendor's, e.g. "
               "nvidia.com/gpu)");
  flags.String("node-name", &node_name, "this node's name (default: $NODE_NAME, else the host name)");
  flags.Int("split-count", &split, "schedulable slots per device (default: the vendor's split count, 10 for NVIDIA)");
  flags.String("library-dir", &library_dir, "host directory holding libxpool-vgpu.so (mounted read-only)");
  k8s::PluginPaths paths;
  flags.String("preload-file", &paths.preload_file,
               "host file mounted at the container's /etc/ld.so.preload, written by the plugin (\"\": LD_PRELOAD)");
  flags.String("shared-region-dir", &paths.shared_region_host_dir,
               "host directory of the containers' shared accounting regions (one directory per pod container)");
  flags.String("dev-root", &paths.dev_root, "where this host's /dev/nvidia* device nodes are seen by the plugin");
  flags.Bool("cdi", &paths.cdi, "also answer CDI device names (nvidia.com/gpu=<uuid>)");
  flags.String("simulate", &simulate, "simulated devices instead of NVML, e.g. 4xA100-80GB (testing)");
  flags.String("node-file", &node_file, "YAML file describing a simulated node (testing)");
  flags.String("nvml-library", &nvml_library, "NVML library to dlopen");
  flags.Int("health-interval", &health_interval, "seconds between device health checks (0: never)");
  flags.String("metrics-listen", &metrics_listen,
               "host:port for GET /metrics (device memory in use, from the shared regions) and /healthz (\"\": off)");
  flags.Int("region-sweep-interval", &sweep_interval,
            "seconds between removals of shared-region directories whose pod is gone (0: never)");
  api_flags.Add(&flags);
  int exit_code = 0;
  if (!ParseFlagsOrExit(flags, args, &exit_code)) return exit_code;
  if (split < 0 || health_interval < 0 || sweep_interval < 0) {
    std::fprintf(stderr,
                 "xpool k8s device-plugin: --split-count, --health-interval and --region-sweep-interval must not be "
                 "negative\n");
    return 2;
  }
  if (node_name.empty() && std::getenv("NODE_NAME") != nullptr) node_name = std::getenv("NODE_NAME");
  agent::DiscoveryOptions discovery;
  discovery.simulate = simulate;
  discovery.node_file = node_file;
  discovery.nvml_library = nvml_library;
  discovery.node_name = node_name;
  Result<agent::DiscoveryReport> report = agent::DiscoverNode(discovery);
  if (!report.ok()) return Fail(report.status());
  if (!report->note.empty()) std::fprintf(stderr, "xpool k8s device-plugin: %s\n", report->note.c_str());
  if (node_name.empty()) node_name = report->node.name;
  const Vendor vendor = report->node.devices.empty() ? Vendor::kNvidia : report->node.devices[0].vendor;
  if (resource.empty()) resource = std::string(ProfileFor(vendor).count_resource);
  if (split == 0) split = ProfileFor(vendor).default_max_sharers;
  Result<k8s::KubeApiConfig> api = api_flags.Config();
  if (!api.ok()) return Fail(api.status());

  k8s::DevicePluginConfig config;
  config.plugin_dir = plugin_dir;
  config.endpoint = endpoint;
  config.resource_name = resource;
  config.node_name = node_name;
  config.split = static_cast<int>(split);
  config.paths = paths;
  config.paths.library_dir = library_dir;
  config.refresh_interval_ms = health_interval * 1000;
  config.refresh = [discovery, split] { return DiscoverDevices(discovery, static_cast<int>(split)); };
  config.metrics_listen = metrics_listen;
  config.read_regions = [dir = paths.shared_region_host_dir] { return ReadRegions(dir); };
  config.sweep_interval_ms = sweep_interval * 1000;
  std::vector<Device> devices = report->node.devices;
  for (Device& d : devices) d.max_sharers = static_cast<int>(split);
  const sigset_t set = BlockStopSignals();
  Result<std::unique_ptr<k8s::DevicePluginServer>> plugin =
      k8s::DevicePluginServer::Start(config, k8s::MakeHttpKubeApi(*api), std::move(devices));
  if (!plugin.ok()) return Fail(plugin.status());
  const int sig = WaitForSignal(set);
  std::fprintf(stderr, "xpool k8s device-plugin: signal %d, stopping\n", sig);
  (*plugin)->Stop();
  return 0;
}

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: xpool k8s <component> [flags]\n\n"
               "components:\n"
               "  scheduler   the kube-scheduler extender (filter, prioritize, bind, preempt)\n"
               "  webhook     the mutating admission webhook (sets schedulerName, validates requests)\n"
               "  device-plugin  the kubelet device plugin, one per node (registers, advertises, allocates)\n\n"
               "`xpool k8s <component> --help` describes its flags. See docs/kubernetes.md.\n");
}

}  // namespace

int RunK8s(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    Usage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "scheduler") return RunScheduler(rest);
  if (args[0] == "webhook") return RunWebhook(rest);
  if (args[0] == "device-plugin") return RunDevicePlugin(rest);
  std::fprintf(stderr, "xpool k8s: unknown component \"%s\"\n\n", args[0].c_str());
  Usage(stderr);
  return 2;
}

}  // namespace xpool::cli
