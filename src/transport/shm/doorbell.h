// Sleeping and waking across processes on a futex in shared memory (non-private futexes).
//
// The owner of a Doorbell (the rank whose segment holds it) is the only sleeper. Protocol,
// a Dekker-style handshake that loses no wake-up:
//   sleeper: seq = prepareSleep(d)   // sleepers++, full fence, read bell
//            if (nothing to do after polling once more) sleep(d, seq, timeout)
//            finishSleep(d)          // sleepers--
//   ringer:  publish its data (release), then ring(h): full fence; only if sleepers > 0
//            bump the bell and FUTEX_WAKE; only if fd_sleepers > 0, send a wake datagram.
// Either the ringer sees the sleeper (and wakes it; a bell bumped before the sleeper's
// FUTEX_WAIT makes that wait return at once) or the sleeper's last poll sees the ringer's data.
// While nobody sleeps, ring() costs a fence and a load of a rarely written cache line. An owner
// waiting in poll() (fd_sleepers) follows the same protocol around its poll.
#pragma once

#include <chrono>
#include <cstdint>

#include "transport/shm/layout.h"

namespace coll::transport::shm {

// Wakes the owner of the segment `h` heads; `wake_sender` is the ringer's wake socket (-1: none).
void ring(SegmentHeader* h, int wake_sender);
uint32_t prepareSleep(Doorbell* d);
// Returns after a ring, at the timeout, or spuriously (callers re-check their condition).
void sleep(Doorbell* d, uint32_t seq, std::chrono::nanoseconds timeout);
void finishSleep(Doorbell* d);

}  // namespace coll::transport::shm
