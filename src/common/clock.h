#pragma once
// Clock: where time comes from. Code that needs the time takes a Clock& so tests and the simulator can use a
// FakeClock. Times are int64 microseconds since the Unix epoch.
//
// RealClock is stateless and thread-safe. FakeClock is thread-safe (atomic); only tests and the simulator move it.
#include <atomic>
#include <cstdint>

namespace xpool {

using TimeMicros = int64_t;
inline constexpr TimeMicros kMicrosPerSecond = 1'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMicros NowMicros() const = 0;
};

class RealClock final : public Clock {
 public:
  TimeMicros NowMicros() const override;
  // The process-wide real clock (stateless, so sharing it is safe).
  static RealClock& Instance();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimeMicros start = 0) : now_(start) {}
  TimeMicros NowMicros() const override { return now_.load(std::memory_order_relaxed); }
  void Set(TimeMicros t) { now_.store(t, std::memory_order_relaxed); }
  void Advance(TimeMicros delta) { now_.fetch_add(delta, std::memory_order_relaxed); }

 private:
  std::atomic<TimeMicros> now_;
};

}  // namespace xpool
