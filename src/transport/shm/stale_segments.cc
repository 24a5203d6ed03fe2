#include "transport/shm/stale_segments.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "base/fd_io.h"
#include "base/log.h"
#include "transport/shm/layout.h"

namespace coll::transport::shm {
namespace {

// The fields every layout version keeps where they are (layout.h says so).
struct HeaderPrefix {
  uint64_t magic;
  uint32_t version;
  uint32_t nchannels;
  int32_t owner_rank;
  int32_t owner_pid;
};
static_assert(offsetof(SegmentHeader, owner_pid) == offsetof(HeaderPrefix, owner_pid));

// Whether the segment open at `fd` still has its owner: from version 5 the owner holds a
// shared lock on it while it lives; before, only its PID says.
bool ownerLives(int fd, const HeaderPrefix& h) {
  if (h.version >= 5) return ::flock(fd, LOCK_EX | LOCK_NB) != 0;  // held by someone: alive
  if (h.owner_pid <= 0) return true;  // cannot judge: leave it
  return ::kill(h.owner_pid, 0) == 0 || errno == EPERM;
}

// Opens dir/name if it is this user's coll segment, its header in *h; null otherwise.
UniqueFd openSegmentFile(int dir_fd, const char* name, HeaderPrefix* h, uint64_t* bytes) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      static_cast<size_t>(st.st_size) < sizeof(HeaderPrefix))
    return UniqueFd();
  *bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  if (::pread(fd.get(), h, sizeof *h, 0) != static_cast<ssize_t>(sizeof *h) || h->magic != kSegmentMagic)
    return UniqueFd();
  return fd;
}

}  // namespace

Reclaimed reclaimStaleSegments(const std::string& dir) {
  Reclaimed done;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return done;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "coll-", 5) != 0 || std::strncmp(e->d_name, "coll-wake", 9) == 0) continue;
    HeaderPrefix h{};
    uint64_t bytes = 0;
    UniqueFd fd = openSegmentFile(::dirfd(d), e->d_name, &h, &bytes);
    if (!fd || ownerLives(fd.get(), h)) continue;
    if (::unlinkat(::dirfd(d), e->d_name, 0) != 0) continue;  // another rank got there first
    ++done.segments;
    done.bytes += bytes;
    COLL_INFO("SHM", "removed %s/%s (%s), left by rank %d (pid %d), which died before removing it", dir.c_str(),
              e->d_name, formatBytes(bytes).c_str(), h.owner_rank, h.owner_pid);
  }
  ::closedir(d);
  if (done.segments > 0)
    COLL_WARN("SHM", "removed %d shared-memory segment(s) (%s) that ranks of an earlier job left in %s when they "
              "died during start-up", done.segments, formatBytes(done.bytes).c_str(), dir.c_str());
  return done;
}

}  // namespace coll::transport::shm
