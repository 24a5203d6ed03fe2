#include "tasks/device_timed_dense.h"

#include <sys/prctl.h>

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

// A device runs a kernel for its time; the kernel's default timer slack (50 µs) would add up to
// that much to every modelled kernel, so the sleeping thread asks for 1 µs.
void DeviceTimedDense::sleepFor(double flops) const {
  thread_local const bool tight_timer = prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL) == 0;
  (void)tight_timer;
  std::this_thread::sleep_for(std::chrono::duration<double>(flops / (gflops_ * 1e9)));
}

}  // namespace coll::trainer
