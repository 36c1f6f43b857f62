#pragma once
// StrongId<Tag>: an int64 identifier that does not mix with other kinds of ids or plain integers.
// A value type; thread-compatible.
#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace xpool {

template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(int64_t value) : value_(value) {}
  constexpr int64_t value() const { return value_; }
  constexpr bool valid() const { return value_ > 0; }
  std::string ToString() const { return std::to_string(value_); }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  int64_t value_ = 0;  // 0 = unset
};

struct JobIdTag {};
struct TenantIdTag {};
struct TaskIdTag {};
using JobId = StrongId<JobIdTag>;
using TenantId = StrongId<TenantIdTag>;
using TaskId = StrongId<TaskIdTag>;

}  // namespace xpool

template <typename Tag>
struct std::hash<xpool::StrongId<Tag>> {
  size_t operator()(const xpool::StrongId<Tag>& id) const noexcept { return std::hash<int64_t>()(id.value()); }
};
