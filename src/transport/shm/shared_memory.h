// Memory the library allocates for the user (collMemAlloc, as ncclMemAlloc or MPI_Alloc_mem):
// each allocation is a memfd mapped shared, so a local peer may map the same pages and read a
// message out of it with a plain copy (peer_regions.h), one copy at memory speed instead of
// process_vm_readv's kernel copy (about half of memcpy's rate on this project's VM: cma.h).
//
// The sender finds whether a send buffer lies in such a region (find), and its descriptor then
// names the region by the memfd's number in this process and an id never reused, with the
// message's offset in it; the receiver opens the memfd through /proc/<pid>/fd, which the
// kernel allows under the same rule as process_vm_readv (it may ptrace us, read mode).
//
// Process-wide and thread-safe: every connection of every communicator shares it. A region
// freed while a send from it is under way is the user's error, as freeing any send buffer is.
// Unlike malloc's memory, a forked child shares these pages with its parent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "base/status.h"

namespace coll::transport::shm {

class SharedMemory {
 public:
  // Where a message lies: region `id`, open as `fd` in this process, `offset` bytes in.
  struct Location {
    int32_t fd = -1;
    uint64_t id = 0;
    uint64_t offset = 0;
  };

  static SharedMemory& process();

  // At least `bytes` (0 counts as 1), zeroed, page-aligned. InvalidArgument or Transport
  // (memfd_create, ftruncate, mmap) with the system's reason.
  Status allocate(size_t bytes, void** out);
  // The start of a region allocate() returned; anything else is InvalidArgument.
  Status release(void* ptr);
  // True if [data, data + bytes) lies inside one region; *where then says where.
  bool find(const void* data, size_t bytes, Location* where);

  // The memfd's name for region `id`, as /proc/<pid>/fd/<fd> links to it: "/memfd:coll-mem-7"
  // (plus " (deleted)"); the receiver checks it before mapping.
  static std::string memfdName(uint64_t id);

 private:
  struct Region {
    int fd;
    uint64_t id;
    size_t bytes;
  };

  std::atomic<uint64_t> next_id_{1};
  std::mutex mutex_;
  std::map<uintptr_t, Region> regions_;  // by start address
};

}  // namespace coll::transport::shm
