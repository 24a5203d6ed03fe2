#include "transport/shm/slot_copy_policy.h"

#include <algorithm>

namespace coll::transport::shm {
namespace {

// Where the cores share no cache, streaming took half the time (broadcast and all-gather of
// 64 MiB on 2 ranks); where they do, about 1.2-1.4 times as long.
constexpr double kStreamingMargin = 0.85;

}  // namespace

double SlotCopyPolicy::Samples::median() const {
  const int n = count;
  std::array<double, kSamples> sorted{};
  for (int i = 0; i < n; ++i) {  // insertion sort of at most kSamples values
    int j = i;
    for (; j > 0 && sorted[static_cast<size_t>(j - 1)] > ns_per_byte[static_cast<size_t>(i)]; --j)
      sorted[static_cast<size_t>(j)] = sorted[static_cast<size_t>(j - 1)];
    sorted[static_cast<size_t>(j)] = ns_per_byte[static_cast<size_t>(i)];
  }
  return sorted[static_cast<size_t>(n / 2)];
}

// Streaming must win clearly. Where the two look alike (a rank whose messages wait on its
// peer's own sends, in an all-gather), the cache is kept, which serves the next op better.
bool SlotCopyPolicy::fasterIsStreaming() const {
  return samples_[1].count > 0 && samples_[0].count > 0 && samples_[1].median() < kStreamingMargin * samples_[0].median();
}

bool SlotCopyPolicy::next() {
  if (samples_[0].count == 0) return false;  // measure each method first
  if (samples_[1].count == 0) return true;
  if (exploring_ > 0) {
    --exploring_;
    return streaming_;  // the run keeps the method it started with
  }
  const bool faster = fasterIsStreaming();
  if (++since_explored_ < kExploreEvery) return faster;
  since_explored_ = 0;
  exploring_ = kExploreRun - 1;
  return !faster;
}

bool SlotCopyPolicy::streams(size_t bytes, bool timeable, bool* timed) {
  *timed = false;
  if (bytes < kMinBytes) return false;
  if (!timeable) return streaming_;
  const bool method = next();
  if (method != streaming_) {
    streaming_ = method;
    settle_ = kSettle;
  }
  if (settle_ > 0) {
    --settle_;
    return streaming_;
  }
  *timed = true;
  return streaming_;
}

void SlotCopyPolicy::record(bool streamed, size_t bytes, std::chrono::nanoseconds took) {
  samples_[streamed ? 1 : 0].add(static_cast<double>(took.count()) / static_cast<double>(bytes));
}

}  // namespace coll::transport::shm
