// Memory-registration cache for the verbs transport: registering memory with the NIC
// (ibv_reg_mr) pins pages and costs tens of µs per MiB, so a buffer used op after op is
// registered once. Pure logic over an injected register/deregister pair, so it is unit-tested
// without an RDMA device.
//
// Entries cover page-aligned ranges and never overlap in the index: a request that overlaps
// cached entries is registered as the union of them all, and the entries it replaces leave the
// index (ones still in use are deregistered when their last user releases them). Unused entries
// are evicted least recently used first once the cache holds more than its capacity.
// Not thread-safe: the progress thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "base/status.h"

namespace coll::transport::verbs {

struct Registration {
  uintptr_t begin = 0;  // page-aligned
  uintptr_t end = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  // the ibv_mr
};

class RegistrationCache {
 public:
  using RegisterFn = std::function<Status(uintptr_t begin, size_t bytes, Registration* out)>;
  using DeregisterFn = std::function<void(const Registration&)>;

  RegistrationCache(size_t capacity_bytes, size_t page_bytes, RegisterFn reg, DeregisterFn dereg);
  ~RegistrationCache();  // deregisters everything, in use or not
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // A registration covering [addr, addr + bytes), with one more user. Valid until release().
  Status acquire(const void* addr, size_t bytes, const Registration** out);
  void release(const Registration* r);
  // The application freed this range: cached entries overlapping it leave the index.
  void invalidate(const void* addr, size_t bytes);

  size_t entries() const { return index_.size(); }
  size_t cachedBytes() const { return cached_bytes_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    Registration reg;  // first: a Registration* is an Entry*
    int users = 0;
    uint64_t last_use = 0;
    bool indexed = true;
  };

  Entry* find(uintptr_t begin, uintptr_t end);
  void unindexOverlapping(uintptr_t begin, uintptr_t end, uintptr_t* lo, uintptr_t* hi);
  void unindex(Entry* e);
  void destroy(Entry* e);
  void evict();

  size_t capacity_;
  size_t page_;
  RegisterFn register_;
  DeregisterFn deregister_;
  std::map<uintptr_t, Entry*> index_;  // by begin; non-overlapping
  std::map<Entry*, std::unique_ptr<Entry>> owned_;
  size_t cached_bytes_ = 0;  // of indexed entries
  uint64_t clock_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace coll::transport::verbs
