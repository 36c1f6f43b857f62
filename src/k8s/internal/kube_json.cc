#include "k8s/internal/kube_json.h"

#include <cctype>

#include "common/nesting.h"
#include "common/text.h"

namespace xpool::k8s::internal {
namespace {

std::string Join(std::string_view where, std::string_view name) {
  return where.empty() ? std::string(name) : std::string(where) + "." + std::string(name);
}

// A quantity as text: the API writes quantities as strings, hand-written JSON often as numbers.
Result<std::string> QuantityText(const Json& value, std::string_view where) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_float()) return value.dump();  // rejected later with the field's name
  return InvalidArgumentError(std::string(where) + " must be a quantity string, not " + value.type_name());
}

Result<std::map<std::string, std::string>> QuantityMap(const Json& object, std::string_view name,
                                                       std::string_view where) {
  std::map<std::string, std::string> out;
  const Json* map = Field(object, name);
  if (map == nullptr) return out;
  const std::string path = Join(where, name);
  if (!map->is_object()) return InvalidArgumentError(path + " must be an object");
  for (const auto& [key, value] : map->items()) {
    ASSIGN_OR_RETURN(out[key], QuantityText(value, path + "[" + key + "]"));
  }
  return out;
}

Result<ContainerResources> ContainerFromJson(const Json& c, const std::string& where) {
  if (!c.is_object()) return InvalidArgumentError(where + " must be an object");
  ContainerResources out;
  ASSIGN_OR_RETURN(out.name, StringField(c, "name", where));
  ASSIGN_OR_RETURN(std::string restart, StringField(c, "restartPolicy", where));
  out.sidecar = restart == "Always";
  const Json* resources = Field(c, "resources");
  if (resources == nullptr) return out;
  if (!resources->is_object()) return InvalidArgumentError(where + ".resources must be an object");
  ASSIGN_OR_RETURN(out.limits, QuantityMap(*resources, "limits", where + ".resources"));
  ASSIGN_OR_RETURN(out.requests, QuantityMap(*resources, "requests", where + ".resources"));
  return out;
}

}  // namespace

Result<Json> ParseJson(std::string_view text, std::string_view what) {
  RETURN_IF_ERROR(CheckNesting(text, NestingSyntax::kJson, what));
  Json out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return InvalidArgumentError("invalid JSON in " + std::string(what));
  return out;
}

const Json* Field(const Json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(name);
  if (exact != object.end()) return exact->is_null() ? nullptr : &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (EqualsIgnoreCase(it.key(), name)) return it->is_null() ? nullptr : &*it;
  }
  return nullptr;
}

Result<std::string> StringField(const Json& object, std::string_view name, std::string_view where) {
  const Json* value = Field(object, name);
  if (value == nullptr) return std::string();
  if (!value->is_string()) {
    return InvalidArgumentError(Join(where, name) + " must be a string, not " + value->type_name());
  }
  return value->get<std::string>();
}

Result<std::map<std::string, std::string>> StringMapField(const Json& object, std::string_view name,
                                                          std::string_view where) {
  std::map<std::string, std::string> out;
  const Json* map = Field(object, name);
  if (map == nullptr) return out;
  if (!map->is_object()) return InvalidArgumentError(Join(where, name) + " must be an object");
  for (const auto& [key, value] : map->items()) {
    if (value.is_string()) {
      out[key] = value.get<std::string>();
    } else if (value.is_number() || value.is_boolean()) {
      out[key] = value.dump();
    } else {
      return InvalidArgumentError(Join(where, name) + "[" + key + "] must be a string");
    }
  }
  return out;
}

Result<PodInfo> PodFromJson(const Json& pod) {
  if (!pod.is_object()) return InvalidArgumentError("pod must be a JSON object");
  PodInfo out;
  static const Json kEmpty = Json::object();
  const Json* meta = Field(pod, "metadata");
  const Json& m = meta != nullptr ? *meta : kEmpty;
  ASSIGN_OR_RETURN(out.name, StringField(m, "name", "pod.metadata"));
  ASSIGN_OR_RETURN(out.namespace_name, StringField(m, "namespace", "pod.metadata"));
  ASSIGN_OR_RETURN(out.uid, StringField(m, "uid", "pod.metadata"));
  ASSIGN_OR_RETURN(out.resource_version, StringField(m, "resourceVersion", "pod.metadata"));
  ASSIGN_OR_RETURN(out.labels, StringMapField(m, "labels", "pod.metadata"));
  ASSIGN_OR_RETURN(out.annotations, StringMapField(m, "annotations", "pod.metadata"));
  out.deleting = Field(m, "deletionTimestamp") != nullptr;
  ASSIGN_OR_RETURN(out.creation_timestamp, StringField(m, "creationTimestamp", "pod.metadata"));
  if (const Json* owners = Field(m, "ownerReferences"); owners != nullptr) {
    if (!owners->is_array()) return InvalidArgumentError("pod.metadata.ownerReferences must be an array");
    for (const Json& o : *owners) {
      PodInfo::Owner owner;
      ASSIGN_OR_RETURN(owner.kind, StringField(o, "kind", "pod.metadata.ownerReferences"));
      ASSIGN_OR_RETURN(owner.name, StringField(o, "name", "pod.metadata.ownerReferences"));
      const Json* controller = Field(o, "controller");
      owner.controller = controller != nullptr && controller->is_boolean() && controller->get<bool>();
      out.owners.push_back(std::move(owner));
    }
  }
  if (out.namespace_name.empty()) out.namespace_name = "default";

  const Json* spec = Field(pod, "spec");
  if (spec != nullptr) {
    if (!spec->is_object()) return InvalidArgumentError("pod.spec must be an object");
    ASSIGN_OR_RETURN(out.scheduler_name, StringField(*spec, "schedulerName", "pod.spec"));
    ASSIGN_OR_RETURN(out.node_name, StringField(*spec, "nodeName", "pod.spec"));
    for (auto [field, target] :
         {std::pair{"initContainers", &out.init_containers}, std::pair{"containers", &out.containers}}) {
      const Json* list = Field(*spec, field);
      if (list == nullptr) continue;
      const std::string where = std::string("pod.spec.") + field;
      if (!list->is_array()) return InvalidArgumentError(where + " must be an array");
      for (size_t i = 0; i < list->size(); ++i) {
        ASSIGN_OR_RETURN(ContainerResources c, ContainerFromJson((*list)[i], where + "[" + std::to_string(i) + "]"));
        if (target == &out.containers) c.sidecar = false;  // restartPolicy means something only on init containers
        target->push_back(std::move(c));
      }
    }
    ASSIGN_OR_RETURN(out.priority_class, StringField(*spec, "priorityClassName", "pod.spec"));
    if (const Json* priority = Field(*spec, "priority"); priority != nullptr) {
      if (!priority->is_number_integer()) return InvalidArgumentError("pod.spec.priority must be an integer");
      out.priority = priority->get<int32_t>();
    }
    if (const Json* grace = Field(*spec, "terminationGracePeriodSeconds"); grace != nullptr) {
      if (!grace->is_number_integer() || grace->get<int64_t>() < 0) {
        return InvalidArgumentError("pod.spec.terminationGracePeriodSeconds must be a non-negative integer");
      }
      out.grace_seconds = grace->get<int64_t>();
    }
  }
  const Json* status = Field(pod, "status");
  if (status != nullptr) {
    ASSIGN_OR_RETURN(out.phase, StringField(*status, "phase", "pod.status"));
  }
  return out;
}

Result<KubeNode> NodeFromJson(const Json& node) {
  if (!node.is_object()) return InvalidArgumentError("node must be a JSON object");
  KubeNode out;
  static const Json kEmpty = Json::object();
  const Json* meta = Field(node, "metadata");
  const Json& m = meta != nullptr ? *meta : kEmpty;
  ASSIGN_OR_RETURN(out.name, StringField(m, "name", "node.metadata"));
  if (out.name.empty()) return InvalidArgumentError("node.metadata.name is missing");
  ASSIGN_OR_RETURN(out.resource_version, StringField(m, "resourceVersion", "node.metadata"));
  ASSIGN_OR_RETURN(out.labels, StringMapField(m, "labels", "node.metadata"));
  ASSIGN_OR_RETURN(out.annotations, StringMapField(m, "annotations", "node.metadata"));
  const Json* spec = Field(node, "spec");
  if (spec != nullptr) {
    const Json* unschedulable = Field(*spec, "unschedulable");
    out.unschedulable = unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  }
  const Json* status = Field(node, "status");
  const Json* conditions = status != nullptr ? Field(*status, "conditions") : nullptr;
  if (conditions != nullptr && conditions->is_array()) {
    for (const Json& c : *conditions) {
      auto type = StringField(c, "type", "node.status.conditions");
      auto value = StringField(c, "status", "node.status.conditions");
      if (type.ok() && value.ok() && *type == "Ready") out.ready = *value == "True";
    }
  }
  return out;
}

}  // namespace xpool::k8s::internal

namespace xpool::k8s {

Result<PodInfo> ParsePod(std::string_view json_text) {
  ASSIGN_OR_RETURN(internal::Json j, internal::ParseJson(json_text, "pod"));
  return internal::PodFromJson(j);
}

Result<KubeNode> ParseKubeNode(std::string_view json_text) {
  ASSIGN_OR_RETURN(internal::Json j, internal::ParseJson(json_text, "node"));
  return internal::NodeFromJson(j);
}

}  // namespace xpool::k8s
