#include "transport/shm/timed_choice.h"

#include <algorithm>

namespace coll::transport::shm {

void TimedChoice::Samples::add(double sample) {
  ns_per_byte[next] = sample;
  next = (next + 1) % kSamples;
  count = std::min(count + 1, kSamples);
  ++taken;
}

double TimedChoice::Samples::median() const {
  if (count == 0) return 0;
  std::array<double, kSamples> sorted{};
  for (int i = 0; i < count; ++i) {  // insertion sort of at most kSamples values
    int j = i;
    for (; j > 0 && sorted[static_cast<size_t>(j - 1)] > ns_per_byte[static_cast<size_t>(i)]; --j)
      sorted[static_cast<size_t>(j)] = sorted[static_cast<size_t>(j - 1)];
    sorted[static_cast<size_t>(j)] = ns_per_byte[static_cast<size_t>(i)];
  }
  return sorted[static_cast<size_t>(count / 2)];
}

bool TimedChoice::fasterIsSecond() const {
  return samples_[1].count > 0 && samples_[0].count > 0 &&
         samples_[1].median() < rules_.margin * samples_[0].median();
}

bool TimedChoice::next() {
  const int first = std::min(rules_.first_samples, kSamples);
  if (samples_[0].taken < first) return false;  // measure each way first
  if (samples_[1].taken < first) return true;
  if (exploring_ > 0) {
    --exploring_;
    return second_;  // the run keeps the way it started with
  }
  const bool faster = fasterIsSecond();
  if (++since_explored_ < rules_.explore_every) return faster;
  since_explored_ = 0;
  exploring_ = rules_.explore_run - 1;
  return !faster;
}

bool TimedChoice::pick(bool timeable, bool* timed) {
  *timed = false;
  if (!timeable) return second_;
  const bool way = next();
  if (way != second_) {
    second_ = way;
    settle_ = rules_.settle;
  }
  if (settle_ > 0) {
    --settle_;
    return second_;
  }
  *timed = true;
  return second_;
}

void TimedChoice::record(bool second, size_t bytes, std::chrono::nanoseconds took) {
  if (bytes == 0) return;
  samples_[second ? 1 : 0].add(static_cast<double>(took.count()) / static_cast<double>(bytes));
}

TimedChoice& TimedChoices::of(uint64_t kind) {
  ++uses_;
  for (Kind& k : kinds_)
    if (k.kind == kind) {
      k.last_use = uses_;
      return k.choice;
    }
  if (kinds_.size() < kKinds) {
    kinds_.push_back(Kind{kind, uses_, TimedChoice(rules_)});  // reserved: the others stay put
    return kinds_.back().choice;
  }
  Kind& oldest = *std::min_element(kinds_.begin(), kinds_.end(),
                                   [](const Kind& a, const Kind& b) { return a.last_use < b.last_use; });
  oldest = Kind{kind, uses_, TimedChoice(rules_)};
  return oldest.choice;
}

}  // namespace coll::transport::shm
