#pragma once
// The fill curves' sampling rule, shared by RunFill (fill.cc) and RunMigFill (mig_fill.cc): a curve has a point at
// every whole percent of arrived GPU (0..tune), and each point is the state before the first arrival that passes
// it, so allocation at p never exceeds p. Header-only; stateless.
#include <cstdint>

#include "sim/fill.h"

namespace xpool::sim::internal {

// Calls record() for every point p not yet in `curve` with p × capacity < arrived_after_milli × 100 (`points` =
// tune + 1 in all); record() appends one point to the curve.
template <typename Record>
void RecordPassedPoints(const FillCurve& curve, int points, int64_t arrived_after_milli, Record&& record) {
  while (static_cast<int>(curve.allocation_pct.size()) < points &&
         static_cast<int64_t>(curve.allocation_pct.size()) * curve.gpu_capacity_milli < arrived_after_milli * 100) {
    record();
  }
}

}  // namespace xpool::sim::internal
