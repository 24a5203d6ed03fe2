// Reclaiming what a job killed during start-up left in /dev/shm. A segment's name is removed
// once every local peer has mapped it (the set-up barrier), and survivors remove the names of
// peers that died before; but when every rank of a host dies before that barrier (the kernel's
// out-of-memory killer, then the launcher, ending a 128-rank start-up), nobody is left to, and
// each such job took gigabytes of /dev/shm from the next. The lowest rank of each host's next
// job removes them: coll's segments (magic, name "coll-*", this user's) whose owner process
// no longer exists (its PID gone, or reused by a process started at another time).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace coll::transport::shm {

// When process `pid` started, in clock ticks since boot (/proc/<pid>/stat); 0 when there is
// no such process (or it cannot be read).
uint64_t processStartTicks(pid_t pid);

struct Reclaimed {
  int segments = 0;
  uint64_t bytes = 0;
};

// Removes the stale segments in `dir` (/dev/shm normally). Never touches a segment whose
// owner lives, one being written (no magic yet), another user's, or anything not coll's.
Reclaimed reclaimStaleSegments(const std::string& dir = "/dev/shm");

}  // namespace coll::transport::shm
