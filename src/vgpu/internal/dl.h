// The dynamic-linker side of the interposer: the real dlsym (our exported dlsym overrides the public one), and a
// lookup with RTLD_NEXT semantics relative to the original caller (a plain RTLD_NEXT lookup from inside our
// override would be relative to us). Thread-safe.
#pragma once

namespace xpool::vgpu {

using DlsymFn = void* (*)(void* handle, const char* name);
DlsymFn RealDlsym();
// What dlsym(RTLD_NEXT, name) called from code at `caller` would have returned without us.
void* NextSymbolAfter(const void* caller, const char* name);

}  // namespace xpool::vgpu
