// Waiting for another thread of this process for a few microseconds before sleeping: a
// condvar wake-up costs several µs (tens when ranks outnumber cores), more than a whole small
// collective over shared memory. The spin yields the CPU, so a descheduled thread that we wait
// for gets to run instead of being starved by us.
#pragma once

#include <chrono>
#include <sched.h>

namespace coll {

// How long the issuing thread and the progress thread poll for each other before blocking.
inline constexpr auto kHandoffSpin = std::chrono::microseconds(50);

// Returns true as soon as ready() holds, false once `budget` passed without it.
template <typename Ready>
bool spinUntil(Ready&& ready, std::chrono::microseconds budget = kHandoffSpin) {
  if (ready()) return true;  // most waits end here: no clock read
  auto until = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    sched_yield();
  }
}

}  // namespace coll
