#include "transport/verbs/registration_cache.h"

#include <algorithm>

namespace coll::transport::verbs {

RegistrationCache::RegistrationCache(size_t capacity_bytes, size_t page_bytes, RegisterFn reg, DeregisterFn dereg)
    : capacity_(capacity_bytes), page_(page_bytes), register_(std::move(reg)), deregister_(std::move(dereg)) {}

RegistrationCache::~RegistrationCache() {
  for (auto& [raw, e] : owned_) deregister_(e->reg);
}

Status RegistrationCache::acquire(const void* addr, size_t bytes, const Registration** out) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(addr) / page_ * page_;
  uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + std::max<size_t>(bytes, 1) + page_ - 1) / page_ * page_;
  Entry* e = find(begin, end);
  if (e) {
    ++hits_;
  } else {
    ++misses_;
    unindexOverlapping(begin, end, &begin, &end);
    auto fresh = std::make_unique<Entry>();
    COLL_RETURN_IF_ERROR(register_(begin, end - begin, &fresh->reg));
    fresh->reg.begin = begin;
    fresh->reg.end = end;
    e = fresh.get();
    owned_.emplace(e, std::move(fresh));
    index_.emplace(begin, e);
    cached_bytes_ += end - begin;
  }
  ++e->users;
  e->last_use = ++clock_;
  *out = &e->reg;
  evict();
  return Status::ok();
}

void RegistrationCache::release(const Registration* r) {
  auto* e = reinterpret_cast<Entry*>(const_cast<Registration*>(r));
  if (--e->users > 0) return;
  if (!e->indexed) return destroy(e);
  evict();
}

void RegistrationCache::invalidate(const void* addr, size_t bytes) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(addr), end = begin + bytes, lo, hi;
  unindexOverlapping(begin, end, &lo, &hi);
}

RegistrationCache::Entry* RegistrationCache::find(uintptr_t begin, uintptr_t end) {
  auto it = index_.upper_bound(begin);
  if (it == index_.begin()) return nullptr;
  Entry* e = std::prev(it)->second;
  return e->reg.end >= end ? e : nullptr;
}

// Takes every indexed entry overlapping [begin, end) out of the index, widening [lo, hi) to
// cover them, so a new registration can replace them all.
void RegistrationCache::unindexOverlapping(uintptr_t begin, uintptr_t end, uintptr_t* lo, uintptr_t* hi) {
  *lo = begin;
  *hi = end;
  auto it = index_.upper_bound(begin);
  if (it != index_.begin() && std::prev(it)->second->reg.end > begin) --it;
  std::vector<Entry*> victims;
  for (; it != index_.end() && it->first < end; ++it) victims.push_back(it->second);
  for (Entry* e : victims) {
    *lo = std::min(*lo, e->reg.begin);
    *hi = std::max(*hi, e->reg.end);
    unindex(e);
  }
}

void RegistrationCache::unindex(Entry* e) {
  index_.erase(e->reg.begin);
  cached_bytes_ -= e->reg.end - e->reg.begin;
  e->indexed = false;
  if (e->users == 0) destroy(e);
}

void RegistrationCache::destroy(Entry* e) {
  deregister_(e->reg);
  owned_.erase(e);
}

void RegistrationCache::evict() {
  while (cached_bytes_ > capacity_) {
    Entry* oldest = nullptr;
    for (auto& [begin, e] : index_)
      if (e->users == 0 && (!oldest || e->last_use < oldest->last_use)) oldest = e;
    if (!oldest) return;  // everything cached is in use
    unindex(oldest);
  }
}

}  // namespace coll::transport::verbs
