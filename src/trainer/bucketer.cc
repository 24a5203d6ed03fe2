#include "trainer/bucketer.h"

#include <stdexcept>
#include <string>

namespace coll::trainer {

// DDP's rule: a parameter joins the open bucket, which closes once it holds at least the cap.
// (Closing *before* a parameter that would pass the cap instead leaves small parameters, such
// as a bias between two large weights, alone in buckets that cost a whole all-reduce each.)
std::vector<Bucket> planBuckets(const std::vector<ParamSlot>& slots, const BucketOptions& options) {
  std::vector<Bucket> plan;
  Bucket current;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (current.slots.empty()) current.offset = slots[i].offset;
    current.slots.push_back(i);
    current.count += slots[i].count;
    size_t cap = plan.empty() ? options.first_bucket_bytes : options.bucket_bytes;
    if ((!options.single_bucket && current.bytes() >= cap) || i + 1 == slots.size()) {
      current.index = plan.size();
      plan.push_back(std::move(current));
      current = Bucket{};
    }
  }
  return plan;
}

Bucketer::Bucketer(const Model& model, std::vector<Bucket> plan, Timeline& timeline)
    : buckets_(std::move(plan)), layer_buckets_(model.numLayers()), pending_(buckets_.size()),
      works_(buckets_.size()), timeline_(timeline), watcher_(timeline) {
  for (const Bucket& b : buckets_)
    for (size_t s : b.slots) layer_buckets_.at(model.slots()[s].layer).push_back(b.index);
}

void Bucketer::beginStep(int64_t step, LaunchFn launch) {
  step_ = step;
  launch_ = std::move(launch);
  next_launch_ = 0;
  for (const Bucket& b : buckets_) {
    pending_[b.index] = b.slots.size();
    works_[b.index] = Work();
  }
}

void Bucketer::layerDone(size_t layer) {
  for (size_t b : layer_buckets_.at(layer)) --pending_[b];
  launchReady();
}

void Bucketer::launchReady() {
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    const Bucket& b = buckets_[next_launch_];
    TimelineEvent event{"bucket " + std::to_string(b.index), Lane::comm, step_, Clock::now(), {}, b.bytes()};
    works_[b.index] = launch_(b);
    watcher_.watch(works_[b.index], std::move(event));
    ++next_launch_;
  }
}

void Bucketer::wait(size_t b) {
  if (b >= next_launch_)
    throw std::logic_error("Bucketer::wait: bucket " + std::to_string(b) + " not launched (backward incomplete)");
  try {
    works_[b].wait();
  } catch (const Error& e) {
    throw Error(e.code(), "gradient bucket " + std::to_string(b) + " (" + std::to_string(buckets_[b].bytes()) +
                              " bytes) of step " + std::to_string(step_) + ": " + e.what());
  }
}

}  // namespace coll::trainer
