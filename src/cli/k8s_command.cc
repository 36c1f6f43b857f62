// `xpool k8s scheduler` and `xpool k8s webhook`: run until SIGINT / SIGTERM.
#include "cli/k8s_command.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/flags.h"
#include "k8s/http_kube_api.h"
#include "k8s/http_server.h"
#include "k8s/scheduler_service.h"
#include "k8s/webhook.h"
#include "scheduler/policy.h"

namespace xpool::cli {
namespace {

// Blocks SIGINT/SIGTERM in every thread started afterwards; WaitForSignal then takes them synchronously.
void BlockStopSignals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, set, nullptr);
}

int WaitForSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "xpool k8s: %s\n", s.message().c_str());
  return 1;
}

std::string PolicyList() {
  std::string out;
  for (std::string_view n : PolicyNames()) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

int RunScheduler(const Args& args) {
  FlagSet flags("xpool k8s scheduler",
                "Runs the kube-scheduler extender (filter, prioritize, bind, preempt) for xpool-managed devices.");
  std::string listen = "0.0.0.0:8888", prefix = "/", api_server, token_file, ca_file, policy = "best-fit";
  std::string tls_cert, tls_key;
  int64_t seed = 1, timeout = 10;
  bool insecure = false;
  flags.String("listen", &listen, "address to serve the extender on (host:port)");
  flags.String("url-prefix", &prefix, "path the verbs are served under (the extender's urlPrefix path)");
  flags.String("api-server", &api_server, "API server URL (default: the in-cluster service account)");
  flags.String("token-file", &token_file, "file holding a bearer token for --api-server");
  flags.String("ca-file", &ca_file, "CA bundle that signs the API server's certificate");
  flags.Bool("insecure-skip-tls-verify", &insecure, "do not verify the API server's certificate (testing only)");
  flags.Int("api-timeout", &timeout, "seconds before an API call times out");
  flags.String("policy", &policy, "default placement policy (" + PolicyList() + "; pods may choose with "
                                  "the xpool.io/policy annotation)");
  flags.Int("seed", &seed, "seed of the policies' random source");
  flags.String("tls-cert", &tls_cert, "serve HTTPS with this certificate (PEM)");
  flags.String("tls-key", &tls_key, "the certificate's private key (PEM)");
  int exit_code = 0;
  if (!ParseFlagsOrExit(flags, args, &exit_code)) return exit_code;

  k8s::KubeApiConfig api;
  if (api_server.empty()) {
    Result<k8s::KubeApiConfig> in_cluster = k8s::InClusterConfig();
    if (!in_cluster.ok()) return Fail(in_cluster.status());
    api = *in_cluster;
  } else {
    api.server = api_server;
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      if (!in) return Fail(InvalidArgumentError("cannot read --token-file " + token_file));
      std::stringstream ss;
      ss << in.rdbuf();
      api.token = ss.str();
      while (!api.token.empty() && (api.token.back() == '\n' || api.token.back() == ' ')) api.token.pop_back();
    }
    api.ca_file = ca_file;
  }
  api.insecure_skip_verify = insecure;
  api.timeout_seconds = timeout;

  k8s::SchedulerServiceOptions options;
  options.listen = listen;
  options.url_prefix = prefix;
  options.tls_cert = tls_cert;
  options.tls_key = tls_key;
  options.cluster.default_policy = policy;
  options.cluster.seed = static_cast<uint64_t>(seed);
  sigset_t set;
  BlockStopSignals(&set);
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
  sigset_t set;
  BlockStopSignals(&set);
  Result<int> bound = server.Start(host, port, plain_http ? "" : tls_cert, plain_http ? "" : tls_key);
  if (!bound.ok()) return Fail(bound.status());
  std::fprintf(stderr, "xpool k8s webhook: serving /mutate on port %d\n", *bound);
  WaitForSignal(set);
  server.Stop();
  return 0;
}

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: xpool k8s <component> [flags]\n\n"
               "components:\n"
               "  scheduler   the kube-scheduler extender (filter, prioritize, bind, preempt)\n"
               "  webhook     the mutating admission webhook (sets schedulerName, validates requests)\n\n"
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
  if (args[0] == "device-plugin") {
    std::fprintf(stderr, "xpool k8s device-plugin: not built yet (see docs/kubernetes.md)\n");
    return 1;
  }
  std::fprintf(stderr, "xpool k8s: unknown component \"%s\"\n\n", args[0].c_str());
  Usage(stderr);
  return 2;
}

}  // namespace xpool::cli
