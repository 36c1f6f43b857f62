#pragma once
// Small text helpers more than one component needs (k8s JSON field lookup, the simulator's qos names, MIG
// geometry texts).
// Header-only; stateless and thread-safe.
#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

namespace xpool {

// True when `a` and `b` are equal ignoring ASCII case.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// `text` cut at every `sep` (an empty text is one empty part; views into `text`).
inline std::vector<std::string_view> SplitText(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  for (size_t begin = 0;;) {
    const size_t end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// Parses a whole decimal int (no sign, no spaces); false when `text` is anything else or out of range.
inline bool ParseWholeInt(std::string_view text, int* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace xpool
