#include "trainer/relu.h"

namespace coll::trainer {

void Relu::forward(const Matrix& in, Matrix* out) {
  out->resize(in.rows, in.cols);
  for (size_t i = 0; i < in.data.size(); ++i) out->data[i] = in.data[i] > 0.0f ? in.data[i] : 0.0f;
  output_ = *out;
}

void Relu::backward(const Matrix& grad_out, Matrix* grad_in) {
  grad_in->resize(grad_out.rows, grad_out.cols);
  for (size_t i = 0; i < grad_out.data.size(); ++i)
    grad_in->data[i] = output_.data[i] > 0.0f ? grad_out.data[i] : 0.0f;
}

}  // namespace coll::trainer
