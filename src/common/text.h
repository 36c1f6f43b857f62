#pragma once
// Small text helpers more than one component needs (k8s JSON field lookup, the simulator's qos names).
// Header-only; stateless and thread-safe.
#include <cctype>
#include <string_view>

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

}  // namespace xpool
