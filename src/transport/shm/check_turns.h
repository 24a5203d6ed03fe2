// Checks that cost a system call each (has this peer's process died?), spread over sweeps: a
// sweep visits every selected item and grants the costly check to at most `budget` of them,
// starting where the last sweep's grants ended. So each selected item is checked within
// ceil(selected / budget) sweeps, and a sweep costs at most `budget` system calls whatever the
// number of peers (ShmTransport sweeps its connections every 50 ms while it waits).
#pragma once

#include <cstddef>

#include "base/status.h"

namespace coll::transport::shm {

class CheckTurns {
 public:
  explicit CheckTurns(size_t budget) : budget_(budget) {}

  // visit(i, granted) for each i in [0, n) that selected(i) picks, from the one whose turn
  // it is; granted for the first `budget` of them when `checking`. Stops at the first error.
  template <typename Selected, typename Visit>
  Status sweep(size_t n, bool checking, Selected selected, Visit visit) {
    if (n == 0) return Status::ok();
    const size_t start = turn_ % n;
    size_t granted = 0, next = start;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (start + k) % n;
      if (!selected(i)) continue;
      const bool grant = checking && granted < budget_;
      if (grant) {
        ++granted;
        next = (i + 1) % n;
      }
      if (Status st = visit(i, grant); !st) return st;
    }
    turn_ = next;
    return Status::ok();
  }

 private:
  size_t budget_;
  size_t turn_ = 0;  // where the next sweep starts granting
};

}  // namespace coll::transport::shm
