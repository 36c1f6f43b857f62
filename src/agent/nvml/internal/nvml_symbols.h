#pragma once
// Looking NVML's entry points up in a library opened with dlopen, and NVML's error text: shared by the agent's NVML
// users (discovery, MIG control, use measuring), which each resolve the calls they need. Free functions;
// thread-safe.
#include <dlfcn.h>

#include <string>

#include "agent/internal/nvml_api.h"

namespace xpool::agent::nvml_internal {

// Resolves `symbol` into `out`: true when the library has it.
template <typename Fn>
bool Resolve(void* library, const char* symbol, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, symbol));
  return *out != nullptr;
}

// Resolves a symbol the caller cannot do without: when absent, its name is appended to `missing`
// (comma-separated).
template <typename Fn>
void Require(void* library, const char* symbol, Fn* out, std::string* missing) {
  if (!Resolve(library, symbol, out)) *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
}

// "<nvmlErrorString(rc)> (<rc>)", or "NVML error (<rc>)" without nvmlErrorString.
inline std::string ErrorText(xpool_nvmlErrorString_fn error_string, xpool_nvmlReturn_t rc) {
  const char* s = error_string ? error_string(rc) : nullptr;
  return (s ? std::string(s) : "NVML error") + " (" + std::to_string(rc) + ")";
}

// The calls every NVML user here needs: start and stop, error text, and each device's handle, uuid, name and memory.
struct Basics {
  xpool_nvmlInit_v2_fn init = nullptr;
  xpool_nvmlShutdown_fn shutdown = nullptr;
  xpool_nvmlErrorString_fn error_string = nullptr;
  xpool_nvmlDeviceGetCount_v2_fn get_count = nullptr;
  xpool_nvmlDeviceGetHandleByIndex_v2_fn get_handle = nullptr;
  xpool_nvmlDeviceGetUUID_fn get_uuid = nullptr;
  xpool_nvmlDeviceGetName_fn get_name = nullptr;
  xpool_nvmlDeviceGetMemoryInfo_fn get_memory = nullptr;

  std::string Error(xpool_nvmlReturn_t rc) const { return ErrorText(error_string, rc); }
};

// Resolves every Basics call, appending the names of those absent to `missing`.
inline void RequireBasics(void* lib, Basics* api, std::string* missing) {
  Require(lib, "nvmlInit_v2", &api->init, missing);
  Require(lib, "nvmlShutdown", &api->shutdown, missing);
  Require(lib, "nvmlErrorString", &api->error_string, missing);
  Require(lib, "nvmlDeviceGetCount_v2", &api->get_count, missing);
  Require(lib, "nvmlDeviceGetHandleByIndex_v2", &api->get_handle, missing);
  Require(lib, "nvmlDeviceGetUUID", &api->get_uuid, missing);
  Require(lib, "nvmlDeviceGetName", &api->get_name, missing);
  Require(lib, "nvmlDeviceGetMemoryInfo", &api->get_memory, missing);
}

}  // namespace xpool::agent::nvml_internal
