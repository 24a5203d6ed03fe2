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

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/auth.h"
#include "base/log.h"

// Linux 5.14's; glibc 2.36's headers may lack it.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace coll::transport::shm {
namespace {

constexpr const char* kShmDir = "/dev/shm";

// /dev/shm's size and free space, read once (SIZE_MAX for both where it cannot be read).
struct ShmSpace {
  size_t size = SIZE_MAX, free = SIZE_MAX;
};

ShmSpace shmSpace() {
  struct statvfs vfs{};
  if (::statvfs(kShmDir, &vfs) != 0) return {};
  return {static_cast<size_t>(vfs.f_blocks) * vfs.f_frsize, static_cast<size_t>(vfs.f_bavail) * vfs.f_frsize};
}

// What a rank needs to start and run a ring: what its segment reserves at once, and the rings
// its two ring neighbours send on with their controls' pages (every other channel waits for a
// first message).
size_t startBytes(const Geometry& g) {
  return g.reservedBytes() + std::min<uint32_t>(2, g.nchannels) * (g.ringStride() + kPageBytes);
}

Status tooSmall(const Geometry& g, int host_ranks, const ShmSpace& space) {
  const size_t each = startBytes(g);
  return transportError(format(
      "shared memory: %s holds %s (%s free); %d ranks on this host need %s to start and run a ring (%s each: its "
      "header%s, %s, and the rings its two ring neighbours send on, %s each); enlarge %s (docker --shm-size), lower "
      "COLL_SHM_NSLOTS or COLL_SHM_SLOT_BYTES (a ring is their product), run fewer ranks on a host, or set "
      "COLL_TRANSPORT=socket",
      kShmDir, formatBytes(space.size).c_str(), formatBytes(space.free).c_str(), host_ranks,
      formatBytes(each * static_cast<size_t>(host_ranks)).c_str(), formatBytes(each).c_str(),
      g.board ? " and board" : "", formatBytes(g.reservedBytes()).c_str(), formatBytes(g.ringStride()).c_str(),
      kShmDir));
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

// No MAP_POPULATE: a peer's segment is mostly rings this rank never touches, and faulting them
// all in cost start-ups with many ranks on a host seconds (a page table entry per page).
Status mapFd(int fd, size_t bytes, const std::string& name, Mapping* out) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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

Status createSegment(const std::string& name, const Geometry& g, int host_ranks, Mapping* out,
                     const Geometry* second) {
  const size_t fixed = g.reservedBytes() + (second ? second->reservedBytes() : 0);
  const size_t bytes = second ? g.secondPlaneOffset() + second->segmentBytes() : g.segmentBytes();
  const ShmSpace space = shmSpace();
  COLL_INFO("INIT", "shared memory: %s, %s reserved of %s for %d local peer(s); %s free (%d ranks on this host need "
            "%s to start)", name.c_str(), formatBytes(fixed).c_str(), formatBytes(bytes).c_str(), host_ranks - 1,
            formatBytes(space.free).c_str(), host_ranks, formatBytes(startBytes(g) * host_ranks).c_str());
  // Against the size of /dev/shm, not what is free: every rank of the host reaches the same verdict.
  if (startBytes(g) * static_cast<size_t>(host_ranks) > space.size || fixed > space.free)
    return tooSmall(g, host_ranks, space);
  UniqueFd fd(openExclusive(name));
  if (!fd) return sysError("shm_open", name, errno);
  // The whole length, sparse; only the header (and board) reserved now (the rest: commitRange).
  int err = ::ftruncate(fd.get(), static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (err == 0) err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(g.reservedBytes()));
  if (err == 0 && second)
    err = ::posix_fallocate(fd.get(), static_cast<off_t>(g.secondPlaneOffset()), static_cast<off_t>(second->reservedBytes()));
  if (err != 0) {
    ::shm_unlink(name.c_str());
    return err == ENOSPC ? tooSmall(g, host_ranks, shmSpace()) : sysError("posix_fallocate", name, err);
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

bool releaseRange(void* address, size_t bytes) {
  const auto begin = roundUpToPage(reinterpret_cast<uintptr_t>(address));
  const auto end = (reinterpret_cast<uintptr_t>(address) + bytes) / kPageBytes * kPageBytes;
  return end <= begin || ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_REMOVE) == 0;
}

Status commitRange(void* address, size_t bytes, const std::string& what) {
  auto begin = reinterpret_cast<uintptr_t>(address) / kPageBytes * kPageBytes;
  auto end = roundUpToPage(reinterpret_cast<uintptr_t>(address) + bytes);
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0) return Status::ok();
  const int err = errno;
  if (err == EINVAL) {  // a kernel before 5.14: touch it (a full /dev/shm is then a SIGBUS, not this error)
    for (uintptr_t page = begin; page < end; page += kPageBytes)
      reinterpret_cast<volatile std::atomic<uint8_t>*>(page)->fetch_add(0, std::memory_order_relaxed);
    return Status::ok();
  }
  return transportError(format(
      "shared memory: cannot reserve %s for %s: %s (%s has %s free); free or enlarge %s (docker --shm-size), lower "
      "COLL_SHM_NSLOTS or COLL_SHM_SLOT_BYTES (each ring is their product), or set COLL_TRANSPORT=socket",
      formatBytes(end - begin).c_str(), what.c_str(), err == EFAULT ? "it is full" : std::strerror(err), kShmDir,
      formatBytes(shmSpace().free).c_str(), kShmDir));
}

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
