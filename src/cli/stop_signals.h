#pragma once
// Blocks SIGINT/SIGTERM in the calling thread (and the threads it starts later) so that a dedicated thread can
// take them with sigwait and shut down outside a signal handler; ignores SIGPIPE (a client that hangs up must
// not kill a server). Used by the long-running commands (`xpool server`, `xpool up`). Call before any thread
// is started.
#include <pthread.h>

#include <csignal>

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

}  // namespace xpool::cli
