#include "vgpu/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

#include "vgpu/vgpu_env.h"

namespace xpool::vgpu {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
const char* const kLevelNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void InitLogLevelFromEnv() {
  const char* value = getenv(XPOOL_ENV_VGPU_LOG_LEVEL);
  if (value == nullptr) return;
  for (int i = 0; i < 4; ++i) {
    if (strcmp(value, kLevelNames[i]) == 0) {
      g_level.store(i, std::memory_order_relaxed);
      return;
    }
  }
}

bool LogEnabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void Log(LogLevel level, const char* format, ...) {
  if (!LogEnabled(level)) return;
  char line[512];
  int n = snprintf(line, sizeof(line), "[xpool-vgpu %d] %s: ", static_cast<int>(getpid()),
                   kLevelNames[static_cast<int>(level)]);
  if (n < 0) return;
  va_list ap;
  va_start(ap, format);
  int m = vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, format, ap);
  va_end(ap);
  if (m < 0) return;
  size_t len = strlen(line);
  line[len] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len + 1);
  (void)ignored;
}

}  // namespace xpool::vgpu
