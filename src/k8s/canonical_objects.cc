#include "k8s/canonical_objects.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "k8s/quantity.h"

namespace xpool::k8s {
namespace {

using nlohmann::json;

// Rewrites one quantity in place (true), or keeps it and records the first failure, naming `field`.
bool Rewrite(std::string* text, const std::string& field, Status* first_error) {
  Result<std::string> canonical = CanonicalQuantity(*text);
  if (canonical.ok()) {
    *text = *std::move(canonical);
    return true;
  }
  if (first_error->ok()) {
    *first_error = InvalidArgumentError(field + ": Invalid value: \"" + *text + "\": " + canonical.status().message());
  }
  return false;
}

void RewriteJsonMap(json* map, const std::string& where, Status* first_error) {
  if (map == nullptr || !map->is_object()) return;
  for (auto it = map->begin(); it != map->end(); ++it) {
    std::string text = it->is_string() ? it->get<std::string>() : it->is_number() ? it->dump() : "";
    if (Rewrite(&text, where + "[" + it.key() + "]", first_error)) *it = text;
  }
}

json* Member(json& j, const char* name) { return j.is_object() && j.contains(name) ? &j[name] : nullptr; }

void RewriteContainers(std::vector<ContainerResources>* containers, const std::string& list, Status* first_error) {
  for (size_t i = 0; i < containers->size(); ++i) {
    const std::string where = "spec." + list + "[" + std::to_string(i) + "].resources.";
    for (auto& [name, text] : (*containers)[i].limits) Rewrite(&text, where + "limits[" + name + "]", first_error);
    for (auto& [name, text] : (*containers)[i].requests) Rewrite(&text, where + "requests[" + name + "]", first_error);
  }
}

}  // namespace

Status CanonicalizeQuantities(json* object) {
  Status first_error = Status::Ok();
  if (json* spec = Member(*object, "spec")) {
    for (const char* list : {"initContainers", "containers"}) {
      json* containers = Member(*spec, list);
      if (containers == nullptr || !containers->is_array()) continue;
      for (size_t i = 0; i < containers->size(); ++i) {
        json* resources = Member((*containers)[i], "resources");
        if (resources == nullptr) continue;
        const std::string where = std::string("spec.") + list + "[" + std::to_string(i) + "].resources.";
        RewriteJsonMap(Member(*resources, "limits"), where + "limits", &first_error);
        RewriteJsonMap(Member(*resources, "requests"), where + "requests", &first_error);
      }
    }
    RewriteJsonMap(Member(*spec, "overhead"), "spec.overhead", &first_error);
  }
  if (json* status = Member(*object, "status")) {
    RewriteJsonMap(Member(*status, "capacity"), "status.capacity", &first_error);
    RewriteJsonMap(Member(*status, "allocatable"), "status.allocatable", &first_error);
  }
  return first_error;
}

Status CanonicalizeQuantities(PodInfo* pod) {
  Status first_error = Status::Ok();
  RewriteContainers(&pod->init_containers, "initContainers", &first_error);
  RewriteContainers(&pod->containers, "containers", &first_error);
  return first_error;
}

}  // namespace xpool::k8s
