#pragma once
// Helpers to read SqlRow columns (text) as typed values. Private to src/store. Stateless; thread-safe.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/internal/clip.h"
#include "store/internal/sql_backend.h"

namespace xpool::store_internal {

inline int64_t ColInt(const SqlRow& row, size_t i) {
  if (i >= row.size() || !row[i]) return 0;
  const std::string& s = *row[i];
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

inline std::string ColText(const SqlRow& row, size_t i) {
  if (i >= row.size() || !row[i]) return {};
  return *row[i];
}

inline bool ColNull(const SqlRow& row, size_t i) { return i >= row.size() || !row[i]; }

// Booleans are stored as INTEGER 0/1 in both dialects.
inline bool ColBool(const SqlRow& row, size_t i) { return ColInt(row, i) != 0; }

// A caller-supplied name cut to 64 bytes with anything but printable ASCII replaced by '?', safe to echo in an
// error message (API answers are JSON, which must be valid UTF-8).
inline std::string Printable(std::string_view text) {
  std::string out(text.substr(0, 64));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

inline SqlValue Bool(bool b) { return SqlValue::Int(b ? 1 : 0); }
inline SqlValue Text(std::string_view s) { return SqlValue::Text(std::string(s)); }
inline SqlValue Int(int64_t v) { return SqlValue::Int(v); }

}  // namespace xpool::store_internal
