#pragma once
// Reading the boxed tables vendors' management tools print in nvidia-smi's style (npu-smi, cnmon, ixsmi, mx-smi):
//
//   +-------------------------------+----------------------+          <- top border
//   | GPU  Name                     | Bus-Id               |          <- header row 1 (found by its marker words)
//   | Fan  Temp  Perf  Pwr:Usage/Cap|      Memory-Usage    |          <- header row 2
//   |===============================+======================|          <- end of the header
//   | 0    Iluvatar BI-V100         | 00000000:14:00.0     |          <- record 1, as many rows as the header
//   | 0%   31C   P0    54W / 250W   | 513MiB / 32768MiB    |
//   +-------------------------------+----------------------+          <- between records ('-' or '=')
//
// Lines are trimmed first (indentation, trailing blanks, CR). The device table ends at a line that is not part of a
// table (a blank line) or at a row that mentions "Process" (the process table some tools print right after).
// Errors name the tool and the line: a row not closed by '|', a row whose column count differs from the header's,
// a header without its '====' line, a record shorter than the header (the output was cut short).
// Pure functions; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::agent::internal {

struct SmiRow {
  int line = 0;                    // 1-based line number in the tool's output
  std::vector<std::string> cells;  // the text between '|'s, trimmed
};

struct SmiTable {
  std::vector<SmiRow> header;                // the header rows
  std::vector<std::vector<SmiRow>> records;  // each record has header.size() rows
};

// The first table whose header row contains every word of `markers`. `tool` names the tool in errors. An
// output with no such table is an error that quotes the output's first line (often the tool's own error).
Result<SmiTable> ReadSmiTable(std::string_view text, std::string_view tool, const std::vector<std::string>& markers);

// The whitespace-separated words of `text`.
std::vector<std::string> Words(std::string_view text);

// The totals of the "used / total" pairs in `cell`, in order: "0 MiB/ 23374 MiB" → {23374}; "0    / 0   3161 /
// 65536" → {0, 65536}. A unit right after a number ("114MiB / 32768MiB") is skipped; a side that is not a number
// ("N/A") makes no pair.
std::vector<int64_t> UsageTotals(std::string_view cell);

// A device index: a non-negative decimal number below 1024. InvalidArgument names `where` and the text.
Result<int> ParseDeviceIndex(std::string_view text, const std::string& where);

// "<tool> line <n>: " for errors.
std::string LineRef(std::string_view tool, int line);

}  // namespace xpool::agent::internal
