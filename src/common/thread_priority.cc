#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace xpool {

int ThisThreadNice() {
  errno = 0;
  // PRIO_PROCESS with a thread id addresses that one thread on Linux (its nice value is per thread).
  const int value = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? value : 0;
}

Status RunNiced(int nice, const std::function<void()>& work) {
  if (nice < 0 || nice > 19) return InvalidArgumentError("a nice value must be 0..19, got " + std::to_string(nice));
  Status changed = Status::Ok();
  std::thread worker([&] {
    if (nice > ThisThreadNice() && ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
      changed = UnavailableError("cannot set the nice value " + std::to_string(nice) + ": " + std::strerror(errno));
    }
    work();
  });
  worker.join();
  return changed;
}

}  // namespace xpool
