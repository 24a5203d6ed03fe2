#include "base/warn_limiter.h"

namespace coll {

bool WarnLimiter::admit(Clock::time_point now, uint64_t* left_out) {
  std::lock_guard<std::mutex> lock(mu_);
  *left_out = 0;
  if (++seen_ <= kBurst || now - last_printed_ >= kInterval) {
    *left_out = dropped_;
    dropped_ = 0;
    last_printed_ = now;
    return true;
  }
  ++dropped_;
  return false;
}

std::string withLeftOut(std::string text, uint64_t left_out) {
  if (left_out == 0) return text;
  return text + " (" + std::to_string(left_out) + " more like this since the last one shown were left out; at most one " +
         "line per " + std::to_string(WarnLimiter::kInterval.count()) + " s after the first " +
         std::to_string(WarnLimiter::kBurst) + ")";
}

}  // namespace coll
