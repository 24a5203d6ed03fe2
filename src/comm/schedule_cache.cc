#include "comm/schedule_cache.h"

#include <algorithm>

namespace coll {

// Linear search, most recent first: a loop issuing the same op hits the first entry, and a
// handful of distinct ops (a trainer's buckets) stay within a few comparisons.
const CachedSchedule* ScheduleCache::find(const ScheduleKey& key) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; });
  if (it == entries_.end()) return nullptr;
  std::rotate(entries_.begin(), it, it + 1);
  return entries_.front().second.get();
}

const CachedSchedule& ScheduleCache::insert(const ScheduleKey& key, std::unique_ptr<CachedSchedule> entry) {
  if (entries_.size() >= capacity_) entries_.pop_back();  // the least recently used
  entries_.insert(entries_.begin(), {key, std::move(entry)});
  return *entries_.front().second;
}

}  // namespace coll
