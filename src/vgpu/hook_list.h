// The one list of the driver-API and NVML symbols libxpool-vgpu.so governs. Everything that must agree with it is
// generated from it: the symbol enums, the name tables, the typed function-pointer slots of the real driver, the
// stubs that answer when a real symbol is missing, the typed callers of the real functions, the hook address
// table that dlsym / cuGetProcAddress answer with, and the exported prototypes (internal/real_table.h).
//
// X(name, (parameters), (arguments)). CUDA entries return CUresult, NVML entries nvmlReturn_t.
// *_HOOKS are exported and intercepted; *_REAL_ONLY are only looked up in the real library for our own use.
// Thread-safety: macros only.
#pragma once

#define XPOOL_CUDA_HOOKS(X)                                                                                            \
  X(cuInit, (unsigned int flags), (flags))                                                                             \
  X(cuGetProcAddress, (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags),                             \
    (symbol, pfn, cudaVersion, flags))                                                                                 \
  X(cuGetProcAddress_v2,                                                                                               \
    (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult* symbolStatus), \
    (symbol, pfn, cudaVersion, flags, symbolStatus))                                                                   \
  X(cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize), (dptr, bytesize))                                      \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                                            \
  X(cuMemAllocPitch,                                                                                                   \
    (CUdeviceptr_v1 * dptr, unsigned int* pPitch, unsigned int widthInBytes, unsigned int height,                      \
     unsigned int elementSizeBytes),                                                                                   \
    (dptr, pPitch, widthInBytes, height, elementSizeBytes))                                                            \
  X(cuMemAllocPitch_v2,                                                                                                \
    (CUdeviceptr * dptr, size_t * pPitch, size_t widthInBytes, size_t height, unsigned int elementSizeBytes),          \
    (dptr, pPitch, widthInBytes, height, elementSizeBytes))                                                            \
  X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags))             \
  X(cuMemFree, (CUdeviceptr_v1 dptr), (dptr))                                                                          \
  X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                                          \
  X(cuMemCreate,                                                                                                       \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop, unsigned long long flags),   \
    (handle, size, prop, flags))                                                                                       \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                                                     \
  X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))               \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))          \
  X(cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),               \
    (dptr, bytesize, pool, hStream))                                                                                   \
  X(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),          \
    (dptr, bytesize, pool, hStream))                                                                                   \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                                             \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                                        \
  X(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps* poolProps), (pool, poolProps))                        \
  X(cuMemPoolDestroy, (CUmemoryPool pool), (pool))                                                                     \
  X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))                               \
  X(cuStreamSynchronize, (CUstream hStream), (hStream))                                                                \
  X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))                                                           \
  X(cuCtxSynchronize, (void), ())                                                                                      \
  X(cuGraphInstantiateWithFlags, (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),                \
    (phGraphExec, hGraph, flags))                                                                                      \
  X(cuGraphInstantiate,                                                                                                \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char* logBuffer, size_t bufferSize),        \
    (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))                                                         \
  X(cuGraphInstantiate_v2,                                                                                             \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char* logBuffer, size_t bufferSize),        \
    (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))                                                         \
  X(cuGraphInstantiateWithParams,                                                                                      \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams),                    \
    (phGraphExec, hGraph, instantiateParams))                                                                          \
  X(cuGraphInstantiateWithParams_ptsz,                                                                                 \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams),                    \
    (phGraphExec, hGraph, instantiateParams))                                                                          \
  X(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))                                                        \
  X(cuDeviceGraphMemTrim, (CUdevice device), (device))                                                                 \
  X(cuIpcOpenMemHandle, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags))      \
  X(cuIpcOpenMemHandle_v2, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags))   \
  X(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))                                                                   \
  X(cuMemMap,                                                                                                          \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),      \
    (ptr, size, offset, handle, flags))                                                                                \
  X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))                                                           \
  X(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void* addr), (handle, addr))                  \
  X(cuMemImportFromShareableHandle,                                                                                    \
    (CUmemGenericAllocationHandle * handle, void* osHandle, CUmemAllocationHandleType shHandleType),                   \
    (handle, osHandle, shHandleType))                                                                                  \
  X(cuMemExportToShareableHandle,                                                                                      \
    (void* shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType,                 \
     unsigned long long flags),                                                                                        \
    (shareableHandle, handle, handleType, flags))                                                                      \
  X(cuArrayCreate, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* desc), (pHandle, desc))                         \
  X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR* desc), (pHandle, desc))                         \
  X(cuArray3DCreate, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1* desc), (pHandle, desc))                     \
  X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc), (pHandle, desc))                     \
  X(cuArrayDestroy, (CUarray hArray), (hArray))                                                                        \
  X(cuMipmappedArrayCreate,                                                                                            \
    (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int numMipmapLevels),                   \
    (pHandle, desc, numMipmapLevels))                                                                                  \
  X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))                                    \
  X(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))                             \
  X(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))                          \
  X(cuCtxCreate_v3,                                                                                                    \
    (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags, CUdevice dev),            \
    (pctx, paramsArray, numParams, flags, dev))                                                                        \
  X(cuCtxCreate_v4, (CUcontext * pctx, CUctxCreateParams * params, unsigned int flags, CUdevice dev),                  \
    (pctx, params, flags, dev))                                                                                        \
  X(cuCtxDestroy, (CUcontext ctx), (ctx))                                                                              \
  X(cuCtxDestroy_v2, (CUcontext ctx), (ctx))                                                                           \
  X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev))                                           \
  X(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev))                                                                  \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))                                                               \
  X(cuMemGetInfo, (unsigned int* free, unsigned int* total), (free, total))                                            \
  X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                                                   \
  X(cuDeviceTotalMem, (unsigned int* bytes, CUdevice dev), (bytes, dev))                                               \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))                                                 \
  X(cuLaunchKernel,                                                                                                    \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,        \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,                    \
     void** kernelParams, void** extra),                                                                               \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra))  \
  X(cuLaunchKernel_ptsz,                                                                                               \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,        \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,                    \
     void** kernelParams, void** extra),                                                                               \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra))  \
  X(cuLaunchKernelEx, (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),                 \
    (config, f, kernelParams, extra))                                                                                  \
  X(cuLaunchKernelEx_ptsz, (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),            \
    (config, f, kernelParams, extra))                                                                                  \
  X(cuLaunchCooperativeKernel,                                                                                         \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,        \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,                    \
     void** kernelParams),                                                                                             \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams))         \
  X(cuLaunchCooperativeKernel_ptsz,                                                                                    \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,        \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,                    \
     void** kernelParams),                                                                                             \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams))         \
  X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))                                  \
  X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))

#define XPOOL_CUDA_REAL_ONLY(X)                                                                                      \
  X(cuCtxGetDevice, (CUdevice * device), (device))                                                                   \
  X(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev), (pool, dev))                                            \
  X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void* value), (pool, attr, value))          \
  X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus), (hStream, captureStatus))        \
  X(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t * psize, CUdeviceptr dptr), (pbase, psize, dptr))          \
  X(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode * nodes, size_t * numNodes), (hGraph, nodes, numNodes))            \
  X(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType * type), (hNode, type))                                  \
  X(cuGraphMemAllocNodeGetParams, (CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS * params_out), (hNode, params_out)) \
  X(cuGraphChildGraphNodeGetGraph, (CUgraphNode hNode, CUgraph * phGraph), (hNode, phGraph))                         \
  X(cuDeviceGetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void* value), (device, attr, value))

#define XPOOL_NVML_HOOKS(X)                                                                                            \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory), (device, memory))                           \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory), (device, memory))                     \
  X(nvmlDeviceGetComputeRunningProcesses, (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_v1_t* infos), \
    (device, infoCount, infos))                                                                                        \
  X(nvmlDeviceGetComputeRunningProcesses_v2, (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos), \
    (device, infoCount, infos))                                                                                        \
  X(nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos), \
    (device, infoCount, infos))

#define XPOOL_NVML_REAL_ONLY(X)                                                                                   \
  X(nvmlInit_v2, (void), ())                                                                                      \
  X(nvmlDeviceGetCount_v2, (unsigned int* count), (count))                                                        \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device), (index, device))                   \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index), (device, index))                              \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length), (device, uuid, length))            \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization), (device, utilization)) \
  X(nvmlDeviceGetProcessUtilization,                                                                              \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization, unsigned int* processSamplesCount,        \
     unsigned long long lastSeenTimeStamp),                                                                       \
    (device, utilization, processSamplesCount, lastSeenTimeStamp))
