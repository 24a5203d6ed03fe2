#include "trainer/adam.h"

#include <cmath>

namespace coll::trainer {

void Adam::initState(size_t count) {
  m_.assign(count, 0.0f);
  v_.assign(count, 0.0f);
}

void Adam::update(size_t first, std::span<float> params, std::span<const float> grads) {
  const float correction1 = 1.0f - std::pow(beta1_, static_cast<float>(step_));
  const float correction2 = 1.0f - std::pow(beta2_, static_cast<float>(step_));
  float* m = m_.data() + first;
  float* v = v_.data() + first;
  for (size_t i = 0; i < params.size(); ++i) {
    float g = grads[i];
    m[i] = beta1_ * m[i] + (1.0f - beta1_) * g;
    v[i] = beta2_ * v[i] + (1.0f - beta2_) * g * g;
    float m_hat = m[i] / correction1;
    float v_hat = v[i] / correction2;
    params[i] -= lr_ * m_hat / (std::sqrt(v_hat) + epsilon_);
  }
}

}  // namespace coll::trainer
