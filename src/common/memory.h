#pragma once
// ReleaseFreeMemory: gives the C library's free heap memory back to the system (glibc: malloc_trim), after a burst
// of short-lived allocations (a batch of 10,000 jobs parsed, stored and answered leaves ~130 MB in malloc's free
// lists otherwise, so a server's resident memory would depend on its history rather than on what it holds).
// Walks every malloc arena and takes their locks in turn: for rare, large operations, not per request.
// Thread-safe. A no-op without glibc.
namespace xpool {

void ReleaseFreeMemory();

}  // namespace xpool
