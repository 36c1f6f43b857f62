#include "k8s/extender_types.h"

#include "k8s/internal/kube_json.h"

namespace xpool::k8s {
namespace {

using internal::Field;
using internal::Json;

Result<Json> Root(std::string_view body, std::string_view what) {
  ASSIGN_OR_RETURN(Json root, internal::ParseJson(body, what));
  if (!root.is_object()) return InvalidArgumentError(std::string(what) + " must be a JSON object");
  return root;
}

Result<std::vector<std::string>> StringList(const Json& value, std::string_view where) {
  if (!value.is_array()) return InvalidArgumentError(std::string(where) + " must be a list of strings");
  std::vector<std::string> out;
  for (const Json& v : value) {
    if (!v.is_string()) return InvalidArgumentError(std::string(where) + " must be a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::vector<NodeEntry>> NodeListFromJson(const Json& list, std::string_view where) {
  if (!list.is_object()) return InvalidArgumentError(std::string(where) + " must be a NodeList object");
  std::vector<NodeEntry> out;
  const Json* items = Field(list, "items");
  if (items == nullptr) return out;
  if (!items->is_array()) return InvalidArgumentError(std::string(where) + ".items must be a list");
  for (const Json& item : *items) {
    Result<KubeNode> node = internal::NodeFromJson(item);
    if (!node.ok()) return node.status().WithContext(where);
    out.push_back({std::move(node).value(), item.dump()});
  }
  return out;
}

Result<std::map<std::string, std::string>> FailedMap(const Json& root, std::string_view name) {
  return internal::StringMapField(root, name, "");
}

Result<PodInfo> PodMember(const Json& root, std::string_view what) {
  const Json* pod = Field(root, "Pod");
  if (pod == nullptr) return InvalidArgumentError(std::string(what) + ": Pod is missing");
  return internal::PodFromJson(*pod);
}

Result<MetaVictims> VictimsFromJson(const Json& v, const std::string& where) {
  if (!v.is_object()) return InvalidArgumentError(where + " must be an object");
  MetaVictims out;
  const Json* pods = Field(v, "Pods");
  if (pods != nullptr) {
    if (!pods->is_array()) return InvalidArgumentError(where + ".Pods must be a list");
    for (const Json& p : *pods) {
      // A MetaPod {"UID"} or a full v1.Pod {"metadata":{"uid"}}.
      const Json* meta = Field(p, "metadata");
      ASSIGN_OR_RETURN(std::string uid, internal::StringField(meta != nullptr ? *meta : p, "UID", where + ".Pods"));
      if (uid.empty()) return InvalidArgumentError(where + ".Pods has a pod without a uid");
      out.pod_uids.push_back(std::move(uid));
    }
  }
  const Json* pdb = Field(v, "NumPDBViolations");
  if (pdb != nullptr) {
    if (!pdb->is_number_integer()) return InvalidArgumentError(where + ".NumPDBViolations must be an integer");
    out.num_pdb_violations = pdb->get<int64_t>();
  }
  return out;
}

Result<std::map<std::string, MetaVictims>> VictimMap(const Json& root, std::string_view name) {
  std::map<std::string, MetaVictims> out;
  const Json* map = Field(root, name);
  if (map == nullptr) return out;
  if (!map->is_object()) return InvalidArgumentError(std::string(name) + " must be an object");
  for (const auto& [node, victims] : map->items()) {
    if (victims.is_null()) continue;
    ASSIGN_OR_RETURN(out[node], VictimsFromJson(victims, std::string(name) + "[" + node + "]"));
  }
  return out;
}

Json MetaVictimsJson(const std::map<std::string, MetaVictims>& victims) {
  Json out = Json::object();
  for (const auto& [node, v] : victims) {
    Json pods = Json::array();
    for (const std::string& uid : v.pod_uids) pods.push_back({{"UID", uid}});
    out[node] = {{"Pods", pods}, {"NumPDBViolations", v.num_pdb_violations}};
  }
  return out;
}

}  // namespace

std::vector<std::string> ExtenderArgs::CandidateNames() const {
  if (has_node_names) return node_names;
  std::vector<std::string> out;
  for (const NodeEntry& n : nodes) out.push_back(n.node.name);
  return out;
}

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderArgs"));
  ExtenderArgs out;
  ASSIGN_OR_RETURN(out.pod, PodMember(root, "ExtenderArgs"));
  if (const Json* nodes = Field(root, "Nodes")) {
    out.has_nodes = true;
    ASSIGN_OR_RETURN(out.nodes, NodeListFromJson(*nodes, "ExtenderArgs.Nodes"));
  }
  if (const Json* names = Field(root, "NodeNames")) {
    out.has_node_names = true;
    ASSIGN_OR_RETURN(out.node_names, StringList(*names, "ExtenderArgs.NodeNames"));
  }
  if (!out.has_nodes && !out.has_node_names) {
    return InvalidArgumentError("ExtenderArgs has neither Nodes nor NodeNames");
  }
  return out;
}

Result<ExtenderFilterResult> ParseFilterResult(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderFilterResult"));
  ExtenderFilterResult out;
  if (const Json* names = Field(root, "NodeNames")) {
    out.use_node_names = true;
    ASSIGN_OR_RETURN(out.node_names, StringList(*names, "ExtenderFilterResult.NodeNames"));
  } else if (const Json* nodes = Field(root, "Nodes")) {
    out.use_node_names = false;
    ASSIGN_OR_RETURN(out.nodes, NodeListFromJson(*nodes, "ExtenderFilterResult.Nodes"));
  }
  ASSIGN_OR_RETURN(out.failed_nodes, FailedMap(root, "FailedNodes"));
  ASSIGN_OR_RETURN(out.failed_and_unresolvable_nodes, FailedMap(root, "FailedAndUnresolvableNodes"));
  ASSIGN_OR_RETURN(out.error, internal::StringField(root, "Error", ""));
  return out;
}

Result<std::vector<HostPriority>> ParseHostPriorityList(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, internal::ParseJson(body, "HostPriorityList"));
  if (root.is_null()) return std::vector<HostPriority>{};
  if (!root.is_array()) return InvalidArgumentError("HostPriorityList must be a list");
  std::vector<HostPriority> out;
  for (const Json& h : root) {
    HostPriority p;
    ASSIGN_OR_RETURN(p.host, internal::StringField(h, "Host", "HostPriority"));
    const Json* score = Field(h, "Score");
    if (score == nullptr || !score->is_number_integer()) {
      return InvalidArgumentError("HostPriority.Score must be an integer");
    }
    p.score = score->get<int64_t>();
    out.push_back(std::move(p));
  }
  return out;
}

Result<ExtenderBindingArgs> ParseBindingArgs(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderBindingArgs"));
  ExtenderBindingArgs out;
  ASSIGN_OR_RETURN(out.pod_name, internal::StringField(root, "PodName", "ExtenderBindingArgs"));
  ASSIGN_OR_RETURN(out.pod_namespace, internal::StringField(root, "PodNamespace", "ExtenderBindingArgs"));
  ASSIGN_OR_RETURN(out.pod_uid, internal::StringField(root, "PodUID", "ExtenderBindingArgs"));
  ASSIGN_OR_RETURN(out.node, internal::StringField(root, "Node", "ExtenderBindingArgs"));
  if (out.pod_name.empty()) return InvalidArgumentError("ExtenderBindingArgs.PodName is missing");
  if (out.node.empty()) return InvalidArgumentError("ExtenderBindingArgs.Node is missing");
  if (out.pod_namespace.empty()) out.pod_namespace = "default";
  return out;
}

Result<std::string> ParseBindingResult(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderBindingResult"));
  return internal::StringField(root, "Error", "ExtenderBindingResult");
}

Result<ExtenderPreemptionArgs> ParsePreemptionArgs(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderPreemptionArgs"));
  ExtenderPreemptionArgs out;
  ASSIGN_OR_RETURN(out.pod, PodMember(root, "ExtenderPreemptionArgs"));
  // nodeCacheCapable extenders get NodeNameToMetaVictims, the others NodeNameToVictims.
  ASSIGN_OR_RETURN(out.victims, VictimMap(root, "NodeNameToMetaVictims"));
  ASSIGN_OR_RETURN(auto full, VictimMap(root, "NodeNameToVictims"));
  for (auto& [node, v] : full) out.victims.emplace(node, std::move(v));
  return out;
}

Result<std::map<std::string, MetaVictims>> ParsePreemptionResult(std::string_view body) {
  ASSIGN_OR_RETURN(Json root, Root(body, "ExtenderPreemptionResult"));
  return VictimMap(root, "NodeNameToMetaVictims");
}

std::string EncodeExtenderArgs(const ExtenderArgs& args, std::string_view pod_json) {
  Json root;
  root["Pod"] = Json::parse(pod_json, nullptr, false);
  if (args.has_nodes) {
    Json items = Json::array();
    for (const NodeEntry& n : args.nodes) items.push_back(Json::parse(n.raw_json, nullptr, false));
    root["Nodes"] = {{"metadata", Json::object()}, {"items", items}};
  } else {
    root["Nodes"] = nullptr;
  }
  root["NodeNames"] = args.has_node_names ? Json(args.node_names) : Json(nullptr);
  return root.dump();
}

std::string EncodeFilterResult(const ExtenderFilterResult& r) {
  Json root;
  if (r.use_node_names) {
    root["Nodes"] = nullptr;
    root["NodeNames"] = r.node_names;
  } else {
    Json items = Json::array();
    for (const NodeEntry& n : r.nodes) {
      Json item = Json::parse(n.raw_json, nullptr, false);
      items.push_back(item.is_discarded() ? Json(nullptr) : std::move(item));
    }
    root["Nodes"] = {{"metadata", Json::object()}, {"items", items}};
    root["NodeNames"] = nullptr;
  }
  root["FailedNodes"] = r.failed_nodes;
  root["FailedAndUnresolvableNodes"] = r.failed_and_unresolvable_nodes;
  root["Error"] = r.error;
  return root.dump();
}

std::string EncodeHostPriorityList(const std::vector<HostPriority>& list) {
  Json out = Json::array();
  for (const HostPriority& h : list) out.push_back({{"Host", h.host}, {"Score", h.score}});
  return out.dump();
}

std::string EncodeBindingArgs(const ExtenderBindingArgs& a) {
  return Json{{"PodName", a.pod_name}, {"PodNamespace", a.pod_namespace}, {"PodUID", a.pod_uid}, {"Node", a.node}}
      .dump();
}

std::string EncodeBindingResult(std::string_view error) { return Json{{"Error", std::string(error)}}.dump(); }

std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims) {
  return Json{{"NodeNameToMetaVictims", MetaVictimsJson(victims)}}.dump();
}

}  // namespace xpool::k8s
