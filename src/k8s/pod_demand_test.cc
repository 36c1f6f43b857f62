#include "k8s/pod_demand.h"

#include <gtest/gtest.h>

#include "model/vendor.h"

namespace xpool::k8s {
namespace {

PodInfo PodWith(std::map<std::string, std::string> limits, std::map<std::string, std::string> annotations = {}) {
  PodInfo pod;
  pod.namespace_name = "ml";
  pod.name = "train";
  pod.uid = "uid-1";
  pod.annotations = std::move(annotations);
  ContainerResources c;
  c.name = "main";
  c.limits = std::move(limits);
  pod.containers.push_back(c);
  return pod;
}

TEST(PodDemandTest, HamiNvidiaNames) {
  PodInfo pod =
      PodWith({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "8000"}, {"nvidia.com/gpucores", "30"}, {"cpu", "4"}},
              {{"nvidia.com/use-gputype", "A100, H100"}, {"nvidia.com/nouse-gpuuuid", "GPU-bad"}});
  Result<PodDemand> d = PodToDemand(pod);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->containers.size(), 1u);
  const TaskRequest& r = d->containers[0].request;
  EXPECT_EQ(d->containers[0].container, "main");
  EXPECT_EQ(r.vendor, Vendor::kNvidia);
  EXPECT_EQ(r.device_count, 2);
  EXPECT_EQ(r.device_memory_mib, 8000);
  EXPECT_EQ(r.device_memory_percent, 0);
  EXPECT_EQ(r.device_compute_milli, 300);
  EXPECT_EQ(r.cpu_milli, 0);  // kube-scheduler's business
  EXPECT_EQ(r.type_include, (std::vector<std::string>{"A100", "H100"}));
  EXPECT_EQ(r.uuid_exclude, (std::vector<std::string>{"GPU-bad"}));
  EXPECT_TRUE(RequestsManagedResources(pod));
}

TEST(PodDemandTest, EveryVendorProfileMapsItsOwnNames) {
  for (const VendorProfile& p : AllVendorProfiles()) {
    SCOPED_TRACE(std::string(p.name));
    std::map<std::string, std::string> limits = {{std::string(p.count_resource), "1"},
                                                 {std::string(p.memory_resource), "16"}};
    if (!p.cores_resource.empty()) limits[std::string(p.cores_resource)] = "50";
    PodInfo pod =
        PodWith(limits, {{std::string(p.use_type_annotation), "X1"}, {std::string(p.nouse_uuid_annotation), "u1,u2"}});
    Result<PodDemand> d = PodToDemand(pod);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(d->containers.size(), 1u);
    const TaskRequest& r = d->containers[0].request;
    EXPECT_EQ(r.vendor, p.vendor);
    EXPECT_EQ(r.device_count, 1);
    EXPECT_EQ(r.device_memory_mib, 16 * p.memory_unit_mib);
    EXPECT_EQ(r.device_compute_milli, p.cores_resource.empty() ? 0 : 500);
    EXPECT_EQ(r.type_include, (std::vector<std::string>{"X1"}));
    EXPECT_EQ(r.uuid_exclude, (std::vector<std::string>{"u1", "u2"}));
  }
}

TEST(PodDemandTest, HamiDefaults) {
  // Memory without a count: one device. No memory: the whole device's memory.
  Result<PodDemand> d = PodToDemand(PodWith({{"nvidia.com/gpumem-percentage", "50"}}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->containers[0].request.device_count, 1);
  EXPECT_EQ(d->containers[0].request.device_memory_percent, 50);
  d = PodToDemand(PodWith({{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->containers[0].request.device_memory_percent, 100);
  EXPECT_EQ(d->containers[0].request.device_compute_milli, 0);
}

TEST(PodDemandTest, RequestsAreReadWhenLimitsAreAbsent) {
  PodInfo pod = PodWith({});
  pod.containers[0].requests = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1024"}};
  Result<PodDemand> d = PodToDemand(pod);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->containers[0].request.device_memory_mib, 1024);
}

TEST(PodDemandTest, UnmanagedPodsAndZeroCounts) {
  Result<PodDemand> d = PodToDemand(PodWith({{"cpu", "1"}, {"memory", "1Gi"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->managed());
  EXPECT_FALSE(RequestsManagedResources(PodWith({{"cpu", "1"}})));
  d = PodToDemand(PodWith({{"nvidia.com/gpu", "0"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->managed());
}

TEST(PodDemandTest, PolicyAnnotations) {
  Result<PodDemand> d = PodToDemand(PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/gpu-scheduler-policy", "spread"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->policy, "spread");
  d = PodToDemand(
      PodWith({{"nvidia.com/gpu", "1"}}, {{"xpool.io/policy", "fgd"}, {"hami.io/gpu-scheduler-policy", "spread"}}));
  EXPECT_EQ(d->policy, "fgd");
}

TEST(PodDemandTest, MalformedInputGivesClearMessages) {
  struct Case {
    std::map<std::string, std::string> limits;
    std::map<std::string, std::string> annotations;
    std::string expected;  // a substring of the message
  };
  const Case cases[] = {
      {{{"nvidia.com/gpumem", "8.5"}},
       {},
       "container \"main\": nvidia.com/gpumem \"8.5\" is not a whole number (it counts MiB)"},
      {{{"nvidia.com/gpumem", "8GB"}}, {}, "nvidia.com/gpumem \"8GB\" is not a quantity (unexpected \"B\")"},
      {{{"nvidia.com/gpumem", "8ki"}}, {}, "nvidia.com/gpumem \"8ki\" has an unknown suffix \"ki\""},
      {{{"nvidia.com/gpucores", "500m"}}, {}, "nvidia.com/gpucores \"500m\" is not a whole number"},
      {{{"nvidia.com/gpu", "-1"}}, {}, "nvidia.com/gpu \"-1\" is negative"},
      {{{"nvidia.com/gpu", "1.5"}}, {}, "nvidia.com/gpu \"1.5\" is not a whole number"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "150"}}, {}, "nvidia.com/gpucores \"150\" must be 0..100"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}, {}, "must be 1..100"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "0"}}, {}, "nvidia.com/gpumem \"0\" must be positive"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "10"}, {"nvidia.com/gpumem-percentage", "10"}}, {}, "not both"},
      {{{"nvidia.com/gpu", "1"}, {"hygon.com/dcunum", "1"}}, {}, "asks for both nvidia and hygon devices"},
      {{{"nvidia.com/gpu", "1"}}, {{"nvidia.com/use-gputype", "A100,,T4"}}, "has an empty item"},
      {{{"nvidia.com/gpu", "1"}}, {{"xpool.io/numa-bind", "yes"}}, "must be \"true\" or \"false\""},
      {{{"nvidia.com/gpu", "99999999999999999999"}}, {}, "is too large"},
      {{{"nvidia.com/gpu", "1e40"}}, {}, "nvidia.com/gpu \"1e40\" is too large"},
      {{{"iluvatar.ai/vcuda-memory", "99999999999999999"}}, {}, "is too large"},
      {{{"nvidia.com/gpu", "5000"}}, {}, "more devices than any node has"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    Result<PodDemand> d = PodToDemand(PodWith(c.limits, c.annotations));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.expected), std::string::npos) << d.status().message();
  }
}

TEST(PodDemandTest, ManagedResourceNamesCoverEveryVendor) {
  std::vector<std::string> names = ManagedResourceNames();
  for (const VendorProfile& p : AllVendorProfiles()) {
    EXPECT_NE(std::find(names.begin(), names.end(), std::string(p.count_resource)), names.end()) << p.name;
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "nvidia.com/gpumem-percentage"), names.end());
}

TEST(PodDemandTest, MigResourcesAskForOneInstanceOfTheirProfile) {
  PodInfo pod = PodWith({{"nvidia.com/mig-1g.10gb", "1"}, {"cpu", "2"}}, {{"nvidia.com/use-gputype", "A100"}});
  EXPECT_TRUE(RequestsManagedResources(pod));
  Result<PodDemand> d = PodToDemand(pod);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->containers.size(), 1u);
  const TaskRequest& r = d->containers[0].request;
  EXPECT_EQ(r.mig_profile, "1g.10gb");
  EXPECT_EQ(r.device_count, 1);
  EXPECT_TRUE(r.exclusive());
  EXPECT_EQ(r.vendor, Vendor::kNvidia);
  EXPECT_EQ(r.type_include, (std::vector<std::string>{"A100"}));
  // The plugin writes "+me" as ".me".
  d = PodToDemand(PodWith({{"nvidia.com/mig-1g.10gb.me", "1"}}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->containers[0].request.mig_profile, "1g.10gb+me");
  d = PodToDemand(PodWith({{"nvidia.com/mig-1g.10gb", "0"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->managed());
  const struct {
    std::map<std::string, std::string> limits;
    std::string says;
  } bad[] = {
      {{{"nvidia.com/mig-1g.10gb", "2"}}, "one MIG instance per container"},
      {{{"nvidia.com/mig-1g.10gb", "1"}, {"nvidia.com/gpu", "1"}}, "not both"},
      {{{"nvidia.com/mig-1g.11gb", "1"}}, "unknown MIG profile"},
      {{{"nvidia.com/mig-", "1"}}, "does not name a MIG profile"},
      {{{"nvidia.com/mig-1g.10gb", "500m"}}, "container \"main\""},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.says);
    Result<PodDemand> r = PodToDemand(PodWith(b.limits));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status().message();
  }
  std::vector<std::string> names = ManagedResourceNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "nvidia.com/mig-3g.40gb"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "nvidia.com/mig-1g.18gb.me"), names.end());
}

TEST(PodDemandTest, ParsesPodJsonWithoutCrashingOnBadShapes) {
  Result<PodInfo> pod = ParsePod(R"({"metadata":{"name":"p","namespace":"ns","uid":"u",
      "annotations":{"nvidia.com/use-gputype":"A100"}},
      "spec":{"schedulerName":"xpool","containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1,
      "nvidia.com/gpumem":"4000"}}}]},"status":{"phase":"Pending"}})");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->Key(), "ns/p");
  EXPECT_EQ(pod->containers[0].limits.at("nvidia.com/gpu"), "1");
  EXPECT_EQ(pod->scheduler_name, "xpool");
  for (const char* bad : {"", "[]", "{\"spec\":[]}", "{\"spec\":{\"containers\":{}}}", "{\"metadata\":{\"name\":5}}",
                          "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":[]}}]}}",
                          "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"a\":{}}}}]}}"}) {
    SCOPED_TRACE(bad);
    Result<PodInfo> p = ParsePod(bad);
    EXPECT_FALSE(p.ok());
  }
}

}  // namespace
}  // namespace xpool::k8s

namespace xpool::k8s {
namespace {

// The API server hands quantities back in canonical form: 8000 → "8k", 1000 → "1k"; "3Ki", "1e2" are valid too.
TEST(PodDemandTest, CanonicalQuantitiesAreWholeNumbers) {
  Result<PodDemand> d = PodToDemand(PodWith({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8k"}}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->containers[0].request.device_memory_mib, 8000);
  const struct {
    const char* memory;
    int64_t mib;
  } rows[] = {{"1k", 1000}, {"10k", 10000}, {"3Ki", 3072}, {"4000000m", 4000}, {"1e2", 100}, {"24576", 24576}};
  for (const auto& row : rows) {
    SCOPED_TRACE(row.memory);
    d = PodToDemand(PodWith({{"nvidia.com/gpu", "1e0"}, {"nvidia.com/gpumem", row.memory}}));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->containers[0].request.device_memory_mib, row.mib);
    EXPECT_EQ(d->containers[0].request.device_count, 1);
  }
}

TEST(PodDemandTest, InitContainersComeFirstWithTheirPhase) {
  PodInfo pod = PodWith({{"nvidia.com/gpu", "1"}});
  ContainerResources init;
  init.name = "fetch";
  init.limits = {{"nvidia.com/gpu", "2"}};
  ContainerResources sidecar;
  sidecar.name = "proxy";
  sidecar.sidecar = true;
  sidecar.limits = {{"nvidia.com/gpumem", "1k"}};
  ContainerResources plain;  // asks for nothing of ours
  plain.name = "wait";
  pod.init_containers = {init, plain, sidecar};
  EXPECT_TRUE(RequestsManagedResources(pod));
  Result<PodDemand> d = PodToDemand(pod);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->containers.size(), 3u);
  EXPECT_EQ(d->containers[0].container, "fetch");
  EXPECT_EQ(d->containers[0].phase, ContainerPhase::kInit);
  EXPECT_EQ(d->containers[0].request.device_count, 2);
  EXPECT_EQ(d->containers[1].container, "proxy");
  EXPECT_EQ(d->containers[1].phase, ContainerPhase::kSidecar);
  EXPECT_EQ(d->containers[2].container, "main");
  EXPECT_EQ(d->containers[2].phase, ContainerPhase::kApp);

  // Only an init container asks: the pod is managed, and a bad value there is named like any other.
  PodInfo only_init = PodWith({});
  only_init.containers[0].limits.clear();
  only_init.init_containers = {init};
  EXPECT_TRUE(RequestsManagedResources(only_init));
  only_init.init_containers[0].limits = {{"nvidia.com/gpu", "two"}};
  d = PodToDemand(only_init);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("container \"fetch\": nvidia.com/gpu \"two\""), std::string::npos)
      << d.status().message();
}

TEST(PodDemandTest, ParsesInitContainersAndSchedulingFieldsFromJson) {
  Result<PodInfo> pod = ParsePod(R"({"metadata":{"name":"p","ownerReferences":[{"kind":"Job","name":"j",
      "controller":true}]},"spec":{"priorityClassName":"high","priority":1000,"terminationGracePeriodSeconds":5,
      "initContainers":[{"name":"i","resources":{"limits":{"nvidia.com/gpu":"1"}}},
                        {"name":"s","restartPolicy":"Always"}],
      "containers":[{"name":"c","restartPolicy":"Always"}]}})");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_EQ(pod->init_containers.size(), 2u);
  EXPECT_FALSE(pod->init_containers[0].sidecar);
  EXPECT_TRUE(pod->init_containers[1].sidecar);
  EXPECT_FALSE(pod->containers[0].sidecar);
  EXPECT_EQ(pod->init_containers[0].limits.at("nvidia.com/gpu"), "1");
  EXPECT_EQ(pod->priority_class, "high");
  EXPECT_EQ(pod->priority, 1000);
  EXPECT_EQ(pod->grace_seconds, 5);
  ASSERT_EQ(pod->owners.size(), 1u);
  EXPECT_EQ(pod->owners[0].kind, "Job");
  EXPECT_TRUE(pod->owners[0].controller);
  for (const char* bad :
       {R"({"spec":{"initContainers":{}}})", R"({"spec":{"priority":"high"}})",
        R"({"spec":{"terminationGracePeriodSeconds":-1}})", R"({"metadata":{"ownerReferences":{}}})"}) {
    SCOPED_TRACE(bad);
    Result<PodInfo> p = ParsePod(bad);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("pod."), std::string::npos) << p.status().message();
  }
}

}  // namespace
}  // namespace xpool::k8s
