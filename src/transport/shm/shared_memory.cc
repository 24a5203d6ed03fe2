#include "transport/shm/shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace coll::transport::shm {
namespace {

constexpr size_t kPageBytes = 4096;

std::string systemError(const char* call, size_t bytes) {
  return format("collMemAlloc of %zu bytes: %s: %s", bytes, call, std::strerror(errno));
}

}  // namespace

SharedMemory& SharedMemory::process() {
  static SharedMemory* memory = new SharedMemory;  // never destroyed: freed regions may outlive statics
  return *memory;
}

std::string SharedMemory::memfdName(uint64_t id) { return format("coll-mem-%llu", static_cast<unsigned long long>(id)); }

Status SharedMemory::allocate(size_t bytes, void** out) {
  if (!out) return invalidArgument("collMemAlloc: null pointer for the result");
  *out = nullptr;
  if (bytes > (SIZE_MAX >> 1)) return invalidArgument(format("collMemAlloc: %zu bytes is more than any memory", bytes));
  const size_t rounded = (std::max<size_t>(bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
  const uint64_t id = next_id_.fetch_add(1);
  int fd = ::memfd_create(memfdName(id).c_str(), MFD_CLOEXEC);
  if (fd < 0) return transportError(systemError("memfd_create", bytes));
  if (::ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
    Status st = transportError(systemError("ftruncate", bytes));
    ::close(fd);
    return st;
  }
  void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    Status st = transportError(systemError("mmap", bytes));
    ::close(fd);
    return st;
  }
  ::madvise(p, rounded, MADV_HUGEPAGE);  // where shmem may use huge pages; else nothing changes
  std::lock_guard<std::mutex> lock(mutex_);
  regions_.emplace(reinterpret_cast<uintptr_t>(p), Region{fd, id, rounded});
  *out = p;
  return Status::ok();
}

Status SharedMemory::release(void* ptr) {
  if (!ptr) return Status::ok();  // as free(NULL)
  Region r;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == regions_.end())
      return invalidArgument(format("collMemFree: %p is not the start of memory collMemAlloc returned", ptr));
    r = it->second;
    regions_.erase(it);
  }
  // A peer that mapped the region keeps its mapping (and the pages) until it sees the id no more.
  ::munmap(ptr, r.bytes);
  ::close(r.fd);
  return Status::ok();
}

bool SharedMemory::find(const void* data, size_t bytes, Location* where) {
  const auto at = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  if (regions_.empty()) return false;
  auto it = regions_.upper_bound(at);
  if (it == regions_.begin()) return false;
  --it;
  const Region& r = it->second;
  const uintptr_t offset = at - it->first;
  if (offset >= r.bytes || bytes > r.bytes - offset) return false;
  *where = Location{r.fd, r.id, offset};
  return true;
}

}  // namespace coll::transport::shm
