// Bucketer: groups gradients into buckets in backward order and starts each bucket's
// communication the moment backward has produced all of its gradients, so the all-reduce of
// the last layers overlaps the backward pass of the first ones (PyTorch DDP's Reducer).
//
// Plan (planBuckets): parameters in backward order (the model's buffer order, model.h) are
// packed into consecutive buckets. The first bucket is small (DDP: 1 MiB) so communication
// starts early; the others are closed once they reach the cap (COLL_BUCKET_MB, default
// 25 MiB), so a bucket passes its cap by less than one parameter. A parameter is never split. Because the plan is a
// function of the model alone, every rank has the same buckets in the same order, and buckets
// are launched strictly in that order (a bucket that is ready early waits for its
// predecessors), which is what keeps every rank's collectives in the same sequence.
//
// Use from the training thread only: beginStep, then layerDone from backward, then wait(b)
// for each bucket the optimizer needs.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "coll/work.h"
#include "trainer/model.h"
#include "trainer/timeline.h"
#include "trainer/work_watcher.h"

namespace coll::trainer {

struct Bucket {
  size_t index = 0;
  size_t offset = 0;              // first element in the flat gradient buffer
  size_t count = 0;               // elements
  std::vector<size_t> slots;      // indices into Model::slots()
  size_t bytes() const { return count * sizeof(float); }
};

struct BucketOptions {
  size_t first_bucket_bytes = 1 << 20;  // DDP's first bucket: communication starts early
  size_t bucket_bytes = 25 << 20;       // the cap of the others (Config: COLL_BUCKET_MB)
  bool single_bucket = false;           // one all-reduce after backward (no overlap), to compare
};

std::vector<Bucket> planBuckets(const std::vector<ParamSlot>& slots, const BucketOptions& options);

class Bucketer {
 public:
  // Starts one bucket's communication (asynchronously) and returns its Work.
  using LaunchFn = std::function<Work(const Bucket&)>;

  Bucketer(const Model& model, std::vector<Bucket> plan, Timeline& timeline);

  void beginStep(int64_t step, LaunchFn launch);
  // Backward finished layer `layer`: its gradients count towards their buckets; every bucket
  // now complete whose predecessors are launched is launched.
  void layerDone(size_t layer);
  // Blocks until bucket b's communication completed (bounded by the op's deadline); rethrows
  // its coll::Error with the bucket named. b must have been launched (all layers done).
  void wait(size_t b);

  // Waits (at most `timeout`) until every launched bucket's event is in the timeline.
  bool flushTimeline(std::chrono::milliseconds timeout) { return watcher_.flush(timeout); }

  const std::vector<Bucket>& buckets() const { return buckets_; }
  size_t launched() const { return next_launch_; }

 private:
  void launchReady();

  std::vector<Bucket> buckets_;
  std::vector<std::vector<size_t>> layer_buckets_;  // per layer: one entry per slot, its bucket
  std::vector<size_t> pending_;                     // per bucket: slots whose gradient is missing
  std::vector<Work> works_;
  size_t next_launch_ = 0;
  int64_t step_ = 0;
  LaunchFn launch_;
  Timeline& timeline_;
  WorkWatcher watcher_;
};

}  // namespace coll::trainer
