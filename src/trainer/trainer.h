// Trainer: the replica API, in the spirit of TF-Replicator. The user supplies an input
// function (this replica's batch for a step, read from its own shard) and a step function;
// run() calls the step function on every rank (each rank runs the same program, SPMD), with
// the next batch prepared on a prefetch thread meanwhile. The default step, trainStep(),
// is the data-parallel step: forward, loss, backward with bucketed asynchronous gradient
// communication (bucketer.h), and an update strategy (plain replicated optimizer, or ZeRO-1).
//
// At construction rank 0's initial parameters are broadcast (as DDP does), so ranks start
// bit-identical even if their initialisation differed; every later step keeps them so, since
// every rank applies the same averaged gradients the same way.
//
// Threads: call everything from one thread (the training thread); the input function runs on
// the prefetch thread. Errors: coll::Error from any collective, naming the bucket and step.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "coll/communicator.h"
#include "trainer/bucket_sizing.h"
#include "trainer/bucketer.h"
#include "trainer/dataset.h"
#include "trainer/model.h"
#include "trainer/softmax_cross_entropy.h"
#include "trainer/timeline.h"
#include "trainer/update_strategy.h"

namespace coll::trainer {

struct TrainerOptions {
  BucketOptions buckets = defaultBucketOptions();
  bool timeline = true;
  std::chrono::milliseconds input_timeout{300'000};  // how long a step waits for its batch

  // DDP's defaults, with the cap from COLL_BUCKET_MB.
  static BucketOptions defaultBucketOptions();
};

struct StepResult {
  float loss = 0;      // this replica's mean loss
  size_t correct = 0;  // this replica's correct predictions
  size_t rows = 0;
};

class Trainer {
 public:
  using InputFn = std::function<Batch(int64_t step)>;
  using StepFn = std::function<void(Trainer& trainer, const Batch& batch, int64_t step)>;

  Trainer(Communicator& comm, Model& model, std::unique_ptr<UpdateStrategy> update, TrainerOptions options = {});
  ~Trainer();

  // One data-parallel step on this replica's batch (softmax cross-entropy on integer labels).
  StepResult trainStep(const Batch& batch);

  // Runs `steps` steps: step(trainer, batch) with batch = input(step), prefetched; a null step
  // function means trainStep.
  void run(int64_t steps, const InputFn& input, const StepFn& step = nullptr);

  // Sizes buckets from measurements (bucket_sizing.h): times backward on `sample` and
  // all-reduces of 1/16 of the gradients and of all of them (alpha and throughput from the
  // line through the two); takes the maximum of each over ranks so every rank derives the
  // same plan. Call before the first step.
  BucketSizingResult autoSizeBuckets(const Batch& sample);

  // The mean of `local` over replicas (an all-reduce).
  double globalMean(double local);

  // The timeline with every bucket's event recorded (the watcher thread records each shortly
  // after its all-reduce completes); waits at most one second for stragglers.
  Timeline& flushedTimeline();

  Communicator& comm() { return comm_; }
  Model& model() { return model_; }
  Timeline& timeline() { return timeline_; }
  UpdateStrategy& update() { return *update_; }
  const std::vector<Bucket>& buckets() const { return bucketer_->buckets(); }
  int64_t step() const { return step_; }

 private:
  void replan(const BucketOptions& buckets);
  void backwardWithBuckets(const Matrix& grad_logits);

  Communicator& comm_;
  Model& model_;
  std::unique_ptr<UpdateStrategy> update_;
  TrainerOptions options_;
  Timeline timeline_;
  std::unique_ptr<Bucketer> bucketer_;
  int64_t step_ = 0;
  Matrix logits_, grad_logits_;
};

}  // namespace coll::trainer
