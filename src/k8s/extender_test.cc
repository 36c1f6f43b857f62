#include "k8s/extender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "k8s/canonical_objects.h"
#include "k8s/extender_types.h"
#include "k8s/fake_kube_api.h"
#include "k8s/internal/prometheus.h"
#include "model/node_builder.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;

KubeNode GpuNode(const std::string& name, int gpus, int64_t memory_mib, const std::string& model = "A100") {
  KubeNode k;
  k.name = name;
  k.annotations[std::string(kNodeDevicesAnnotation)] =
      EncodeNodeDevices(MakeNode(name).WithGpus(gpus, model, memory_mib).Build().devices);
  return k;
}

// A pod as kube-scheduler sends it: as the API server stored it, quantities in canonical form ("8000" → "8k").
json PodJson(const std::string& name, json limits, json annotations = json::object()) {
  json pod = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
              {"spec",
               {{"schedulerName", "xpool-scheduler"},
                {"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}}};
  (void)CanonicalizeQuantities(&pod);  // a malformed quantity stays, for the tests of bad input
  return pod;
}

PodInfo PodFrom(const json& pod) {
  Result<PodInfo> p = ParsePod(pod.dump());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : PodInfo{};
}

std::string Args(const json& pod, const std::vector<std::string>& nodes) {
  return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
}

std::string BindArgs(const std::string& name, const std::string& node) {
  return json{{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", node}}.dump();
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeCluster::Options options;
    auto cluster = KubeCluster::Create(options, clock_);
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = std::move(cluster).value();
    sync_.SetSynced();
    extender_ = std::make_unique<Extender>(*cluster_, api_, sync_, clock_);
  }

  // Filter → bind, as kube-scheduler does for one pod. Returns the bind error ("" = bound).
  std::string Schedule(const json& pod, const std::string& node) {
    api_.PutPod(PodFrom(pod));
    HttpReply f = extender_->Filter(Args(pod, {node}));
    EXPECT_EQ(f.status, 200);
    HttpReply b = extender_->Bind(BindArgs(pod["metadata"]["name"], node));
    EXPECT_EQ(b.status, 200);
    Result<std::string> error = ParseBindingResult(b.body);
    EXPECT_TRUE(error.ok());
    return error.ok() ? *error : "unparsable";
  }

  FakeClock clock_{1'000'000};
  FakeKubeApi api_;
  SyncState sync_;
  std::unique_ptr<KubeCluster> cluster_;
  std::unique_ptr<Extender> extender_;
};

TEST_F(ExtenderTest, EightHalfGpuPodsBindOnFourGpusAndTheNinthWaitsWithAReason) {
  cluster_->UpsertNode(GpuNode("n1", 4, 16384));
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    json pod = PodJson("half-" + std::to_string(i), {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}});
    EXPECT_EQ(Schedule(pod, "n1"), "");
  }
  EXPECT_EQ(api_.bindings().size(), 8u);
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
  // Every pod records its device; each device carries exactly two pods.
  std::map<std::string, int> per_device;
  for (int i = 0; i < 8; ++i) {
    auto pod = api_.Pod("ml/half-" + std::to_string(i));
    ASSERT_TRUE(pod.has_value());
    Result<PodAssignment> a = DecodeAssignment(pod->annotations.at(std::string(kAllocationAnnotation)));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->node, "n1");
    ASSERT_EQ(a->containers.size(), 1u);
    ASSERT_EQ(a->containers[0].devices.size(), 1u);
    EXPECT_EQ(a->containers[0].devices[0].memory_mib, 8192);
    EXPECT_EQ(pod->annotations.at(std::string(kBindTimeAnnotation)), "1000000");  // the injected clock
    ++per_device[a->containers[0].devices[0].uuid];
  }
  EXPECT_EQ(per_device.size(), 4u);
  for (const auto& [uuid, n] : per_device) EXPECT_EQ(n, 2) << uuid;

  json ninth = PodJson("half-8", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}});
  api_.PutPod(PodFrom(ninth));
  Result<ExtenderFilterResult> f = ParseFilterResult(extender_->Filter(Args(ninth, {"n1"})).body);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->node_names.empty());
  ASSERT_EQ(f->failed_nodes.count("n1"), 1u) << "a full node is resolvable (wait), not unresolvable";
  EXPECT_NE(f->failed_nodes["n1"].find("container \"main\": not enough device memory"), std::string::npos)
      << f->failed_nodes["n1"];
  const std::string bind_error = *ParseBindingResult(extender_->Bind(BindArgs("half-8", "n1")).body);
  EXPECT_NE(bind_error.find("cannot take the pod now"), std::string::npos) << bind_error;
  EXPECT_EQ(api_.bindings().size(), 8u);
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
}

TEST_F(ExtenderTest, TwoBindsRaceForTheLastSlotOneWinsOneIsRefused) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    const std::string a = "a" + std::to_string(round), b = "b" + std::to_string(round);
    json pa = PodJson(a, {{"nvidia.com/gpu", "1"}}), pb = PodJson(b, {{"nvidia.com/gpu", "1"}});
    api_.PutPod(PodFrom(pa));
    api_.PutPod(PodFrom(pb));
    // Both pass the filter (the device is free for each alone), then bind at the same moment.
    ASSERT_EQ(ParseFilterResult(extender_->Filter(Args(pa, {"n1"})).body)->node_names.size(), 1u);
    ASSERT_EQ(ParseFilterResult(extender_->Filter(Args(pb, {"n1"})).body)->node_names.size(), 1u);
    std::promise<void> go;
    std::shared_future<void> start = go.get_future().share();
    auto bind = [&](const std::string& name) {
      start.wait();
      return *ParseBindingResult(extender_->Bind(BindArgs(name, "n1")).body);
    };
    auto ra = std::async(std::launch::async, bind, a);
    auto rb = std::async(std::launch::async, bind, b);
    go.set_value();
    const std::string ea = ra.get(), eb = rb.get();
    EXPECT_NE(ea.empty(), eb.empty()) << "a: " << ea << " b: " << eb;
    const std::string& loser = ea.empty() ? eb : ea;
    EXPECT_NE(loser.find("cannot take the pod now"), std::string::npos) << loser;
    EXPECT_TRUE(cluster_->CheckInvariants().ok());
    EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
    // The winner's pod finishes: its device comes back for the next round.
    cluster_->ForgetPod(ea.empty() ? "uid-" + a : "uid-" + b);
    EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 16384);
  }
}

TEST_F(ExtenderTest, BindsToDifferentNodesDoNotWaitForEachOther) {
  cluster_->UpsertNode(GpuNode("slow", 1, 16384));
  cluster_->UpsertNode(GpuNode("fast", 1, 16384));
  std::mutex mu;
  std::condition_variable cv;
  bool fast_done = false;
  // The API server answers the bind to "slow" only after the bind to "fast" has finished: if binds were
  // serialised behind one lock held across API calls this would deadlock (and time out).
  api_.before_binding = [&](const std::string& node) {
    if (node != "slow") return Status::Ok();
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return fast_done; })) {
      return UnavailableError("timed out waiting for the other bind");
    }
    return Status::Ok();
  };
  json ps = PodJson("s", {{"nvidia.com/gpu", "1"}}), pf = PodJson("f", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(PodFrom(ps));
  api_.PutPod(PodFrom(pf));
  auto slow =
      std::async(std::launch::async, [&] { return *ParseBindingResult(extender_->Bind(BindArgs("s", "slow")).body); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string fast = *ParseBindingResult(extender_->Bind(BindArgs("f", "fast")).body);
  {
    std::lock_guard<std::mutex> lock(mu);
    fast_done = true;
  }
  cv.notify_all();
  EXPECT_EQ(fast, "");
  EXPECT_EQ(slow.get(), "");
}

TEST_F(ExtenderTest, FailedApiCallsFreeTheReservation) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  json pod = PodJson("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(PodFrom(pod));
  api_.before_binding = [](const std::string&) { return UnavailableError("apiserver down"); };
  std::string error = *ParseBindingResult(extender_->Bind(BindArgs("p", "n1")).body);
  EXPECT_NE(error.find("binding failed: apiserver down"), std::string::npos) << error;
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 16384);
  EXPECT_EQ(api_.Pod("ml/p")->annotations.count(std::string(kAllocationAnnotation)), 0u) << "annotation removed";
  api_.before_binding = nullptr;
  api_.before_patch = [] { return UnavailableError("patch refused"); };
  error = *ParseBindingResult(extender_->Bind(BindArgs("p", "n1")).body);
  EXPECT_NE(error.find("patch refused"), std::string::npos) << error;
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 16384);
  api_.before_patch = nullptr;
  EXPECT_EQ(*ParseBindingResult(extender_->Bind(BindArgs("p", "n1")).body), "");
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
}

TEST_F(ExtenderTest, UnmanagedPodsPassThrough) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  json pod = PodJson("web", {{"cpu", "1"}});
  Result<ExtenderFilterResult> f = ParseFilterResult(extender_->Filter(Args(pod, {"n1", "cpu-only"})).body);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->node_names, (std::vector<std::string>{"n1", "cpu-only"}));
  // Even while not synced: unmanaged pods never wait on xpool.
  sync_.SetError("connection refused");
  f = ParseFilterResult(extender_->Filter(Args(pod, {"n1"})).body);
  EXPECT_EQ(f->error, "");
  api_.PutPod(PodFrom(pod));
  EXPECT_EQ(*ParseBindingResult(extender_->Bind(BindArgs("web", "cpu-only")).body), "");
  EXPECT_EQ(api_.Pod("ml/web")->node_name, "cpu-only");
}

TEST_F(ExtenderTest, NotSyncedAnswersWithAnError) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  sync_.SetError("dial tcp 10.0.0.1:443: connection refused");
  json pod = PodJson("p", {{"nvidia.com/gpu", "1"}});
  Result<ExtenderFilterResult> f = ParseFilterResult(extender_->Filter(Args(pod, {"n1"})).body);
  ASSERT_TRUE(f.ok());
  EXPECT_NE(f->error.find("not synced with the API server (dial tcp"), std::string::npos) << f->error;
  EXPECT_TRUE(f->node_names.empty());
  EXPECT_EQ(extender_->Prioritize(Args(pod, {"n1"})).status, 503);
  api_.PutPod(PodFrom(pod));
  EXPECT_NE(ParseBindingResult(extender_->Bind(BindArgs("p", "n1")).body)->find("not synced"), std::string::npos);
  sync_.SetSynced();
  EXPECT_EQ(ParseFilterResult(extender_->Filter(Args(pod, {"n1"})).body)->node_names.size(), 1u);
}

// Kubernetes counts a pod as max(largest init container, sum of app containers): init containers run first, one
// at a time, and hand their devices on.
TEST_F(ExtenderTest, InitContainersCountAsKubernetesCountsThem) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  json pod = PodJson("init", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4k"}});
  pod["spec"]["initContainers"] =
      json::array({{{"name", "warmup"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}});
  // Summed, 2 whole devices + 4000 MiB would not fit two devices; as Kubernetes counts, it does.
  EXPECT_EQ(Schedule(pod, "n1"), "");
  Result<PodAssignment> a = DecodeAssignment(api_.Pod("ml/init")->annotations.at(std::string(kAllocationAnnotation)));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->containers.size(), 2u);
  EXPECT_EQ(a->containers[0].name, "warmup");
  EXPECT_TRUE(a->containers[0].init);
  EXPECT_EQ(a->containers[0].devices.size(), 2u);
  EXPECT_EQ(a->containers[1].name, "main");
  EXPECT_FALSE(a->containers[1].init);
  // The pod holds what its largest phase needs on each device: both devices, whole.
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
  json other = PodJson("other", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1k"}});
  EXPECT_NE(Schedule(other, "n1"), "");
  EXPECT_TRUE(cluster_->CheckInvariants().ok());

  // A restarted extender reads the same holding back from the annotation.
  auto restarted = KubeCluster::Create(KubeCluster::Options{}, clock_);
  ASSERT_TRUE(restarted.ok());
  (*restarted)->UpsertNode(GpuNode("n1", 2, 16384));
  (*restarted)->ObservePod(*api_.Pod("ml/init"));
  EXPECT_EQ((*restarted)->FreeDeviceMemory("n1"), 0);

  // An init container smaller than the app containers goes on their devices: nothing extra is held.
  (void)cluster_->Unreserve("uid-init");
  json small = PodJson("small", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8k"}});
  small["spec"]["initContainers"] = json::array(
      {{{"name", "check"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2k"}}}}}}});
  EXPECT_EQ(Schedule(small, "n1"), "");
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 2 * 16384 - 8000);
  a = DecodeAssignment(api_.Pod("ml/small")->annotations.at(std::string(kAllocationAnnotation)));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->containers[0].devices[0].uuid, a->containers[1].devices[0].uuid);
}

// Per-device and per-pod allocation in base units, with labels that join with HAMi's and DCGM's series; every
// device is present, at zero when nothing is booked on it.
TEST_F(ExtenderTest, MetricsExportPerDeviceAllocationInBaseUnits) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  json pod = PodJson("m", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4k"}, {"nvidia.com/gpucores", "25"}});
  ASSERT_EQ(Schedule(pod, "n1"), "");
  cluster_->ObservePod(*api_.Pod("ml/m"));
  Result<PodAssignment> a = DecodeAssignment(api_.Pod("ml/m")->annotations.at(std::string(kAllocationAnnotation)));
  ASSERT_TRUE(a.ok());
  const std::string used = a->containers[0].devices[0].uuid;
  const std::string idle = used == "n1-gpu0" ? "n1-gpu1" : "n1-gpu0";
  const std::string text = extender_->Metrics();
  const Status valid = internal::CheckExposition(text);
  EXPECT_TRUE(valid.ok()) << valid.message() << "\n" << text;
  auto labels = [](const std::string& uuid) {
    return "node=\"n1\",nodeid=\"n1\",Hostname=\"n1\",deviceuuid=\"" + uuid + "\",UUID=\"" + uuid + "\"";
  };
  auto has = [&](const std::string& needle) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  };
  has("xpool_device_memory_capacity_bytes{" + labels(used));
  has("xpool_device_memory_allocated_bytes{" + labels(used));
  has("} " + std::to_string(4000LL << 20) + "\n");
  has("xpool_device_core_allocated_ratio{" + labels(used));
  has("} 0.250\n");
  has("xpool_device_shared_num{" + labels(idle));
  has("xpool_device_memory_allocated_bytes{" + labels(idle));
  has("xpool_pod_device_memory_allocated_bytes{podnamespace=\"ml\",podname=\"m\",poduid=\"uid-m\",container=\"main\"," +
      labels(used));
}

TEST_F(ExtenderTest, BadInputGetsClearAnswers) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  KubeNode broken;
  broken.name = "broken";
  broken.annotations[std::string(kNodeDevicesAnnotation)] = "{not json";
  cluster_->UpsertNode(broken);
  KubeNode bare;
  bare.name = "bare";
  cluster_->UpsertNode(bare);
  json pod = PodJson("p", {{"nvidia.com/gpu", "1"}});
  Result<ExtenderFilterResult> f =
      ParseFilterResult(extender_->Filter(Args(pod, {"n1", "broken", "bare", "ghost"})).body);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->node_names, (std::vector<std::string>{"n1"}));
  EXPECT_NE(f->failed_and_unresolvable_nodes["broken"].find("annotation is invalid"), std::string::npos);
  EXPECT_NE(f->failed_and_unresolvable_nodes["bare"].find("no xpool devices"), std::string::npos);
  EXPECT_NE(f->failed_nodes["ghost"].find("not known to xpool"), std::string::npos);

  json malformed = PodJson("m", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "lots"}});
  f = ParseFilterResult(extender_->Filter(Args(malformed, {"n1"})).body);
  EXPECT_EQ(f->failed_and_unresolvable_nodes["n1"],
            "container \"main\": nvidia.com/gpumem \"lots\" is not a quantity (unexpected \"l\") (it counts MiB)");
  for (const char* body : {"", "{", "[]", "{\"Pod\":{}}"}) {
    EXPECT_NE(ParseFilterResult(extender_->Filter(body).body)->error, "") << body;
    EXPECT_EQ(extender_->Prioritize(body).status, 400) << body;
    EXPECT_NE(*ParseBindingResult(extender_->Bind(body).body), "") << body;
  }
  for (const char* body : {"", "{", "[]"}) EXPECT_EQ(extender_->Preempt(body).status, 400) << body;
  // Bind for a pod that does not exist, or was recreated with another uid.
  EXPECT_NE(ParseBindingResult(extender_->Bind(BindArgs("nobody", "n1")).body)->find("cannot read pod"),
            std::string::npos);
  PodInfo other = PodFrom(PodJson("re", {{"nvidia.com/gpu", "1"}}));
  other.uid = "uid-new";
  api_.PutPod(other);
  EXPECT_NE(ParseBindingResult(extender_->Bind(BindArgs("re", "n1")).body)->find("recreated"), std::string::npos);
  EXPECT_GT(extender_->counters().bad_requests.load(), 0);
}

TEST_F(ExtenderTest, PrioritizeScalesScoresAndFilterEchoesNodeObjects) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  cluster_->UpsertNode(GpuNode("n2", 2, 16384));
  // Half of n1 is used: a packing policy prefers it.
  json used = PodJson("used", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8192"}});
  ASSERT_EQ(Schedule(used, "n1"), "");
  json pod = PodJson("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}});
  Result<std::vector<HostPriority>> scores =
      ParseHostPriorityList(extender_->Prioritize(Args(pod, {"n1", "n2", "ghost"})).body);
  ASSERT_TRUE(scores.ok());
  ASSERT_EQ(scores->size(), 3u);
  for (const HostPriority& h : *scores) {
    EXPECT_GE(h.score, 0);
    EXPECT_LE(h.score, kMaxExtenderPriority);
  }
  EXPECT_EQ((*scores)[2].score, 0) << "unknown node";
  EXPECT_GE((*scores)[0].score, (*scores)[1].score) << "best-fit packs onto the used node";

  // nodeCacheCapable: false — full Node objects come in and the passing ones go back unchanged.
  json nodes = {{"items", json::array({{{"metadata", {{"name", "n1"}, {"labels", {{"zone", "a"}}}}}},
                                       {{"metadata", {{"name", "cpu"}}}}})}};
  json body = {{"Pod", pod}, {"Nodes", nodes}, {"NodeNames", nullptr}};
  json out = json::parse(extender_->Filter(body.dump()).body);
  ASSERT_TRUE(out["Nodes"].is_object()) << out.dump();
  ASSERT_EQ(out["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(out["Nodes"]["items"][0]["metadata"]["labels"]["zone"], "a");
  EXPECT_TRUE(out["NodeNames"].is_null());
  EXPECT_EQ(out["FailedAndUnresolvableNodes"].count("cpu"), 1u);
}

TEST_F(ExtenderTest, PreemptKeepsNodesWhereVictimsFreeEnough) {
  cluster_->UpsertNode(GpuNode("n1", 1, 16384));
  cluster_->UpsertNode(GpuNode("n2", 1, 16384));
  ASSERT_EQ(Schedule(PodJson("v1", {{"nvidia.com/gpu", "1"}}), "n1"), "");
  ASSERT_EQ(Schedule(PodJson("v2", {{"nvidia.com/gpu", "1"}}), "n2"), "");
  json pod = PodJson("hi", {{"nvidia.com/gpu", "1"}});
  json body = {{"Pod", pod},
               {"NodeNameToMetaVictims",
                {{"n1", {{"Pods", json::array({{{"UID", "uid-v1"}}})}, {"NumPDBViolations", 0}}},
                 {"n2", {{"Pods", json::array({{{"UID", "uid-unrelated"}}})}, {"NumPDBViolations", 0}}}}}};
  Result<std::map<std::string, MetaVictims>> r = ParsePreemptionResult(extender_->Preempt(body.dump()).body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(r->count("n1"), 1u);
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0) << "evaluation does not evict";
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
}

TEST_F(ExtenderTest, ResyncRebuildsFromAnnotationsAndReleasesVanishedPods) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  ASSERT_EQ(Schedule(PodJson("a", {{"nvidia.com/gpu", "1"}}), "n1"), "");
  ASSERT_EQ(Schedule(PodJson("b", {{"nvidia.com/gpu", "1"}}), "n1"), "");
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
  // A fresh extender (restart) learns the same usage from the pods' annotations.
  auto fresh = KubeCluster::Create({}, clock_);
  ASSERT_TRUE(fresh.ok());
  (*fresh)->ReplaceNodes({GpuNode("n1", 2, 16384)});
  (*fresh)->ReplacePods({*api_.Pod("ml/a"), *api_.Pod("ml/b")});
  EXPECT_EQ((*fresh)->FreeDeviceMemory("n1"), 0);
  // b is gone after a relist; a completes.
  (*fresh)->ReplacePods({*api_.Pod("ml/a")});
  EXPECT_EQ((*fresh)->FreeDeviceMemory("n1"), 16384);
  PodInfo done = *api_.Pod("ml/a");
  done.phase = "Succeeded";
  (*fresh)->ObservePod(done);
  EXPECT_EQ((*fresh)->FreeDeviceMemory("n1"), 32768);
  // An unconfirmed reservation (bind in flight) survives a relist that does not show it yet, until the grace.
  cluster_->ForgetPod("uid-a");
  cluster_->ForgetPod("uid-b");
  ASSERT_EQ(Schedule(PodJson("c", {{"nvidia.com/gpu", "1"}}), "n1"), "");
  cluster_->ReplacePods({});
  EXPECT_EQ(cluster_->Stats().bookings, 1);
  clock_.Advance(200 * kMicrosPerSecond);
  cluster_->ReplacePods({});
  EXPECT_EQ(cluster_->Stats().bookings, 0);
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 32768);
}

TEST_F(ExtenderTest, NodeRebootWithOtherDevicesKeepsBookingsByUuid) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  ASSERT_EQ(Schedule(PodJson("a", {{"nvidia.com/gpu", "1"}}), "n1"), "");
  const std::string uuid = DecodeAssignment(api_.Pod("ml/a")->annotations.at(std::string(kAllocationAnnotation)))
                               ->containers[0]
                               .devices[0]
                               .uuid;
  // The node comes back with a third device: the booking follows its uuid, the new device is free.
  cluster_->UpsertNode(GpuNode("n1", 3, 16384));
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 2 * 16384);
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
  EXPECT_EQ(Schedule(PodJson("b", {{"nvidia.com/gpu", "2"}}), "n1"), "");
  EXPECT_FALSE(uuid.empty());
  EXPECT_EQ(cluster_->FreeDeviceMemory("n1"), 0);
}

}  // namespace
}  // namespace xpool::k8s

namespace xpool::k8s {
namespace {

// Property: 8 threads bind random pods onto 16 nodes at once; no device is ever over-allocated and every bind
// that reported success holds exactly what it asked. Also prints the throughput (the number in the report).
TEST_F(ExtenderTest, ConcurrentBindsNeverOverAllocate) {
  for (int n = 0; n < 16; ++n) cluster_->UpsertNode(GpuNode("n" + std::to_string(n), 8, 81920));
  constexpr int kThreads = 8, kPerThread = 150;
  std::vector<std::vector<std::string>> names(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    Rng rng(1000 + t);
    for (int i = 0; i < kPerThread; ++i) {
      const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
      const int gpus = 1 + static_cast<int>(rng() % 2);
      const int percent = 10 * (1 + static_cast<int>(rng() % 10));
      json pod = PodJson(
          name, {{"nvidia.com/gpu", std::to_string(gpus)}, {"nvidia.com/gpumem-percentage", std::to_string(percent)}});
      api_.PutPod(PodFrom(pod));
      names[t].push_back(name);
    }
  }
  std::atomic<int> bound{0}, refused{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(t);
      for (const std::string& name : names[t]) {
        const std::string node = "n" + std::to_string(rng() % 16);
        const std::string error = *ParseBindingResult(extender_->Bind(BindArgs(name, node)).body);
        (error.empty() ? bound : refused)++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
  EXPECT_EQ(bound + refused, kThreads * kPerThread);
  EXPECT_EQ(static_cast<int>(api_.bindings().size()), bound.load());
  EXPECT_EQ(cluster_->Stats().bookings, bound.load());
  EXPECT_GT(bound.load(), 100);
  EXPECT_GT(refused.load(), 0) << "the cluster was meant to fill up";
  std::printf("[ measure  ] %d binds (%d bound, %d refused) from %d threads in %.3f s: %.0f binds/s\n",
              kThreads * kPerThread, bound.load(), refused.load(), kThreads, seconds, kThreads * kPerThread / seconds);
}

}  // namespace
}  // namespace xpool::k8s

namespace xpool::k8s {
namespace {

TEST_F(ExtenderTest, PodsChooseAPolicyAndAnUnknownOneIsRefusedClearly) {
  cluster_->UpsertNode(GpuNode("n1", 2, 16384));
  json unknown = PodJson("u", {{"nvidia.com/gpu", "1"}}, {{"xpool.io/policy", "nope"}});
  Result<ExtenderFilterResult> f = ParseFilterResult(extender_->Filter(Args(unknown, {"n1"})).body);
  ASSERT_TRUE(f.ok());
  EXPECT_NE(f->failed_and_unresolvable_nodes["n1"].find("unknown policy \"nope\""), std::string::npos)
      << f->failed_and_unresolvable_nodes["n1"];
  for (const char* policy : {"binpack", "random", "fgd"}) {
    SCOPED_TRACE(policy);
    json pod = PodJson(std::string("p-") + policy, {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1024"}},
                       {{"hami.io/gpu-scheduler-policy", policy}});
    EXPECT_EQ(Schedule(pod, "n1"), "");
  }
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
}

}  // namespace
}  // namespace xpool::k8s
