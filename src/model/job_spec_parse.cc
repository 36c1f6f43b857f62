// ParseJobSpec: reads a JobSpec from YAML (yaml-cpp) or, for a JSON object (API bodies, the store's canonical
// form), with nlohmann's SAX parser, checking every field's type through one walker, then applies ValidateJobSpec
// for the limits. Errors name the field path and the reason, the same for both readers.
#include "model/internal/job_spec_parse.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "common/nesting.h"
#include "common/units.h"
#include "model/internal/job_spec_limits.h"
#include "model/job_spec.h"
#include "model/job_spec_position.h"

namespace xpool {
namespace {

using namespace job_spec_limits;  // NOLINT: the limits are this file's vocabulary

std::string Join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// The walker below reads a spec through a small view of a parsed document: YamlView (yaml-cpp, any YAML or
// JSON) or JsonView (a JSON object read with nlohmann's SAX parser, the fast path for API bodies). Both show a
// value as null, a scalar with its source text, a list or a mapping, so there is one walker and one set of
// error messages for both.
enum class Kind { kUndefined, kNull, kScalar, kSequence, kMap };

constexpr std::string_view kUnknownField = "unknown field '";
constexpr std::string_view kDuplicateField = "duplicate field '";

// Where the walker met its error, for ParseJobSpecAt: the innermost field whose reading failed.
struct ErrorSite {
  bool set = false;
  YAML::Mark mark;
};

// `site` (may be null) receives the position of the first field whose reading fails.
class YamlView {
 public:
  explicit YamlView(YAML::Node node, ErrorSite* site = nullptr) : node_(std::move(node)), site_(site) {}
  Kind kind() const {
    switch (node_.Type()) {
      case YAML::NodeType::Null:
        return Kind::kNull;
      case YAML::NodeType::Scalar:
        return Kind::kScalar;
      case YAML::NodeType::Sequence:
        return Kind::kSequence;
      case YAML::NodeType::Map:
        return Kind::kMap;
      case YAML::NodeType::Undefined:
        break;
    }
    return Kind::kUndefined;
  }
  const std::string& Scalar() const { return node_.Scalar(); }
  size_t size() const { return node_.size(); }
  YamlView operator[](size_t i) const { return YamlView(node_[i], site_); }
  // f(key, value) per entry of a mapping; key is null when it is not a scalar.
  template <typename F>
  Status ForEachEntry(F&& f) const {
    for (const auto& entry : node_) {
      Status s = f(entry.first.IsScalar() ? &entry.first.Scalar() : nullptr, YamlView(entry.second, site_));
      if (!s.ok()) {
        Note(s, entry.first, entry.second);
        return s;
      }
    }
    return Status::Ok();
  }

 private:
  // The innermost failing entry is the first to return here: it marks the site. A bad scalar is marked at its
  // value; an unknown or duplicate key, or a list or mapping (the error may be anywhere in it), at its key.
  void Note(const Status& s, const YAML::Node& key, const YAML::Node& value) const {
    if (site_ == nullptr || site_->set) return;
    const std::string& m = s.message();
    const bool at_key = !value.IsScalar() || m.starts_with(kUnknownField) || m.starts_with(kDuplicateField);
    site_->mark = at_key ? key.Mark() : value.Mark();
    site_->set = !site_->mark.is_null();
  }

  YAML::Node node_;
  ErrorSite* site_;
};

// A JSON document as the walker sees it: scalars keep the text YAML would read (numbers as written, true/false).
struct JsonValue {
  Kind kind = Kind::kNull;
  std::string text;               // kScalar
  std::vector<JsonValue> items;   // kSequence: the items; kMap: the values, in order
  std::vector<std::string> keys;  // kMap: the keys, parallel to items
};

class JsonView {
 public:
  explicit JsonView(const JsonValue& value) : value_(&value) {}
  Kind kind() const { return value_->kind; }
  const std::string& Scalar() const { return value_->text; }
  size_t size() const { return value_->items.size(); }
  JsonView operator[](size_t i) const { return JsonView(value_->items[i]); }
  template <typename F>
  Status ForEachEntry(F&& f) const {
    for (size_t i = 0; i < value_->items.size(); ++i) RETURN_IF_ERROR(f(&value_->keys[i], JsonView(value_->items[i])));
    return Status::Ok();
  }

 private:
  const JsonValue* value_;
};

template <typename N>
std::string_view KindName(const N& node) {
  switch (node.kind()) {
    case Kind::kNull:
      return "null";
    case Kind::kScalar:
      return "a scalar";
    case Kind::kSequence:
      return "a list";
    case Kind::kMap:
      return "a mapping";
    case Kind::kUndefined:
      break;
  }
  return "undefined";
}

template <typename N>
Result<std::string> ReadScalar(const N& node, const std::string& path, std::string_view what) {
  if (node.kind() != Kind::kScalar) {
    return InvalidArgumentError(path + " must be " + std::string(what) + ", not " + std::string(KindName(node)));
  }
  return node.Scalar();
}

template <typename N>
Result<std::string> ReadString(const N& node, const std::string& path, size_t min_len, size_t max_len) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "a string"));
  RETURN_IF_ERROR(CheckText(s, path, min_len, max_len));
  return s;
}

template <typename N>
Result<int64_t> ReadInt(const N& node, const std::string& path, int64_t lo, int64_t hi, std::string_view range) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "an integer"));
  Result<int64_t> n = ParseNonNegativeInt(s);
  if (!n.ok()) {
    if (!s.empty() && s[0] == '-' && ParseNonNegativeInt(std::string_view(s).substr(1)).ok()) {
      return InvalidArgumentError(path + " must be " + std::string(range) + " (got " + Printable(s) + ")");
    }
    return InvalidArgumentError(path + " must be an integer " + std::string(range) + ", not '" + Printable(s) + "'");
  }
  if (*n < lo || *n > hi) {
    return InvalidArgumentError(path + " must be " + std::string(range) + " (got " + std::to_string(*n) + ")");
  }
  return *n;
}

template <typename N>
Result<bool> ReadBool(const N& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "true or false"));
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return InvalidArgumentError(path + " must be true or false, not '" + Printable(s) + "'");
}

// A string or a list of strings.
template <typename N>
Result<std::vector<std::string>> ReadStringList(const N& node, const std::string& path) {
  std::vector<std::string> out;
  if (node.kind() == Kind::kScalar) {
    ASSIGN_OR_RETURN(std::string s, ReadString(node, path, 1, kMaxSelectorLength));
    out.push_back(std::move(s));
    return out;
  }
  if (node.kind() != Kind::kSequence) {
    return InvalidArgumentError(path + " must be a string or a list of strings, not " + std::string(KindName(node)));
  }
  if (node.size() > static_cast<size_t>(kMaxSelectorItems)) {
    return InvalidArgumentError(path + " must have at most " + std::to_string(kMaxSelectorItems) + " items");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, ReadString(node[i], path + "[" + std::to_string(i) + "]", 1, kMaxSelectorLength));
    out.push_back(std::move(s));
  }
  return out;
}

// Calls `field(key, value, path)` for every entry of a mapping, refusing non-scalar and duplicate keys.
template <typename N, typename F>
Status ForEachField(const N& map, const std::string& path, F&& field) {
  if (map.kind() != Kind::kMap) {
    return InvalidArgumentError((path.empty() ? std::string("the spec") : path) + " must be a mapping, not " +
                                std::string(KindName(map)));
  }
  std::set<std::string> seen;
  return map.ForEachEntry([&](const std::string* key, const N& value) -> Status {
    if (key == nullptr) {
      return InvalidArgumentError((path.empty() ? std::string("the spec") : path) + " has a key that is not a string");
    }
    const std::string child = Join(path, Printable(*key));
    if (!seen.insert(*key).second) return InvalidArgumentError(std::string(kDuplicateField) + child + "'");
    return field(*key, value, child);
  });
}

Status UnknownField(const std::string& path) { return InvalidArgumentError(std::string(kUnknownField) + path + "'"); }

template <typename N>
Result<int64_t> ReadMemory(const N& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "a memory size like \"8Gi\""));
  Result<int64_t> mib = ParseMemoryMiB(s);
  if (!mib.ok()) return InvalidArgumentError(path + ": " + Printable(mib.status().message(), 200));
  return *mib;
}

template <typename N>
Status ReadResources(const N& node, ResourceSpec* r) {
  return ForEachField(node, "resources", [r](const std::string& key, const N& v, const std::string& path) -> Status {
    if (key == "cpu") {
      ASSIGN_OR_RETURN(std::string s, ReadScalar(v, path, "a cpu amount like \"500m\" or 2"));
      Result<int64_t> milli = ParseCpuMilli(s);
      if (!milli.ok()) return InvalidArgumentError(path + ": " + Printable(milli.status().message(), 200));
      r->cpu_milli = *milli;
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
    } else if (key == "mig") {
      ASSIGN_OR_RETURN(r->mig, ReadString(v, path, 1, kMaxMigProfileLength));  // the name: ValidateJobSpec
    } else {
      return UnknownField(path);
    }
    return Status::Ok();
  });
}

template <typename N>
Status ReadCommand(const N& node, JobSpec* spec) {
  spec->command.clear();
  if (node.kind() == Kind::kScalar) {
    ASSIGN_OR_RETURN(std::string s, ReadString(node, "command", 1, kMaxShellCommandLength));
    spec->command.push_back(std::move(s));
    spec->command_is_shell = true;
    return Status::Ok();
  }
  if (node.kind() != Kind::kSequence) {
    return InvalidArgumentError("command must be a list of arguments or a string, not " + std::string(KindName(node)));
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

template <typename N>
Status ReadEnv(const N& node, JobSpec* spec) {
  if (node.kind() == Kind::kMap && node.size() > static_cast<size_t>(kMaxEnv)) {
    return InvalidArgumentError("env must have at most " + std::to_string(kMaxEnv) + " variables");
  }
  return ForEachField(node, "env", [spec](const std::string& key, const N& v, const std::string& path) -> Status {
    RETURN_IF_ERROR(CheckEnvName(key));
    ASSIGN_OR_RETURN(std::string value, ReadString(v, path, 0, kMaxEnvValueLength));
    spec->env[key] = std::move(value);
    return Status::Ok();
  });
}

// Seconds as an integer, or with a unit: "45s", "5m"; lo..hi.
template <typename N>
Result<int64_t> ReadSeconds(const N& node, const std::string& path, int64_t lo, int64_t hi) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "seconds"));
  std::string_view digits = s;
  int64_t scale = 1;
  if (!digits.empty() && (digits.back() == 's' || digits.back() == 'm')) {
    scale = digits.back() == 'm' ? 60 : 1;
    digits.remove_suffix(1);
  }
  Result<int64_t> n = ParseNonNegativeInt(digits);
  if (!n.ok() || *n > hi / scale || *n * scale < lo) {
    return InvalidArgumentError(path + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
                                " seconds (e.g. 30, \"45s\", \"5m\"), not '" + Printable(s) + "'");
  }
  return *n * scale;
}

template <typename N>
Result<int64_t> ReadGrace(const N& node, const std::string& path) {
  return ReadSeconds(node, path, 0, kMaxCheckpointGraceSeconds);
}

// A duration in seconds: an integer, or with a unit "90s", "30m", "8h"; 0 or lo..hi (allow_zero), else lo..hi.
template <typename N>
Result<int64_t> ReadDuration(const N& node, const std::string& path, int64_t lo, int64_t hi, bool allow_zero) {
  ASSIGN_OR_RETURN(std::string s, ReadScalar(node, path, "a duration"));
  std::string_view digits = s;
  int64_t scale = 1;
  if (!digits.empty() && (digits.back() == 's' || digits.back() == 'm' || digits.back() == 'h')) {
    scale = digits.back() == 'h' ? 3600 : digits.back() == 'm' ? 60 : 1;
    digits.remove_suffix(1);
  }
  Result<int64_t> n = ParseNonNegativeInt(digits);
  const bool fits = n.ok() && *n <= hi / scale && ((allow_zero && *n == 0) || *n * scale >= lo);
  if (!fits) {
    return InvalidArgumentError(path + " must be " + (allow_zero ? "0 (never) or " : "") + std::to_string(lo) + ".." +
                                std::to_string(hi) + " seconds (e.g. 3600, \"90m\", \"8h\"), not '" + Printable(s) +
                                "'");
  }
  return *n * scale;
}

template <typename N>
Status ReadInteractive(const N& node, const std::string& path, InteractiveSpec* out) {
  return ForEachField(node, path, [out](const std::string& key, const N& v, const std::string& p) -> Status {
    if (key == "port") {
      ASSIGN_OR_RETURN(int64_t port, ReadInt(v, p, 1, 65535, "1..65535"));
      out->port = static_cast<int>(port);
    } else if (key == "ttl") {
      ASSIGN_OR_RETURN(out->ttl_seconds, ReadDuration(v, p, kMinInteractiveSeconds, kMaxInteractiveSeconds, false));
    } else if (key == "idle-timeout") {
      ASSIGN_OR_RETURN(out->idle_timeout_seconds,
                       ReadDuration(v, p, kMinInteractiveSeconds, kMaxInteractiveSeconds, true));
    } else {
      return UnknownField(p);
    }
    return Status::Ok();
  });
}

// kind: batch | interactive, and the interactive block (which needs kind: interactive).
template <typename N>
Status ReadKind(const N& node, const std::string& path, bool* interactive) {
  ASSIGN_OR_RETURN(std::string kind, ReadScalar(node, path, "batch or interactive"));
  if (kind != "batch" && kind != "interactive") {
    return InvalidArgumentError("kind must be batch or interactive, not '" + Printable(kind) + "'");
  }
  *interactive = kind == "interactive";
  return Status::Ok();
}

template <typename N>
Status ReadTopLevel(const N& root, JobSpec* spec) {
  bool has_name = false, has_command = false, has_resources = false;
  bool kind_interactive = false;
  std::optional<InteractiveSpec> interactive;
  RETURN_IF_ERROR(ForEachField(root, "", [&](const std::string& key, const N& v, const std::string& path) -> Status {
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
    } else if (key == "retries") {
      ASSIGN_OR_RETURN(int64_t n, ReadInt(v, path, 0, kMaxRetries, "0..10"));
      spec->retries = static_cast<int>(n);
    } else if (key == "retry-backoff") {
      ASSIGN_OR_RETURN(int64_t seconds, ReadSeconds(v, path, 1, kMaxRetryBackoffSeconds));
      spec->retry_backoff_seconds = static_cast<int>(seconds);
    } else if (key == "image") {
      ASSIGN_OR_RETURN(spec->image, ReadScalar(v, path, "an image reference"));
      RETURN_IF_ERROR(CheckImage(spec->image));
    } else if (key == "kind") {
      RETURN_IF_ERROR(ReadKind(v, path, &kind_interactive));
    } else if (key == "interactive") {
      interactive.emplace();
      RETURN_IF_ERROR(ReadInteractive(v, path, &*interactive));
    } else if (key == "checkpoint") {
      RETURN_IF_ERROR(ForEachField(v, path, [spec](const std::string& k, const N& g, const std::string& p) -> Status {
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
  if (interactive && !kind_interactive) return InvalidArgumentError("interactive needs kind: interactive");
  if (kind_interactive) spec->interactive = interactive.value_or(InteractiveSpec{});
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

// Builds a JsonValue from nlohmann's SAX events. Refuses (returns false, so the caller falls back to yaml-cpp)
// what it cannot show exactly as YAML reads it: nesting deeper than any spec needs, long keys, binary values,
// and "-0" (read as the integer 0, but the scalar "-0" in YAML). nlohmann itself refuses numbers beyond a double
// (1e400): yaml-cpp reads those too.
class JsonBuilder {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;
  static constexpr size_t kMaxDepth = 16;
  // yaml-cpp refuses keys over 1,024 characters as written (a YAML limit); a key of 160 bytes is at most 962
  // characters with \uXXXX escapes and quotes. Longer ones (no field is named so) go to yaml-cpp.
  static constexpr size_t kMaxKeyBytes = 160;

  explicit JsonBuilder(std::string_view text) : text_(text) {}
  JsonValue& root() { return root_; }

  bool null() { return Add(Kind::kNull, ""); }
  bool boolean(bool v) { return Add(Kind::kScalar, v ? "true" : "false"); }
  bool number_integer(number_integer_t v) {
    return (v != 0 || !MayHaveMinusZero()) && Add(Kind::kScalar, std::to_string(v));
  }
  bool number_unsigned(number_unsigned_t v) {
    return (v != 0 || !MayHaveMinusZero()) && Add(Kind::kScalar, std::to_string(v));
  }
  bool number_float(number_float_t, const string_t& text) { return Add(Kind::kScalar, text); }
  bool string(string_t& v) { return Add(Kind::kScalar, std::move(v)); }
  bool binary(binary_t&) { return false; }
  bool start_object(size_t) { return Open(Kind::kMap); }
  bool key(string_t& k) {
    if (k.size() > kMaxKeyBytes) return false;
    open_.back()->keys.push_back(std::move(k));
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(Kind::kSequence); }
  bool end_array() { return Close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool MayHaveMinusZero() const { return text_.find("-0") != std::string_view::npos; }
  // The new value: the root, or the next item of the innermost open container (which does not grow while a child
  // of it is open, so the pointers in open_ stay valid).
  JsonValue* Next() {
    if (open_.empty()) return &root_;
    open_.back()->items.emplace_back();
    return &open_.back()->items.back();
  }
  bool Add(Kind kind, std::string text) {
    JsonValue* v = Next();
    v->kind = kind;
    v->text = std::move(text);
    return true;
  }
  bool Open(Kind kind) {
    if (open_.size() >= kMaxDepth) return false;
    JsonValue* v = Next();
    v->kind = kind;
    open_.push_back(v);
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  std::string_view text_;
  JsonValue root_;
  std::vector<JsonValue*> open_;
};

// yaml-cpp decodes a \uD800-\uDFFF escape on its own (no surrogate pairs); nlohmann pairs them. Such texts take
// the YAML path so both paths agree.
bool HasSurrogateEscape(std::string_view text) {
  for (size_t i = text.find("\\u"); i != std::string_view::npos; i = text.find("\\u", i + 1)) {
    if (i + 3 < text.size() && (text[i + 2] == 'd' || text[i + 2] == 'D') &&
        std::string_view("89abAB").find(text[i + 3]) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// Line breaks yaml-cpp reads differently from JSON (found by tests/fuzz/job_spec_fuzz): a CR without LF, and a
// key whose ':' is on a later line (a YAML implicit key must fit on one line). A raw line break is never inside a
// JSON string, so a break followed by blanks and ':' is such a key.
bool HasYamlLineBreakQuirk(std::string_view text) {
  for (size_t i = text.find_first_of("\r\n"); i != std::string_view::npos; i = text.find_first_of("\r\n", i + 1)) {
    if (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')) return true;
    const size_t next = text.find_first_not_of(" \t\r\n", i);
    if (next != std::string_view::npos && text[next] == ':') return true;
  }
  return false;
}

Status CheckSize(std::string_view text) {
  if (text.size() > kMaxJobSpecBytes) {
    return InvalidArgumentError("the spec is larger than " + std::to_string(kMaxJobSpecBytes) + " bytes");
  }
  if (!IsValidUtf8(text)) return InvalidArgumentError("the spec is not valid UTF-8");
  // Before any parser builds a tree of it (common/nesting.h).
  return CheckNesting(text, NestingSyntax::kYaml, "the spec");
}

// The key of the field at `path` ("resources.gpumem", "command[2]": the item) under `root`; a null mark when
// there is none. `node` moves down with reset(): assigning a YAML::Node would rewrite the node it
// shares with `root`.
YAML::Mark FieldMarkOrThrow(const YAML::Node& root, std::string_view path) {
  YAML::Node node = root;
  YAML::Mark mark = YAML::Mark::null_mark();
  while (!path.empty()) {
    const size_t dot = path.find('.');
    std::string_view segment = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    std::optional<size_t> index;
    if (const size_t open = segment.find('['); open != std::string_view::npos && segment.back() == ']') {
      Result<int64_t> i = ParseNonNegativeInt(segment.substr(open + 1, segment.size() - open - 2));
      if (i.ok()) index = static_cast<size_t>(*i);
      segment = segment.substr(0, open);
    }
    if (!node.IsMap()) return YAML::Mark::null_mark();
    bool found = false;
    for (const auto& entry : node) {
      if (entry.first.IsScalar() && entry.first.Scalar() == segment) {
        mark = entry.first.Mark();
        node.reset(entry.second);
        found = true;
        break;
      }
    }
    if (!found) return YAML::Mark::null_mark();
    if (index && node.IsSequence() && *index < node.size()) {
      const YAML::Node item = static_cast<const YAML::Node&>(node)[*index];
      node.reset(item);
      mark = node.Mark();
    }
  }
  return mark;
}

// FieldMarkOrThrow, or a null mark when yaml-cpp throws.
YAML::Mark FieldMark(const YAML::Node& root, std::string_view path) {
  try {
    return FieldMarkOrThrow(root, path);
  } catch (const std::exception&) {
    return YAML::Mark::null_mark();
  }
}

// The field path an error message opens with ("resources.gpumem must be ..." -> "resources.gpumem").
std::string_view LeadingPath(std::string_view message) {
  const size_t end = message.find_first_of(" :");
  return message.substr(0, end);
}

// ParseWithYaml, marking `site` (may be null) with where the error lies when there is one.
Result<JobSpec> ParseYaml(std::string_view text, ErrorSite* site) {
  RETURN_IF_ERROR(CheckSize(text));
  JobSpec spec;
  YAML::Node root;
  try {
    const std::string owned(text);
    if (HasSeveralDocuments(owned)) return InvalidArgumentError("the spec must be a single YAML document");
    root = YAML::Load(owned);
    if (!root.IsDefined() || root.IsNull()) return InvalidArgumentError("the spec is empty");
    RETURN_IF_ERROR(ReadTopLevel(YamlView(root, site), &spec));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgumentError("malformed YAML/JSON: " + Printable(e.msg, 200));
    if (site != nullptr && !site->set) *site = ErrorSite{true, e.mark};
    return InvalidArgumentError("malformed YAML/JSON at line " + std::to_string(e.mark.line + 1) + ", column " +
                                std::to_string(e.mark.column + 1) + ": " + Printable(e.msg, 200));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("malformed YAML/JSON: ") + Printable(e.what(), 200));
  }
  Status valid = ValidateJobSpec(spec);
  if (!valid.ok() && site != nullptr && !site->set) {
    // The limits are checked on the spec, not the text: the field the message opens with is where to look.
    site->mark = FieldMark(root, LeadingPath(valid.message()));
    site->set = !site->mark.is_null();
  }
  RETURN_IF_ERROR(valid);
  return spec;
}

}  // namespace

namespace job_spec_parse {

Result<JobSpec> ParseWithYaml(std::string_view text) { return ParseYaml(text, nullptr); }

std::optional<Result<JobSpec>> ParseAsJson(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return std::nullopt;
  if (Status s = CheckSize(text); !s.ok()) return Result<JobSpec>(s);
  // nlohmann's lexer ends the input at a NUL byte (what follows would be ignored); yaml-cpp reads all of it.
  if (HasSurrogateEscape(text) || HasYamlLineBreakQuirk(text) || text.find('\0') != std::string_view::npos) {
    return std::nullopt;
  }
  JsonBuilder builder(text);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                                 /*strict=*/true)) {
    return std::nullopt;  // not JSON (a YAML flow mapping, say), or not readable exactly: yaml-cpp decides
  }
  JobSpec spec;
  RETURN_IF_ERROR(ReadTopLevel(JsonView(builder.root()), &spec));
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  return spec;
}

}  // namespace job_spec_parse

Result<JobSpec> ParseJobSpec(std::string_view text) {
  std::optional<Result<JobSpec>> json = job_spec_parse::ParseAsJson(text);
  if (json) return std::move(*json);
  return job_spec_parse::ParseWithYaml(text);
}

Result<JobSpec> ParseJobSpecAt(std::string_view text, TextPosition* where) {
  Result<JobSpec> spec = ParseJobSpec(text);
  if (spec.ok() || where == nullptr) return spec;
  // The YAML reader gives the JSON fast path's error too (job_spec_test.cc and tests/fuzz hold the two to it),
  // and it knows where each node was written.
  ErrorSite site;
  (void)ParseYaml(text, &site);
  *where = site.set ? TextPosition{site.mark.line + 1, site.mark.column + 1} : TextPosition{1, 1};
  return spec;
}

TextPosition LocateJobSpecField(std::string_view text, std::string_view path) {
  if (!CheckSize(text).ok()) return {};
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    const YAML::Mark mark = FieldMark(root, path);
    if (mark.is_null()) return {};
    return TextPosition{mark.line + 1, mark.column + 1};
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace xpool
