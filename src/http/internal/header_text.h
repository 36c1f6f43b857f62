#pragma once
// The text rules of HTTP/1.1 header lines that both the request parser and the client apply: optional
// whitespace around a value (RFC 9110 §5.5) and case-insensitive names (kept lower-cased). Header-only,
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

}  // namespace xpool::http::internal
