#include "k8s/time_share.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "k8s/canonical_objects.h"
#include "k8s/extender.h"
#include "k8s/extender_types.h"
#include "k8s/fake_kube_api.h"
#include "k8s/time_share_loop.h"
#include "model/node_builder.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;

constexpr TimeMicros kMinute = 60 * kMicrosPerSecond;

PodInfo Pod(const std::string& name, std::map<std::string, std::string> annotations = {},
            std::optional<int32_t> priority = std::nullopt) {
  PodInfo p;
  p.namespace_name = "ml";
  p.name = name;
  p.uid = "uid-" + name;
  p.annotations = std::move(annotations);
  p.priority = priority;
  return p;
}

TEST(PodTermsTest, PriorityPreemptibleTenantAndOwner) {
  struct Row {
    std::string name;
    std::map<std::string, std::string> annotations;
    std::optional<int32_t> priority;
    int want_priority;
    bool want_preemptible;
  };
  const Row rows[] = {
      {"no priority: normal", {}, std::nullopt, kPriorityNormal, false},
      {"spec.priority", {}, 90, 90, false},
      {"spec.priority above 100 clamps", {}, 2'000'000'000, 100, false},
      {"negative clamps to 0", {}, -5, 0, false},
      {"annotation overrides", {{"xpool.io/priority", "low"}}, 90, 10, false},
      {"annotation number", {{"xpool.io/priority", "75"}}, std::nullopt, 75, false},
      {"preemptible", {{"xpool.io/preemptible", "true"}}, std::nullopt, kPriorityNormal, true},
      {"not preemptible", {{"xpool.io/preemptible", "false"}}, std::nullopt, kPriorityNormal, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Result<PodTerms> t = PodTermsOf(Pod("p", row.annotations, row.priority));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->priority, row.want_priority);
    EXPECT_EQ(t->preemptible, row.want_preemptible);
    EXPECT_EQ(t->tenant, "ml");
  }
  PodInfo owned = Pod("train-0");
  owned.owners = {{"Job", "train", true}, {"Other", "x", false}};
  Result<PodTerms> t = PodTermsOf(owned);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->owner, "Job/ml/train");
  EXPECT_EQ(QueueKey(owned, *t), "Job/ml/train");
  EXPECT_EQ(QueueKey(Pod("bare"), PodTerms{}), "Pod/ml/bare");
}

TEST(PodTermsTest, MalformedAnnotationsNameTheField) {
  struct Row {
    std::string key, value, want;
  };
  const Row rows[] = {
      {"xpool.io/priority", "urgent", "annotation xpool.io/priority: \"urgent\" is not a priority"},
      {"xpool.io/priority", "101", "annotation xpool.io/priority: \"101\""},
      {"xpool.io/priority", "", "annotation xpool.io/priority: \"\""},
      {"xpool.io/preemptible", "yes", "annotation xpool.io/preemptible: \"yes\" must be \"true\" or \"false\""},
      {"xpool.io/preemptible", "True", "annotation xpool.io/preemptible: \"True\""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.key + "=" + row.value);
    Result<PodTerms> t = PodTermsOf(Pod("p", {{row.key, row.value}}));
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message().rfind(row.want, 0), 0u) << t.status().message();
  }
}

// Seeded: random annotation values never crash; each is read or refused naming the annotation.
TEST(PodTermsTest, RandomAnnotationValuesAreReadOrNamed) {
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789-+ .truefalsTRUElowhigmn\"\\\n\x01\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string value;
    const int length = static_cast<int>(rng() % 8);
    for (int c = 0; c < length; ++c) value += alphabet[rng() % alphabet.size()];
    const std::string key = i % 2 == 0 ? "xpool.io/priority" : "xpool.io/preemptible";
    SCOPED_TRACE(key + "=" + value);
    Result<PodTerms> t = PodTermsOf(Pod("p", {{key, value}}, static_cast<int32_t>(rng())));
    if (t.ok()) {
      EXPECT_GE(t->priority, kMinPriority);
      EXPECT_LE(t->priority, kMaxPriority);
      continue;
    }
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message().rfind("annotation " + key + ": ", 0), 0u) << t.status().message();
  }
}

TEST(TenantConfigTest, ReadsGuaranteesAndLimitsInTheServersUnits) {
  Result<TenantConfig> c = TenantConfig::Parse(R"({"tenants": [
      {"namespace": "a", "guaranteed": {"devices": 2}, "quota": {"devices": 8, "device_memory": "320Gi", "cpu": "64"},
       "priority_quotas": [{"min_priority": "high", "max_priority": 100, "quota": {"devices": 4}}]},
      {"namespace": "b", "quota": {"device_compute_milli": 1500, "device_memory": 4096}}]})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->tenants().size(), 2u);
  const Tenant* a = c->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->guaranteed.gpu_compute_milli, 2000);
  EXPECT_EQ(a->guaranteed.gpu_memory_mib, 320 * 1024);  // a guarantee naming devices only: bounded by the limit
  EXPECT_EQ(a->limit.gpu_compute_milli, 8000);
  EXPECT_EQ(a->limit.cpu_milli, 64000);
  ASSERT_EQ(a->priority_limits.size(), 1u);
  EXPECT_EQ(a->priority_limits[0].min_priority, 90);
  EXPECT_EQ(a->priority_limits[0].limit.gpu_compute_milli, 4000);
  const Tenant* b = c->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->guaranteed, ResourceAmounts{});  // no guarantee given: none
  EXPECT_EQ(b->limit.gpu_memory_mib, 4096);
  EXPECT_EQ(c->Find("c"), nullptr);
}

TEST(TenantConfigTest, BadInputNamesTheField) {
  struct Row {
    std::string text, want;
  };
  const Row rows[] = {
      {"[1]", "tenant configuration: must be an object"},
      {"{\"tenant\": []}", "tenant configuration: unknown field \"tenant\""},
      {"{\"tenants\": {}}", "tenants: must be a list"},
      {"{\"tenants\": [{}]}", "tenants[0].namespace: must be a non-empty string"},
      {R"({"tenants": [{"namespace": "a", "guaranteed": {"devices": -1}}]})",
       "tenants[0].guaranteed.devices: must be a non-negative integer"},
      {R"({"tenants": [{"namespace": "a", "quota": {"gpus": 1}}]})", "tenants[0].quota: unknown field \"gpus\""},
      {R"({"tenants": [{"namespace": "a", "quota": {"device_memory": "lots"}}]})",
       "tenants[0].quota.device_memory: \"lots\""},
      {R"({"tenants": [{"namespace": "a"}, {"namespace": "a"}]})", "tenants[1].namespace: \"a\" is listed twice"},
      {R"({"tenants": [{"namespace": "a", "priority_quotas": [{"min_priority": 101, "quota": {}}]}]})",
       "tenants[0].priority_quotas[0].min_priority: must be 0..100"},
      {R"({"tenants": [{"namespace": "a", "priority_quotas": [{"min_priority": 1}]}]})",
       "tenants[0].priority_quotas[0].quota: is missing"},
      {R"({"tenants": [{"namespace": "a", "guaranteed": {"devices": 4}, "quota": {"devices": 2}}]})", ""},
      {"{", "invalid JSON"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    Result<TenantConfig> c = TenantConfig::Parse(row.text);
    if (row.want.empty()) {  // a guarantee above the limit is cut to the limit, as on the server
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      EXPECT_EQ(c->tenants()[0].guaranteed.gpu_compute_milli, 2000);
      continue;
    }
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(row.want), std::string::npos) << c.status().message();
  }
}

TEST(TimeShareFormatTest, Rfc3339) {
  EXPECT_EQ(FormatRfc3339(1'700'000'000 * kMicrosPerSecond), "2023-11-14T22:13:20Z");
}

// ---- the victim search, the preempt verb and the loop, over a FakeKubeApi ----

KubeNode GpuNode(const std::string& name, int gpus) {
  KubeNode k;
  k.name = name;
  k.annotations[std::string(kNodeDevicesAnnotation)] =
      EncodeNodeDevices(MakeNode(name).WithGpus(gpus, "A100", 16384).Build().devices);
  return k;
}

json PodJson(const std::string& name, int gpus, json annotations, std::optional<int> priority,
             const std::string& job = "") {
  json pod = {
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
      {"spec",
       {{"schedulerName", "xpool-scheduler"},
        {"terminationGracePeriodSeconds", 30},
        {"containers", json::array({{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
  if (priority) pod["spec"]["priority"] = *priority;
  if (!job.empty()) {
    pod["metadata"]["ownerReferences"] = json::array({{{"kind", "Job"}, {"name", job}, {"controller", true}}});
  }
  (void)CanonicalizeQuantities(&pod);
  return pod;
}

PodInfo PodFrom(const json& pod) {
  Result<PodInfo> p = ParsePod(pod.dump());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : PodInfo{};
}

class TimeShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = KubeCluster::Create({}, clock_);
    ASSERT_TRUE(cluster.ok());
    cluster_ = std::move(cluster).value();
    cluster_->UpsertNode(GpuNode("n1", 4));
    sync_.SetSynced();
    TimeShareOptions options;
    options.rules.min_runtime = 5 * kMinute;
    options.rules.max_suspensions_per_hour = 1;
    loop_ = std::make_unique<TimeShareLoop>(api_, *cluster_, sync_, options, clock_);
    extender_ = std::make_unique<Extender>(*cluster_, api_, sync_, clock_);
    extender_->SetTimeShare(loop_.get());
  }

  // Filter → bind → the watch showing the pod back (bound, Running).
  std::string Schedule(const json& pod) {
    PodInfo p = PodFrom(pod);
    api_.PutPod(p);
    cluster_->ObservePod(p);
    HttpReply f = extender_->Filter(json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump());
    Result<ExtenderFilterResult> r = ParseFilterResult(f.body);
    if (!r.ok()) return "filter: " + r.status().message();
    if (r->node_names.empty()) return r->failed_nodes.empty() ? "no node" : r->failed_nodes.begin()->second;
    HttpReply b =
        extender_->Bind(json{{"PodName", p.name}, {"PodNamespace", "ml"}, {"PodUID", p.uid}, {"Node", "n1"}}.dump());
    Result<std::string> error = ParseBindingResult(b.body);
    if (!error.ok() || !error->empty()) return error.ok() ? *error : "bad bind reply";
    Watch(p.name, "Running");
    return "";
  }
  void Watch(const std::string& name, const std::string& phase) {
    std::optional<PodInfo> p = api_.Pod("ml/" + name);
    ASSERT_TRUE(p.has_value());
    p->phase = phase;
    api_.PutPod(*p);
    cluster_->ObservePod(*p);
  }
  void Delete(const std::string& name) { cluster_->ForgetPod("uid-" + name); }
  std::string SuspendBy(const std::string& name) {
    std::optional<PodInfo> p = api_.Pod("ml/" + name);
    if (!p) return "";
    auto it = p->annotations.find(std::string(kSuspendAnnotation));
    return it == p->annotations.end() ? "" : it->second;
  }
  // Four 1-GPU low pods fill n1: low-0 oldest ... low-3 youngest; low-2 is not preemptible.
  void FillWithLowPods() {
    for (int i = 0; i < 4; ++i) {
      SCOPED_TRACE(i);
      const json annotations = {{"xpool.io/preemptible", i == 2 ? "false" : "true"}};
      ASSERT_EQ(Schedule(PodJson("low-" + std::to_string(i), 1, annotations, 10, "job-" + std::to_string(i))), "");
      clock_.Advance(kMinute);
    }
  }

  FakeClock clock_{1'000 * kMicrosPerSecond};
  FakeKubeApi api_;
  SyncState sync_;
  std::unique_ptr<KubeCluster> cluster_;
  std::unique_ptr<TimeShareLoop> loop_;
  std::unique_ptr<Extender> extender_;
};

TEST_F(TimeShareTest, VictimsFollowTheServersRules) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);  // low-0 ran 9 min, low-3 6 min: all past min-runtime
  const json high = PodJson("high", 2, json::object(), 90);
  const PodInfo hp = PodFrom(high);
  Result<VictimPlan> plan = loop_->ChooseOnNode(hp, *PodTermsOf(hp), *PodToDemand(hp), "n1");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->found) << plan->reason;
  // Least work lost first (the youngest), never the non-preemptible low-2.
  std::vector<std::string> uids;
  for (const PodVictim& v : plan->victims) uids.push_back(v.uid);
  EXPECT_EQ(uids, (std::vector<std::string>{"uid-low-3", "uid-low-1"}));
  EXPECT_EQ(plan->victims[0].reason, "suspended for pod ml/high (priority 90): lower priority (10 < 90)");
  EXPECT_EQ(plan->victims[0].queue_key, "Job/ml/job-3");
  EXPECT_EQ(plan->node, "n1");

  // Equal priority: no victim (no guarantees configured).
  const json peer = PodJson("peer", 1, json::object(), 10);
  const PodInfo pp = PodFrom(peer);
  plan = loop_->ChooseOnNode(pp, *PodTermsOf(pp), *PodToDemand(pp), "n1");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
  EXPECT_EQ(plan->reason, "no running pod may be suspended for it");
  // Four GPUs would need the non-preemptible pod too: no way.
  const json all = PodJson("all", 4, json::object(), 90);
  const PodInfo ap = PodFrom(all);
  plan = loop_->ChooseOnNode(ap, *PodTermsOf(ap), *PodToDemand(ap), "n1");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
}

TEST_F(TimeShareTest, MinRuntimeKeepsYoungPodsRunning) {
  FillWithLowPods();  // low-3 started 1 min ago, low-0 4 min ago: all inside the 5 min min-runtime
  const PodInfo hp = PodFrom(PodJson("high", 1, json::object(), 90));
  Result<VictimPlan> plan = loop_->ChooseOnNode(hp, *PodTermsOf(hp), *PodToDemand(hp), "n1");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
  clock_.Advance(kMinute + kMinute / 2);  // low-0 now 5.5 min: the only one past it
  plan = loop_->ChooseOnNode(hp, *PodTermsOf(hp), *PodToDemand(hp), "n1");
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->found);
  ASSERT_EQ(plan->victims.size(), 1u);
  EXPECT_EQ(plan->victims[0].uid, "uid-low-0");
}

TEST_F(TimeShareTest, PreemptVerbAnswersWithTheRulesVictims) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);
  const json high = PodJson("high", 1, json::object(), 90);
  // kube-scheduler proposes the non-preemptible low-2 and a pod xpool does not know (its CPU, say).
  const json args = {
      {"Pod", high},
      {"NodeNameToMetaVictims", {{"n1", {{"Pods", json::array({{{"UID", "uid-low-2"}}, {{"UID", "uid-cpu"}}})}}}}}};
  HttpReply reply = extender_->Preempt(args.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  Result<std::map<std::string, MetaVictims>> out = ParsePreemptionResult(reply.body);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->count("n1"), 1u);
  EXPECT_EQ(out->at("n1").pod_uids, (std::vector<std::string>{"uid-cpu", "uid-low-3"}));
  // A malformed annotation: no node (the filter tells the user why).
  const json bad = PodJson("bad", 1, {{"xpool.io/priority", "urgent"}}, 90);
  reply = extender_->Preempt(json{{"Pod", bad}, {"NodeNameToMetaVictims", {{"n1", {{"Pods", json::array()}}}}}}.dump());
  out = ParsePreemptionResult(reply.body);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
  HttpReply f = extender_->Filter(json{{"Pod", bad}, {"NodeNames", {"n1"}}}.dump());
  Result<ExtenderFilterResult> fr = ParseFilterResult(f.body);
  ASSERT_TRUE(fr.ok());
  EXPECT_EQ(fr->failed_and_unresolvable_nodes.at("n1").rfind("annotation xpool.io/priority: \"urgent\"", 0), 0u);
}

TEST_F(TimeShareTest, LoopSignalsThenEvictsAfterTheGraceAndTheHighPodBinds) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);
  const json high = PodJson("high", 2, json::object(), 90);
  EXPECT_NE(Schedule(high), "");                               // does not fit: waits
  const json later = PodJson("later", 1, json::object(), 10);  // behind high in line; may suspend nobody
  api_.PutPod(PodFrom(later));
  cluster_->ObservePod(PodFrom(later));

  ASSERT_TRUE(loop_->RunOnce().ok());
  const std::string deadline = FormatRfc3339(clock_.NowMicros() + 30 * kMicrosPerSecond);
  EXPECT_EQ(SuspendBy("low-1"), deadline);
  EXPECT_EQ(SuspendBy("low-3"), deadline);
  EXPECT_EQ(SuspendBy("low-0"), "");
  EXPECT_TRUE(api_.evictions().empty());  // the grace first
  EXPECT_EQ(loop_->SuspensionsLastHour("Job/ml/job-1"), 1);

  // A second pass inside the grace chooses nothing more.
  clock_.Advance(10 * kMicrosPerSecond);
  ASSERT_TRUE(loop_->RunOnce().ok());
  EXPECT_EQ(SuspendBy("low-0"), "");
  EXPECT_TRUE(api_.evictions().empty());

  // low-1 checkpoints and exits in time; low-3 does not and is evicted with its grace at the deadline.
  Watch("low-1", "Failed");
  clock_.Advance(21 * kMicrosPerSecond);
  ASSERT_TRUE(loop_->RunOnce().ok());
  ASSERT_EQ(api_.evictions().size(), 1u);
  EXPECT_EQ(api_.evictions()[0].key, "ml/low-3");
  EXPECT_EQ(api_.evictions()[0].grace_seconds, 30);

  // While low-3 leaves, the freed GPU is held for high: `later` (behind it) may not take it.
  EXPECT_EQ(Schedule(later),
            "node n1: its devices are being freed for pod ml/high (priority 90), which is ahead in line");
  Delete("low-3");
  EXPECT_EQ(Schedule(high), "");
  EXPECT_TRUE(cluster_->CheckInvariants().ok());

  // high finishes; the Job recreates low-3's pod, which binds and keeps its owner's place in line.
  Watch("high", "Succeeded");
  ASSERT_TRUE(loop_->RunOnce().ok());  // high's claim ends: it bound
  EXPECT_EQ(loop_->Stats().claims, 0);
  ASSERT_EQ(Schedule(PodJson("low-3b", 1, {{"xpool.io/preemptible", "true"}}, 10, "job-3")), "");
  EXPECT_LT(loop_->QueuedSince("Job/ml/job-3"), loop_->QueuedSince("Pod/ml/later"));
  // The cap (1 an hour) protects the owner, whatever its pod: a new preemptor gets low-0 instead.
  clock_.Advance(6 * kMinute);
  const PodInfo next = PodFrom(PodJson("next", 2, json::object(), 90));
  Result<VictimPlan> plan = loop_->ChooseOnNode(next, *PodTermsOf(next), *PodToDemand(next), "n1");
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->found) << plan->reason;
  ASSERT_EQ(plan->victims.size(), 1u);
  EXPECT_EQ(plan->victims[0].uid, "uid-low-0");
  EXPECT_EQ(loop_->SuspensionsLastHour("Job/ml/job-3"), 1);
}

TEST_F(TimeShareTest, DisruptionBudgetRefusalIsRetriedWithoutStoppingThePass) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);
  EXPECT_NE(Schedule(PodJson("high", 1, json::object(), 90)), "");
  ASSERT_TRUE(loop_->RunOnce().ok());
  ASSERT_NE(SuspendBy("low-3"), "");
  clock_.Advance(31 * kMicrosPerSecond);
  api_.before_evict = [] {
    return ResourceExhaustedError("Cannot evict pod as it would violate the pod's disruption budget");
  };
  EXPECT_TRUE(loop_->RunOnce().ok());
  EXPECT_EQ(loop_->Stats().eviction_refused, 1);
  EXPECT_TRUE(api_.evictions().empty());
  api_.before_evict = nullptr;
  ASSERT_TRUE(loop_->RunOnce().ok());
  ASSERT_EQ(api_.evictions().size(), 1u);
  EXPECT_EQ(api_.evictions()[0].key, "ml/low-3");
}

TEST_F(TimeShareTest, ResumedWorkKeepsItsPlaceInLine) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);
  EXPECT_NE(Schedule(PodJson("high", 1, json::object(), 90)), "");
  ASSERT_TRUE(loop_->RunOnce().ok());
  ASSERT_NE(SuspendBy("low-3"), "");  // the youngest
  Watch("low-3", "Failed");
  Delete("low-3");
  ASSERT_EQ(Schedule(PodJson("high", 1, json::object(), 90)), "");
  // The Job's replacement and a newer pod of the same priority wait; the replacement's owner came first.
  for (const json& pod : {PodJson("low-3b", 1, {{"xpool.io/preemptible", "true"}}, 10, "job-3"),
                          PodJson("newcomer", 1, json::object(), 10)}) {
    api_.PutPod(PodFrom(pod));
    cluster_->ObservePod(PodFrom(pod));
  }
  ASSERT_TRUE(loop_->RunOnce().ok());
  Watch("high", "Succeeded");
  EXPECT_EQ(Schedule(PodJson("newcomer", 1, json::object(), 10)),
            "node n1: pod ml/low-3b (priority 10), resumed work ahead in line, fits here first");
  EXPECT_EQ(Schedule(PodJson("low-3b", 1, {{"xpool.io/preemptible", "true"}}, 10, "job-3")), "");
  const std::string full = Schedule(PodJson("newcomer", 1, json::object(), 10));
  EXPECT_EQ(full.find("resumed work"), std::string::npos) << full;
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
}

TEST_F(TimeShareTest, NamespaceLimitsMakePodsWaitAndSuspendNobody) {
  Result<TenantConfig> tenants =
      TenantConfig::Parse(R"({"tenants": [{"namespace": "ml", "quota": {"device_memory": "32Gi"}}]})");
  ASSERT_TRUE(tenants.ok()) << tenants.status().ToString();
  TimeShareOptions options;
  options.rules.min_runtime = 0;
  options.tenants = *tenants;
  loop_ = std::make_unique<TimeShareLoop>(api_, *cluster_, sync_, options, clock_);
  extender_->SetTimeShare(loop_.get());
  ASSERT_EQ(Schedule(PodJson("a", 1, {{"xpool.io/preemptible", "true"}}, 10)), "");
  ASSERT_EQ(Schedule(PodJson("b", 1, {{"xpool.io/preemptible", "true"}}, 10)), "");
  const std::string third = Schedule(PodJson("c", 1, json::object(), 10));
  EXPECT_EQ(third.rfind("tenant ml at its", 0), 0u) << third;
  // A high pod of the same namespace does not suspend work to get past its own limit.
  const PodInfo high = PodFrom(PodJson("high", 4, json::object(), 90));
  Result<VictimPlan> plan = loop_->ChooseOnNode(high, *PodTermsOf(high), *PodToDemand(high), "n1");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->found);
  EXPECT_EQ(plan->reason.rfind("tenant ml at its", 0), 0u) << plan->reason;
  // One ends: the third fits the limit again.
  Watch("a", "Succeeded");
  EXPECT_EQ(Schedule(PodJson("c", 1, json::object(), 10)), "");
}

// At scale: 200 nodes of 8 GPUs full of 1-GPU preemptible pods started at different times; a 2-GPU pod of higher
// priority gets the fewest victims (two, on one node), and the search leaves the booked state as it found it.
TEST(TimeShareScaleTest, OneSearchOverSixteenHundredPods) {
  FakeClock clock(1'000 * kMicrosPerSecond);
  auto made = KubeCluster::Create({}, clock);
  ASSERT_TRUE(made.ok());
  KubeCluster& cluster = **made;
  constexpr int kNodes = 200, kGpus = 8;
  std::vector<std::string> nodes;
  for (int n = 0; n < kNodes; ++n) {
    nodes.push_back("n" + std::to_string(n));
    cluster.UpsertNode(GpuNode(nodes.back(), kGpus));
  }
  std::mt19937 rng(11);
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) {
      PodInfo p = PodFrom(PodJson("p-" + std::to_string(n) + "-" + std::to_string(g), 1,
                                  {{"xpool.io/preemptible", "true"}}, 10, "job-" + std::to_string(n * kGpus + g)));
      Result<PodAssignment> a = cluster.Reserve(p.uid, *PodToDemand(p), nodes[n]);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      p.node_name = nodes[n];
      p.phase = "Running";
      p.annotations[std::string(kBindTimeAnnotation)] = std::to_string(rng() % (100 * kMicrosPerSecond));
      cluster.ObservePod(p);
    }
  }
  const int64_t free_before = cluster.FreeDeviceMemory("n7");
  const PodInfo high = PodFrom(PodJson("high", 2, json::object(), 90));
  VictimSearch search;
  search.preemptor = *PodTermsOf(high);
  search.preemptor_key = high.Key();
  search.nodes = nodes;
  search.rules.min_runtime = 0;
  search.now = clock.NowMicros();
  const auto started = std::chrono::steady_clock::now();
  Result<VictimPlan> plan = cluster.ChooseVictims(*PodToDemand(high), search);
  const auto took =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->found) << plan->reason;
  ASSERT_EQ(plan->victims.size(), 2u);
  EXPECT_EQ(plan->victims[0].node, plan->node);
  EXPECT_EQ(plan->victims[1].node, plan->node);
  EXPECT_EQ(cluster.FreeDeviceMemory("n7"), free_before);
  EXPECT_TRUE(cluster.CheckInvariants().ok());
  std::printf("victim search over %d pods on %d nodes: %lld us\n", kNodes * kGpus, kNodes,
              static_cast<long long>(took));
}

TEST_F(TimeShareTest, UnsyncedOrFailingApiDoesNothingUnsafe) {
  FillWithLowPods();
  clock_.Advance(5 * kMinute);
  const json high = PodJson("high", 1, json::object(), 90);
  api_.PutPod(PodFrom(high));
  cluster_->ObservePod(PodFrom(high));
  sync_.SetError("connection refused");
  EXPECT_EQ(loop_->RunOnce().code(), StatusCode::kUnavailable);
  EXPECT_EQ(SuspendBy("low-3"), "");
  EXPECT_EQ(loop_->Stats().skipped_unsynced, 1);
  sync_.SetSynced();
  api_.before_patch = [] { return UnavailableError("API server down"); };
  EXPECT_EQ(loop_->RunOnce().code(), StatusCode::kUnavailable);
  EXPECT_EQ(SuspendBy("low-3"), "");
  EXPECT_EQ(loop_->Stats().api_errors, 1);
  EXPECT_EQ(loop_->SuspensionsLastHour("Job/ml/job-3"), 0);  // nothing recorded for a signal not delivered
  api_.before_patch = nullptr;
  ASSERT_TRUE(loop_->RunOnce().ok());
  EXPECT_NE(SuspendBy("low-3"), "");
  EXPECT_TRUE(cluster_->CheckInvariants().ok());
}

}  // namespace
}  // namespace xpool::k8s
