#include "common/clock.h"

#include <chrono>

namespace xpool {

TimeMicros RealClock::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RealClock& RealClock::Instance() {
  static RealClock clock;
  return clock;
}

}  // namespace xpool
