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
      {{{"nvidia.com/gpumem", "8Gi"}},
       {},
       "container \"main\": nvidia.com/gpumem \"8Gi\" is not a whole number (it counts MiB)"},
      {{{"nvidia.com/gpu", "-1"}}, {}, "nvidia.com/gpu \"-1\" is not a whole number"},
      {{{"nvidia.com/gpu", "1.5"}}, {}, "nvidia.com/gpu \"1.5\" is not a whole number"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "150"}}, {}, "nvidia.com/gpucores \"150\" must be 0..100"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}, {}, "must be 1..100"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "0"}}, {}, "nvidia.com/gpumem \"0\" must be positive"},
      {{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "10"}, {"nvidia.com/gpumem-percentage", "10"}}, {}, "not both"},
      {{{"nvidia.com/gpu", "1"}, {"hygon.com/dcunum", "1"}}, {}, "asks for both nvidia and hygon devices"},
      {{{"nvidia.com/gpu", "1"}}, {{"nvidia.com/use-gputype", "A100,,T4"}}, "has an empty item"},
      {{{"nvidia.com/gpu", "1"}}, {{"xpool.io/numa-bind", "yes"}}, "must be \"true\" or \"false\""},
      {{{"nvidia.com/gpu", "99999999999999999999"}}, {}, "is not a whole number"},
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
