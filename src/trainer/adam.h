// Adam (Kingma & Ba 2015) with bias correction, as torch.optim.Adam:
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= lr * m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps)
#pragma once

#include <vector>

#include "trainer/optimizer.h"

namespace coll::trainer {

class Adam : public Optimizer {
 public:
  explicit Adam(float lr, float beta1 = 0.9f, float beta2 = 0.999f, float epsilon = 1e-8f)
      : lr_(lr), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  void initState(size_t count) override;
  void beginStep() override { ++step_; }
  void update(size_t first, std::span<float> params, std::span<const float> grads) override;
  size_t stateBytes() const override { return (m_.size() + v_.size()) * sizeof(float); }

 private:
  float lr_, beta1_, beta2_, epsilon_;
  long step_ = 0;
  std::vector<float> m_, v_;
};

}  // namespace coll::trainer
