#pragma once
// The line and field splitting the simulator's CSV readers share (trace.cc: node and pod lists; report.cc: the
// published results). Header-only, internal to xpool_sim; stateless.
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::sim::internal {

// The fields of `line` between `sep`s (empty fields kept; one field when there is no `sep`).
inline std::vector<std::string_view> SplitFields(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

// Iterates the lines of `text`, dropping a trailing '\r' and skipping blank lines; calls fn(line, line_no)
// (line_no from 1, blank lines counted) and stops at the first error it returns.
template <typename Fn>
Status ForEachLine(std::string_view text, Fn fn) {
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    RETURN_IF_ERROR(fn(line, line_no));
  }
  return Status::Ok();
}

}  // namespace xpool::sim::internal
