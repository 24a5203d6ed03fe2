// ShardedUpdate: ZeRO stage 1 (Rajbhandari et al. 2020) — the optimizer state is partitioned.
//
// Each bucket (count elements) is cut into n shards of ceil(count / n) elements (the last
// padded with zeros). Per bucket: reduce-scatter (average) of the gradients leaves rank r with
// the averaged gradient of shard r; rank r updates that shard with an optimizer whose state
// covers only its shards (about 1/n of the replicated state); an all-gather then gives every
// rank every shard's new parameters. The all-gathers run while later buckets are applied;
// endStep waits for them and copies the parameters back into the model, so every rank ends the
// step with bit-identical parameters (each shard has exactly one writer).
//
// setup() (re)allocates the shards and zeroes the optimizer state: the trainer changes the
// bucket plan only before the first step.
#pragma once

#include <memory>
#include <vector>

#include "trainer/optimizer.h"
#include "trainer/update_strategy.h"

namespace coll::trainer {

class ShardedUpdate : public UpdateStrategy {
 public:
  explicit ShardedUpdate(std::unique_ptr<Optimizer> optimizer) : optimizer_(std::move(optimizer)) {}
  void setup(Communicator& comm, Model& model, const std::vector<Bucket>& buckets) override;
  void beginStep() override { optimizer_->beginStep(); }
  Work launch(const Bucket& bucket) override;
  void apply(const Bucket& bucket) override;
  void endStep() override;
  size_t optimizerStateBytes() const override { return optimizer_->stateBytes(); }

 private:
  struct Shards {
    size_t shard = 0;        // elements per rank
    size_t state_first = 0;  // where this rank's shard starts in the optimizer's indexing
    std::vector<float> grads, params;  // n * shard, padded
    Work gather;
  };
  // This rank's part of the bucket: [lo, hi) within it (empty past the end of a short bucket).
  std::pair<size_t, size_t> myRange(const Bucket& bucket, const Shards& s) const;

  std::unique_ptr<Optimizer> optimizer_;
  Communicator* comm_ = nullptr;
  Model* model_ = nullptr;
  std::vector<Shards> shards_;  // per bucket
  std::vector<Bucket> buckets_;
};

}  // namespace coll::trainer
