#include "algorithms/schedule_builder.h"

#include <algorithm>

namespace coll::algo {

ScheduleBuilder::ScheduleBuilder(std::string algorithm, size_t num_regions) : regions_(num_regions) {
  schedule_.algorithm = std::move(algorithm);
}

uint32_t ScheduleBuilder::add(Step step, std::initializer_list<size_t> reads, std::initializer_list<size_t> writes) {
  return addSpans(std::move(step), {reads.begin(), reads.size()}, {writes.begin(), writes.size()});
}

uint32_t ScheduleBuilder::add(Step step, const std::vector<size_t>& reads, const std::vector<size_t>& writes) {
  return addSpans(std::move(step), reads, writes);
}

uint32_t ScheduleBuilder::addSpans(Step step, std::span<const size_t> reads, std::span<const size_t> writes) {
  auto index = static_cast<uint32_t>(schedule_.steps.size());
  for (size_t r : reads) {
    if (regions_[r].last_writer >= 0) step.deps.push_back(static_cast<uint32_t>(regions_[r].last_writer));
  }
  for (size_t w : writes) {
    Region& region = regions_[w];
    if (region.last_writer >= 0) step.deps.push_back(static_cast<uint32_t>(region.last_writer));
    step.deps.insert(step.deps.end(), region.readers.begin(), region.readers.end());
  }
  std::sort(step.deps.begin(), step.deps.end());
  step.deps.erase(std::unique(step.deps.begin(), step.deps.end()), step.deps.end());
  for (size_t r : reads) regions_[r].readers.push_back(index);
  for (size_t w : writes) {
    regions_[w].last_writer = index;
    regions_[w].readers.clear();
  }
  schedule_.steps.push_back(std::move(step));
  return index;
}

uint32_t ScheduleBuilder::addWritingAll(Step step) {
  auto index = static_cast<uint32_t>(schedule_.steps.size());
  for (Region& region : regions_) {
    if (region.last_writer >= 0) step.deps.push_back(static_cast<uint32_t>(region.last_writer));
    step.deps.insert(step.deps.end(), region.readers.begin(), region.readers.end());
    region.last_writer = index;
    region.readers.clear();
  }
  std::sort(step.deps.begin(), step.deps.end());
  step.deps.erase(std::unique(step.deps.begin(), step.deps.end()), step.deps.end());
  schedule_.steps.push_back(std::move(step));
  return index;
}

}  // namespace coll::algo
