// UpdateStrategy: what happens to a bucket of gradients between backward and the next step.
//
// The trainer calls, per step: beginStep(); launch(b) for each bucket as soon as backward has
// produced it (from the bucketer, in bucket order); then, for each bucket in order, apply(b)
// once launch(b)'s Work completed; finally endStep(), which must leave every rank's parameters
// updated and bit-identical. Two strategies exist:
//   ReplicatedUpdate: all-reduce (through a CommHook) and a full optimizer on every rank.
//   ShardedUpdate (ZeRO-1): reduce-scatter, each rank updates its 1/n shard with 1/n of the
//   optimizer state, all-gather the parameters.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "trainer/bucketer.h"
#include "trainer/model.h"

namespace coll::trainer {

class UpdateStrategy {
 public:
  virtual ~UpdateStrategy() = default;
  // Called when the bucket plan is known (and again if it changes, before the first step).
  virtual void setup(Communicator& comm, Model& model, const std::vector<Bucket>& buckets) = 0;
  virtual void beginStep() {}
  virtual Work launch(const Bucket& bucket) = 0;
  virtual void apply(const Bucket& bucket) = 0;
  virtual void endStep() {}
  // Optimizer state held by this rank.
  virtual size_t optimizerStateBytes() const = 0;
  // That state as floats, when the strategy can hand it over (Optimizer::state); else empty.
  virtual std::span<float> optimizerState() { return {}; }
};

// The end of a step, for either trainer: waits for each bucket in order (later buckets stay on
// the wire while the optimizer updates the earlier ones), applies it, then endStep().
inline void applyInBucketOrder(Bucketer& bucketer, UpdateStrategy& update, Timeline& timeline, int64_t step) {
  for (const Bucket& b : bucketer.buckets()) {
    {
      ScopedEvent e(timeline, "wait bucket " + std::to_string(b.index), step);
      bucketer.wait(b.index);
    }
    ScopedEvent e(timeline, "update bucket " + std::to_string(b.index), step);
    update.apply(b);
  }
  ScopedEvent e(timeline, "end of step", step);
  update.endStep();
}

}  // namespace coll::trainer
