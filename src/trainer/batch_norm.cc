#include "trainer/batch_norm.h"

#include <cmath>
#include <string>

namespace coll::trainer {

void CrossReplicaBatchNorm::bind(std::vector<ParamView> views) {
  gamma_ = views.at(0);
  beta_ = views.at(1);
}

void CrossReplicaBatchNorm::initialize(unsigned) {
  std::fill(gamma_.value.begin(), gamma_.value.end(), 1.0f);
  std::fill(beta_.value.begin(), beta_.value.end(), 0.0f);
}

void CrossReplicaBatchNorm::sumAcrossReplicas(std::vector<double>* sums, const char* what) {
  if (!comm_ || comm_->size() == 1) return;
  try {
    comm_->allreduce(sums->data(), sums->data(), sums->size(), DataType::f64, ReduceOp::sum).wait();
  } catch (const Error& e) {
    throw Error(e.code(), name() + " " + what + " on rank " + std::to_string(comm_->rank()) + ": " + e.what());
  }
}

void CrossReplicaBatchNorm::forward(const Matrix& in, Matrix* out) {
  mean_.assign(features_, 0.0f);
  inv_std_.assign(features_, 0.0f);
  if (!training_) {
    for (size_t c = 0; c < features_; ++c) {
      mean_[c] = running_mean_[c];
      inv_std_[c] = 1.0f / std::sqrt(running_var_[c] + epsilon_);
    }
    return normalise(in, out);
  }
  // [sum x (features) | sum x^2 (features) | rows]
  std::vector<double> sums(2 * features_ + 1, 0.0);
  for (size_t i = 0; i < in.rows; ++i) {
    const float* x = in.row(i);
    for (size_t c = 0; c < features_; ++c) {
      sums[c] += x[c];
      sums[features_ + c] += static_cast<double>(x[c]) * x[c];
    }
  }
  sums[2 * features_] = static_cast<double>(in.rows);
  sumAcrossReplicas(&sums, "forward statistics");
  global_rows_ = sums[2 * features_];
  for (size_t c = 0; c < features_; ++c) {
    double mean = sums[c] / global_rows_;
    double var = std::max(0.0, sums[features_ + c] / global_rows_ - mean * mean);
    mean_[c] = static_cast<float>(mean);
    inv_std_[c] = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
    if (replay_) continue;
    running_mean_[c] = momentum_ * running_mean_[c] + (1 - momentum_) * mean_[c];
    running_var_[c] = momentum_ * running_var_[c] + (1 - momentum_) * static_cast<float>(var);
  }
  normalise(in, out);
}

void CrossReplicaBatchNorm::normalise(const Matrix& in, Matrix* out) {
  xhat_.resize(in.rows, features_);
  out->resize(in.rows, features_);
  for (size_t i = 0; i < in.rows; ++i) {
    for (size_t c = 0; c < features_; ++c) {
      float xh = (in.at(i, c) - mean_[c]) * inv_std_[c];
      xhat_.at(i, c) = xh;
      out->at(i, c) = gamma_.value[c] * xh + beta_.value[c];
    }
  }
}

// dx_i = gamma / sigma * (dy_i - sum(dy) / N - xhat_i * sum(dy * xhat) / N), sums over the
// global batch of N rows.
void CrossReplicaBatchNorm::backward(const Matrix& grad_out, Matrix* grad_in) {
  std::vector<double> sums(2 * features_, 0.0);  // [sum dy | sum dy * xhat]
  for (size_t i = 0; i < grad_out.rows; ++i) {
    for (size_t c = 0; c < features_; ++c) {
      sums[c] += grad_out.at(i, c);
      sums[features_ + c] += static_cast<double>(grad_out.at(i, c)) * xhat_.at(i, c);
    }
  }
  for (size_t c = 0; c < features_; ++c) {
    beta_.grad[c] = static_cast<float>(sums[c]);
    gamma_.grad[c] = static_cast<float>(sums[features_ + c]);
  }
  sumAcrossReplicas(&sums, "backward sums");
  grad_in->resize(grad_out.rows, features_);
  for (size_t i = 0; i < grad_out.rows; ++i) {
    for (size_t c = 0; c < features_; ++c) {
      double mean_dy = sums[c] / global_rows_;
      double mean_dy_xhat = sums[features_ + c] / global_rows_;
      double g = grad_out.at(i, c) - mean_dy - xhat_.at(i, c) * mean_dy_xhat;
      grad_in->at(i, c) = static_cast<float>(gamma_.value[c] * inv_std_[c] * g);
    }
  }
}

}  // namespace coll::trainer
