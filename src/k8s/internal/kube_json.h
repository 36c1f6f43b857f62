#pragma once
// JSON helpers shared by the k8s sources (private to src/k8s: the one place nlohmann/json meets the k8s types).
//
// Field lookup accepts any casing, as Go's encoding/json does when it decodes: kube-scheduler sends the extender
// structs with their Go field names ("Pod", "NodeNames"), other clients send lowerCamel ("pod", "nodeNames").
// Stateless functions; thread-safe.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "k8s/kube_objects.h"

namespace xpool::k8s::internal {

using Json = nlohmann::json;

// Parses text into JSON; a syntax error is InvalidArgument "invalid JSON in <what>: ...".
Result<Json> ParseJson(std::string_view text, std::string_view what);

// The member of `object` named `name`, matched exactly first, then case-insensitively; nullptr when absent,
// when `object` is not an object, or when the member is null.
const Json* Field(const Json& object, std::string_view name);

// A string member; "" when absent. InvalidArgument when present but not a string.
Result<std::string> StringField(const Json& object, std::string_view name, std::string_view where);
// A map<string,string> member (annotations, labels); numbers and booleans are turned into their text.
Result<std::map<std::string, std::string>> StringMapField(const Json& object, std::string_view name,
                                                          std::string_view where);

Result<PodInfo> PodFromJson(const Json& pod);
Result<KubeNode> NodeFromJson(const Json& node);

}  // namespace xpool::k8s::internal
