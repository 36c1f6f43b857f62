// End to end: the extender service (the code `xpool k8s scheduler` runs) against the fake API server over HTTP,
// driven with the JSON kube-scheduler sends.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_api_server.h"
#include "k8s/annotations.h"
#include "k8s/http_kube_api.h"
#include "k8s/scheduler_service.h"
#include "k8s/time_share.h"
#include "k8s/webhook.h"
#include "model/node_builder.h"
#include "promtool_check.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

json NodeObject(const std::string& name, int gpus, int64_t memory_mib) {
  return {{"metadata",
           {{"name", name},
            {"annotations",
             {{std::string(kNodeDevicesAnnotation),
               EncodeNodeDevices(MakeNode(name).WithGpus(gpus, "A100", memory_mib).Build().devices)}}}}},
          {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json PodObject(const std::string& name, json limits) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
          {"spec",
           {{"schedulerName", "xpool-scheduler"},
            {"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

bool WaitFor(const std::function<bool()>& condition, int timeout_ms = 20000) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

class ExtenderE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(api_.Start(), 0);
    api_.AddNode(NodeObject("gpu-1", 4, 16384));
    api_.AddNode(NodeObject("cpu-1", 0, 0));
  }

  std::unique_ptr<SchedulerService> StartService(std::optional<TimeShareOptions> time_share = TimeShareOptions{}) {
    KubeApiConfig config;
    config.server = api_.url();
    config.timeout_seconds = 2;
    config.watch_timeout_seconds = 2;
    SchedulerServiceOptions options;
    options.listen = "127.0.0.1:0";
    options.url_prefix = "/scheduler";
    options.watch.initial_backoff_ms = 50;
    options.watch.max_backoff_ms = 200;
    options.time_share = std::move(time_share);
    Result<std::unique_ptr<SchedulerService>> s = SchedulerService::Start(options, MakeHttpKubeApi(config));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // A kube-scheduler scheduling cycle for one pod over HTTP: filter → prioritize → bind to the best node.
  // Returns the bind error ("" = bound) or the filter's verdict when no node passed.
  std::string Cycle(SchedulerService& s, const json& pod, std::string* chosen = nullptr) {
    httplib::Client c("127.0.0.1", s.port());
    const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"gpu-1", "cpu-1"}}};
    auto f = c.Post("/scheduler/filter", args.dump(), "application/json");
    if (!f || f->status != 200) return "filter transport error";
    const json filtered = json::parse(f->body);
    if (!filtered["Error"].get<std::string>().empty()) return "filter error: " + filtered["Error"].get<std::string>();
    if (filtered["NodeNames"].empty()) return "no node: " + filtered["FailedNodes"].dump();
    auto p =
        c.Post("/scheduler/prioritize",
               json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", filtered["NodeNames"]}}.dump(), "application/json");
    if (!p || p->status != 200) return "prioritize failed";
    std::string best;
    int64_t best_score = -1;
    for (const json& h : json::parse(p->body)) {
      if (h["Score"].get<int64_t>() > best_score) {
        best_score = h["Score"];
        best = h["Host"];
      }
    }
    if (chosen != nullptr) *chosen = best;
    const json bind = {{"PodName", pod["metadata"]["name"]},
                       {"PodNamespace", "ml"},
                       {"PodUID", pod["metadata"]["uid"]},
                       {"Node", best}};
    auto b = c.Post("/scheduler/bind", bind.dump(), "application/json");
    if (!b || b->status != 200) return "bind transport error";
    return json::parse(b->body)["Error"];
  }

  static bool Ready(SchedulerService& s) {
    httplib::Client c("127.0.0.1", s.port());
    auto r = c.Get("/readyz");
    return r && r->status == 200;
  }

  FakeApiServer api_;
};

TEST_F(ExtenderE2eTest, EightHalfGpuPodsBindTheNinthWaitsThenBindsWhenOneEnds) {
  for (int i = 0; i < 9; ++i) {
    api_.AddPod(
        PodObject("half-" + std::to_string(i), {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}}));
  }
  api_.AddPod(PodObject("web", {{"cpu", "1"}}));
  auto service = StartService();
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); }));
  for (int i = 0; i < 8; ++i) {
    std::string node;
    EXPECT_EQ(Cycle(*service, api_.Pod("ml", "half-" + std::to_string(i)), &node), "") << i;
    EXPECT_EQ(node, "gpu-1");
  }
  EXPECT_EQ(api_.bindings(), 8);
  const std::string ninth = Cycle(*service, api_.Pod("ml", "half-8"));
  EXPECT_NE(ninth.find("no node:"), std::string::npos) << ninth;
  EXPECT_NE(ninth.find("gpu-1"), std::string::npos) << ninth;
  EXPECT_NE(ninth.find("not enough device memory"), std::string::npos) << ninth;
  // The pods carry their devices in the documented annotation.
  Result<PodAssignment> a = DecodeAssignment(
      api_.Pod("ml", "half-3")["metadata"]["annotations"][std::string(kAllocationAnnotation)].get<std::string>());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->node, "gpu-1");
  EXPECT_EQ(a->containers[0].devices[0].memory_mib, 8192);
  // An unmanaged pod passes every node and is bound as the default binder would.
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "web")), "");
  // One pod ends: the watch frees its half GPU and the ninth binds.
  api_.SetPodPhase("ml", "half-0", "Succeeded");
  ASSERT_TRUE(WaitFor([&] { return service->cluster().FreeDeviceMemory("gpu-1") == 8192; }));
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "half-8")), "");
  EXPECT_TRUE(service->cluster().CheckInvariants().ok());
}

TEST_F(ExtenderE2eTest, UnreachableApiServerGivesErrorsThenResyncs) {
  api_.AddPod(PodObject("a", {{"nvidia.com/gpu", "1"}}));
  api_.AddPod(PodObject("b", {{"nvidia.com/gpu", "1"}}));
  auto service = StartService();
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); }));
  ASSERT_EQ(Cycle(*service, api_.Pod("ml", "a")), "");
  api_.SetDown(true);
  ASSERT_TRUE(WaitFor([&] { return !Ready(*service); })) << "the outage is noticed";
  const std::string during = Cycle(*service, api_.Pod("ml", "b"));
  EXPECT_NE(during.find("filter error: xpool's view of the cluster is not synced"), std::string::npos) << during;
  // While down, pod a is deleted; the outage hides it. After the resync its device is free again.
  api_.DeletePod("ml", "a");
  api_.SetDown(false);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); })) << "resynced";
  ASSERT_TRUE(WaitFor([&] { return service->cluster().FreeDeviceMemory("gpu-1") == 4 * 16384; }));
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "b")), "");
  // The watcher whose failed list made the service unready listed again before it became ready (the other one
  // may have re-opened its watch from its version after the outage, which needs no list).
  EXPECT_GE(service->watcher().node_lists() + service->watcher().pod_lists(), 3);
}

TEST_F(ExtenderE2eTest, RestartedExtenderRecoversUsageFromAnnotations) {
  for (int i = 0; i < 3; ++i) api_.AddPod(PodObject("p" + std::to_string(i), {{"nvidia.com/gpu", "1"}}));
  {
    auto first = StartService();
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(WaitFor([&] { return Ready(*first); }));
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Cycle(*first, api_.Pod("ml", "p" + std::to_string(i))), "");
  }
  auto second = StartService();
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Ready(*second); }));
  EXPECT_EQ(second->cluster().FreeDeviceMemory("gpu-1"), 16384) << "three of four GPUs are still held";
  api_.AddPod(PodObject("p3", {{"nvidia.com/gpu", "2"}}));
  const std::string refused = Cycle(*second, api_.Pod("ml", "p3"));
  EXPECT_NE(refused.find("no node:"), std::string::npos) << refused;
}

// Creates a pod over HTTP, as kubectl or a Job controller does (the fake API server defaults it and resolves its
// priorityClassName). Returns the HTTP status.
int CreatePod(const FakeApiServer& api, const json& pod) {
  httplib::Client c(api.url());
  auto r = c.Post("/api/v1/namespaces/ml/pods", pod.dump(), "application/json");
  return r ? r->status : 0;
}

// A pod of the Job "train": preemptible, low priority, one GPU, a short grace.
json TrainPod(const std::string& name) {
  json pod = PodObject(name, {{"nvidia.com/gpu", "1"}});
  pod["metadata"].erase("uid");
  pod["metadata"]["uid"] = "uid-" + name;
  pod["metadata"]["annotations"] = {{"xpool.io/preemptible", "true"}};
  pod["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "train"}, {"uid", "job-uid"}, {"controller", true}}});
  pod["spec"]["priorityClassName"] = "xpool-low";
  pod["spec"]["terminationGracePeriodSeconds"] = 2;
  pod["spec"]["restartPolicy"] = "Never";
  pod.erase("status");
  return pod;
}

std::string SuspendBy(const FakeApiServer& api, const std::string& name) {
  const json pod = api.Pod("ml", name);
  if (!pod.is_object()) return "";
  const json& annotations = pod["metadata"].value("annotations", json::object());
  return annotations.value(std::string(kSuspendAnnotation), "");
}

// Time-sharing end to end: low-priority preemptible Job pods fill the node, a high-priority pod arrives; the
// victims get the suspend annotation, then (the one that did not leave) the eviction with its grace; the high pod
// binds; the Job's replacement pods wait behind it and bind once it has finished. While the API server is down
// the loop does nothing.
TEST_F(ExtenderE2eTest, TimeSharingSuspendsLowJobPodsForAHighPodAndTheyComeBack) {
  api_.AddPriorityClass("xpool-low", 10);
  api_.AddPriorityClass("xpool-high", 90);
  TimeShareOptions time_share;
  time_share.rules.min_runtime = 0;
  time_share.interval_ms = 50;
  auto service = StartService(time_share);
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); }));
  for (int i = 0; i < 4; ++i) {
    const std::string name = "train-" + std::to_string(i);
    ASSERT_EQ(CreatePod(api_, TrainPod(name)), 201);
    ASSERT_EQ(Cycle(*service, api_.Pod("ml", name)), "") << name;
    api_.SetPodPhase("ml", name, "Running");
  }
  // The high pod arrives while the API server is down: the loop does nothing until the view is synced again.
  api_.SetDown(true);
  ASSERT_TRUE(WaitFor([&] { return !Ready(*service); }));
  json high = PodObject("high", {{"nvidia.com/gpu", "2"}});
  high["spec"]["priorityClassName"] = "xpool-high";
  high["spec"]["priority"] = 90;  // as the API server resolves the class
  api_.AddPod(high);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GT(service->time_share()->Stats().skipped_unsynced, 0);
  EXPECT_EQ(service->time_share()->Stats().suspended, 0);
  api_.SetDown(false);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); }));
  const std::string waiting = Cycle(*service, api_.Pod("ml", "high"));
  EXPECT_NE(waiting.find("no node:"), std::string::npos) << waiting;
  // Two victims get the signal: the suspend annotation with a deadline; no eviction before it.
  std::vector<std::string> victims;
  ASSERT_TRUE(WaitFor([&] {
    victims.clear();
    for (int i = 0; i < 4; ++i) {
      if (!SuspendBy(api_, "train-" + std::to_string(i)).empty()) victims.push_back("train-" + std::to_string(i));
    }
    return victims.size() == 2;
  }));
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_TRUE(api_.evictions().empty());
  // The first checkpoints and exits at once (the helper's exit code makes the Job replace it); the second ignores
  // the signal and is evicted with its grace period at the deadline.
  api_.SetPodPhase("ml", victims[0], "Failed");
  ASSERT_TRUE(WaitFor([&] { return api_.evictions().size() == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - signalled, std::chrono::milliseconds(900)) << "the grace came first";
  EXPECT_EQ(api_.evictions()[0], (std::pair<std::string, int64_t>{"ml/" + victims[1], 2}));
  // kubelet stops it; the Job controller replaces both pods (new names, same owner, same template).
  api_.DeletePod("ml", victims[0]);
  api_.DeletePod("ml", victims[1]);
  ASSERT_TRUE(WaitFor([&] { return service->cluster().FreeDeviceMemory("gpu-1") == 2 * 16384; }));
  ASSERT_EQ(CreatePod(api_, TrainPod("train-4")), 201);
  ASSERT_EQ(CreatePod(api_, TrainPod("train-5")), 201);
  // A replacement asking before the high pod does is kept off the devices freed for it.
  const std::string held = Cycle(*service, api_.Pod("ml", "train-4"));
  EXPECT_NE(held.find("being freed for pod ml/high"), std::string::npos) << held;
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "high")), "");
  EXPECT_NE(Cycle(*service, api_.Pod("ml", "train-5")), "");
  // The high pod finishes: the replacements bind, in the Job's original place in line.
  api_.SetPodPhase("ml", "high", "Succeeded");
  ASSERT_TRUE(WaitFor([&] { return service->cluster().FreeDeviceMemory("gpu-1") == 2 * 16384; }));
  ASSERT_TRUE(WaitFor([&] { return service->time_share()->Stats().claims == 0; }));
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "train-4")), "");
  EXPECT_EQ(Cycle(*service, api_.Pod("ml", "train-5")), "");
  EXPECT_EQ(SuspendBy(api_, "train-4"), "");
  EXPECT_EQ(service->time_share()->SuspensionsLastHour("Job/ml/train"), 2);
  const TimeShareStats stats = service->time_share()->Stats();
  EXPECT_EQ(stats.suspended, 2);
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_TRUE(service->cluster().CheckInvariants().ok());
  httplib::Client c("127.0.0.1", service->port());
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("xpool_timeshare_suspended_total 2"), std::string::npos) << m->body;
  EXPECT_EQ(testing::PromtoolCheck(m->body).value_or(""), "") << m->body;  // "": accepted, or no promtool
}

TEST_F(ExtenderE2eTest, MetricsAndHealth) {
  auto service = StartService();
  ASSERT_NE(service, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Ready(*service); }));
  httplib::Client c("127.0.0.1", service->port());
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("xpool_extender_synced 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("xpool_extender_nodes 2"), std::string::npos) << m->body;
  EXPECT_EQ(testing::PromtoolCheck(m->body).value_or(""), "") << m->body;  // "": accepted, or no promtool
  auto bad = c.Post("/scheduler/filter", "{not json", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_NE(json::parse(bad->body)["Error"].get<std::string>().find("bad ExtenderArgs"), std::string::npos);
}

TEST(WebhookE2eTest, AdmissionReviewRoundTripOverHttp) {
  HttpServer server;
  WebhookOptions options;
  server.Post("/mutate", [options](std::string_view body) { return HandleAdmissionReview(body, options); });
  Result<int> port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  json pod = PodObject("w", {{"nvidia.com/gpu", "1"}});
  pod["spec"].erase("schedulerName");
  const json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request", {{"uid", "r1"}, {"kind", {{"kind", "Pod"}}}, {"operation", "CREATE"}, {"object", pod}}}};
  httplib::Client c("127.0.0.1", *port);
  auto r = c.Post("/mutate", review.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const json response = json::parse(r->body)["response"];
  EXPECT_EQ(response["allowed"], true);
  const json patched = pod.patch(json::parse(Base64Decode(response["patch"].get<std::string>())));
  EXPECT_EQ(patched["spec"]["schedulerName"], "xpool-scheduler");
  server.Stop();
}

}  // namespace
}  // namespace xpool::k8s

namespace xpool::k8s {
namespace {

// The webhook must be served over HTTPS (the API server calls webhooks only over TLS).
TEST(WebhookE2eTest, ServesHttpsWithTheGivenCertificate) {
  const std::string dir = ::testing::TempDir() + "xpool-k8s-tls-" + std::to_string(::getpid());
  const std::string cert = dir + "/tls.crt", key = dir + "/tls.key";
  const std::string cmd = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key +
                          " -out " + cert + " -days 1 -subj /CN=127.0.0.1 >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl is not available to make a test certificate";
  HttpServer server;
  server.Post("/mutate", [](std::string_view body) { return HandleAdmissionReview(body, WebhookOptions{}); });
  Result<int> port = server.Start("127.0.0.1", 0, cert, key);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  httplib::Client c("https://127.0.0.1:" + std::to_string(*port));
  c.enable_server_certificate_verification(false);  // self-signed; the point is that TLS is spoken
  const json review = {{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"request",
                        {{"uid", "r2"},
                         {"kind", {{"kind", "Pod"}}},
                         {"operation", "CREATE"},
                         {"object", PodObject("t", {{"nvidia.com/gpu", "1"}})}}}};
  auto r = c.Post("/mutate", review.dump(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(json::parse(r->body)["response"]["allowed"], true);
  // Plain HTTP to a TLS port gets nothing useful.
  httplib::Client plain("127.0.0.1", *port);
  plain.set_read_timeout(2, 0);
  auto p = plain.Post("/mutate", review.dump(), "application/json");
  EXPECT_TRUE(!p || p->status != 200);
  server.Stop();
  // A missing certificate is a clear startup error.
  HttpServer broken;
  Result<int> none = broken.Start("127.0.0.1", 0, dir + "/missing.crt", key);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("cannot load the TLS certificate"), std::string::npos);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace xpool::k8s

namespace xpool::k8s {
namespace {

// A rotated Secret: the mounted files change, the server reloads them, and new connections get the new
// certificate without a restart (so a webhook never serves a certificate the API server no longer trusts).
TEST(WebhookE2eTest, ReloadsAChangedCertificate) {
  const std::string dir = ::testing::TempDir() + "xpool-k8s-reload-" + std::to_string(::getpid());
  auto make = [&](const std::string& name) {
    const std::string cmd = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/" +
                            name + ".key -out " + dir + "/" + name + ".crt -days 1 -subj /CN=127.0.0.1 " +
                            "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  };
  if (!make("a") || !make("b")) GTEST_SKIP() << "openssl is not available to make test certificates";
  std::filesystem::copy_file(dir + "/a.crt", dir + "/tls.crt");
  std::filesystem::copy_file(dir + "/a.key", dir + "/tls.key");
  HttpServer server;
  server.Get("/healthz", [](std::string_view) { return HttpReply{200, "ok\n", "text/plain"}; });
  server.SetCertificateReload(20);
  Result<int> port = server.Start("127.0.0.1", 0, dir + "/tls.crt", dir + "/tls.key");
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto trusted_by = [&](const std::string& ca) {
    httplib::Client c("https://127.0.0.1:" + std::to_string(*port));
    c.set_ca_cert_path(ca.c_str());
    c.enable_server_certificate_verification(true);
    auto r = c.Get("/healthz");
    return r && r->status == 200;
  };
  EXPECT_TRUE(trusted_by(dir + "/a.crt"));
  EXPECT_FALSE(trusted_by(dir + "/b.crt"));
  // Rotate: the kubelet replaces the Secret's files.
  std::filesystem::copy_file(dir + "/b.crt", dir + "/tls.crt", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(dir + "/b.key", dir + "/tls.key", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::last_write_time(dir + "/tls.crt",
                                   std::filesystem::file_time_type::clock::now() + std::chrono::seconds(1));
  EXPECT_TRUE(WaitFor([&] { return trusted_by(dir + "/b.crt"); }, 5000)) << "served the new certificate";
  EXPECT_FALSE(trusted_by(dir + "/a.crt"));
  // A broken pair is refused and the current one kept.
  std::ofstream(dir + "/tls.key") << "not a key";
  EXPECT_FALSE(server.ReloadCertificate().ok());
  EXPECT_TRUE(trusted_by(dir + "/b.crt"));
  server.Stop();
  std::filesystem::remove_all(dir);
}

// With --metrics-listen the verbs stay on their (loopback) address and only health and metrics are served on the
// pod's address: nothing but the kube-scheduler beside the extender can call bind.
TEST(SchedulerServiceTest, MetricsListenerServesNoVerbs) {
  FakeApiServer api;
  ASSERT_GT(api.Start(), 0);
  KubeApiConfig config;
  config.server = api.url();
  config.timeout_seconds = 2;
  config.watch_timeout_seconds = 2;
  SchedulerServiceOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";
  options.url_prefix = "/scheduler";
  Result<std::unique_ptr<SchedulerService>> s = SchedulerService::Start(options, MakeHttpKubeApi(config));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_GT((*s)->metrics_port(), 0);
  httplib::Client verbs("127.0.0.1", (*s)->port());
  httplib::Client metrics("127.0.0.1", (*s)->metrics_port());
  auto m = metrics.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("xpool_extender_bind_total"), std::string::npos);
  EXPECT_EQ(metrics.Get("/healthz")->status, 200);
  auto bind = metrics.Post("/scheduler/bind", "{}", "application/json");
  ASSERT_TRUE(bind);
  EXPECT_EQ(bind->status, 404);
  EXPECT_EQ(verbs.Get("/metrics")->status, 404);
  auto filter = verbs.Post("/scheduler/filter", "{}", "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 200);
  (*s)->Stop();
}

}  // namespace
}  // namespace xpool::k8s
