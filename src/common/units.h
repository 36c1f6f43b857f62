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

#include "common/status.h"

namespace xpool {

Result<int64_t> ParseMemoryMiB(std::string_view text);
// CPU as millicores: "500m", "2", "1.5" (at most three decimals).
Result<int64_t> ParseCpuMilli(std::string_view text);
Result<int> ParsePercent(std::string_view text);
// A non-negative decimal integer with no sign, spaces or suffix.
Result<int64_t> ParseNonNegativeInt(std::string_view text);

// 8192 → "8Gi", 1536 → "1536Mi" (exact; the form specs and flags are written in).
std::string FormatMemoryMiB(int64_t mib);

// The one style for showing amounts to people (CLI tables, reasons, events):
// GiB with one decimal, rounded to nearest: 81920 → "80.0", 1536 → "1.5", 64 → "0.1", 0 → "0.0".
std::string FormatGiB(int64_t mib);
// Whole units from milli-units, at most 3 decimals, no trailing zeros: 2000 → "2", 1700 → "1.7",
// 250 → "0.25" (CPU cores, devices).
std::string FormatMilliUnits(int64_t milli);
// A share of one device from milli-devices: 500 → "50%", 1000 → "100%", 5 → "0.5%".
std::string FormatDevicePercent(int64_t milli);

}  // namespace xpool
