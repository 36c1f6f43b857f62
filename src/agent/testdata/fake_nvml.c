/* A fake libnvidia-ml for the agent's tests: exports the NVML functions the agent resolves, with a small
 * machine described by environment variables read at nvmlInit_v2:
 *   FAKE_NVML_INIT_RC   return code of nvmlInit_v2 (default 0)
 *   FAKE_NVML_COUNT     device count (default 4, at most 16)
 *   FAKE_NVML_LOST      index of a device whose memory query says GPU_IS_LOST (default none)
 *   FAKE_NVML_NO_NUMA   1: nvmlDeviceGetNumaNodeId is NOT_SUPPORTED (the agent then reads sysfs)
 *   FAKE_NVML_USED_MIB  memory in use on device i: (i + 1) × this many MiB (default 0)
 *   FAKE_NVML_GPU_UTIL  utilisation of device i: this + i percent (default: nvmlDeviceGetUtilizationRates absent
 *                       in effect, it answers NOT_SUPPORTED)
 *   FAKE_NVML_PROC_PID, FAKE_NVML_PROC_MIB  one compute process on every device: that pid using that many MiB
 *                       (default: no processes)
 * Devices: 0,1 "NVIDIA A100-SXM4-80GB" (80 GiB), the rest "NVIDIA T4" (16 GiB); uuid GPU-fake-<i>; PCI bus id
 * 00000000:<i+1 in hex>:00.0; NUMA node i/2. NVLink: device pairs (0,1) with 2 lanes, (2,3) with 4 lanes, plus
 * one disabled link each. PCIe: same pair → SINGLE switch, same parity → HOSTBRIDGE, else SYSTEM.
 * Built without sanitizers; plain C; not thread-safe (tests call it from one thread). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal/nvml_api.h"

#define FAKE_MAX 16
struct xpool_nvmlDevice_st {
  int index;
};
static struct xpool_nvmlDevice_st g_devices[FAKE_MAX];
static int g_count = 0;
static int g_lost = -1;
static int g_no_numa = 0;
static int g_initialised = 0;
static int g_used_mib = 0;
static int g_util = -1;
static int g_proc_pid = 0;
static int g_proc_mib = 0;

static int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static int Valid(xpool_nvmlDevice_t d) { return g_initialised && d && d >= g_devices && d < g_devices + g_count; }

xpool_nvmlReturn_t nvmlInit_v2(void) {
  int rc = EnvInt("FAKE_NVML_INIT_RC", 0);
  if (rc != 0) return rc;
  g_count = EnvInt("FAKE_NVML_COUNT", 4);
  if (g_count > FAKE_MAX) g_count = FAKE_MAX;
  g_lost = EnvInt("FAKE_NVML_LOST", -1);
  g_no_numa = EnvInt("FAKE_NVML_NO_NUMA", 0);
  g_used_mib = EnvInt("FAKE_NVML_USED_MIB", 0);
  g_util = EnvInt("FAKE_NVML_GPU_UTIL", -1);
  g_proc_pid = EnvInt("FAKE_NVML_PROC_PID", 0);
  g_proc_mib = EnvInt("FAKE_NVML_PROC_MIB", 0);
  for (int i = 0; i < g_count; ++i) g_devices[i].index = i;
  g_initialised = 1;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlShutdown(void) {
  g_initialised = 0;
  return XPOOL_NVML_SUCCESS;
}

const char* nvmlErrorString(xpool_nvmlReturn_t rc) {
  switch (rc) {
    case XPOOL_NVML_SUCCESS:
      return "Success";
    case XPOOL_NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case XPOOL_NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case XPOOL_NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    default:
      return "Unknown Error";
  }
}

xpool_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g_initialised) return 1; /* NVML_ERROR_UNINITIALIZED */
  *count = (unsigned int)g_count;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, xpool_nvmlDevice_t* device) {
  if (!g_initialised || index >= (unsigned int)g_count) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetUUID(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(buf, len, "GPU-fake-%04d", d->index);
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetName(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(buf, len, "%s", d->index < 2 ? "NVIDIA A100-SXM4-80GB" : "NVIDIA T4");
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetMemoryInfo(xpool_nvmlDevice_t d, xpool_nvmlMemory_t* m) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (d->index == g_lost) return XPOOL_NVML_ERROR_GPU_IS_LOST;
  m->total = (d->index < 2 ? 80ULL : 16ULL) << 30;
  m->used = (unsigned long long)(d->index + 1) * (unsigned long long)g_used_mib << 20;
  m->free = m->total - m->used;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetNumaNodeId(xpool_nvmlDevice_t d, unsigned int* node) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (g_no_numa) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  *node = (unsigned int)(d->index / 2);
  return XPOOL_NVML_SUCCESS;
}

static void FillPci(int index, xpool_nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof *pci);
  pci->bus = (unsigned int)(index + 1);
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", index + 1);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", index + 1);
}

xpool_nvmlReturn_t nvmlDeviceGetPciInfo_v3(xpool_nvmlDevice_t d, xpool_nvmlPciInfo_t* pci) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  FillPci(d->index, pci);
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(xpool_nvmlDevice_t a, xpool_nvmlDevice_t b, int* level) {
  if (!Valid(a) || !Valid(b)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (a->index / 2 == b->index / 2) {
    *level = XPOOL_NVML_TOPOLOGY_SINGLE;
  } else if (a->index % 2 == b->index % 2) {
    *level = XPOOL_NVML_TOPOLOGY_HOSTBRIDGE;
  } else {
    *level = XPOOL_NVML_TOPOLOGY_SYSTEM;
  }
  return XPOOL_NVML_SUCCESS;
}

/* Lanes to the pair partner: 2 for devices 0,1; 4 for 2,3; none beyond. One more link exists, disabled. */
static int Lanes(int index) { return index < 2 ? 2 : (index < 4 ? 4 : 0); }

xpool_nvmlReturn_t nvmlDeviceGetNvLinkState(xpool_nvmlDevice_t d, unsigned int link, int* active) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  int lanes = Lanes(d->index);
  if ((int)link > lanes) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  *active = (int)link < lanes ? XPOOL_NVML_FEATURE_ENABLED : XPOOL_NVML_FEATURE_DISABLED;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(xpool_nvmlDevice_t d, unsigned int link,
                                                       xpool_nvmlPciInfo_t* pci) {
  if (!Valid(d) || (int)link >= Lanes(d->index)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  int partner = d->index ^ 1;
  if (partner >= g_count) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  FillPci(partner, pci);
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetUtilizationRates(xpool_nvmlDevice_t d, xpool_nvmlUtilization_t* u) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (g_util < 0) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  u->gpu = (unsigned int)(g_util + d->index);
  u->memory = 0;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(xpool_nvmlDevice_t d, unsigned int* count,
                                                           xpool_nvmlProcessInfo_t* infos) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  unsigned int room = *count;
  *count = g_proc_pid > 0 ? 1 : 0;
  if (*count == 0) return XPOOL_NVML_SUCCESS;
  if (room < 1) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  memset(&infos[0], 0, sizeof(infos[0]));
  infos[0].pid = (unsigned int)g_proc_pid;
  infos[0].usedGpuMemory = (unsigned long long)g_proc_mib << 20;
  return XPOOL_NVML_SUCCESS;
}
