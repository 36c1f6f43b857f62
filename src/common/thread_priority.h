#pragma once
// Thread priority (the CFS nice value) for work that may wait behind other work of the same process. On Linux the
// nice value belongs to a thread, and a thread a thread creates starts with its creator's value, so work started
// by RunNiced (and every thread it starts, e.g. a library's own thread pool) runs below the rest of the process.
// A higher value takes a smaller share of a busy CPU (nice 10 against nice 0: about 1 to 10), never none: niced
// work is slowed, not stopped. Raising a value needs no privilege; lowering one again does, so it is never done.
// Stateless; thread-safe.
#include <functional>

#include "common/status.h"

namespace xpool {

// The calling thread's nice value (0 unless something changed it).
int ThisThreadNice();

// Runs `work` on a new thread whose nice value is `nice` (0..19) and waits for it. A nice value of 0, or the
// caller's own value or lower, runs `work` at the caller's value. Refuses a value outside 0..19 without running
// anything; when the system refuses the change (a sandbox's seccomp filter), `work` still runs, at the caller's
// value, and the error is returned after it.
Status RunNiced(int nice, const std::function<void()>& work);

}  // namespace xpool
