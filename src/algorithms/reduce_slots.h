// The scratch slots that reducing receives land in. A recvReduce receives a slice into scratch
// and combines it into its region; `depth` slots of one slice each rotate, so the k-th such step
// of a schedule uses slot k mod depth and waits for step k - depth, the slot's previous user.
// Every algorithm whose receives combine (ring, tree, halving-doubling, hierarchical, direct,
// ordered) takes its slots here.
//
// Slices over kLargeSlotBytes (the larger slices of big ops between hosts, slice_size.h) take
// two slots whatever the depth: the reduction then reads a slot soon after the socket filled it,
// and fewer receives wait posted at once. Netcluster 4 x 1 (4 ranks on 2 cores), ring all-reduce,
// ms an op, interleaved A/B runs of COLL_PIPELINE_DEPTH (bench/scripts/env_ab.py): 256 MiB at
// 10 Gbit/s (2.4 MiB slices), 8 slots 921-937 in three runs, 3 slots 926, 2 slots 850-867,
// 1 slot 864, a profile putting the 8 % in the socket's receive copy and the softirq work beside
// it; 64 MiB there 238 against 220 (2 slots) and 216 (1); unshaped 256 MiB (4 MiB slices) 705-713
// against 690-722 (2; 722 in the first of three runs) and 712 (1); 16 MiB (2 MiB slices) alike at
// 2, 4 and 8 slots; 2 x 2 at 10 Gbit/s, 256 MiB: hierarchical all-reduce 479 against 468,
// reduce-scatter 258 against 253.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/schedule_builder.h"

namespace coll::algo {

inline constexpr size_t kLargeSlotBytes = size_t{1} << 20;
inline constexpr int kLargeSlots = 2;

// How many slots of `slice_bytes` a schedule rotates: `depth` (COLL_PIPELINE_DEPTH), at most
// kLargeSlots for slices over kLargeSlotBytes, at least one.
inline size_t reduceSlotCount(int depth, size_t slice_bytes) {
  const int most = slice_bytes > kLargeSlotBytes ? std::min(depth, kLargeSlots) : depth;
  return static_cast<size_t>(std::max(most, 1));
}

class ReduceSlots {
 public:
  ReduceSlots(int depth, size_t slice_bytes) : depth_(reduceSlotCount(depth, slice_bytes)), slice_(slice_bytes) {}
  explicit ReduceSlots(const BuildParams& p) : ReduceSlots(p.pipeline_depth, p.slice_bytes) {}

  // Gives `step` the next slot and the wait for that slot's previous user. The index the
  // builder returns for it must be reported with used() before the next call.
  Step next(Step step) const {
    const size_t k = users_.size();
    step.scratch_offset = (k % depth_) * slice_;
    if (k >= depth_) step.deps.push_back(users_[k - depth_]);
    return step;
  }
  void used(uint32_t step) { users_.push_back(step); }

  // next(), added reading and writing `regions` (the slice it combines into), and used().
  uint32_t add(ScheduleBuilder& b, Step step, size_t region) { return add(b, std::move(step), std::vector<size_t>{region}); }
  uint32_t add(ScheduleBuilder& b, Step step, const std::vector<size_t>& regions) {
    return add(b, std::move(step), regions, regions);
  }
  // The same where the step reads other regions than it writes (a partial sum kept in scratch,
  // Step::partial_at).
  uint32_t add(ScheduleBuilder& b, Step step, const std::vector<size_t>& reads, const std::vector<size_t>& writes) {
    const uint32_t index = b.add(next(std::move(step)), reads, writes);
    used(index);
    return index;
  }

  // The scratch the slots in use take (ScheduleBuilder::setScratchBytes).
  size_t bytes() const { return std::min(users_.size(), depth_) * slice_; }
  // All `depth` slots: where other scratch of the schedule may start.
  size_t reserved() const { return depth_ * slice_; }

 private:
  size_t depth_;
  size_t slice_;
  std::vector<uint32_t> users_;  // the recvReduce steps, in order
};

}  // namespace coll::algo
