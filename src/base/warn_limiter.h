// Rate limit for one warning site: a peer that retries forever, or a port scan hitting the
// listener, must not flood the log. COLL_WARN keeps one limiter per call site: the first
// kBurst lines print; after that, at most one line per kInterval, saying how many like it were
// left out since the last one printed.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace coll {

class WarnLimiter {
 public:
  static constexpr uint64_t kBurst = 5;
  static constexpr std::chrono::seconds kInterval{10};
  using Clock = std::chrono::steady_clock;

  // Whether the line seen at `now` prints; if so, *left_out is how many lines of this site were
  // dropped since the previous printed one. Any thread.
  bool admit(Clock::time_point now, uint64_t* left_out);

 private:
  std::mutex mu_;
  uint64_t seen_ = 0;
  uint64_t dropped_ = 0;
  Clock::time_point last_printed_{};
};

// text, plus "(N more like this in the last S s were not shown)" when left_out > 0.
std::string withLeftOut(std::string text, uint64_t left_out);

}  // namespace coll
