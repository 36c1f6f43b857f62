// Golden tests for the extender protocol: requests exactly as kube-scheduler sends them (Go field names) and
// in lowerCamel, responses compared with the JSON kube-scheduler decodes.
#include "k8s/extender_types.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace xpool::k8s {
namespace {

using nlohmann::json;

constexpr const char* kPod = R"({"metadata":{"name":"p1","namespace":"ml","uid":"uid-p1"},
  "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";

constexpr const char* kArgsGoNames = R"({"Pod":{"metadata":{"name":"p1","namespace":"ml","uid":"uid-p1"},
  "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}},
  "Nodes":null,"NodeNames":["n1","n2"]})";
constexpr const char* kArgsLowerCamel = R"({"pod":{"metadata":{"name":"p1","namespace":"ml","uid":"uid-p1"},
  "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}},
  "nodenames":null,"nodeNames":["n1","n2"]})";
constexpr const char* kArgsNodeList = R"({"Pod":{"metadata":{"name":"p1","namespace":"ml","uid":"uid-p1"}},
  "Nodes":{"metadata":{"resourceVersion":"7"},"items":[
    {"metadata":{"name":"n1","annotations":{"a":"b"}},"spec":{"unschedulable":true},
     "status":{"conditions":[{"type":"Ready","status":"False"}]}},
    {"metadata":{"name":"n2"}}]},"NodeNames":null})";

void ExpectSameJson(const std::string& actual, const char* golden) {
  EXPECT_EQ(json::parse(actual), json::parse(golden)) << actual;
}

TEST(ExtenderTypesTest, ExtenderArgsBothCasings) {
  for (const char* body : {kArgsGoNames, kArgsLowerCamel}) {
    SCOPED_TRACE(body);
    Result<ExtenderArgs> a = ParseExtenderArgs(body);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->pod.Key(), "ml/p1");
    EXPECT_EQ(a->pod.uid, "uid-p1");
    EXPECT_TRUE(a->has_node_names);
    EXPECT_EQ(a->CandidateNames(), (std::vector<std::string>{"n1", "n2"}));
  }
}

TEST(ExtenderTypesTest, ExtenderArgsWithNodeList) {
  Result<ExtenderArgs> a = ParseExtenderArgs(kArgsNodeList);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->has_nodes);
  EXPECT_FALSE(a->has_node_names);
  ASSERT_EQ(a->nodes.size(), 2u);
  EXPECT_TRUE(a->nodes[0].node.unschedulable);
  EXPECT_FALSE(a->nodes[0].node.ready);
  EXPECT_TRUE(a->nodes[1].node.ready);
  EXPECT_EQ(a->CandidateNames(), (std::vector<std::string>{"n1", "n2"}));
  // The original objects are kept to be echoed back.
  EXPECT_EQ(json::parse(a->nodes[0].raw_json)["metadata"]["annotations"]["a"], "b");
}

TEST(ExtenderTypesTest, BadExtenderArgs) {
  for (const char* body : {"", "[]", "{}", R"({"Pod":{}})", R"({"Pod":{},"NodeNames":"n1"})",
                           R"({"Pod":{},"Nodes":{"items":[{"metadata":{}}]}})", R"({"Pod":[],"NodeNames":[]})"}) {
    SCOPED_TRACE(body);
    EXPECT_FALSE(ParseExtenderArgs(body).ok());
  }
}

TEST(ExtenderTypesTest, FilterResultGoldenNames) {
  ExtenderFilterResult r;
  r.use_node_names = true;
  r.node_names = {"n1"};
  r.failed_nodes = {{"n2", "not enough device memory"}};
  r.failed_and_unresolvable_nodes = {{"n3", "no xpool devices"}};
  const std::string out = EncodeFilterResult(r);
  ExpectSameJson(out, R"({"Nodes":null,"NodeNames":["n1"],"FailedNodes":{"n2":"not enough device memory"},
      "FailedAndUnresolvableNodes":{"n3":"no xpool devices"},"Error":""})");
  // And it reads back, in its own casing and in lowerCamel.
  for (const char* body : {out.c_str(), R"({"nodeNames":["n1"],"failedNodes":{"n2":"not enough device memory"},
                        "failedAndUnresolvableNodes":{"n3":"no xpool devices"},"error":""})"}) {
    Result<ExtenderFilterResult> back = ParseFilterResult(body);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->node_names, r.node_names);
    EXPECT_EQ(back->failed_nodes, r.failed_nodes);
    EXPECT_EQ(back->failed_and_unresolvable_nodes, r.failed_and_unresolvable_nodes);
  }
}

TEST(ExtenderTypesTest, FilterResultGoldenNodeList) {
  Result<ExtenderArgs> a = ParseExtenderArgs(kArgsNodeList);
  ASSERT_TRUE(a.ok());
  ExtenderFilterResult r;
  r.use_node_names = false;
  r.nodes = {a->nodes[1]};
  r.error = "";
  ExpectSameJson(EncodeFilterResult(r), R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n2"}}]},
      "NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
  r.error = "xpool is not synced with the API server";
  EXPECT_EQ(json::parse(EncodeFilterResult(r))["Error"], r.error);
}

TEST(ExtenderTypesTest, HostPriorityListGolden) {
  const std::vector<HostPriority> list = {{"n1", 10}, {"n2", 3}};
  ExpectSameJson(EncodeHostPriorityList(list), R"([{"Host":"n1","Score":10},{"Host":"n2","Score":3}])");
  ExpectSameJson(EncodeHostPriorityList({}), "[]");
  for (const char* body : {R"([{"Host":"n1","Score":10},{"Host":"n2","Score":3}])",
                           R"([{"host":"n1","score":10},{"host":"n2","score":3}])"}) {
    Result<std::vector<HostPriority>> back = ParseHostPriorityList(body);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, list);
  }
}

TEST(ExtenderTypesTest, BindingArgsBothCasings) {
  for (const char* body : {R"({"PodName":"p1","PodNamespace":"ml","PodUID":"uid-p1","Node":"n1"})",
                           R"({"podName":"p1","podNamespace":"ml","podUID":"uid-p1","node":"n1"})"}) {
    SCOPED_TRACE(body);
    Result<ExtenderBindingArgs> b = ParseBindingArgs(body);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->pod_name, "p1");
    EXPECT_EQ(b->pod_namespace, "ml");
    EXPECT_EQ(b->pod_uid, "uid-p1");
    EXPECT_EQ(b->node, "n1");
    ExpectSameJson(EncodeBindingArgs(*b), R"({"PodName":"p1","PodNamespace":"ml","PodUID":"uid-p1","Node":"n1"})");
  }
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":"p1"})").ok());
  EXPECT_FALSE(ParseBindingArgs(R"({"Node":"n1"})").ok());
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":1,"Node":"n1"})").ok());
}

TEST(ExtenderTypesTest, BindingResultGolden) {
  ExpectSameJson(EncodeBindingResult(""), R"({"Error":""})");
  ExpectSameJson(EncodeBindingResult("node n1 is full"), R"({"Error":"node n1 is full"})");
  EXPECT_EQ(*ParseBindingResult(R"({"error":"x"})"), "x");
  EXPECT_EQ(*ParseBindingResult(R"({"Error":""})"), "");
}

TEST(ExtenderTypesTest, PreemptionArgsMetaAndFullVictims) {
  // nodeCacheCapable: MetaVictims with UIDs.
  Result<ExtenderPreemptionArgs> meta = ParsePreemptionArgs(
      std::string(R"({"Pod":)") + kPod +
      R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"},{"UID":"v2"}],
         "NumPDBViolations":1}}})");
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(meta->victims.at("n1"), (MetaVictims{{"v1", "v2"}, 1}));
  // Not nodeCacheCapable: full pods, lowerCamel keys.
  Result<ExtenderPreemptionArgs> full = ParsePreemptionArgs(
      std::string(R"({"pod":)") + kPod +
      R"(,"nodeNameToVictims":{"n2":{"pods":[{"metadata":{"name":"v","uid":"v3"}}],"numPDBViolations":0}}})");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->victims.at("n2"), (MetaVictims{{"v3"}, 0}));
  EXPECT_FALSE(
      ParsePreemptionArgs(std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{}]}}})").ok());
}

TEST(ExtenderTypesTest, PreemptionResultGolden) {
  const std::map<std::string, MetaVictims> v = {{"n1", {{"v1"}, 0}}};
  const std::string out = EncodePreemptionResult(v);
  ExpectSameJson(out, R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"}],"NumPDBViolations":0}}})");
  Result<std::map<std::string, MetaVictims>> back =
      ParsePreemptionResult(R"({"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"v1"}],"numPDBViolations":0}}})");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
}

TEST(ExtenderTypesTest, ArgsEncodeRoundTrip) {
  Result<ExtenderArgs> a = ParseExtenderArgs(kArgsNodeList);
  ASSERT_TRUE(a.ok());
  Result<ExtenderArgs> back = ParseExtenderArgs(EncodeExtenderArgs(*a, kPod));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->CandidateNames(), a->CandidateNames());
  EXPECT_EQ(back->pod.containers.size(), 1u);
}

}  // namespace
}  // namespace xpool::k8s
