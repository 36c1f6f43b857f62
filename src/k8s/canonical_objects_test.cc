#include "k8s/canonical_objects.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace xpool::k8s {
namespace {

using nlohmann::json;

json PodObject(json limits) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ml"}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}}};
}

// The test doubles store quantities as the real API server does, so the tests see what production sees.
TEST(CanonicalObjectsTest, PodAndNodeJsonQuantitiesBecomeCanonical) {
  json pod = PodObject({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", "8000"}, {"nvidia.com/gpucores", 30}});
  pod["spec"]["initContainers"] =
      json::array({{{"name", "i"}, {"resources", {{"requests", {{"memory", "1024Mi"}, {"cpu", "0.5"}}}}}}});
  pod["spec"]["overhead"] = {{"cpu", "1000m"}};
  ASSERT_TRUE(CanonicalizeQuantities(&pod).ok());
  const json& limits = pod["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"], "1");
  EXPECT_EQ(limits["nvidia.com/gpumem"], "8k");
  EXPECT_EQ(limits["nvidia.com/gpucores"], "30");
  EXPECT_EQ(pod["spec"]["initContainers"][0]["resources"]["requests"]["memory"], "1Gi");
  EXPECT_EQ(pod["spec"]["initContainers"][0]["resources"]["requests"]["cpu"], "500m");
  EXPECT_EQ(pod["spec"]["overhead"]["cpu"], "1");
  json node = {
      {"metadata", {{"name", "n"}}},
      {"status", {{"allocatable", {{"memory", "262144Mi"}, {"pods", 110}}}, {"capacity", {{"memory", 1073741824}}}}}};
  ASSERT_TRUE(CanonicalizeQuantities(&node).ok());
  EXPECT_EQ(node["status"]["allocatable"]["memory"], "256Gi");
  EXPECT_EQ(node["status"]["allocatable"]["pods"], "110");
  EXPECT_EQ(node["status"]["capacity"]["memory"], "1073741824");  // a decimal number stays decimal
}

TEST(CanonicalObjectsTest, MalformedJsonQuantityIsNamedAndKept) {
  json pod = PodObject({{"nvidia.com/gpumem", "lots"}, {"nvidia.com/gpu", "1000m"}});
  const Status s = CanonicalizeQuantities(&pod);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: \"lots\""),
            std::string::npos)
      << s.message();
  const json& limits = pod["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpumem"], "lots");
  EXPECT_EQ(limits["nvidia.com/gpu"], "1");  // the others are still rewritten
}

TEST(CanonicalObjectsTest, PodInfoQuantitiesBecomeCanonical) {
  PodInfo pod;
  pod.init_containers.push_back({"init", false, {{"nvidia.com/gpumem", "10000"}}, {{"cpu", "1000m"}}});
  pod.containers.push_back({"main", false, {{"nvidia.com/gpumem", "1e3"}, {"memory", "1073741824"}}, {}});
  pod.containers.push_back({"bad", false, {{"nvidia.com/gpu", "two"}}, {}});
  const Status s = CanonicalizeQuantities(&pod);
  EXPECT_NE(s.message().find("spec.containers[1].resources.limits[nvidia.com/gpu]: Invalid value: \"two\""),
            std::string::npos)
      << s.message();
  EXPECT_EQ(pod.init_containers[0].limits["nvidia.com/gpumem"], "10k");
  EXPECT_EQ(pod.init_containers[0].requests["cpu"], "1");
  EXPECT_EQ(pod.containers[0].limits["nvidia.com/gpumem"], "1e3");
  EXPECT_EQ(pod.containers[0].limits["memory"], "1073741824");
  EXPECT_EQ(pod.containers[1].limits["nvidia.com/gpu"], "two");
}

}  // namespace
}  // namespace xpool::k8s
