#include "trainer/sgd.h"

namespace coll::trainer {

void SgdMomentum::update(size_t first, std::span<float> params, std::span<const float> grads) {
  float* v = velocity_.data() + first;
  for (size_t i = 0; i < params.size(); ++i) {
    float g = grads[i] + weight_decay_ * params[i];
    v[i] = momentum_ * v[i] + g;
    params[i] -= lr_ * v[i];
  }
}

}  // namespace coll::trainer
