#pragma once
// Stop signals of the long-running commands (`xpool server`, `xpool up`, the k8s services).
//
// BlockStopSignals blocks SIGINT/SIGTERM in the calling thread (and the threads it starts later) so that a
// dedicated thread can take them with sigwait and shut down outside a signal handler; it ignores SIGPIPE (a
// client that hangs up must not kill a server). Call it before any thread is started.
//
// ServeUntilStopSignal runs a blocking serve function while a waiter thread takes the first stop signal and
// calls the stop function (which must make serve return). Stateless; call from the main thread.
#include <pthread.h>

#include <csignal>
#include <functional>
#include <string_view>

#include "common/status.h"

namespace xpool::cli {

inline sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

// Calls serve() and returns its status once serve has returned and the waiter thread has ended. On a stop
// signal the waiter prints "<who>: signal N, shutting down<detail>" to stderr and calls stop(). When serve
// returns an error on its own (e.g. the port is taken), the waiter is woken with SIGTERM so that it ends too.
// `stop_signals` is what BlockStopSignals returned.
[[nodiscard]] Status ServeUntilStopSignal(const sigset_t& stop_signals, std::string_view who, std::string_view detail,
                                          const std::function<Status()>& serve, const std::function<void()>& stop);

}  // namespace xpool::cli
