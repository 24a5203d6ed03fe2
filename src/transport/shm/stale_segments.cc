#include "transport/shm/stale_segments.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

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
  uint64_t owner_started;  // version 5 and later
};
static_assert(offsetof(SegmentHeader, owner_pid) == offsetof(HeaderPrefix, owner_pid));
static_assert(offsetof(SegmentHeader, owner_started) == offsetof(HeaderPrefix, owner_started));

bool ownerLives(const HeaderPrefix& h) {
  if (h.owner_pid <= 0) return true;  // cannot judge: leave it
  if (h.version >= 5) {
    uint64_t started = processStartTicks(h.owner_pid);
    return started != 0 && started == h.owner_started;
  }
  return ::kill(h.owner_pid, 0) == 0 || errno == EPERM;
}

// The header of dir/name if it is this user's coll segment; false otherwise.
bool readHeader(int dir_fd, const char* name, HeaderPrefix* h, uint64_t* bytes) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      static_cast<size_t>(st.st_size) < sizeof(HeaderPrefix))
    return false;
  *bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  return ::pread(fd.get(), h, sizeof *h, 0) == static_cast<ssize_t>(sizeof *h) && h->magic == kSegmentMagic;
}

}  // namespace

uint64_t processStartTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // The command may hold spaces and parentheses: the fields start after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  // Field 3 (state) is the first after ')'; the start time is field 22.
  for (int i = 3; i < 22 && fields >> field; ++i) {}
  uint64_t started = 0;
  return fields >> started ? started : 0;
}

Reclaimed reclaimStaleSegments(const std::string& dir) {
  Reclaimed done;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return done;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "coll-", 5) != 0 || std::strncmp(e->d_name, "coll-wake", 9) == 0) continue;
    HeaderPrefix h{};
    uint64_t bytes = 0;
    if (!readHeader(::dirfd(d), e->d_name, &h, &bytes) || ownerLives(h)) continue;
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
