// Optimizer: updates a contiguous range of the flat parameter buffer from its gradients.
//
// The unit of work is a range, not a whole model, so the trainer can update each gradient
// bucket the moment its all-reduce completes while later buckets are still on the wire, and
// the sharded (ZeRO-1) strategy can give an optimizer only this rank's shard. An optimizer
// owns its state (momentum, Adam moments) for `count` elements indexed from 0; `first` says
// where a range starts in that indexing. To plug in your own: derive, keep state per element
// index, and pass it to a strategy (docs/TRAINER.md).
#pragma once

#include <cstddef>
#include <span>

namespace coll::trainer {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Allocates state for `count` elements (zeroed). Called once, before any update.
  virtual void initState(size_t count) = 0;
  // Called once per step, before the step's updates (Adam counts steps here).
  virtual void beginStep() {}
  // params[i] and grads[i] are element first + i of this optimizer's indexing.
  virtual void update(size_t first, std::span<float> params, std::span<const float> grads) = 0;
  // Bytes of optimizer state held by this rank (what ZeRO-1 divides by the world size).
  virtual size_t stateBytes() const = 0;
  // The state itself, for a replica that must take another's (elastic training: a rank that
  // joins, or survivors that resume from the one ahead): empty when the optimizer cannot hand
  // it over this way.
  virtual std::span<float> state() { return {}; }
};

}  // namespace coll::trainer
