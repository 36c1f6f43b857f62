#include "cli/output.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/units.h"

namespace xpool::cli {
namespace {

using nlohmann::json;

// True when a YAML reader would take the plain scalar `s` for something other than a string.
bool LooksTyped(const std::string& s) {
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  if (s.empty()) return true;
  // Numbers, times and dates all start with a digit, a sign or a dot.
  return std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.';
}

void Emit(YAML::Emitter& out, const json& j) {
  if ((j.is_object() || j.is_array()) && j.empty()) {
    out << YAML::Flow << (j.is_object() ? YAML::BeginMap : YAML::BeginSeq)
        << (j.is_object() ? YAML::EndMap : YAML::EndSeq);  // "[]" / "{}" on the key's line
  } else if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      Emit(out, it.value());
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const json& e : j) Emit(out, e);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (LooksTyped(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();  // numbers and booleans as JSON writes them
  }
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text.empty()) return OutputFormat::kTable;
  if (text == "wide") return OutputFormat::kWide;
  if (text == "json") return OutputFormat::kJson;
  if (text == "yaml") return OutputFormat::kYaml;
  return InvalidArgumentError("-o: unknown output format \"" + std::string(text) + "\" (wide, json or yaml)");
}

void PrintTable(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) width[i] = headers[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t i = 0; i < headers.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      if (i + 1 < headers.size()) cell.resize(width[i], ' ');
      line += cell;
      if (i + 1 < headers.size()) line += "  ";
    }
    std::printf("%s\n", line.c_str());
  };
  print_row(headers);
  for (const auto& r : rows) print_row(r);
}

std::string ToYaml(const json& doc) {
  YAML::Emitter out;
  Emit(out, doc);
  return out.c_str();
}

int PrintDocument(const json& doc, OutputFormat format) {
  if (format == OutputFormat::kYaml) {
    std::printf("%s\n", ToYaml(doc).c_str());
  } else {
    std::printf("%s\n", doc.dump(2).c_str());
  }
  return 0;
}

std::string GiBPair(int64_t used_mib, int64_t capacity_mib) {
  return FormatGiB(used_mib) + "/" + FormatGiB(capacity_mib);
}

std::string CoresPair(int64_t used_milli, int64_t capacity_milli) {
  return FormatMilliUnits(used_milli) + "/" + FormatMilliUnits(capacity_milli);
}

}  // namespace xpool::cli
