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
// reader's pace counts) and compares the methods by the median time per byte of their last
// kSamples messages: one message held up between two ops (the reader posts no receive there)
// takes 30 times as long as its neighbours, and would swing an average. It uses the faster
// method. Every kExploreEvery messages it uses the other one for kExploreRun
// messages. After every switch it leaves kSettle messages untimed: until the reader has drained
// the slots written the old way, a message's time is still the old method's.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace coll::transport::shm {

class SlotCopyPolicy {
 public:
  // Smaller messages always go through the cache: the next op likely reads them from there.
  static constexpr size_t kMinBytes = 256 << 10;
  static constexpr uint64_t kExploreEvery = 256;  // 128 MiB in 512 KiB slices
  static constexpr int kExploreRun = 8;
  static constexpr int kSettle = 3;  // a ring (8 x 128 KiB) holds two 512 KiB messages
  static constexpr int kSamples = 5;

  // Whether to stream a message of `bytes`. timeable: its bytes are all ready, so its time is
  // the ring's (a forward waits on its receive instead). *timed: record() it when it is written.
  bool streams(size_t bytes, bool timeable, bool* timed);
  void record(bool streamed, size_t bytes, std::chrono::nanoseconds took);

 private:
  // The last kSamples times per byte of one method, and their median.
  struct Samples {
    std::array<double, kSamples> ns_per_byte{};
    int count = 0;  // held, at most kSamples
    size_t next = 0;  // where the next one goes, the oldest
    void add(double sample) {
      ns_per_byte[next] = sample;
      next = (next + 1) % kSamples;
      count = std::min(count + 1, kSamples);
    }
    double median() const;
  };

  bool fasterIsStreaming() const;
  bool next();  // the method of the next timeable message

  Samples samples_[2];              // cached, streaming
  bool streaming_ = false;          // the method in use
  int settle_ = kSettle;            // messages left before the next one is timed
  int exploring_ = 0;               // messages left of a run of the other method
  uint64_t since_explored_ = 0;
};

}  // namespace coll::transport::shm
