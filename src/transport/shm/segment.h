// Shared-memory segments in /dev/shm: naming, creation with the space reserved up front, mapping
// a peer's, removal; and watching a peer process for its death.
//
// Names are "/coll-" + 16 hex digits of SipHash(job secret; key prefix, rank): unguessable
// without the secret, and computable by every rank of the job, so a survivor can remove the
// name of a rank that crashed before removing its own. Files are 0600.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "base/fd_io.h"
#include "base/status.h"
#include "transport/shm/layout.h"

namespace coll::transport::shm {

// A mapping of a whole segment; unmapped on destruction (the memory lives on while any
// process maps it, even after its name is removed).
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  Mapping(Mapping&& o) noexcept : base_(o.base_), bytes_(o.bytes_), owner_lock_(std::move(o.owner_lock_)) {
    o.base_ = nullptr;
    o.bytes_ = 0;
  }
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  uint8_t* base() const { return static_cast<uint8_t*>(base_); }
  size_t bytes() const { return bytes_; }
  SegmentHeader* header() const { return static_cast<SegmentHeader*>(base_); }
  explicit operator bool() const { return base_ != nullptr; }
  // The owner's segment keeps its descriptor open with a shared flock on it for as long as it
  // is mapped: the lock ends with the process, however it dies, which is how a later job
  // tells a dead owner's segment from a live one (stale_segments.h), across PID namespaces.
  void holdOwnerLock(UniqueFd fd) { owner_lock_ = std::move(fd); }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  UniqueFd owner_lock_;
};

std::string segmentName(const std::string& secret, const std::string& key_prefix, int rank);

// Creates the segment of geometry `g` (exclusively; a stale one of the same name, left by a
// crashed run of the same job, is replaced), takes the owner's lock on it
// (Mapping::holdOwnerLock), reserves its header (and board, g.board) in /dev/shm so that a full
// /dev/shm fails here rather than with SIGBUS later, and maps it. The controls and rings stay
// sparse until commitRange. Fails, naming the space and the knobs, where /dev/shm cannot hold
// what `host_ranks` ranks (this host's, each making one such segment) need to start and run a
// ring: every rank of the host decides the same. `second`: the file also holds a second plane
// of that geometry at g.secondPlaneOffset() (layout.h), its header reserved too.
Status createSegment(const std::string& name, const Geometry& g, int host_ranks, Mapping* out,
                     const Geometry* second = nullptr);

// Reserves the pages of [address, address + bytes) of a mapped segment (MADV_POPULATE_WRITE):
// the first writer of a ring calls it before its first message, so that a full /dev/shm is
// this error, naming `what` and the knobs, rather than a SIGBUS mid-copy.
Status commitRange(void* address, size_t bytes, const std::string& what);

// Gives the pages wholly inside [address, address + bytes) back to /dev/shm (MADV_REMOVE): they
// read as zeroes from then on, in every process that maps them, and the next write takes a new
// page. False where the kernel refused (the pages stay; nothing else changes).
bool releaseRange(void* address, size_t bytes);

// Maps an existing segment read-write.
Status openSegment(const std::string& name, Mapping* out);

// Removes the name (ENOENT is fine: someone already did).
void unlinkSegment(const std::string& name);

// A peer process, watched through a pidfd where the kernel has them (immune to PID reuse; a
// zombie counts as dead), else with kill(pid, 0).
class PeerProcess {
 public:
  PeerProcess() = default;
  explicit PeerProcess(pid_t pid);
  pid_t pid() const { return pid_; }
  bool gone() const;

 private:
  pid_t pid_ = 0;
  UniqueFd pidfd_;
};

}  // namespace coll::transport::shm
