#include "trainer/dense.h"

#include <cmath>
#include <cstring>
#include <random>

namespace coll::trainer {

std::string Dense::name() const { return "dense" + std::to_string(in_) + "x" + std::to_string(out_); }

std::vector<ParamSpec> Dense::parameters() const { return {{"weight", in_ * out_}, {"bias", out_}}; }

void Dense::bind(std::vector<ParamView> views) {
  weight_ = views.at(0);
  bias_ = views.at(1);
}

void Dense::initialize(unsigned seed) {
  std::mt19937 gen(seed);
  float limit = std::sqrt(6.0f / static_cast<float>(in_));
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (float& w : weight_.value) w = dist(gen);
  std::fill(bias_.value.begin(), bias_.value.end(), 0.0f);
}

// Row i of y is b plus the rows of W weighted by x[i][k]: an axpy per input feature over a
// contiguous row of W, which the compiler vectorises.
void Dense::forward(const Matrix& in, Matrix* out) {
  input_ = in;
  out->resize(in.rows, out_);
  const float* w = weight_.value.data();
  for (size_t i = 0; i < in.rows; ++i) {
    float* y = out->row(i);
    std::memcpy(y, bias_.value.data(), out_ * sizeof(float));
    const float* x = in.row(i);
    for (size_t k = 0; k < in_; ++k) {
      float xk = x[k];
      const float* wk = w + k * out_;
      for (size_t j = 0; j < out_; ++j) y[j] += xk * wk[j];
    }
  }
}

// dW = x^T dy, db = sum over rows of dy, dx = dy W^T.
void Dense::backward(const Matrix& grad_out, Matrix* grad_in) {
  float* dw = weight_.grad.data();
  float* db = bias_.grad.data();
  std::memset(dw, 0, in_ * out_ * sizeof(float));
  std::memset(db, 0, out_ * sizeof(float));
  const float* w = weight_.value.data();
  grad_in->resize(grad_out.rows, in_);
  for (size_t i = 0; i < grad_out.rows; ++i) {
    const float* dy = grad_out.row(i);
    const float* x = input_.row(i);
    float* dx = grad_in->row(i);
    for (size_t j = 0; j < out_; ++j) db[j] += dy[j];
    for (size_t k = 0; k < in_; ++k) {
      float xk = x[k];
      float* dwk = dw + k * out_;
      const float* wk = w + k * out_;
      float acc = 0.0f;
      for (size_t j = 0; j < out_; ++j) {
        dwk[j] += xk * dy[j];
        acc += dy[j] * wk[j];
      }
      dx[k] = acc;
    }
  }
}

}  // namespace coll::trainer
