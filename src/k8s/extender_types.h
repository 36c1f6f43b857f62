#pragma once
// The kube-scheduler extender protocol's messages (k8s.io/kube-scheduler/extender/v1), parsed and encoded.
//
// kube-scheduler marshals these Go structs without json tags, so on the wire the keys are the Go field names:
//   ExtenderArgs            {"Pod": v1.Pod, "Nodes": v1.NodeList | null, "NodeNames": [string] | null}
//   ExtenderFilterResult    {"Nodes", "NodeNames", "FailedNodes": {node: msg},
//                            "FailedAndUnresolvableNodes": {node: msg}, "Error": string}
//   HostPriorityList        [{"Host": string, "Score": int64 0..10}]
//   ExtenderBindingArgs     {"PodName", "PodNamespace", "PodUID", "Node"}
//   ExtenderBindingResult   {"Error": string}
//   ExtenderPreemptionArgs  {"Pod", "NodeNameToVictims": {node: {"Pods": [v1.Pod], "NumPDBViolations"}},
//                            "NodeNameToMetaVictims": {node: {"Pods": [{"UID"}], "NumPDBViolations"}}}
//   ExtenderPreemptionResult {"NodeNameToMetaVictims": {node: {"Pods": [{"UID"}], "NumPDBViolations"}}}
// Go's decoder matches keys case-insensitively, so other clients send lowerCamel ("pod", "nodeNames"); the
// parsers here accept any casing. The encoders write the Go names, which is what kube-scheduler reads back.
// The embedded v1.Pod / v1.Node objects use the API's own lowerCamel json tags.
// Value types and stateless functions; thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/kube_objects.h"

namespace xpool::k8s {

inline constexpr int64_t kMaxExtenderPriority = 10;

// A node as kube-scheduler sent it: the parsed view plus the original object, echoed back in filter results.
struct NodeEntry {
  KubeNode node;
  std::string raw_json;
};

struct ExtenderArgs {
  PodInfo pod;
  // nodeCacheCapable: false → the full NodeList; true → names only. Exactly one is normally set.
  bool has_nodes = false;
  std::vector<NodeEntry> nodes;
  bool has_node_names = false;
  std::vector<std::string> node_names;

  // The candidate names, whichever form they came in.
  std::vector<std::string> CandidateNames() const;
};

struct ExtenderFilterResult {
  // When true the passing nodes go back as "NodeNames", else as "Nodes" (a NodeList of the original objects).
  bool use_node_names = true;
  std::vector<NodeEntry> nodes;
  std::vector<std::string> node_names;
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable_nodes;
  std::string error;
};

struct HostPriority {
  std::string host;
  int64_t score = 0;
  friend bool operator==(const HostPriority&, const HostPriority&) = default;
};

struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct MetaVictims {
  std::vector<std::string> pod_uids;
  int64_t num_pdb_violations = 0;
  friend bool operator==(const MetaVictims&, const MetaVictims&) = default;
};

struct ExtenderPreemptionArgs {
  PodInfo pod;
  // Victims per node, reduced to their uids whichever form (full pods or MetaPods) they came in.
  std::map<std::string, MetaVictims> victims;
};

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body);
Result<ExtenderFilterResult> ParseFilterResult(std::string_view body);
Result<std::vector<HostPriority>> ParseHostPriorityList(std::string_view body);
Result<ExtenderBindingArgs> ParseBindingArgs(std::string_view body);
// The "Error" of an ExtenderBindingResult ("" = bound).
Result<std::string> ParseBindingResult(std::string_view body);
Result<ExtenderPreemptionArgs> ParsePreemptionArgs(std::string_view body);
Result<std::map<std::string, MetaVictims>> ParsePreemptionResult(std::string_view body);

std::string EncodeExtenderArgs(const ExtenderArgs& args, std::string_view pod_json);
std::string EncodeFilterResult(const ExtenderFilterResult& result);
std::string EncodeHostPriorityList(const std::vector<HostPriority>& list);
std::string EncodeBindingArgs(const ExtenderBindingArgs& args);
std::string EncodeBindingResult(std::string_view error);
std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims);

}  // namespace xpool::k8s
