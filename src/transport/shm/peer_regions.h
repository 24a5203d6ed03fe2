// The regions of one local peer's collMemAlloc memory (shared_memory.h) this process has
// mapped, to read messages straight out of them with a plain copy.
//
// A region is named by the memfd's number in the peer and an id the peer never reuses. It is
// opened through /proc/<pid>/fd/<fd> (the kernel checks that we may ptrace the peer, read mode)
// and mapped read-only once; the link's name must be the id's memfd, so a number the peer has
// closed and reused since is not mistaken for the region. At most one mapping is kept per fd
// number: a new id there unmaps the old region, which bounds what a peer that allocates and
// frees often makes us hold to the regions it has open at once.
//
// Used by one connection's progress thread only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "base/status.h"

namespace coll::transport::shm {

class PeerRegions {
 public:
  PeerRegions(pid_t pid, int peer) : pid_(pid), peer_(peer) {}
  ~PeerRegions();
  PeerRegions(const PeerRegions&) = delete;
  PeerRegions& operator=(const PeerRegions&) = delete;

  // The address of [offset, offset + bytes) of region `id` (memfd `fd` in the peer), mapped.
  // Transport error naming the peer and the cause: the file cannot be opened (permissions,
  // the peer died: PeerLost), is not that region, or is shorter than offset + bytes.
  Status find(int32_t fd, uint64_t id, uint64_t offset, uint64_t bytes, const uint8_t** out);

 private:
  struct Mapping {
    uint64_t id = 0;
    void* base = nullptr;
    size_t bytes = 0;
  };

  Status mapRegion(int32_t fd, uint64_t id, Mapping* m);

  pid_t pid_;
  int peer_;
  std::unordered_map<int32_t, Mapping> by_fd_;
};

}  // namespace coll::transport::shm
