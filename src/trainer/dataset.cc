#include "trainer/dataset.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>

namespace coll::trainer {

ShardSampler::ShardSampler(const Dataset& shard, size_t local_batch, size_t steps_per_epoch, unsigned seed, int rank)
    : shard_(shard), local_batch_(local_batch), steps_per_epoch_(steps_per_epoch), seed_(seed), rank_(rank) {
  if (local_batch * steps_per_epoch > shard.size())
    throw std::invalid_argument("ShardSampler: " + std::to_string(steps_per_epoch) + " steps of " +
                                std::to_string(local_batch) + " exceed the shard of " +
                                std::to_string(shard.size()) + " on rank " + std::to_string(rank));
}

// Recomputing the epoch's permutation per batch costs O(shard) — negligible beside a step, and
// it keeps batch() a pure function of the step.
Batch ShardSampler::batch(int64_t step) const {
  int64_t epoch = step / static_cast<int64_t>(steps_per_epoch_);
  size_t within = static_cast<size_t>(step % static_cast<int64_t>(steps_per_epoch_));
  std::vector<size_t> order(shard_.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 gen(seed_ * 1000003u + static_cast<unsigned>(epoch) * 7919u + static_cast<unsigned>(rank_));
  std::shuffle(order.begin(), order.end(), gen);
  Batch b;
  b.features.resize(local_batch_, shard_.features.cols);
  b.labels.resize(local_batch_);
  for (size_t i = 0; i < local_batch_; ++i) {
    size_t src = order[within * local_batch_ + i];
    std::memcpy(b.features.row(i), shard_.features.row(src), shard_.features.cols * sizeof(float));
    b.labels[i] = shard_.labels[src];
  }
  return b;
}

}  // namespace coll::trainer
