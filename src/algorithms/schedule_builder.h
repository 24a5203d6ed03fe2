// Builds a Schedule while deriving dependencies from data hazards, so an algorithm states only
// what each step reads and writes. Regions are the builder's unit of overlap (typically one
// slice of one chunk); a step that writes a region waits for its last writer and every reader
// since, a step that reads it waits for its last writer.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "algorithms/schedule.h"

namespace coll::algo {

class ScheduleBuilder {
 public:
  ScheduleBuilder(std::string algorithm, size_t num_regions);

  // Appends step (its own deps are kept and hazards added); returns its index.
  uint32_t add(Step step, std::initializer_list<size_t> reads, std::initializer_list<size_t> writes);
  // The same for steps whose byte range spans several regions (an algorithm that coalesces
  // neighbouring chunks into one message).
  uint32_t add(Step step, const std::vector<size_t>& reads, const std::vector<size_t>& writes);
  // A step that writes every region (the initial copy of an out-of-place op).
  uint32_t addWritingAll(Step step);

  void setScratchBytes(size_t bytes) { schedule_.scratch_bytes = bytes; }
  void setNumPhases(uint32_t n) { schedule_.num_phases = n; }
  Schedule finish() { return std::move(schedule_); }

 private:
  struct Region {
    int64_t last_writer = -1;
    std::vector<uint32_t> readers;  // since the last write
  };

  uint32_t addSpans(Step step, std::span<const size_t> reads, std::span<const size_t> writes);

  Schedule schedule_;
  std::vector<Region> regions_;
};

// Everything an algorithm needs to know to write one rank's schedule.
struct BuildParams {
  int rank = 0;
  int nranks = 1;
  size_t count = 0;       // elements
  size_t elem_size = 4;   // bytes per element
  bool in_place = true;
  bool average = false;   // ReduceOp::avg: divide once the reduction is complete
  int root = 0;           // rooted collectives
  size_t slice_bytes = 512 << 10;
  int pipeline_depth = 8; // receive slots per peer for reductions
  // Ranks of each host, in rank order (empty: unknown). Hierarchical algorithms need it.
  const std::vector<std::vector<int>>* hosts = nullptr;
};

}  // namespace coll::algo
