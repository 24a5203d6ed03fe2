#include "trainer/replicated_update.h"

namespace coll::trainer {

ReplicatedUpdate::ReplicatedUpdate(std::unique_ptr<Optimizer> optimizer, std::unique_ptr<CommHook> hook)
    : optimizer_(std::move(optimizer)), hook_(hook ? std::move(hook) : std::make_unique<AllreduceHook>()) {}

void ReplicatedUpdate::setup(Communicator& comm, Model& model, const std::vector<Bucket>& buckets) {
  comm_ = &comm;
  model_ = &model;
  hook_->setup(buckets);
  // The optimizer indexes the whole flat buffer, so a new bucket plan keeps its state.
  if (!state_ready_) optimizer_->initState(model.parameterCount());
  state_ready_ = true;
}

Work ReplicatedUpdate::launch(const Bucket& bucket) {
  return hook_->launch(*comm_, bucket, model_->grads().subspan(bucket.offset, bucket.count));
}

void ReplicatedUpdate::apply(const Bucket& bucket) {
  std::span<float> grads = model_->grads().subspan(bucket.offset, bucket.count);
  hook_->complete(bucket, grads);
  optimizer_->update(bucket.offset, model_->values().subspan(bucket.offset, bucket.count), grads);
}

}  // namespace coll::trainer
