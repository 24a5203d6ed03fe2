// A dense layer that takes the time an accelerator of `gflops` would, sleeping instead of
// computing (forward 2*b*in*out FLOPs, backward twice that): the CPUs then serve communication
// only, as on a GPU node. Outputs and gradients are zeros; the bytes all-reduced are the real
// layer's. Used to measure overlap on machines with fewer cores than ranks (coll-train
// --device-gflops, bench/trainer_overlap).
#pragma once

#include <string>
#include <vector>

#include "trainer/layer.h"

namespace coll::trainer {

class DeviceTimedDense : public Layer {
 public:
  DeviceTimedDense(size_t in, size_t out, double gflops) : in_(in), out_(out), gflops_(gflops) {}
  std::string name() const override { return "device_dense" + std::to_string(in_) + "x" + std::to_string(out_); }
  std::vector<ParamSpec> parameters() const override { return {{"weight", in_ * out_}, {"bias", out_}}; }
  void forward(const Matrix& in, Matrix* out) override;
  void backward(const Matrix& grad_out, Matrix* grad_in) override;

 private:
  void sleepFor(double flops) const;
  size_t in_, out_;
  double gflops_;
};

}  // namespace coll::trainer
