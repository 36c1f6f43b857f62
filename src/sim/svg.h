#pragma once
// A small SVG line chart of the fill experiment: GPU allocation % (y) vs arrived workload % (x), one line per
// policy (mean over its runs of each workload shown), and the published FGD curve dashed when the workload is
// in the published results. Pure function; thread-safe.
#include <string>
#include <vector>

#include "sim/report.h"

namespace xpool::sim {

std::string AllocationSvg(const std::vector<FillRun>& runs, const std::vector<PublishedRow>& published);

}  // namespace xpool::sim
