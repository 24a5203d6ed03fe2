#include "transport/shm/peer_regions.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.h"
#include "transport/shm/shared_memory.h"

namespace coll::transport::shm {
namespace {

// Regions up to this size are mapped populated. Larger ones (a pool of which a job may use a
// little) fault page by page as they are read: populating maps every page of the peer's
// region, allocating those it never touched.
constexpr size_t kPopulateBytes = size_t{1} << 30;

}  // namespace

PeerRegions::~PeerRegions() {
  for (auto& [fd, m] : by_fd_) ::munmap(m.base, m.bytes);
}

Status PeerRegions::find(int32_t fd, uint64_t id, uint64_t offset, uint64_t bytes, const uint8_t** out) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end() || it->second.id != id) {
    Mapping m;
    COLL_RETURN_IF_ERROR(mapRegion(fd, id, &m));
    if (it != by_fd_.end()) ::munmap(it->second.base, it->second.bytes);  // the peer freed that region
    it = by_fd_.insert_or_assign(fd, m).first;
    COLL_INFO("SHM", "mapped peer %d's collMemAlloc region %llu (%s) to read its messages from", peer_,
              static_cast<unsigned long long>(id), formatBytes(m.bytes).c_str());
  }
  const Mapping& m = it->second;
  if (offset > m.bytes || bytes > m.bytes - offset)
    return transportError(format("peer %d (pid %d) sent %llu bytes at offset %llu of its region %llu, which holds %zu",
                                 peer_, static_cast<int>(pid_), static_cast<unsigned long long>(bytes),
                                 static_cast<unsigned long long>(offset), static_cast<unsigned long long>(id), m.bytes),
                          peer_);
  *out = static_cast<const uint8_t*>(m.base) + offset;
  return Status::ok();
}

Status PeerRegions::mapRegion(int32_t fd, uint64_t id, Mapping* m) {
  const std::string path = format("/proc/%d/fd/%d", static_cast<int>(pid_), fd);
  auto failed = [&](const char* what) {
    const int err = errno;
    std::string why = format("mapping peer %d's collMemAlloc memory (region %llu): %s %s: %s", peer_,
                             static_cast<unsigned long long>(id), what, path.c_str(), std::strerror(err));
    return ::kill(pid_, 0) != 0 && errno == ESRCH ? peerLostError(format("peer %d (pid %d) died", peer_, static_cast<int>(pid_)), peer_)
                                                  : transportError(why, peer_);
  };
  char link[128] = {};
  ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  if (n < 0) return failed("readlink");
  const std::string expected = "/memfd:" + SharedMemory::memfdName(id) + " ";  // then "(deleted)"
  if (std::strncmp(link, expected.c_str(), expected.size()) != 0)
    return transportError(format("peer %d's fd %d is %s, not its collMemAlloc region %llu", peer_, fd, link,
                                 static_cast<unsigned long long>(id)), peer_);
  int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return failed("open");
  struct stat st {};
  if (::fstat(file, &st) != 0) {
    Status s = failed("fstat");
    ::close(file);
    return s;
  }
  if (st.st_size == 0) errno = EINVAL;  // never one collMemAlloc made
  // Populated up front where not huge: a first read of each page through this mapping faults
  // otherwise, and a 4 MiB message read from pages not yet mapped here took 3 times as long.
  const int populate = static_cast<size_t>(st.st_size) <= kPopulateBytes ? MAP_POPULATE : 0;
  void* base = st.st_size > 0 ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED | populate, file, 0)
                              : MAP_FAILED;
  Status s = base == MAP_FAILED ? failed("mmap") : Status::ok();
  ::close(file);  // the mapping holds the pages
  COLL_RETURN_IF_ERROR(std::move(s));
  *m = Mapping{id, base, static_cast<size_t>(st.st_size)};
  return Status::ok();
}

}  // namespace coll::transport::shm
