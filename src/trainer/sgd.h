// SGD with (heavy-ball) momentum and optional weight decay, as torch.optim.SGD:
//   v = momentum * v + (g + weight_decay * p);  p -= lr * v
#pragma once

#include <vector>

#include "trainer/optimizer.h"

namespace coll::trainer {

class SgdMomentum : public Optimizer {
 public:
  explicit SgdMomentum(float lr, float momentum = 0.9f, float weight_decay = 0.0f)
      : lr_(lr), momentum_(momentum), weight_decay_(weight_decay) {}
  void initState(size_t count) override { velocity_.assign(count, 0.0f); }
  void update(size_t first, std::span<float> params, std::span<const float> grads) override;
  size_t stateBytes() const override { return velocity_.size() * sizeof(float); }
  std::span<float> state() override { return velocity_; }

 private:
  float lr_, momentum_, weight_decay_;
  std::vector<float> velocity_;
};

}  // namespace coll::trainer
