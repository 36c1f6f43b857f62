#include "agent/vendor/internal/smi_table.h"

#include <cctype>

namespace xpool::agent::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsTableLine(std::string_view line) { return !line.empty() && (line.front() == '|' || line.front() == '+'); }

// "+----+----+", "|====+====|", "|----+----|": nothing but border characters.
bool IsSeparator(std::string_view line) {
  bool rule = false;
  for (char c : line) {
    if (c == '-' || c == '=') {
      rule = true;
    } else if (c != '|' && c != '+' && c != ' ') {
      return false;
    }
  }
  return rule;
}

bool IsHeaderEnd(std::string_view line) { return IsSeparator(line) && line.find('=') != std::string_view::npos; }

Result<SmiRow> SplitRow(std::string_view line, int number, std::string_view tool) {
  if (line.size() < 2 || line.front() != '|' || line.back() != '|') {
    return InvalidArgumentError(LineRef(tool, number) +
                                "a table row must start and end with '|' (output cut short?): " + std::string(line));
  }
  SmiRow row;
  row.line = number;
  std::string_view rest = line.substr(1, line.size() - 2);
  while (true) {
    const size_t bar = rest.find('|');
    row.cells.emplace_back(Trim(rest.substr(0, bar)));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return row;
}

bool HasAllWords(const std::vector<std::string>& words, const std::vector<std::string>& markers) {
  for (const std::string& m : markers) {
    bool found = false;
    for (const std::string& w : words) found = found || w == m;
    if (!found) return false;
  }
  return true;
}

std::string FirstLine(std::string_view text) {
  text = Trim(text);
  std::string line(Trim(text.substr(0, text.find('\n'))));
  if (line.size() > 120) line = line.substr(0, 120) + "...";
  return line;
}

}  // namespace

std::string LineRef(std::string_view tool, int line) {
  return std::string(tool) + " line " + std::to_string(line) + ": ";
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

std::vector<int64_t> UsageTotals(std::string_view cell) {
  std::vector<int64_t> totals;
  for (size_t slash = cell.find('/'); slash != std::string_view::npos; slash = cell.find('/', slash + 1)) {
    // Left: skip blanks and a unit, then there must be a digit.
    size_t l = slash;
    while (l > 0 && cell[l - 1] == ' ') --l;
    while (l > 0 && std::isalpha(static_cast<unsigned char>(cell[l - 1]))) --l;
    while (l > 0 && cell[l - 1] == ' ') --l;
    if (l == 0 || !std::isdigit(static_cast<unsigned char>(cell[l - 1]))) continue;
    // Right: skip blanks, then a number.
    size_t r = slash + 1;
    while (r < cell.size() && cell[r] == ' ') ++r;
    int64_t total = 0;
    size_t digits = 0;
    while (r < cell.size() && std::isdigit(static_cast<unsigned char>(cell[r])) && digits < 15) {
      total = total * 10 + (cell[r] - '0');
      ++r;
      ++digits;
    }
    if (digits > 0) totals.push_back(total);
  }
  return totals;
}

Result<int> ParseDeviceIndex(std::string_view text, const std::string& where) {
  int value = 0;
  if (text.empty() || text.size() > 4) {
    return InvalidArgumentError(where + "expected a device index, found \"" + std::string(text) + "\"");
  }
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return InvalidArgumentError(where + "expected a device index, found \"" + std::string(text) + "\"");
    }
    value = value * 10 + (c - '0');
  }
  if (value >= 1024) return InvalidArgumentError(where + "device index " + std::string(text) + " is out of range");
  return value;
}

Result<SmiTable> ReadSmiTable(std::string_view text, std::string_view tool, const std::vector<std::string>& markers) {
  enum class Stage { kSearching, kHeader, kRecords } stage = Stage::kSearching;
  SmiTable table;
  std::vector<SmiRow> record;
  int number = 0;
  // Closes the record being read; a record with fewer rows than the header means the output stopped early.
  auto close_record = [&]() -> Status {
    if (record.empty()) return Status::Ok();
    if (record.size() != table.header.size()) {
      return InvalidArgumentError(LineRef(tool, record.back().line) + "the device's record has " +
                                  std::to_string(record.size()) + " row(s), the header " +
                                  std::to_string(table.header.size()) + " (output cut short?)");
    }
    table.records.push_back(std::move(record));
    record.clear();
    return Status::Ok();
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = Trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++number;
    if (stage == Stage::kSearching) {
      if (!IsTableLine(line) || IsSeparator(line)) continue;
      if (!HasAllWords(Words(line), markers)) continue;
      ASSIGN_OR_RETURN(SmiRow row, SplitRow(line, number, tool));
      table.header.push_back(std::move(row));
      stage = Stage::kHeader;
      continue;
    }
    if (stage == Stage::kHeader) {
      if (!IsTableLine(line)) {
        return InvalidArgumentError(LineRef(tool, number) +
                                    "the table's header ends before its '====' line (output cut short?)");
      }
      if (IsHeaderEnd(line)) {
        stage = Stage::kRecords;
      } else if (!IsSeparator(line)) {
        ASSIGN_OR_RETURN(SmiRow row, SplitRow(line, number, tool));
        table.header.push_back(std::move(row));
      }
      continue;
    }
    if (!IsTableLine(line) || line.find("Process") != std::string_view::npos) break;
    if (IsSeparator(line)) {
      RETURN_IF_ERROR(close_record());
      continue;
    }
    ASSIGN_OR_RETURN(SmiRow row, SplitRow(line, number, tool));
    if (record.size() == table.header.size()) {
      return InvalidArgumentError(LineRef(tool, number) + "a device's record has more rows than the header's " +
                                  std::to_string(table.header.size()));
    }
    const SmiRow& head = table.header[record.size()];
    if (row.cells.size() != head.cells.size()) {
      return InvalidArgumentError(LineRef(tool, number) + std::to_string(row.cells.size()) +
                                  " column(s) where the header (line " + std::to_string(head.line) + ") has " +
                                  std::to_string(head.cells.size()));
    }
    record.push_back(std::move(row));
  }
  if (stage == Stage::kSearching) {
    std::string wanted;
    for (const std::string& m : markers) wanted += (wanted.empty() ? "" : " ") + m;
    const std::string first = FirstLine(text);
    return InvalidArgumentError("no device table (a header with \"" + wanted + "\") in the output of " +
                                std::string(tool) + (first.empty() ? " (it printed nothing)" : ": \"" + first + "\""));
  }
  if (stage == Stage::kHeader) {
    return InvalidArgumentError(LineRef(tool, number) +
                                "the output ends inside the table's header (output cut short?)");
  }
  RETURN_IF_ERROR(close_record());
  return table;
}

}  // namespace xpool::agent::internal
