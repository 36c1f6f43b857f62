#pragma once
// How the user CLI prints what the server answers: the -o formats (a table, a wide table, JSON, YAML), aligned
// tables, and the one display style for amounts (common/units.h: GiB with one decimal, CPU in cores, GPU shares
// in percent). Stateless functions; thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml };

// "" (a table), "wide", "json" or "yaml"; anything else is InvalidArgument naming -o and the choices.
Result<OutputFormat> ParseOutputFormat(std::string_view text);

// Rows under headers, each column as wide as its widest cell, two spaces apart.
void PrintTable(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

// `doc` as YAML (block style; strings quoted where YAML needs it).
std::string ToYaml(const nlohmann::json& doc);

// Prints `doc` as JSON (indented) or YAML; returns 0. For kJson and kYaml only.
int PrintDocument(const nlohmann::json& doc, OutputFormat format);

// "used/capacity" cells: "1.3/23.5" (GiB), "0.1/2" (cores).
std::string GiBPair(int64_t used_mib, int64_t capacity_mib);
std::string CoresPair(int64_t used_milli, int64_t capacity_milli);

}  // namespace xpool::cli
