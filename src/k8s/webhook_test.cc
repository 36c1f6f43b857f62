#include "k8s/webhook.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s/canonical_objects.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;

// A pod as the API server hands it to admission: decoded, so its quantities are in canonical form ("8.5" is
// "8500m"); a malformed one stays, for the tests of bad input.
json PodObject(json limits, std::string scheduler = "", std::string node = "") {
  json spec = {{"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}};
  if (!scheduler.empty()) spec["schedulerName"] = scheduler;
  if (!node.empty()) spec["nodeName"] = node;
  json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ml"}}}, {"spec", spec}};
  (void)CanonicalizeQuantities(&pod);
  return pod;
}

std::string Review(const json& object, std::string kind = "Pod", std::string operation = "CREATE") {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "req-1"},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", kind}}},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"namespace", "ml"},
                {"operation", operation},
                {"object", object}}}}
      .dump();
}

json Respond(const std::string& body) {
  HttpReply r = HandleAdmissionReview(body, WebhookOptions{});
  EXPECT_EQ(r.status, 200) << r.body;
  json out = json::parse(r.body);
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "req-1");
  return out["response"];
}

TEST(WebhookTest, ManagedPodGetsXpoolSchedulerByJsonPatch) {
  for (const char* scheduler : {"", "default-scheduler"}) {
    SCOPED_TRACE(scheduler);
    json pod = PodObject({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}}, scheduler);
    json response = Respond(Review(pod));
    EXPECT_EQ(response["allowed"], true);
    ASSERT_EQ(response["patchType"], "JSONPatch");
    json patch = json::parse(Base64Decode(response["patch"].get<std::string>()));
    json patched = pod.patch(patch);  // the round trip: the API server applies exactly this
    EXPECT_EQ(patched["spec"]["schedulerName"], "xpool-scheduler");
    EXPECT_EQ(patched["spec"]["containers"], pod["spec"]["containers"]);
  }
}

TEST(WebhookTest, EveryVendorIsManaged) {
  for (const char* resource :
       {"huawei.com/Ascend910B", "cambricon.com/vmlu", "hygon.com/dcunum", "iluvatar.ai/vgpu", "metax-tech.com/sgpu"}) {
    SCOPED_TRACE(resource);
    json response = Respond(Review(PodObject({{resource, "1"}})));
    EXPECT_EQ(response["allowed"], true);
    EXPECT_TRUE(response.contains("patch"));
  }
}

TEST(WebhookTest, PassesThroughWhatItDoesNotManage) {
  json response = Respond(Review(PodObject({{"cpu", "2"}})));
  EXPECT_EQ(response["allowed"], true);
  EXPECT_FALSE(response.contains("patch"));
  response = Respond(Review(json{{"metadata", {{"name", "cm"}}}}, "ConfigMap"));
  EXPECT_EQ(response["allowed"], true);
  // Already ours: nothing to patch.
  response = Respond(Review(PodObject({{"nvidia.com/gpu", "1"}}, "xpool-scheduler")));
  EXPECT_EQ(response["allowed"], true);
  EXPECT_FALSE(response.contains("patch"));
}

TEST(WebhookTest, DeniesWithClearMessages) {
  struct Case {
    json pod;
    std::string expected;
  };
  const Case cases[] = {
      {PodObject({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8.5"}}),
       "xpool: container \"main\": nvidia.com/gpumem \"8500m\" is not a whole number (it counts MiB)"},
      {PodObject({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8 Gi"}}),
       "xpool: container \"main\": nvidia.com/gpumem \"8 Gi\" is not a quantity (unexpected \" \")"},
      // Not ASCII: the message names the byte, so the answer stays valid UTF-8 JSON.
      {PodObject({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8\u00e9"}}),
       "xpool: container \"main\": nvidia.com/gpumem \"8\u00e9\" is not a quantity (unexpected byte 0xC3)"},
      {PodObject({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "101"}}), "must be 0..100"},
      {PodObject({{"nvidia.com/gpu", "1"}}, "", "node-7"), "spec.nodeName is set to node-7"},
      {PodObject({{"nvidia.com/gpu", "1"}}, "volcano"), "asks for scheduler \"volcano\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    json response = Respond(Review(c.pod));
    EXPECT_EQ(response["allowed"], false);
    EXPECT_EQ(response["status"]["code"], 400);
    EXPECT_NE(response["status"]["message"].get<std::string>().find(c.expected), std::string::npos) << response.dump();
  }
}

TEST(WebhookTest, FailsClosedOnWhatItCannotRead) {
  // A pod object it cannot parse is denied, not waved through.
  json bad = PodObject({{"nvidia.com/gpu", "1"}});
  bad["spec"]["containers"] = "not a list";
  json response = Respond(Review(bad));
  EXPECT_EQ(response["allowed"], false);
  EXPECT_NE(response["status"]["message"].get<std::string>().find("cannot read the pod"), std::string::npos);
  // A review without a uid cannot be answered properly: denied.
  json no_uid = json::parse(Review(PodObject({{"nvidia.com/gpu", "1"}})));
  no_uid["request"].erase("uid");
  HttpReply r = HandleAdmissionReview(no_uid.dump(), WebhookOptions{});
  EXPECT_EQ(json::parse(r.body)["response"]["allowed"], false);
  for (const char* body : {"", "{", "[]", "{\"kind\":\"AdmissionReview\"}"}) {
    EXPECT_EQ(HandleAdmissionReview(body, WebhookOptions{}).status, 400) << body;
  }
}

TEST(WebhookTest, Base64) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "[{\"op\":\"add\"}]"}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
  }
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_EQ(Base64Encode("abc"), "YWJj");
}

}  // namespace
}  // namespace xpool::k8s
