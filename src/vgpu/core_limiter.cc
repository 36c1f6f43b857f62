// The compute limiter (runtime.h): one sampler thread per process refills each limited device's launch budget
// every 10 ms and, every 100 ms, feeds the task's measured SM utilisation (NVML process samples of the task's
// pids) to that device's ShareController (share_controller.h).
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "vgpu/internal/dl.h"
#include "vgpu/internal/real_table.h"
#include "vgpu/internal/reentrant_once.h"
#include "vgpu/log.h"
#include "vgpu/runtime.h"
#include "vgpu/share_controller.h"
#include "vgpu/vgpu_env.h"

namespace xpool::vgpu {
namespace {

constexpr int kRefillMs = 10;
constexpr int kRefillsPerSample = 10;
constexpr int kMaxSamples = 1024;

struct DeviceLimiter {
  bool active = false;
  ShareController* controller = nullptr;
  LaunchBudget budget;
  unsigned long long last_seen_us = 0;
  int failed_samples = 0;  // consecutive periods without a measurement
};

// Without a measurement the limiter cannot know the share; throttling blind at an arbitrary rate would be worse
// than not throttling, so after this many periods it opens up (and says so once).
constexpr int kBlindPeriods = 5;

DeviceLimiter g_devices[kMaxDevices];
std::atomic<bool> g_thread_running{false};
std::atomic<uint64_t> g_heartbeat{0};  // sampler ticks: a waiting launch gives up only if these stop
ReentrantOnce g_nvml_once;

void SleepMs(int ms) {
  struct timespec ts {
    ms / 1000, (ms % 1000) * 1000000L
  };
  nanosleep(&ts, nullptr);
}

void LoadNvml() {
  const char* path = getenv(XPOOL_ENV_VGPU_NVML_LIBRARY);
  if (path == nullptr || *path == '\0') path = "libnvidia-ml.so.1";
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    Log(LogLevel::kInfo, "cannot load NVML %s (%s): NVML calls return NVML_ERROR_UNINITIALIZED", path, dlerror());
    return;
  }
  ResolveNvml(handle, RealDlsym());
}

// Task utilisation of `device` in percent, or -1 when it cannot be measured this period.
double MeasureTaskUtilisation(int ordinal, DeviceLimiter& limiter) {
  nvmlDevice_t device;
  if (!NvmlDeviceOfVisibleIndex(ordinal, &device)) return -1;
  static thread_local nvmlProcessUtilizationSample_t samples[kMaxSamples];
  unsigned int count = kMaxSamples;
  nvmlReturn_t rc = real::nvmlDeviceGetProcessUtilization(device, samples, &count, limiter.last_seen_us);
  if (rc == NVML_ERROR_NOT_FOUND) return 0;  // no samples since last time: the task was idle
  if (rc != NVML_SUCCESS) return -1;
  int pids[kRegionSlots];
  int npids = TaskPids(pids, kRegionSlots);
  double total = 0;
  bool matched = false;
  for (int p = 0; p < npids; ++p) {
    double sum = 0;
    int n = 0;
    for (unsigned int i = 0; i < count && i < kMaxSamples; ++i) {
      if (static_cast<int>(samples[i].pid) != pids[p]) continue;
      sum += samples[i].smUtil;
      ++n;
    }
    if (n > 0) {
      total += sum / n;
      matched = true;
    }
  }
  for (unsigned int i = 0; i < count && i < kMaxSamples; ++i) {
    if (samples[i].timeStamp > limiter.last_seen_us) limiter.last_seen_us = samples[i].timeStamp;
  }
  if (!matched && count > 0) {
    // The samples carry pids of another pid namespace: fall back to the whole device (conservative).
    nvmlUtilization_t util;
    if (real::nvmlDeviceGetUtilizationRates(device, &util) == NVML_SUCCESS) return util.gpu;
  }
  return total;
}

double MonotonicSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void* SamplerMain(void*) {
  double last = MonotonicSeconds();
  for (uint64_t tick = 0;; ++tick) {
    SleepMs(kRefillMs);
    g_heartbeat.fetch_add(1, std::memory_order_relaxed);
    // Refill for the time that really passed: a late wake-up on a busy machine must not lower the rate.
    const double now = MonotonicSeconds();
    const double elapsed = now - last > 0.5 ? 0.5 : now - last;
    last = now;
    for (int dev = 0; dev < kMaxDevices; ++dev) {
      DeviceLimiter& limiter = g_devices[dev];
      if (!limiter.active) continue;
      if (tick % kRefillsPerSample == kRefillsPerSample - 1) {
        double measured = MeasureTaskUtilisation(dev, limiter);
        bool throttled = limiter.budget.ConsumeThrottled();
        if (measured < 0 && ++limiter.failed_samples == kBlindPeriods) {
          Log(LogLevel::kWarn,
              "device %d: no NVML utilisation samples; the compute limit is not enforced until "
              "they appear",
              dev);
          limiter.controller->Open();
        }
        if (measured >= 0) {
          limiter.failed_samples = 0;
          double rate = limiter.controller->Update(measured, throttled);
          Log(LogLevel::kDebug, "device %d: utilisation %.1f%% (target %d%%) -> %.0f blocks/s", dev, measured,
              CurrentLimits().device[dev].core_percent, rate);
        }
      }
      double rate = limiter.controller->rate();
      limiter.budget.Refill(rate * elapsed, static_cast<int64_t>(rate * kRefillMs * 5 / 1000.0) + 1);
    }
  }
  return nullptr;
}

bool StartThread() {
  bool expected = false;
  if (!g_thread_running.compare_exchange_strong(expected, true)) return true;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, &SamplerMain, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    g_thread_running.store(false);
    Log(LogLevel::kError, "cannot start the compute limiter thread: compute limits are not enforced");
    return false;
  }
  return true;
}

}  // namespace

void EnsureNvml() { g_nvml_once.Run(&LoadNvml); }

void StartCoreLimiter() {
  EnsureNvml();
  real::nvmlInit_v2();  // NVML counts initialisations; the application's own stay independent
  const Limits& limits = CurrentLimits();
  for (int dev = 0; dev < kMaxDevices; ++dev) {
    if (!limits.core_limited(dev)) continue;
    ShareController::Config config;
    config.target_percent = limits.device[dev].core_percent;
    g_devices[dev].controller = new (std::nothrow) ShareController(config);
    if (g_devices[dev].controller == nullptr) continue;
    g_devices[dev].budget.Refill(config.initial_rate * kRefillMs / 1000.0, INT64_MAX / 4);
    g_devices[dev].active = true;
  }
  if (StartThread()) g_launch_gate.store(1, std::memory_order_release);
}

void CoreLimiterAfterFork() {
  // The sampler thread did not survive fork(); the next limited launch restarts it (creating a thread inside an
  // atfork handler is not safe).
  g_thread_running.store(false);
}

void ThrottleLaunch(uint64_t blocks) {
  if (!CurrentLimits().any_core_limit) return;
  int dev = CurrentDevice();
  if (dev < 0 || dev >= kMaxDevices || !g_devices[dev].active) return;
  if (!g_thread_running.load(std::memory_order_relaxed)) StartThread();
  LaunchBudget& budget = g_devices[dev].budget;
  int64_t cost = blocks > (1ull << 40) ? (1ll << 40) : static_cast<int64_t>(blocks == 0 ? 1 : blocks);
  if (budget.Take(cost)) return;
  // In debt: wait for the refills to pay it back. Never block forever if the sampler thread stalls (no tick for
  // half a second): then the launch goes through.
  uint64_t beat = g_heartbeat.load(std::memory_order_relaxed);
  int still_us = 0;
  while (!budget.PaidBack() && still_us < 500000) {
    struct timespec ts {
      0, 500000L
    };
    nanosleep(&ts, nullptr);
    uint64_t now = g_heartbeat.load(std::memory_order_relaxed);
    still_us = now == beat ? still_us + 500 : 0;
    beat = now;
  }
}

}  // namespace xpool::vgpu
