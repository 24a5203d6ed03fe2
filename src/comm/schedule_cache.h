// The schedules a communicator ran lately, with their executor plans, so that a training
// loop's steady stream of identical ops (the same buckets every step) does not rebuild and
// re-plan the same schedule, and allocates nothing, on every call. Small-message latency is
// mostly such bookkeeping.
//
// Everything a builder reads that can change between ops is in the key; the rest of
// BuildParams (rank, size, hosts, slice and pipeline settings) is fixed per communicator.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/catalog.h"
#include "exec/executor.h"
#include "exec/op.h"

namespace coll {

struct ScheduleKey {
  const algo::AlgorithmInfo* algorithm = nullptr;  // null: point-to-point
  OpKind kind = OpKind::allreduce;                 // send or recv, for point-to-point
  size_t count = 0;
  size_t elem_size = 0;
  int root = 0;
  bool in_place = false;
  bool average = false;

  bool operator==(const ScheduleKey& o) const {
    return algorithm == o.algorithm && kind == o.kind && count == o.count && elem_size == o.elem_size && root == o.root &&
           in_place == o.in_place && average == o.average;
  }
};

struct CachedSchedule {
  algo::Schedule schedule;
  ExecPlan plan;
  // Whether a reduce-scatter's own chunk may be reduced straight into the caller's buffer
  // (exec/result_window.h, windowFits), and whether also where that chunk is the input's own
  // (in place; windowMayOverwriteInput): -1 not yet known. The chunk is fixed by the key and the rank.
  mutable int8_t result_window_fits = -1;
  mutable int8_t result_over_input = -1;
};

class ScheduleCache {
 public:
  // Bigger schedules (large ops, thousands of pipelined slices) are not kept: they cost
  // memory, and their build time is nothing beside their transfer time.
  static constexpr size_t kMaxCachedSteps = 4096;

  explicit ScheduleCache(size_t capacity = 32) : capacity_(capacity) {}

  // The entry for `key`, built by `build()` (returning an algo::Schedule) if absent. The
  // reference stays valid until the next get().
  template <typename Build>
  const CachedSchedule& get(const ScheduleKey& key, Build&& build) {
    if (const CachedSchedule* hit = find(key)) return *hit;
    auto entry = std::make_unique<CachedSchedule>();
    entry->schedule = build();
    entry->plan = ExecPlan::of(entry->schedule);
    if (entry->schedule.steps.size() > kMaxCachedSteps) {  // a large op: building it is cheap beside it
      uncached_ = std::move(entry);
      return *uncached_;
    }
    return insert(key, std::move(entry));
  }

  size_t size() const { return entries_.size(); }

 private:
  const CachedSchedule* find(const ScheduleKey& key);  // moves a hit to the front
  const CachedSchedule& insert(const ScheduleKey& key, std::unique_ptr<CachedSchedule> entry);

  size_t capacity_;
  std::vector<std::pair<ScheduleKey, std::unique_ptr<CachedSchedule>>> entries_;  // most recent first
  std::unique_ptr<CachedSchedule> uncached_;  // the last schedule too big to keep
};

}  // namespace coll
