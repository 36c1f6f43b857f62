#include "protocol/grpc_runtime.h"

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

namespace xpool::protocol {
namespace {

// Two abseil mutexes taken in both orders by one thread: with the deadlock detection Debian's abseil has on, the
// second order is reported as a potential deadlock and the process aborts; once prepared, it is not tracked.
void LockInBothOrders() {
  absl::Mutex first, second;
  first.Lock();
  second.Lock();
  second.Unlock();
  first.Unlock();
  second.Lock();
  first.Lock();
  first.Unlock();
  second.Unlock();
}

TEST(GrpcRuntimeTest, AbseilLockOrderIsNotTrackedOncePrepared) {
  PrepareGrpcRuntime();
  PrepareGrpcRuntime();  // a second endpoint in the same process
  LockInBothOrders();
  SUCCEED();
}

}  // namespace
}  // namespace xpool::protocol
