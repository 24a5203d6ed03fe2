// Reclaiming what a job killed during start-up left in /dev/shm. A segment's name is removed
// once every local peer has mapped it (the set-up barrier), and survivors remove the names of
// peers that died before; but when every rank of a host dies before that barrier (the kernel's
// out-of-memory killer, then the launcher, ending a 128-rank start-up), nobody is left to, and
// each such job took gigabytes of /dev/shm from the next. The lowest rank of each host's next
// job removes them: coll's segments (magic, name "coll-*", this user's) whose owner no longer
// holds its lock on them. The owner takes a shared flock on its segment before writing the
// magic and keeps it while it lives (segment.h); the kernel drops it when the process dies,
// however it dies, so a free lock means a dead owner, whatever PID namespace it ran in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace coll::transport::shm {

struct Reclaimed {
  int segments = 0;
  uint64_t bytes = 0;
};

// Removes the stale segments in `dir` (/dev/shm normally). Never touches a segment whose
// owner lives, one being written (no magic yet), another user's, or anything not coll's; a
// segment of an older layout (no lock) only when no process has its owner's PID.
Reclaimed reclaimStaleSegments(const std::string& dir = "/dev/shm");

}  // namespace coll::transport::shm
