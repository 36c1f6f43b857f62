#include "cli/stop_signals.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

namespace xpool::cli {

Status ServeUntilStopSignal(const sigset_t& stop_signals, std::string_view who, std::string_view detail,
                            const std::function<Status()>& serve, const std::function<void()>& stop) {
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (served.load()) return;  // woken below: serve() has already returned
    std::fprintf(stderr, "%s: signal %d, shutting down%s\n", std::string(who).c_str(), sig,
                 std::string(detail).c_str());
    stop();
  });
  Status s = serve();
  served = true;
  // serve() returned without a signal (an error): wake the waiter with a stop signal (blocked in every thread,
  // so only its sigwait takes it).
  if (!s.ok()) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return s;
}

}  // namespace xpool::cli
