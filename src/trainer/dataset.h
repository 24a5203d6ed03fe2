// Datasets and batches: each rank holds only its shard of the examples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/matrix.h"

namespace coll::trainer {

struct Batch {
  Matrix features;          // one row per example
  std::vector<int> labels;  // one per row
};

struct Dataset {
  Matrix features;
  std::vector<int> labels;
  size_t size() const { return labels.size(); }
};

// Samples this rank's local batches of one epoch after another. The examples are shuffled per
// epoch with a seed that depends on the epoch and the rank (a fixed seed makes runs repeatable).
// steps_per_epoch must be equal on every rank (derive it from the global count).
class ShardSampler {
 public:
  ShardSampler(const Dataset& shard, size_t local_batch, size_t steps_per_epoch, unsigned seed, int rank);
  Batch batch(int64_t step) const;  // deterministic in step: safe from a prefetch thread

 private:
  const Dataset& shard_;
  size_t local_batch_, steps_per_epoch_;
  unsigned seed_;
  int rank_;
};

}  // namespace coll::trainer
