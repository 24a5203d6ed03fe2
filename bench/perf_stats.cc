#include "perf_stats.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace coll::bench {

double processCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

double quantile(std::vector<double>* samples, double q) {
  if (samples->empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(samples->begin(), samples->end());
  // Nearest rank: the smallest sample with at least q of all samples at or below it.
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples->size())));
  return (*samples)[std::clamp<size_t>(rank, 1, samples->size()) - 1];
}

double cpuSecondsPerGB(double cpu_seconds, size_t ops, size_t bytes) {
  double gb = static_cast<double>(ops) * static_cast<double>(bytes) / 1e9;
  return gb > 0 ? cpu_seconds / gb : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace coll::bench
