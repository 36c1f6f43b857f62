// The runtime library's log: one line to stderr per event, prefixed "[xpool-vgpu <pid>] <level>:". The level is
// read once from XPOOL_VGPU_LOG_LEVEL (error, warn, info, debug; default warn) and never on a hot path.
// Thread-safe (one write(2) per line).
#pragma once

namespace xpool::vgpu {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void InitLogLevelFromEnv();
bool LogEnabled(LogLevel level);
void Log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace xpool::vgpu
