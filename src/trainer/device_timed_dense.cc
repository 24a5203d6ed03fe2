#include "trainer/device_timed_dense.h"

#include <chrono>
#include <thread>

namespace coll::trainer {

void DeviceTimedDense::forward(const Matrix& in, Matrix* out) {
  out->resize(in.rows, out_);
  sleepFor(2.0 * static_cast<double>(in.rows * in_ * out_));
}

void DeviceTimedDense::backward(const Matrix& grad_out, Matrix* grad_in) {
  grad_in->resize(grad_out.rows, in_);
  sleepFor(4.0 * static_cast<double>(grad_out.rows * in_ * out_));
}

void DeviceTimedDense::sleepFor(double flops) const {
  std::this_thread::sleep_for(std::chrono::duration<double>(flops / (gflops_ * 1e9)));
}

}  // namespace coll::trainer
