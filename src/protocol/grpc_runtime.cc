#include "protocol/grpc_runtime.h"

#include <absl/synchronization/mutex.h>

#include <mutex>

namespace xpool::protocol {

void PrepareGrpcRuntime() {
  static std::once_flag once;
  std::call_once(once, [] { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); });
}

}  // namespace xpool::protocol
