#pragma once
// Process-wide settings for the gRPC runtime, applied once by whichever gRPC endpoint a process starts first
// (the server's agent listener, the agent's client).
//
// - Abseil's mutex deadlock detection is turned off. Debian's abseil is built without NDEBUG, so every
//   absl::Mutex that gRPC takes records its lock order in a global graph (absl::synchronization_internal::
//   GraphCycles): ~5 % of a server's CPU under 1,500 heartbeating agents (`perf record` during
//   `xpool_server_load --mode agents`). xpool's own locks are std::mutex; gRPC's lock order is gRPC's to test.
//
// Thread-safe (call_once).
namespace xpool::protocol {

void PrepareGrpcRuntime();

}  // namespace xpool::protocol
