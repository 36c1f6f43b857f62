#pragma once
// Set-up shared by the agent's forked children (the task shim started by the launcher, the task started by the
// shim), called between fork() and exec(): only async-signal-safe calls.
#include <signal.h>
#include <unistd.h>

namespace xpool::agent::internal {

// Makes the calling (just forked) process the leader of a new session and process group, so signals sent to
// -pid reach it and its children and nothing aimed at the parent's group reaches them, and gives it an empty
// signal mask with every disposition back at its default (a child inherits both from its parent across exec).
inline void StartOwnSessionWithDefaultSignals() {
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
}

}  // namespace xpool::agent::internal
