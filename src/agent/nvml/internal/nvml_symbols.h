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

}  // namespace xpool::agent::nvml_internal
