#include "transport/shm/segment.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/auth.h"
#include "base/log.h"

namespace coll::transport::shm {
namespace {

constexpr const char* kShmDir = "/dev/shm";

size_t freeBytes() {
  struct statvfs vfs{};
  if (::statvfs(kShmDir, &vfs) != 0) return SIZE_MAX;
  return static_cast<size_t>(vfs.f_bavail) * vfs.f_frsize;
}

Status tooSmall(size_t bytes, int host_ranks) {
  size_t need = bytes * static_cast<size_t>(host_ranks);
  return transportError(format(
      "shared memory: %s has %s free, coll needs %s for %d local peer%s (%d ranks on this host x %s); enlarge it "
      "(docker --shm-size) or set COLL_TRANSPORT=socket",
      kShmDir, formatBytes(freeBytes()).c_str(), formatBytes(need).c_str(), host_ranks - 1, host_ranks == 2 ? "" : "s",
      host_ranks, formatBytes(bytes).c_str()));
}

Status sysError(const char* what, const std::string& name, int err) {
  return transportError(format("shared memory: %s %s: %s", what, name.c_str(), std::strerror(err)));
}

int openExclusive(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0 || errno != EEXIST) return fd;
  COLL_WARN("SHM", "replacing a stale segment %s (left by a crashed run of this job?)", name.c_str());
  ::shm_unlink(name.c_str());
  return ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

Status mapFd(int fd, size_t bytes, const std::string& name, Mapping* out) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return sysError("mmap", name, errno);
  *out = Mapping(p, bytes);
  return Status::ok();
}

}  // namespace

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, bytes_);
    base_ = o.base_;
    bytes_ = o.bytes_;
    o.base_ = nullptr;
    o.bytes_ = 0;
    owner_lock_ = std::move(o.owner_lock_);
  }
  return *this;
}

Mapping::~Mapping() {
  if (base_) ::munmap(base_, bytes_);
}

std::string segmentName(const std::string& secret, const std::string& key_prefix, int rank) {
  uint64_t h = bootstrap::computeMac(secret, key_prefix + "shm/segment/" + std::to_string(rank));
  return format("/coll-%016llx", static_cast<unsigned long long>(h));
}

Status createSegment(const std::string& name, size_t bytes, int host_ranks, Mapping* out) {
  const size_t free_bytes = freeBytes();
  COLL_INFO("INIT", "shared memory: %s of %s for %d local peer(s); %s free (%d ranks on this host need %s)",
            name.c_str(), formatBytes(bytes).c_str(), host_ranks - 1, formatBytes(free_bytes).c_str(), host_ranks,
            formatBytes(bytes * static_cast<size_t>(host_ranks)).c_str());
  if (bytes > free_bytes) return tooSmall(bytes, host_ranks);
  UniqueFd fd(openExclusive(name));
  if (!fd) return sysError("shm_open", name, errno);
  int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
  if (err != 0) {
    ::shm_unlink(name.c_str());
    return err == ENOSPC ? tooSmall(bytes, host_ranks) : sysError("posix_fallocate", name, err);
  }
  Status st = mapFd(fd.get(), bytes, name, out);
  if (!st) {
    ::shm_unlink(name.c_str());
    return st;
  }
  // Before the header (and its magic) is written: a reclaimer never sees a magic without it.
  if (::flock(fd.get(), LOCK_SH) != 0) COLL_INFO("SHM", "flock(%s): %s", name.c_str(), std::strerror(errno));
  out->holdOwnerLock(std::move(fd));
  return Status::ok();
}

Status openSegment(const std::string& name, Mapping* out) {
  UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  if (!fd) return sysError("shm_open", name, errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return sysError("fstat", name, errno);
  if (static_cast<size_t>(st.st_size) < kHeaderBytes)
    return transportError(format("shared memory: %s is too short (%lld bytes)", name.c_str(), static_cast<long long>(st.st_size)));
  return mapFd(fd.get(), static_cast<size_t>(st.st_size), name, out);
}

void unlinkSegment(const std::string& name) { ::shm_unlink(name.c_str()); }

PeerProcess::PeerProcess(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  pidfd_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#endif
}

bool PeerProcess::gone() const {
  if (pidfd_) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;  // readable once the process has exited
  }
  return ::kill(pid_, 0) == -1 && errno == ESRCH;
}

}  // namespace coll::transport::shm
