#pragma once
// The parts of Kubernetes objects (Pod, Node) that xpool reads, as plain value types, and their parsing from
// the API's JSON. Only the fields xpool uses are kept; the rest of an object is ignored.
//
// Parsing never throws and never crashes on bad input: a missing or mistyped field the code depends on is an
// InvalidArgument naming the field. Value types; thread-compatible.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::k8s {

struct ContainerResources {
  std::string name;
  // For init containers: restartPolicy "Always" makes it a sidecar that keeps running beside the app containers.
  bool sidecar = false;
  // Resource name → quantity text as the API gives it ("1", "8000", "500m").
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> requests;
};

struct PodInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string scheduler_name;  // spec.schedulerName
  std::string node_name;       // spec.nodeName; empty until bound
  std::string phase;           // status.phase: Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;       // metadata.deletionTimestamp is set
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<ContainerResources> init_containers;  // spec.initContainers, in order
  std::vector<ContainerResources> containers;       // spec.containers
  std::string priority_class;                       // spec.priorityClassName
  std::optional<int32_t> priority;                  // spec.priority (set by the API server from the class)
  int64_t grace_seconds = 30;                       // spec.terminationGracePeriodSeconds
  struct Owner {
    std::string kind;  // "Job", "ReplicaSet", ...
    std::string name;
    bool controller = false;
  };
  std::vector<Owner> owners;       // metadata.ownerReferences
  std::string creation_timestamp;  // metadata.creationTimestamp (RFC 3339)

  // "namespace/name".
  std::string Key() const { return namespace_name + "/" + name; }
  // Succeeded or Failed: the pod holds no devices any more.
  bool Terminated() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct KubeNode {
  std::string name;
  std::string resource_version;
  bool ready = true;           // the Ready condition is "True" (or no conditions are reported)
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// From the JSON text of one v1.Pod / v1.Node object.
Result<PodInfo> ParsePod(std::string_view json_text);
Result<KubeNode> ParseKubeNode(std::string_view json_text);

}  // namespace xpool::k8s
