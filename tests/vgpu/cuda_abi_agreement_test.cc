// Checks that vgpu/cuda_abi.h and vgpu/hook_list.h agree with the CUDA toolkit's cuda.h: enum values, struct sizes
// and field offsets, and the exact signature of every hooked or used driver entry point. Skipped when cuda.h is not
// installed (XPOOL_CUDA_H undefined). NVML has no header here; it is not checked.
#include <gtest/gtest.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#ifdef XPOOL_CUDA_H
#define __CUDA_API_VERSION_INTERNAL 1  // declare every versioned and per-thread variant, not just the defaults
#include XPOOL_CUDA_H

namespace ours {
#include "vgpu/cuda_abi.h"
}  // namespace ours
#include "vgpu/hook_list.h"

namespace {

// Maps a type spelled with our declarations to the same type spelled with cuda.h's.
template <typename T>
struct Map {
  using type = T;
};
template <typename T>
struct Map<T*> {
  using type = typename Map<T>::type*;
};
template <typename T>
struct Map<const T> {
  using type = const typename Map<T>::type;
};
template <typename R, typename... A>
struct Map<R (*)(A...)> {
  using type = typename Map<R>::type (*)(typename Map<A>::type...);
};
#define XPOOL_SAME_TYPE(ours_name, theirs_name) \
  template <>                                   \
  struct Map<ours::ours_name> {                 \
    using type = ::theirs_name;                 \
  };
// Opaque handles (struct CUctx_st* ...) need no entry: inside namespace `ours` an elaborated `struct CUctx_st`
// finds cuda.h's declaration, so those types are already the same.
XPOOL_SAME_TYPE(CUresult, CUresult)
XPOOL_SAME_TYPE(CUdriverProcAddressQueryResult, CUdriverProcAddressQueryResult)
XPOOL_SAME_TYPE(CUmemAllocationProp, CUmemAllocationProp)
XPOOL_SAME_TYPE(CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR)
XPOOL_SAME_TYPE(CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR)
XPOOL_SAME_TYPE(CUDA_ARRAY_DESCRIPTOR_v1, CUDA_ARRAY_DESCRIPTOR_v1)
XPOOL_SAME_TYPE(CUDA_ARRAY3D_DESCRIPTOR_v1, CUDA_ARRAY3D_DESCRIPTOR_v1)
XPOOL_SAME_TYPE(CUlaunchConfig, CUlaunchConfig)
XPOOL_SAME_TYPE(CUmemPoolProps, CUmemPoolProps)
XPOOL_SAME_TYPE(CUmemPool_attribute, CUmemPool_attribute)
XPOOL_SAME_TYPE(CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_GRAPH_INSTANTIATE_PARAMS)
XPOOL_SAME_TYPE(CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS)
XPOOL_SAME_TYPE(CUgraphNodeType, CUgraphNodeType)
XPOOL_SAME_TYPE(CUgraphMem_attribute, CUgraphMem_attribute)
XPOOL_SAME_TYPE(CUstreamCaptureStatus, CUstreamCaptureStatus)
XPOOL_SAME_TYPE(CUipcMemHandle, CUipcMemHandle)
XPOOL_SAME_TYPE(CUmemAllocationHandleType, CUmemAllocationHandleType)
#undef XPOOL_SAME_TYPE

}  // namespace

// Our signatures, spelled with our types.
namespace ours::sig {
#define XPOOL_X(name, params, args) using name = CUresult(*) params;
XPOOL_CUDA_HOOKS(XPOOL_X)
XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
}  // namespace ours::sig

namespace {
using namespace ours;  // NOLINT: only for sig:: below

TEST(CudaAbiAgreementTest, EverySignatureMatchesCudaH) {
#define XPOOL_X(name, params, args) \
  EXPECT_TRUE((std::is_same_v<Map<sig::name>::type, decltype(&::name)>)) << #name " differs from cuda.h";
  XPOOL_CUDA_HOOKS(XPOOL_X)
  XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
  // The check tells signatures apart: the 32-bit v1 entry point is not the v2 one.
  EXPECT_FALSE((std::is_same_v<Map<sig::cuMemAlloc>::type, decltype(&::cuMemAlloc_v2)>));
  EXPECT_FALSE((std::is_same_v<Map<sig::cuLaunchKernel>::type, decltype(&::cuLaunchCooperativeKernel)>));
}

TEST(CudaAbiAgreementTest, EnumValuesMatch) {
#define XPOOL_ENUM(name) EXPECT_EQ(static_cast<long>(ours::name), static_cast<long>(::name)) << #name;
  XPOOL_ENUM(CUDA_SUCCESS)
  XPOOL_ENUM(CUDA_ERROR_INVALID_VALUE)
  XPOOL_ENUM(CUDA_ERROR_OUT_OF_MEMORY)
  XPOOL_ENUM(CUDA_ERROR_NOT_INITIALIZED)
  XPOOL_ENUM(CUDA_ERROR_DEINITIALIZED)
  XPOOL_ENUM(CUDA_ERROR_NO_DEVICE)
  XPOOL_ENUM(CUDA_ERROR_INVALID_DEVICE)
  XPOOL_ENUM(CUDA_ERROR_INVALID_CONTEXT)
  XPOOL_ENUM(CUDA_ERROR_INVALID_HANDLE)
  XPOOL_ENUM(CUDA_ERROR_NOT_FOUND)
  XPOOL_ENUM(CUDA_ERROR_NOT_SUPPORTED)
  XPOOL_ENUM(CUDA_ERROR_UNKNOWN)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_DEFAULT)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_LEGACY_STREAM)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_SUCCESS)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
  XPOOL_ENUM(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
  XPOOL_ENUM(CU_MEM_ATTACH_GLOBAL)
  XPOOL_ENUM(CU_MEM_ATTACH_HOST)
  XPOOL_ENUM(CU_MEM_ATTACH_SINGLE)
  XPOOL_ENUM(CU_MEM_LOCATION_TYPE_INVALID)
  XPOOL_ENUM(CU_MEM_LOCATION_TYPE_DEVICE)
  XPOOL_ENUM(CU_MEM_LOCATION_TYPE_HOST)
  XPOOL_ENUM(CU_MEM_LOCATION_TYPE_HOST_NUMA)
  XPOOL_ENUM(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
  XPOOL_ENUM(CU_MEM_ALLOCATION_TYPE_MANAGED)
  XPOOL_ENUM(CU_MEM_ACCESS_FLAGS_PROT_NONE)
  XPOOL_ENUM(CU_MEM_ACCESS_FLAGS_PROT_READ)
  XPOOL_ENUM(CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
  XPOOL_ENUM(CU_MEMPOOL_ATTR_USED_MEM_HIGH)
  XPOOL_ENUM(CU_GRAPH_NODE_TYPE_KERNEL)
  XPOOL_ENUM(CU_GRAPH_NODE_TYPE_GRAPH)
  XPOOL_ENUM(CU_GRAPH_NODE_TYPE_EMPTY)
  XPOOL_ENUM(CU_GRAPH_NODE_TYPE_MEM_ALLOC)
  XPOOL_ENUM(CU_GRAPH_NODE_TYPE_MEM_FREE)
  XPOOL_ENUM(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)
  XPOOL_ENUM(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
  XPOOL_ENUM(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
  XPOOL_ENUM(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
  XPOOL_ENUM(CUDA_GRAPH_INSTANTIATE_SUCCESS)
  XPOOL_ENUM(CUDA_GRAPH_INSTANTIATE_ERROR)
  XPOOL_ENUM(CU_STREAM_CAPTURE_STATUS_NONE)
  XPOOL_ENUM(CU_STREAM_CAPTURE_STATUS_ACTIVE)
  XPOOL_ENUM(CU_STREAM_CAPTURE_STATUS_INVALIDATED)
  EXPECT_EQ(XPOOL_CU_IPC_HANDLE_SIZE, CU_IPC_HANDLE_SIZE);
  XPOOL_ENUM(CU_MEM_ALLOCATION_TYPE_INVALID)
  XPOOL_ENUM(CU_MEM_ALLOCATION_TYPE_PINNED)
  XPOOL_ENUM(CU_MEM_HANDLE_TYPE_NONE)
  XPOOL_ENUM(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
  XPOOL_ENUM(CU_AD_FORMAT_UNSIGNED_INT8)
  XPOOL_ENUM(CU_AD_FORMAT_UNSIGNED_INT16)
  XPOOL_ENUM(CU_AD_FORMAT_UNSIGNED_INT32)
  XPOOL_ENUM(CU_AD_FORMAT_SIGNED_INT8)
  XPOOL_ENUM(CU_AD_FORMAT_SIGNED_INT16)
  XPOOL_ENUM(CU_AD_FORMAT_SIGNED_INT32)
  XPOOL_ENUM(CU_AD_FORMAT_HALF)
  XPOOL_ENUM(CU_AD_FORMAT_FLOAT)
#undef XPOOL_ENUM
}

TEST(CudaAbiAgreementTest, ScalarTypesMatch) {
  EXPECT_TRUE((std::is_same_v<ours::CUdeviceptr, ::CUdeviceptr>));
  EXPECT_TRUE((std::is_same_v<ours::CUdeviceptr_v1, ::CUdeviceptr_v1>));
  EXPECT_TRUE((std::is_same_v<ours::CUdevice, ::CUdevice>));
  EXPECT_TRUE((std::is_same_v<ours::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>));
  EXPECT_TRUE((std::is_same_v<ours::cuuint64_t, ::cuuint64_t>));
  EXPECT_EQ(sizeof(ours::CUresult), sizeof(::CUresult));
  EXPECT_EQ(sizeof(ours::CUarray_format), sizeof(::CUarray_format));
}

TEST(CudaAbiAgreementTest, StructLayoutsMatch) {
#define XPOOL_FIELD(type, field) EXPECT_EQ(offsetof(ours::type, field), offsetof(::type, field)) << #type "." #field;
  EXPECT_EQ(sizeof(ours::CUmemLocation), sizeof(::CUmemLocation));
  XPOOL_FIELD(CUmemLocation, type)
  XPOOL_FIELD(CUmemLocation, id)
  EXPECT_EQ(sizeof(ours::CUmemAllocationProp), sizeof(::CUmemAllocationProp));
  XPOOL_FIELD(CUmemAllocationProp, type)
  XPOOL_FIELD(CUmemAllocationProp, requestedHandleTypes)
  XPOOL_FIELD(CUmemAllocationProp, location)
  XPOOL_FIELD(CUmemAllocationProp, win32HandleMetaData)
  XPOOL_FIELD(CUmemAllocationProp, allocFlags)
  EXPECT_EQ(sizeof(ours::CUDA_ARRAY_DESCRIPTOR), sizeof(::CUDA_ARRAY_DESCRIPTOR));
  XPOOL_FIELD(CUDA_ARRAY_DESCRIPTOR, Width)
  XPOOL_FIELD(CUDA_ARRAY_DESCRIPTOR, Height)
  XPOOL_FIELD(CUDA_ARRAY_DESCRIPTOR, Format)
  XPOOL_FIELD(CUDA_ARRAY_DESCRIPTOR, NumChannels)
  EXPECT_EQ(sizeof(ours::CUDA_ARRAY3D_DESCRIPTOR), sizeof(::CUDA_ARRAY3D_DESCRIPTOR));
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Width)
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Height)
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Depth)
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Format)
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, NumChannels)
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Flags)
  EXPECT_EQ(sizeof(ours::CUDA_ARRAY_DESCRIPTOR_v1), sizeof(::CUDA_ARRAY_DESCRIPTOR_v1));
  XPOOL_FIELD(CUDA_ARRAY_DESCRIPTOR_v1, NumChannels)
  EXPECT_EQ(sizeof(ours::CUDA_ARRAY3D_DESCRIPTOR_v1), sizeof(::CUDA_ARRAY3D_DESCRIPTOR_v1));
  XPOOL_FIELD(CUDA_ARRAY3D_DESCRIPTOR_v1, Flags)
  EXPECT_EQ(sizeof(ours::CUlaunchConfig), sizeof(::CUlaunchConfig));
  XPOOL_FIELD(CUlaunchConfig, gridDimX)
  XPOOL_FIELD(CUlaunchConfig, gridDimY)
  XPOOL_FIELD(CUlaunchConfig, gridDimZ)
  XPOOL_FIELD(CUlaunchConfig, sharedMemBytes)
  XPOOL_FIELD(CUlaunchConfig, hStream)
  XPOOL_FIELD(CUlaunchConfig, attrs)
  XPOOL_FIELD(CUlaunchConfig, numAttrs)
  EXPECT_EQ(sizeof(ours::CUmemAccessDesc), sizeof(::CUmemAccessDesc));
  XPOOL_FIELD(CUmemAccessDesc, location)
  XPOOL_FIELD(CUmemAccessDesc, flags)
  EXPECT_EQ(sizeof(ours::CUmemPoolProps), sizeof(::CUmemPoolProps));
  XPOOL_FIELD(CUmemPoolProps, allocType)
  XPOOL_FIELD(CUmemPoolProps, handleTypes)
  XPOOL_FIELD(CUmemPoolProps, location)
  XPOOL_FIELD(CUmemPoolProps, win32SecurityAttributes)
  XPOOL_FIELD(CUmemPoolProps, maxSize)
  XPOOL_FIELD(CUmemPoolProps, usage)
  XPOOL_FIELD(CUmemPoolProps, reserved)
  EXPECT_EQ(sizeof(ours::CUDA_MEM_ALLOC_NODE_PARAMS), sizeof(::CUDA_MEM_ALLOC_NODE_PARAMS));
  XPOOL_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, poolProps)
  XPOOL_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs)
  XPOOL_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount)
  XPOOL_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize)
  XPOOL_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)
  EXPECT_EQ(sizeof(ours::CUDA_GRAPH_INSTANTIATE_PARAMS), sizeof(::CUDA_GRAPH_INSTANTIATE_PARAMS));
  XPOOL_FIELD(CUDA_GRAPH_INSTANTIATE_PARAMS, flags)
  XPOOL_FIELD(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream)
  XPOOL_FIELD(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out)
  XPOOL_FIELD(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out)
  EXPECT_EQ(sizeof(ours::CUipcMemHandle), sizeof(::CUipcMemHandle));
#undef XPOOL_FIELD
}

}  // namespace

#else  // !XPOOL_CUDA_H

TEST(CudaAbiAgreementTest, SkippedWithoutCudaH) {
  GTEST_SKIP() << "cuda.h not found (set XPOOL_CUDA_INCLUDE_DIR); declarations not checked against the toolkit";
}

#endif
