// ReplicatedUpdate: each bucket is all-reduced through a CommHook and every rank runs the full
// optimizer on it (data parallelism as in DDP / MirroredStrategy). The optimizer updates bucket
// b as soon as b's all-reduce completes, while later buckets may still be on the wire.
#pragma once

#include <memory>

#include "trainer/comm_hook.h"
#include "trainer/optimizer.h"
#include "trainer/update_strategy.h"

namespace coll::trainer {

class ReplicatedUpdate : public UpdateStrategy {
 public:
  ReplicatedUpdate(std::unique_ptr<Optimizer> optimizer, std::unique_ptr<CommHook> hook);
  void setup(Communicator& comm, Model& model, const std::vector<Bucket>& buckets) override;
  void beginStep() override { optimizer_->beginStep(); }
  Work launch(const Bucket& bucket) override;
  void apply(const Bucket& bucket) override;
  size_t optimizerStateBytes() const override { return optimizer_->stateBytes(); }
  std::span<float> optimizerState() override { return optimizer_->state(); }

 private:
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<CommHook> hook_;
  Communicator* comm_ = nullptr;
  Model* model_ = nullptr;
  bool state_ready_ = false;
};

}  // namespace coll::trainer
