#pragma once
// How the store cuts the free text it keeps (reasons, labels): one rule for the SQL store and the job cache in
// front of it (store/caching_state_store.h), so both hold the same text. Private to src/store. Stateless.
#include <cstddef>
#include <string>
#include <string_view>

namespace xpool::store_internal {

// A reason is for people; the store is not a log sink.
inline constexpr size_t kMaxReasonBytes = 4096;

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
inline std::string ClipUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

// A reason (or label) as the store keeps it.
inline std::string ClipReason(std::string_view reason) { return ClipUtf8(reason, kMaxReasonBytes); }

}  // namespace xpool::store_internal
