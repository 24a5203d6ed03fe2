// ReLU: y = max(x, 0); the gradient passes where the input was positive.
#pragma once

#include "trainer/layer.h"

namespace coll::trainer {

class Relu : public Layer {
 public:
  std::string name() const override { return "relu"; }
  void forward(const Matrix& in, Matrix* out) override;
  void backward(const Matrix& grad_out, Matrix* grad_in) override;

 private:
  Matrix output_;  // the mask: output > 0 exactly where the input was
};

}  // namespace coll::trainer
