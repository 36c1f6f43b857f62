// ParseJobSpec: reads a JobSpec from YAML or JSON with yaml-cpp, checking every field's type, then applies
// ValidateJobSpec for the limits. Errors name the field path and the reason.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <functional>
#include <set>
#include <sstream>

#include "common/units.h"
#include "model/internal/job_spec_limits.h"
#include "model/job_spec.h"

namespace xpool {
namespace {

using namespace job_spec_limits;  // NOLINT: the limits are this file's vocabulary

std::string Join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string_view KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: break;
  }
  return "undefined";
}

Result<std::string> ReadScalar(const YAML::Node& node, const std::string& path, std::string_view what) {
  if (!node.IsScalar()) {
    return InvalidArgumentError(path + " must be " + std::string(what) + ", not " + std::string(KindName(node)));
  }
  return node.Scalar();
}

Result<std::string> ReadString(const YAML::Node& node, const std::string& path, size_t min_len, size_t max_len) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "a string"));
  RETURN_IF_ERROR(CheckText(s, path, min_len, max_len));
  return s;
}

Result<int64_t> ReadInt(const YAML::Node& node, const std::string& path, int64_t lo, int64_t hi,
                        std::string_view range) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "an integer"));
  Result<int64_t> n = ParseNonNegativeInt(s);
  if (!n.ok()) {
    if (!s.empty() && s[0] == '-' && ParseNonNegativeInt(std::string_view(s).substr(1)).ok()) {
      return InvalidArgumentError(path + " must be " + std::string(range) + " (got " + Printable(s) + ")");
    }
    return InvalidArgumentError(path + " must be an integer " + std::string(range) + ", not '" + Printable(s) +
                                "'");
  }
  if (*n < lo || *n > hi) {
    return InvalidArgumentError(path + " must be " + std::string(range) + " (got " + std::to_string(*n) + ")");
  }
  return *n;
}

Result<bool> ReadBool(const YAML::Node& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "true or false"));
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return InvalidArgumentError(path + " must be true or false, not '" + Printable(s) + "'");
}

// A string or a list of strings.
Result<std::vector<std::string>> ReadStringList(const YAML::Node& node, const std::string& path) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    ASSIGN_OR_RETURN(std::string s, ReadString(node, path, 1, kMaxSelectorLength));
    out.push_back(std::move(s));
    return out;
  }
  if (!node.IsSequence()) {
    return InvalidArgumentError(path + " must be a string or a list of strings, not " +
                                std::string(KindName(node)));
  }
  if (node.size() > static_cast<size_t>(kMaxSelectorItems)) {
    return InvalidArgumentError(path + " must have at most " + std::to_string(kMaxSelectorItems) + " items");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s,
                     ReadString(node[i], path + "[" + std::to_string(i) + "]", 1, kMaxSelectorLength));
    out.push_back(std::move(s));
  }
  return out;
}

// Calls `field(key, value, path)` for every entry of a mapping, refusing non-scalar and duplicate keys.
Status ForEachField(const YAML::Node& map, const std::string& path,
                    const std::function<Status(const std::string&, const YAML::Node&, const std::string&)>& field) {
  if (!map.IsMap()) {
    return InvalidArgumentError((path.empty() ? std::string("the spec") : path) + " must be a mapping, not " +
                                std::string(KindName(map)));
  }
  std::set<std::string> seen;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) {
      return InvalidArgumentError((path.empty() ? std::string("the spec") : path) +
                                  " has a key that is not a string");
    }
    const std::string& key = entry.first.Scalar();
    const std::string child = Join(path, Printable(key));
    if (!seen.insert(key).second) return InvalidArgumentError("duplicate field '" + child + "'");
    RETURN_IF_ERROR(field(key, entry.second, child));
  }
  return Status::Ok();
}

Status UnknownField(const std::string& path) { return InvalidArgumentError("unknown field '" + path + "'"); }

Result<int64_t> ReadMemory(const YAML::Node& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "a memory size like \"8Gi\""));
  Result<int64_t> mib = ParseMemoryMiB(s);
  if (!mib.ok()) return InvalidArgumentError(path + ": " + Printable(mib.status().message(), 200));
  return *mib;
}

Status ReadResources(const YAML::Node& node, ResourceSpec* r) {
  return ForEachField(node, "resources", [r](const std::string& key, const YAML::Node& v,
                                              const std::string& path) -> Status {
    if (key == "cpu") {
      ASSIGN_OR_RETURN(std::string s, ReadScalar(v, path, "a cpu amount like \"500m\" or 2"));
      Result<Quantity> q = ParseCpu(s);
      if (!q.ok()) return InvalidArgumentError(path + ": " + Printable(q.status().message(), 200));
      r->cpu_milli = q->milli();
    } else if (key == "memory") {
      ASSIGN_OR_RETURN(r->memory_mib, ReadMemory(v, path));
    } else if (key == "gpu") {
      ASSIGN_OR_RETURN(int64_t n, ReadInt(v, path, 0, kMaxDevicesPerReplica, "0..64"));
      r->gpu = static_cast<int>(n);
    } else if (key == "gpumem") {
      ASSIGN_OR_RETURN(int64_t mib, ReadMemory(v, path));
      RETURN_IF_ERROR(CheckRange(mib, int64_t{1}, kMaxDeviceMemoryMiB, path, "1Mi..1Ti"));
      r->gpumem_mib = mib;
    } else if (key == "gpumem-percentage") {
      ASSIGN_OR_RETURN(int64_t n, ReadInt(v, path, 1, 100, "1..100"));
      r->gpumem_percentage = static_cast<int>(n);
    } else if (key == "gpucores") {
      ASSIGN_OR_RETURN(int64_t n, ReadInt(v, path, 1, 100, "1..100"));
      r->gpucores = static_cast<int>(n);
    } else if (key == "gpu-type") {
      ASSIGN_OR_RETURN(r->gpu_type, ReadStringList(v, path));
    } else if (key == "gpu-type-exclude") {
      ASSIGN_OR_RETURN(r->gpu_type_exclude, ReadStringList(v, path));
    } else if (key == "gpu-uuid") {
      ASSIGN_OR_RETURN(r->gpu_uuid, ReadStringList(v, path));
    } else if (key == "numa-bind") {
      ASSIGN_OR_RETURN(r->numa_bind, ReadBool(v, path));
    } else if (key == "vendor") {
      ASSIGN_OR_RETURN(std::string s, ReadString(v, path, 1, 64));
      Result<Vendor> vendor = ParseVendor(s);
      if (!vendor.ok()) return InvalidArgumentError(path + ": " + Printable(vendor.status().message(), 200));
      r->vendor = *vendor;
    } else {
      return UnknownField(path);
    }
    return Status::Ok();
  });
}

Status ReadCommand(const YAML::Node& node, JobSpec* spec) {
  spec->command.clear();
  if (node.IsScalar()) {
    ASSIGN_OR_RETURN(std::string s, ReadString(node, "command", 1, kMaxShellCommandLength));
    spec->command.push_back(std::move(s));
    spec->command_is_shell = true;
    return Status::Ok();
  }
  if (!node.IsSequence()) {
    return InvalidArgumentError("command must be a list of arguments or a string, not " +
                                std::string(KindName(node)));
  }
  if (node.size() == 0) return InvalidArgumentError("command must not be empty");
  if (node.size() > static_cast<size_t>(kMaxArgs)) {
    return InvalidArgumentError("command must have at most " + std::to_string(kMaxArgs) + " arguments");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s,
                     ReadString(node[i], "command[" + std::to_string(i) + "]", i == 0 ? 1 : 0, kMaxArgLength));
    spec->command.push_back(std::move(s));
  }
  spec->command_is_shell = false;
  return Status::Ok();
}

Status ReadEnv(const YAML::Node& node, JobSpec* spec) {
  if (node.IsMap() && node.size() > static_cast<size_t>(kMaxEnv)) {
    return InvalidArgumentError("env must have at most " + std::to_string(kMaxEnv) + " variables");
  }
  return ForEachField(node, "env", [spec](const std::string& key, const YAML::Node& v,
                                          const std::string& path) -> Status {
    RETURN_IF_ERROR(CheckEnvName(key));
    ASSIGN_OR_RETURN(std::string value, ReadString(v, path, 0, kMaxEnvValueLength));
    spec->env[key] = std::move(value);
    return Status::Ok();
  });
}

// Seconds as an integer, or with a unit: "45s", "5m".
Result<int64_t> ReadGrace(const YAML::Node& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "seconds"));
  std::string_view digits = s;
  int64_t scale = 1;
  if (!digits.empty() && (digits.back() == 's' || digits.back() == 'm')) {
    scale = digits.back() == 'm' ? 60 : 1;
    digits.remove_suffix(1);
  }
  Result<int64_t> n = ParseNonNegativeInt(digits);
  if (!n.ok() || *n > kMaxCheckpointGraceSeconds / scale) {
    return InvalidArgumentError(path + " must be 0..3600 seconds (e.g. 30, \"45s\", \"5m\"), not '" +
                                Printable(s) + "'");
  }
  return *n * scale;
}

Status ReadTopLevel(const YAML::Node& root, JobSpec* spec) {
  bool has_name = false, has_command = false, has_resources = false;
  RETURN_IF_ERROR(ForEachField(root, "", [&](const std::string& key, const YAML::Node& v,
                                             const std::string& path) -> Status {
    if (key == "name") {
      ASSIGN_OR_RETURN(spec->name, ReadScalar(v, path, "a string"));
      RETURN_IF_ERROR(CheckName(spec->name, path));
      has_name = true;
    } else if (key == "tenant") {
      ASSIGN_OR_RETURN(spec->tenant, ReadScalar(v, path, "a string"));
      RETURN_IF_ERROR(CheckName(spec->tenant, path));
    } else if (key == "priority") {
      ASSIGN_OR_RETURN(std::string s, ReadScalar(v, path, "0..100 or low, normal, high"));
      Result<int> p = ParsePriority(s);
      if (!p.ok()) {
        return InvalidArgumentError("priority must be 0..100 or low, normal, high, not '" + Printable(s) + "'");
      }
      spec->priority = *p;
    } else if (key == "replicas") {
      ASSIGN_OR_RETURN(int64_t n, ReadInt(v, path, 1, kMaxReplicas, "1..1024"));
      spec->replicas = static_cast<int>(n);
    } else if (key == "resources") {
      RETURN_IF_ERROR(ReadResources(v, &spec->resources));
      has_resources = true;
    } else if (key == "command") {
      RETURN_IF_ERROR(ReadCommand(v, spec));
      has_command = true;
    } else if (key == "workdir") {
      ASSIGN_OR_RETURN(spec->workdir, ReadString(v, path, 1, kMaxPathLength));
    } else if (key == "env") {
      RETURN_IF_ERROR(ReadEnv(v, spec));
    } else if (key == "preemptible") {
      ASSIGN_OR_RETURN(spec->preemptible, ReadBool(v, path));
    } else if (key == "checkpoint") {
      RETURN_IF_ERROR(ForEachField(v, path, [spec](const std::string& k, const YAML::Node& g,
                                                   const std::string& p) -> Status {
        if (k == "signal") {
          ASSIGN_OR_RETURN(spec->checkpoint_signal, ReadString(g, p, 1, 16));
          return CheckpointSignalNumber(spec->checkpoint_signal).status();
        }
        if (k != "grace") return UnknownField(p);
        ASSIGN_OR_RETURN(int64_t seconds, ReadGrace(g, p));
        spec->checkpoint_grace_seconds = static_cast<int>(seconds);
        return Status::Ok();
      }));
    } else {
      return UnknownField(path);
    }
    return Status::Ok();
  }));
  if (!has_name) return InvalidArgumentError("name is required");
  if (!has_resources) return InvalidArgumentError("resources is required (cpu, memory and/or gpu per replica)");
  if (!has_command) return InvalidArgumentError("command is required (an argv list or a string)");
  return Status::Ok();
}

// Counts a stream's documents without building nodes (all events ignored).
class IgnoreEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// True when the text holds more than one document. Bounded on purpose: yaml-cpp 0.7's LoadAll loops forever on
// some inputs (a lone ",": HandleNextDocument keeps reporting a document without consuming anything), so we ask
// for at most two documents and never call LoadAll.
bool HasSeveralDocuments(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  IgnoreEvents ignore;
  int documents = 0;
  while (documents < 2 && parser.HandleNextDocument(ignore)) ++documents;
  return documents > 1;
}

}  // namespace

Result<JobSpec> ParseJobSpec(std::string_view text) {
  if (text.size() > kMaxJobSpecBytes) {
    return InvalidArgumentError("the spec is larger than " + std::to_string(kMaxJobSpecBytes) + " bytes");
  }
  if (!IsValidUtf8(text)) return InvalidArgumentError("the spec is not valid UTF-8");
  JobSpec spec;
  try {
    const std::string owned(text);
    if (HasSeveralDocuments(owned)) return InvalidArgumentError("the spec must be a single YAML document");
    const YAML::Node root = YAML::Load(owned);
    if (!root.IsDefined() || root.IsNull()) return InvalidArgumentError("the spec is empty");
    RETURN_IF_ERROR(ReadTopLevel(root, &spec));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgumentError("malformed YAML/JSON: " + Printable(e.msg, 200));
    return InvalidArgumentError("malformed YAML/JSON at line " + std::to_string(e.mark.line + 1) + ", column " +
                                std::to_string(e.mark.column + 1) + ": " + Printable(e.msg, 200));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("malformed YAML/JSON: ") + Printable(e.what(), 200));
  }
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  return spec;
}

}  // namespace xpool
