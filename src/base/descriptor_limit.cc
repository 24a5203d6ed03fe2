#include "base/descriptor_limit.h"

#include <sys/resource.h>

#include <algorithm>

#include "base/log.h"

namespace coll {

DescriptorBudget ensureDescriptors(uint64_t needed) {
  DescriptorBudget b;
  b.needed = needed;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return b;
  b.soft_before = b.soft_after = lim.rlim_cur;
  b.hard = lim.rlim_max;
  b.short_of_it = lim.rlim_max != RLIM_INFINITY && lim.rlim_max < needed;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed) {
    const rlim_t want = lim.rlim_max == RLIM_INFINITY ? 2 * needed : std::min<rlim_t>(lim.rlim_max, 2 * needed);
    rlimit raised{want, lim.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      b.soft_after = want;
      b.raised = true;
    }
  }
  return b;
}

std::string describeDescriptors(const DescriptorBudget& b, int rank, int size) {
  if (b.short_of_it)
    return format("rank %d: a job of %d ranks needs about %llu open files here (a socket to every peer on another "
                  "host for point-to-point), but the hard limit is %llu: raise it (ulimit -Hn, LimitNOFILE=, "
                  "/etc/security/limits.conf), or send and recv with some peers will fail to connect (EMFILE)",
                  rank, size, static_cast<unsigned long long>(b.needed), static_cast<unsigned long long>(b.hard));
  if (b.raised)
    return format("rank %d: open-file limit raised from %llu to %llu (a job of %d ranks needs about %llu here)", rank,
                  static_cast<unsigned long long>(b.soft_before), static_cast<unsigned long long>(b.soft_after), size,
                  static_cast<unsigned long long>(b.needed));
  return "";
}

}  // namespace coll
