#include "p2p/matcher.h"

#include <algorithm>

namespace coll::p2p {

std::optional<Envelope> Matcher::post(const Receive& receive) {
  auto taken = unexpected_.end();
  if (receive.source != kAnySource) {
    taken = unexpected_.find({receive.source, receive.tag});
  } else {
    // The oldest arrival with this tag from any source: each source's queue is in arrival
    // order, so only the fronts compete.
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (it->first.second != receive.tag) continue;
      if (taken == unexpected_.end() || it->second.front().stamp < taken->second.front().stamp) taken = it;
    }
  }
  if (taken == unexpected_.end()) {
    posted_[{receive.source, receive.tag}].push_back({next_stamp_++, receive});
    ++posted_count_;
    return std::nullopt;
  }
  Envelope envelope = taken->second.front().item;
  taken->second.pop_front();
  if (taken->second.empty()) unexpected_.erase(taken);
  --unexpected_count_;
  return envelope;
}

std::optional<Receive> Matcher::arrive(const Envelope& envelope) {
  auto specific = posted_.find({envelope.source, envelope.tag});
  auto any = posted_.find({kAnySource, envelope.tag});
  auto taken = specific;
  if (taken == posted_.end() ||
      (any != posted_.end() && any->second.front().stamp < specific->second.front().stamp))
    taken = any;
  if (taken == posted_.end()) {
    unexpected_[{envelope.source, envelope.tag}].push_back({next_stamp_++, envelope});
    ++unexpected_count_;
    return std::nullopt;
  }
  Receive receive = taken->second.front().item;
  taken->second.pop_front();
  if (taken->second.empty()) posted_.erase(taken);
  --posted_count_;
  return receive;
}

bool Matcher::cancel(uint64_t id) {
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    auto& queue = it->second;
    auto found = std::find_if(queue.begin(), queue.end(), [&](const auto& s) { return s.item.id == id; });
    if (found == queue.end()) continue;
    queue.erase(found);
    if (queue.empty()) posted_.erase(it);
    --posted_count_;
    return true;
  }
  return false;
}

std::vector<Receive> Matcher::takeAllPosted() {
  std::vector<Stamped<Receive>> all;
  for (auto& [key, queue] : posted_) all.insert(all.end(), queue.begin(), queue.end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.stamp < b.stamp; });
  posted_.clear();
  posted_count_ = 0;
  std::vector<Receive> out;
  out.reserve(all.size());
  for (auto& s : all) out.push_back(s.item);
  return out;
}

}  // namespace coll::p2p
