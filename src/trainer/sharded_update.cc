#include "trainer/sharded_update.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace coll::trainer {

void ShardedUpdate::setup(Communicator& comm, Model& model, const std::vector<Bucket>& buckets) {
  comm_ = &comm;
  model_ = &model;
  buckets_ = buckets;
  const size_t n = static_cast<size_t>(comm.size());
  shards_.assign(buckets.size(), Shards{});
  size_t state = 0;
  for (const Bucket& b : buckets) {
    Shards& s = shards_[b.index];
    s.shard = (b.count + n - 1) / n;
    s.state_first = state;
    s.grads.assign(s.shard * n, 0.0f);
    s.params.assign(s.shard * n, 0.0f);
    state += s.shard;
  }
  optimizer_->initState(state);
}

std::pair<size_t, size_t> ShardedUpdate::myRange(const Bucket& bucket, const Shards& s) const {
  size_t lo = std::min(bucket.count, static_cast<size_t>(comm_->rank()) * s.shard);
  size_t hi = std::min(bucket.count, lo + s.shard);
  return {lo, hi};
}

Work ShardedUpdate::launch(const Bucket& bucket) {
  Shards& s = shards_.at(bucket.index);
  std::memcpy(s.grads.data(), model_->grads().data() + bucket.offset, bucket.count * sizeof(float));
  float* mine = s.grads.data() + static_cast<size_t>(comm_->rank()) * s.shard;
  return comm_->reduceScatter(s.grads.data(), mine, s.shard, DataType::f32, ReduceOp::avg);
}

void ShardedUpdate::apply(const Bucket& bucket) {
  Shards& s = shards_.at(bucket.index);
  auto [lo, hi] = myRange(bucket, s);
  size_t my_first = static_cast<size_t>(comm_->rank()) * s.shard;
  std::span<float> params = model_->values().subspan(bucket.offset + lo, hi - lo);
  optimizer_->update(s.state_first, params,
                     std::span<const float>(s.grads.data() + my_first, hi - lo));
  float* mine = s.params.data() + my_first;
  std::memcpy(mine, params.data(), (hi - lo) * sizeof(float));
  s.gather = comm_->allgather(mine, s.params.data(), s.shard, DataType::f32);
}

void ShardedUpdate::endStep() {
  for (const Bucket& b : buckets_) {
    Shards& s = shards_[b.index];
    try {
      s.gather.wait();
    } catch (const Error& e) {
      throw Error(e.code(), "ZeRO-1 parameter all-gather of bucket " + std::to_string(b.index) + " on rank " +
                                std::to_string(comm_->rank()) + ": " + e.what());
    }
    std::memcpy(model_->values().data() + b.offset, s.params.data(), b.count * sizeof(float));
  }
}

}  // namespace coll::trainer
