// Dense (fully connected) layer: y = x W + b, with W of shape [in, out].
#pragma once

#include "trainer/layer.h"

namespace coll::trainer {

class Dense : public Layer {
 public:
  Dense(size_t in, size_t out) : in_(in), out_(out) {}
  std::string name() const override;
  std::vector<ParamSpec> parameters() const override;
  void bind(std::vector<ParamView> views) override;
  // He-uniform weights (suits ReLU), zero bias; a fixed-seed generator, so ranks agree.
  void initialize(unsigned seed) override;
  void forward(const Matrix& in, Matrix* out) override;
  void backward(const Matrix& grad_out, Matrix* grad_in) override;

  size_t inputs() const { return in_; }
  size_t outputs() const { return out_; }

 private:
  size_t in_, out_;
  ParamView weight_, bias_;
  Matrix input_;  // kept for backward
};

}  // namespace coll::trainer
