// Runs a function once per process, like pthread_once, but tolerates re-entry from the thread running it: the
// driver's own initialisation may call back into our hooks (dlopen runs constructors that may call dlsym), and
// pthread_once would deadlock there. Other threads wait until the first run finished. Thread-safe.
#pragma once

#include <sched.h>

#include <atomic>

namespace xpool::vgpu {

class ReentrantOnce {
 public:
  template <typename Fn>
  void Run(Fn fn) {
    if (state_.load(std::memory_order_acquire) == kDone) return;
    for (int i = 0; i < depth_; ++i) {
      if (running_[i] == this) return;  // nested call from this thread's running initialisation
    }
    int expected = kNotStarted;
    if (state_.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
      if (depth_ < kMaxDepth) running_[depth_] = this;
      ++depth_;
      fn();
      --depth_;
      state_.store(kDone, std::memory_order_release);
      return;
    }
    while (state_.load(std::memory_order_acquire) != kDone) sched_yield();
  }
  bool done() const { return state_.load(std::memory_order_acquire) == kDone; }

 private:
  static constexpr int kNotStarted = 0;
  static constexpr int kRunning = 1;
  static constexpr int kDone = 2;
  static constexpr int kMaxDepth = 8;
  std::atomic<int> state_{kNotStarted};
  // The onces this thread is running, innermost last (initialisations may nest: EnsureInit -> EnsureNvml).
  static thread_local const void* running_[kMaxDepth];
  static thread_local int depth_;
};

inline thread_local const void* ReentrantOnce::running_[ReentrantOnce::kMaxDepth] = {};
inline thread_local int ReentrantOnce::depth_ = 0;

}  // namespace xpool::vgpu
