#pragma once
// The few NVML declarations the agent uses, written from NVIDIA's public NVML API reference so the
// build needs no nvml.h. Only types and function-pointer signatures: the functions are looked up
// with dlsym at run time (nvml/nvml_discovery.cc), and the test double (testdata/fake_nvml.c)
// exports the same names. C-compatible; constants only.
#ifndef XPOOL_AGENT_INTERNAL_NVML_API_H_
#define XPOOL_AGENT_INTERNAL_NVML_API_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef int xpool_nvmlReturn_t; /* nvmlReturn_t */
typedef struct xpool_nvmlDevice_st* xpool_nvmlDevice_t;

#define XPOOL_NVML_SUCCESS 0
#define XPOOL_NVML_ERROR_INVALID_ARGUMENT 2
#define XPOOL_NVML_ERROR_NOT_SUPPORTED 3
#define XPOOL_NVML_ERROR_DRIVER_NOT_LOADED 9
#define XPOOL_NVML_ERROR_GPU_IS_LOST 15
#define XPOOL_NVML_ERROR_FUNCTION_NOT_FOUND 13

#define XPOOL_NVML_DEVICE_UUID_BUFFER_SIZE 96
#define XPOOL_NVML_DEVICE_NAME_BUFFER_SIZE 96
#define XPOOL_NVML_NVLINK_MAX_LINKS 18

typedef struct {
  unsigned long long total; /* bytes */
  unsigned long long free;
  unsigned long long used;
} xpool_nvmlMemory_t;

/* nvmlPciInfo_t (v3 layout) */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32]; /* "00000000:3B:00.0" */
} xpool_nvmlPciInfo_t;

/* nvmlUtilization_t: percent of the last sample period */
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} xpool_nvmlUtilization_t;

/* nvmlProcessInfo_t (the layout of nvmlDeviceGetComputeRunningProcesses_v2 and _v3) */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE (all ones) when unknown */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} xpool_nvmlProcessInfo_t;

/* nvmlGpuTopologyLevel_t */
#define XPOOL_NVML_TOPOLOGY_INTERNAL 0
#define XPOOL_NVML_TOPOLOGY_SINGLE 10
#define XPOOL_NVML_TOPOLOGY_MULTIPLE 20
#define XPOOL_NVML_TOPOLOGY_HOSTBRIDGE 30
#define XPOOL_NVML_TOPOLOGY_NODE 40
#define XPOOL_NVML_TOPOLOGY_SYSTEM 50

/* nvmlEnableState_t */
#define XPOOL_NVML_FEATURE_DISABLED 0
#define XPOOL_NVML_FEATURE_ENABLED 1

/* Signatures, named after the NVML symbols. */
typedef xpool_nvmlReturn_t (*xpool_nvmlInit_v2_fn)(void);
typedef xpool_nvmlReturn_t (*xpool_nvmlShutdown_fn)(void);
typedef const char* (*xpool_nvmlErrorString_fn)(xpool_nvmlReturn_t);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, xpool_nvmlDevice_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetUUID_fn)(xpool_nvmlDevice_t, char*, unsigned int);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetName_fn)(xpool_nvmlDevice_t, char*, unsigned int);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetMemoryInfo_fn)(xpool_nvmlDevice_t, xpool_nvmlMemory_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNumaNodeId_fn)(xpool_nvmlDevice_t, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetPciInfo_v3_fn)(xpool_nvmlDevice_t, xpool_nvmlPciInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetTopologyCommonAncestor_fn)(xpool_nvmlDevice_t, xpool_nvmlDevice_t,
                                                                           int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNvLinkState_fn)(xpool_nvmlDevice_t, unsigned int, int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                           xpool_nvmlPciInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetUtilizationRates_fn)(xpool_nvmlDevice_t, xpool_nvmlUtilization_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetComputeRunningProcesses_v3_fn)(xpool_nvmlDevice_t, unsigned int*,
                                                                               xpool_nvmlProcessInfo_t*);

#ifdef __cplusplus
}
#endif

#endif /* XPOOL_AGENT_INTERNAL_NVML_API_H_ */
