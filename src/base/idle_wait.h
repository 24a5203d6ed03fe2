// How a transport's progress() waits when it finds nothing to do: spin (an answer a few
// hundred ns away is caught without a system call), then yield (a runnable peer sharing the
// core gets it: ranks may outnumber cores), then sleep in slices (the caller's own way: a
// futex doorbell, an event fd) so that a dead peer or an abort() is noticed. The phase follows
// from how long the caller has been idle. Shared by the shm, ucx and verbs transports; each
// states its figures and where they were measured (base/spin_wait.h is the hand-off between
// two threads of one process, not this).
//
// Threading: one IdleWait per waiting thread; no state beyond when it became idle.
#pragma once

#include <algorithm>
#include <chrono>
#include <sched.h>

namespace coll {

struct IdlePolicy {
  std::chrono::nanoseconds spin{0};   // spin this long first
  std::chrono::nanoseconds yield{0};  // then yield the core this long
  std::chrono::nanoseconds sleep_slice{0};  // then sleep at most this long at a time
  int relax_per_spin = 0;  // CPU pause instructions per spinning look (0: look again at once)
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class IdleWait {
 public:
  using Clock = std::chrono::steady_clock;

  explicit IdleWait(const IdlePolicy& policy, Clock::time_point now = Clock::now()) : policy_(policy), since_(now) {}

  // Something moved: the next pause starts from spinning again.
  void reset(Clock::time_point now) { since_ = now; }
  Clock::time_point since() const { return since_; }

  // One pause, `now` being the caller's last clock read. sleep(limit) is called in the sleep
  // phase with the slice, cut at `until`; it may return early (a wake-up).
  template <typename Sleep>
  void pause(Clock::time_point now, Clock::time_point until, Sleep&& sleep) const {
    const auto idle = now - since_;
    if (idle < policy_.spin) {
      for (int i = 0; i < policy_.relax_per_spin; ++i) cpuRelax();
    } else if (idle < policy_.spin + policy_.yield) {
      ::sched_yield();
    } else {
      sleep(std::max<Clock::duration>(Clock::duration::zero(),
                                      std::min<Clock::duration>(until - now, policy_.sleep_slice)));
    }
  }

 private:
  IdlePolicy policy_;
  Clock::time_point since_;
};

}  // namespace coll
