#pragma once
// Parsing of the quantities users write, with errors that name what was wrong.
//
//   memory:  "8Gi", "8192Mi", "1Ti", "512Ki" (must be whole MiB), "8G"/"500M" (decimal, rounded up to MiB),
//            a bare integer = MiB.
//   cpu:     "500m" (millicores), "2" (cores), "1.5" (cores, at most 3 decimals).
//   percent: "50%" or "50", an integer 0..100.
// Stateless functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/quantity.h"
#include "common/status.h"

namespace xpool {

Result<int64_t> ParseMemoryMiB(std::string_view text);
Result<Quantity> ParseCpu(std::string_view text);
Result<int> ParsePercent(std::string_view text);
// A non-negative decimal integer with no sign, spaces or suffix.
Result<int64_t> ParseNonNegativeInt(std::string_view text);

// 8192 → "8Gi", 1536 → "1536Mi".
std::string FormatMemoryMiB(int64_t mib);

}  // namespace xpool
