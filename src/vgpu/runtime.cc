#include "vgpu/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mutex>
#include <new>

#include "vgpu/internal/dl.h"
#include "vgpu/internal/real_table.h"
#include "vgpu/internal/reentrant_once.h"
#include "vgpu/log.h"
#include "vgpu/vgpu_env.h"

extern char** environ;

namespace xpool::vgpu {

std::atomic<int> g_launch_gate{1};

namespace {

// Everything initialisation sets up. Leaked on purpose: hooks may run while the process exits.
struct Runtime {
  Limits limits;
  SharedRegion shared;
  SharedRegion fallback;
  SharedRegion* region = nullptr;
  AllocTracker tracker;
  MemoryLedger ledger;
  std::recursive_mutex ledger_mutex;
  std::mutex primary_mutex;
  int primary_refs[kMaxDevices] = {};
};

Runtime* g_runtime = nullptr;
ReentrantOnce g_init_once;  // limits, region, compute limiter: no driver needed (NVML-only processes)
ReentrantOnce g_cuda_once;  // the real CUDA driver, loaded on the first CUDA call

Runtime& Rt() { return *g_runtime; }

void LoadRealCuda() {
  const char* path = getenv(XPOOL_ENV_VGPU_CUDA_LIBRARY);
  if (path == nullptr || *path == '\0') path = "libcuda.so.1";
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    Log(LogLevel::kWarn,
        "cannot load the CUDA driver %s (%s): every CUDA call will return "
        "CUDA_ERROR_NOT_INITIALIZED",
        path, dlerror());
    return;
  }
  int found = ResolveCuda(handle, RealDlsym());
  Log(LogLevel::kDebug, "loaded %s: %d of %d symbols", path, found, kCudaFnCount);
}

void OpenRegion(Runtime& rt) {
  char path[4096];
  const char* source = ResolveRegionPath(environ, path, sizeof(path));
  const uint64_t start = ProcessStartTime(getpid());
  if (source != nullptr) {
    char identity[kRegionIdentityBytes];
    const char* job = getenv(XPOOL_ENV_JOB_ID);
    const char* replica = getenv(XPOOL_ENV_REPLICA);
    snprintf(identity, sizeof(identity), "%s/%s", job ? job : "", replica ? replica : "");
    char why[256] = {0};
    SharedRegion::OpenStatus status = rt.shared.OpenFile(path, identity, why, sizeof(why));
    if (status == SharedRegion::OpenStatus::kOk && rt.shared.Attach(getpid(), start)) {
      rt.region = &rt.shared;
      Log(LogLevel::kInfo, "shared region %s (from %s) attached (task '%s')", path, source, identity);
      return;
    }
    if (status == SharedRegion::OpenStatus::kOk) {
      snprintf(why, sizeof(why), "all %d process slots are taken", kRegionSlots);
    }
    Log(LogLevel::kError, "refusing shared region %s: %s; enforcing the limits per process instead", path, why);
  } else {
    Log(LogLevel::kInfo, "none of %s, %s, %s is set: enforcing the limits per process", XPOOL_ENV_SHARED_REGION,
        XPOOL_ENV_SHARED_REGION_DIR, XPOOL_HAMI_ENV_SHARED_CACHE);
  }
  if (rt.fallback.OpenPrivate() && rt.fallback.Attach(getpid(), start)) {
    rt.region = &rt.fallback;
  } else {
    Log(LogLevel::kError, "cannot map a private accounting region: allocations on limited devices will fail");
  }
}

void AfterForkInChild() {
  Runtime& rt = Rt();
  rt.tracker.Clear();
  new (&rt.ledger_mutex) std::recursive_mutex();
  rt.ledger.Clear();
  new (&rt.primary_mutex) std::mutex();
  memset(rt.primary_refs, 0, sizeof(rt.primary_refs));
  if (rt.region != nullptr) {
    rt.region->ForgetSlot();
    rt.region->Attach(getpid(), ProcessStartTime(getpid()));
  }
  CoreLimiterAfterFork();
}

void DoInit() {
  InitLogLevelFromEnv();
  g_runtime = new (std::nothrow) Runtime();
  if (g_runtime == nullptr) return;
  Runtime& rt = Rt();
  rt.limits = ParseLimits(environ);
  if (rt.limits.error_count > 0) {
    Log(LogLevel::kError, "%s (%d bad value(s) in total)", rt.limits.first_error, rt.limits.error_count);
  }
  if (rt.limits.any_limit()) {
    OpenRegion(rt);
    pthread_atfork(nullptr, nullptr, &AfterForkInChild);
  }
  if (rt.limits.any_core_limit) StartCoreLimiter();
}

__attribute__((destructor)) void DetachAtExit() {
  if (g_init_once.done() && g_runtime != nullptr && g_runtime->region != nullptr) {
    g_runtime->region->Detach();
  }
}

}  // namespace

void EnsureInit() { g_init_once.Run(&DoInit); }

void EnsureCudaInit() {
  EnsureInit();
  g_cuda_once.Run(&LoadRealCuda);
  // Launches may skip the gate once the driver is resolved and no compute limit is set.
  if (g_launch_gate.load(std::memory_order_relaxed) != 0 && g_cuda_once.done() && !CurrentLimits().any_core_limit) {
    g_launch_gate.store(0, std::memory_order_release);
  }
}

const Limits& CurrentLimits() {
  static const Limits kNone;
  return g_runtime != nullptr ? g_runtime->limits : kNone;
}

bool AnyMemoryLimit() { return g_runtime != nullptr && g_runtime->limits.any_memory_limit; }
bool MemoryLimited(int dev) { return g_runtime != nullptr && g_runtime->limits.memory_limited(dev); }

int CurrentDevice() {
  CUdevice dev = -1;
  if (real::cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
  return dev;
}

bool ReserveExact(int dev, uint64_t bytes) {
  if (!MemoryLimited(dev)) return true;
  Runtime& rt = Rt();
  if (rt.region == nullptr) return false;
  return rt.region->TryCharge(dev, bytes, rt.limits.device[dev].memory_bytes);
}

bool Reserve(int dev, uint64_t bytes) {
  if (!MemoryLimited(dev)) return true;
  Runtime& rt = Rt();
  if (rt.region == nullptr) return false;
  bool ok = ReserveExact(dev, bytes);
  if (!ok) {
    ReconcileWithDriver(dev);
    ok = ReserveExact(dev, bytes);
  }
  if (!ok) {
    Log(LogLevel::kInfo, "device %d: %llu bytes refused (limit %llu, in use %llu)", dev,
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(rt.limits.device[dev].memory_bytes),
        static_cast<unsigned long long>(rt.region->Used(dev)));
  }
  return ok;
}

void ForceCharge(int dev, uint64_t bytes) {
  if (!MemoryLimited(dev) || Rt().region == nullptr || bytes == 0) return;
  Rt().region->TryCharge(dev, bytes, UINT64_MAX);
}

void Unreserve(int dev, uint64_t bytes) {
  if (!MemoryLimited(dev) || Rt().region == nullptr || bytes == 0) return;
  Rt().region->Release(dev, bytes);
}

void Remember(AllocKind kind, uint64_t handle, int dev, uint64_t bytes, uint64_t pool) {
  if (!MemoryLimited(dev)) return;
  Rt().tracker.Add(kind, handle, Charge{dev, bytes, pool});
}

MemoryLedger& Ledger() { return Rt().ledger; }
std::recursive_mutex& LedgerMutex() { return Rt().ledger_mutex; }

bool TakeCharge(AllocKind kind, uint64_t handle, Charge* charge) {
  return AnyMemoryLimit() && Rt().tracker.Take(kind, handle, charge);
}

bool RetainPrimaryContextCharge(int dev) {
  if (!MemoryLimited(dev)) return true;
  Runtime& rt = Rt();
  std::lock_guard<std::mutex> lock(rt.primary_mutex);
  if (rt.primary_refs[dev] == 0 && !Reserve(dev, rt.limits.context_reserve_bytes)) return false;
  ++rt.primary_refs[dev];
  return true;
}

void UndoPrimaryContextCharge(int dev) { ReleasePrimaryContextCharge(dev); }

void ReleasePrimaryContextCharge(int dev) {
  if (!MemoryLimited(dev)) return;
  Runtime& rt = Rt();
  std::lock_guard<std::mutex> lock(rt.primary_mutex);
  if (rt.primary_refs[dev] == 0) return;
  if (--rt.primary_refs[dev] == 0) Unreserve(dev, rt.limits.context_reserve_bytes);
}

uint64_t LimitBytes(int dev) { return MemoryLimited(dev) ? Rt().limits.device[dev].memory_bytes : 0; }

uint64_t UsedBytes(int dev) {
  if (g_runtime == nullptr || Rt().region == nullptr) return 0;
  return Rt().region->Used(dev);
}

int ListTaskProcesses(int dev, SharedRegion::ProcessUsage* out, int max) {
  if (g_runtime == nullptr || Rt().region == nullptr) return 0;
  return Rt().region->ListProcesses(dev, out, max);
}

int TaskPids(int* out, int max) {
  SharedRegion::ProcessUsage procs[kRegionSlots];
  int n = ListTaskProcesses(-1, procs, kRegionSlots);
  int count = 0;
  for (int i = 0; i < n && i < kRegionSlots && count < max; ++i) out[count++] = procs[i].pid;
  return count;
}

}  // namespace xpool::vgpu
