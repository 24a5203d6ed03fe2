// The scratch slots that reducing receives land in. A recvReduce receives a slice into scratch
// and combines it into its region; `depth` slots of one slice each rotate, so the k-th such step
// of a schedule uses slot k mod depth and waits for step k - depth, the slot's previous user.
// Every algorithm whose receives combine (ring, tree, halving-doubling, hierarchical, direct,
// ordered) takes its slots here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/schedule_builder.h"

namespace coll::algo {

class ReduceSlots {
 public:
  ReduceSlots(int depth, size_t slice_bytes) : depth_(static_cast<size_t>(std::max(depth, 1))), slice_(slice_bytes) {}
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
    const uint32_t index = b.add(next(std::move(step)), regions, regions);
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
