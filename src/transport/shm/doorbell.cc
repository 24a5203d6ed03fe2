#include "transport/shm/doorbell.h"

#include "transport/shm/wake_socket.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace coll::transport::shm {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is a plain 32-bit word");

uint32_t* word(Doorbell* d) { return reinterpret_cast<uint32_t*>(&d->bell); }

}  // namespace

void ring(SegmentHeader* h, int wake_sender) {
  Doorbell* d = &h->doorbell;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (d->fd_sleepers.load(std::memory_order_relaxed) > 0 && wake_sender >= 0 && h->wake_name[0])
    (void)sendWake(wake_sender, h->wake_name);
  if (d->sleepers.load(std::memory_order_relaxed) == 0) return;
  d->bell.fetch_add(1, std::memory_order_release);
  ::syscall(SYS_futex, word(d), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

uint32_t prepareSleep(Doorbell* d) {
  d->sleepers.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return d->bell.load(std::memory_order_acquire);
}

void sleep(Doorbell* d, uint32_t seq, std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return;
  timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000), static_cast<long>(timeout.count() % 1'000'000'000)};
  // EAGAIN (the bell moved), EINTR and ETIMEDOUT all mean: go and look again.
  ::syscall(SYS_futex, word(d), FUTEX_WAIT, seq, &ts, nullptr, 0);
}

void finishSleep(Doorbell* d) { d->sleepers.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace coll::transport::shm
