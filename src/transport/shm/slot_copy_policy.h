// How a sender copies a large payload into its shared-memory slots: through its cache, or around
// it with non-temporal stores.
//
// Through the cache, the reader takes each line from this core's cache. That is fastest where
// the two cores share a cache, and slow where they do not. Around the cache, the reader takes
// the lines from memory, at the same speed wherever the cores are.
//
// Measured on this project's 2-vCPU VM, whose host moves the two vCPUs between nearby and
// distant cores every few seconds to minutes. Broadcast of 64 MiB on 2 ranks:
// - cores close: 5.5–6.7 ms through the cache, 6.8–8.9 ms around it;
// - cores far apart: 11–18 ms through the cache, 5.8–7.8 ms around it.
// Cross-socket rank pairs on real servers have the same choice to make.
//
// Where the processes run can change while they run, so no rule is fixed in advance. The sender
// times its large messages (from the first slot to the last, ring waits included, so the
// reader's pace counts) and picks the faster way by timing (timed_choice.h). After every switch
// it leaves kSettle messages untimed: until the reader has drained the slots written the old
// way, a message's time is still the old method's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "transport/shm/timed_choice.h"

namespace coll::transport::shm {

class SlotCopyPolicy {
 public:
  // Smaller messages always go through the cache: the next op likely reads them from there.
  static constexpr size_t kMinBytes = 256 << 10;
  static constexpr uint64_t kExploreEvery = 256;  // 128 MiB in 512 KiB slices
  static constexpr int kExploreRun = 8;
  static constexpr int kSettle = 3;  // a ring (8 x 128 KiB) holds two 512 KiB messages

  // Whether to stream a message of `bytes`. timeable: its bytes are all ready, so its time is
  // the ring's (a forward waits on its receive instead). *timed: record() it when it is written.
  bool streams(size_t bytes, bool timeable, bool* timed);
  void record(bool streamed, size_t bytes, std::chrono::nanoseconds took) { choice_.record(streamed, bytes, took); }

 private:
  // Where the cores share no cache, streaming took half the time (broadcast and all-gather of
  // 64 MiB on 2 ranks); where they do, about 1.2-1.4 times as long. Streaming must win clearly:
  // where the two look alike (a rank whose messages wait on its peer's own sends, in an
  // all-gather), the cache is kept, which serves the next op better.
  TimedChoice choice_{TimedChoice::Rules{0.85, kExploreEvery, kExploreRun, kSettle, 1}};
};

}  // namespace coll::transport::shm
