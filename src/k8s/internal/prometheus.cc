#include "k8s/internal/prometheus.h"

#include <cstdlib>
#include <map>
#include <set>

namespace xpool::k8s::internal {

std::string PromLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string DeviceLabels(const std::string& node, const std::string& uuid, int index, const std::string& model) {
  const std::string n = PromLabel(node);
  const std::string u = PromLabel(uuid);
  return "node=\"" + n + "\",nodeid=\"" + n + "\",Hostname=\"" + n + "\",deviceuuid=\"" + u + "\",UUID=\"" + u +
         "\",deviceidx=\"" + std::to_string(index) + "\",model=\"" + PromLabel(model) + "\",gpu=\"" +
         std::to_string(index) + "\",device=\"nvidia" + std::to_string(index) + "\"";
}

std::string PodLabels(const std::string& pod_key, const std::string& pod_uid, const std::string& container) {
  const size_t slash = pod_key.find('/');
  const std::string ns = slash == std::string::npos ? "" : pod_key.substr(0, slash);
  const std::string pod = slash == std::string::npos ? pod_key : pod_key.substr(slash + 1);
  return "podnamespace=\"" + PromLabel(ns) + "\",podname=\"" + PromLabel(pod) + "\",poduid=\"" + PromLabel(pod_uid) +
         "\",container=\"" + PromLabel(container) + "\"";
}

std::string MilliText(int64_t milli) {
  const std::string sign = milli < 0 ? "-" : "";
  const uint64_t m = milli < 0 ? 0 - static_cast<uint64_t>(milli) : static_cast<uint64_t>(milli);
  const std::string frac = std::to_string(m % 1000);
  return sign + std::to_string(m / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

std::string PromHeader(const std::string& name, const std::string& help, const std::string& type) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

namespace {

bool NameChar(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

// Reads a metric (colon allowed) or label name at `pos`; empty when there is none.
std::string_view Name(std::string_view line, size_t* pos, bool colon) {
  const size_t start = *pos;
  while (*pos < line.size() && NameChar(line[*pos], *pos == start, colon)) ++*pos;
  return line.substr(start, *pos - start);
}

// The label set of a sample from `{` to `}` (canonical text for duplicate detection), or an error.
Result<std::string> Labels(std::string_view line, size_t* pos) {
  std::set<std::string> seen;
  std::string out;
  ++*pos;  // '{'
  while (*pos < line.size() && line[*pos] != '}') {
    const std::string_view name = Name(line, pos, false);
    if (name.empty()) return InvalidArgumentError("bad label name");
    if (!seen.insert(std::string(name)).second) return InvalidArgumentError("label " + std::string(name) + " twice");
    if (line.substr(*pos, 2) != "=\"") return InvalidArgumentError("expected =\" after " + std::string(name));
    *pos += 2;
    std::string value;
    for (; *pos < line.size() && line[*pos] != '"'; ++*pos) {
      if (line[*pos] == '\\') {
        if (*pos + 1 >= line.size() || std::string_view("\\\"n").find(line[*pos + 1]) == std::string_view::npos)
          return InvalidArgumentError("bad escape in label " + std::string(name));
        ++*pos;
      }
      value += line[*pos];
    }
    if (*pos >= line.size()) return InvalidArgumentError("unterminated value of label " + std::string(name));
    ++*pos;  // closing quote
    out += std::string(name) + "=" + value + "\x1f";
    if (*pos < line.size() && line[*pos] == ',') ++*pos;
  }
  if (*pos >= line.size()) return InvalidArgumentError("no closing }");
  ++*pos;
  return out;
}

bool Number(std::string_view text) {
  if (text == "NaN" || text == "+Inf" || text == "-Inf") return true;
  const std::string s(text);
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

}  // namespace

Status CheckExposition(std::string_view text) {
  std::map<std::string, bool> typed;  // family → has samples yet
  std::set<std::string> series;
  size_t number = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) return InvalidArgumentError("the text does not end with a newline");
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    ++number;
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError("line " + std::to_string(number) + " (" + std::string(line) + "): " + why);
    };
    if (line.rfind("# ", 0) == 0) {
      size_t pos = 2;
      const std::string_view keyword = Name(line, &pos, false);
      if (keyword != "HELP" && keyword != "TYPE") continue;  // other comments are allowed
      if (pos >= line.size() || line[pos] != ' ') return bad("expected a name after " + std::string(keyword));
      ++pos;
      const std::string name(Name(line, &pos, true));
      if (name.empty() || pos >= line.size() || line[pos] != ' ') return bad("bad metric name");
      if (keyword == "TYPE") {
        const std::string_view type = line.substr(pos + 1);
        if (type != "gauge" && type != "counter" && type != "untyped" && type != "histogram" && type != "summary")
          return bad("unknown type");
        if (typed.count(name) != 0) return bad("second TYPE for " + name);
        typed[name] = false;
      }
      continue;
    }
    size_t pos = 0;
    const std::string name(Name(line, &pos, true));
    if (name.empty()) return bad("bad metric name");
    if (typed.count(name) == 0) return bad("sample of " + name + " without a TYPE before it");
    std::string labels;
    if (pos < line.size() && line[pos] == '{') {
      Result<std::string> l = Labels(line, &pos);
      if (!l.ok()) return bad(l.status().message());
      labels = *l;
    }
    if (pos >= line.size() || line[pos] != ' ') return bad("expected a space before the value");
    if (!Number(line.substr(pos + 1))) return bad("the value is not a number");
    if (!series.insert(name + "\x1e" + labels).second) return bad("the same series twice");
  }
  return Status::Ok();
}

}  // namespace xpool::k8s::internal
