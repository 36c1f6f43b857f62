#pragma once
// The text rules of HTTP/1.1 header lines that the request parser, the client and gzip's Accept-Encoding check
// apply: optional whitespace around a value (RFC 9110 §5.5), case-insensitive names (kept lower-cased) and
// comma-separated lists. Header-only,
// stateless, thread-safe.
#include <string>
#include <string_view>

namespace xpool::http::internal {

// `s` without leading and trailing spaces and tabs.
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// `s` with ASCII A-Z lower-cased.
inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Calls `f` with each comma-separated element of a list-valued header (RFC 9110 §5.6.1), trimmed; empty elements
// are skipped.
template <typename F>
void ForEachListElement(std::string_view value, F&& f) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view item = TrimBlanks(value.substr(0, comma));
    if (!item.empty()) f(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace xpool::http::internal
