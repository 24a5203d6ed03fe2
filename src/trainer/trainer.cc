#include "trainer/trainer.h"

#include <algorithm>
#include <vector>

#include "base/config.h"
#include "trainer/prefetcher.h"

namespace coll::trainer {
namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

BucketOptions TrainerOptions::defaultBucketOptions() {
  BucketOptions b;
  b.bucket_bytes = Config::global().bucket_bytes;
  b.first_bucket_bytes = std::min(b.first_bucket_bytes, b.bucket_bytes);
  return b;
}

Trainer::Trainer(Communicator& comm, Model& model, std::unique_ptr<UpdateStrategy> update, TrainerOptions options)
    : comm_(comm), model_(model), update_(std::move(update)), options_(options), timeline_(options.timeline) {
  std::span<float> v = model_.values();
  try {
    comm_.broadcast(v.data(), v.data(), v.size(), DataType::f32, 0).wait();
  } catch (const Error& e) {
    throw Error(e.code(), "trainer: initial parameter broadcast on rank " + std::to_string(comm_.rank()) + ": " + e.what());
  }
  replan(options_.buckets);
}

Trainer::~Trainer() = default;

void Trainer::replan(const BucketOptions& buckets) {
  options_.buckets = buckets;
  bucketer_ = std::make_unique<Bucketer>(model_, planBuckets(model_.slots(), buckets), timeline_);
  update_->setup(comm_, model_, bucketer_->buckets());
}

StepResult Trainer::trainStep(const Batch& batch) {
  StepResult r;
  {
    ScopedEvent e(timeline_, "forward", step_);
    model_.forward(batch.features, &logits_);
  }
  LossResult loss = softmaxCrossEntropy(logits_, batch.labels, &grad_logits_);
  r.loss = loss.loss;
  r.correct = loss.correct;
  r.rows = batch.labels.size();
  update_->beginStep();
  backwardWithBuckets(grad_logits_);
  applyInBucketOrder(*bucketer_, *update_, timeline_, step_);
  ++step_;
  return r;
}

void Trainer::backwardWithBuckets(const Matrix& grad_logits) {
  bucketer_->beginStep(step_, [this](const Bucket& b) { return update_->launch(b); });
  Clock::time_point start = Clock::now();
  model_.backward(grad_logits, [&](size_t layer) {
    if (timeline_.enabled())
      timeline_.record({"backward " + model_.layer(layer).name(), Lane::compute, step_, start, Clock::now(), 0});
    bucketer_->layerDone(layer);
    start = Clock::now();
  });
}

void Trainer::run(int64_t steps, const InputFn& input, const StepFn& step) {
  Prefetcher<Batch> prefetch(input, step_, step_ + steps, options_.input_timeout);
  for (int64_t i = 0; i < steps; ++i) {
    Batch batch;
    {
      ScopedEvent e(timeline_, "wait for input", step_, Lane::input);
      batch = prefetch.next();
    }
    if (step) step(*this, batch, step_);
    else trainStep(batch);
  }
}

Timeline& Trainer::flushedTimeline() {
  bucketer_->flushTimeline(std::chrono::seconds(1));
  return timeline_;
}

double Trainer::globalMean(double local) {
  comm_.allreduce(&local, &local, 1, DataType::f64, ReduceOp::avg).wait();
  return local;
}

BucketSizingResult Trainer::autoSizeBuckets(const Batch& sample) {
  double backward = 1e30;
  for (int rep = 0; rep < 2; ++rep) {  // the first pass warms caches and allocations
    model_.forward(sample.features, &logits_);
    softmaxCrossEntropy(logits_, sample.labels, &grad_logits_);
    Clock::time_point t = Clock::now();
    model_.backward(grad_logits_, nullptr);
    backward = std::min(backward, secondsSince(t));
  }
  // alpha and throughput from a line through two all-reduce times, of G/16 and of G bytes:
  // the fixed cost of a bucket of a few MiB includes the pipeline's fill and drain, which a
  // one-element all-reduce would not show.
  std::vector<float> scratch(model_.grads().begin(), model_.grads().end());
  const size_t small = std::max<size_t>(1, scratch.size() / 16);
  auto timeAllreduce = [&](size_t count) {
    double best = 1e30;
    for (int rep = 0; rep < 2; ++rep) {
      Clock::time_point t = Clock::now();
      comm_.allreduce(scratch.data(), scratch.data(), count, DataType::f32, ReduceOp::sum).wait();
      best = std::min(best, secondsSince(t));
    }
    return best;
  };
  double t_small = timeAllreduce(small), t_full = timeAllreduce(scratch.size());
  // Every rank must derive the same plan: take the slowest rank's figures.
  double figures[3] = {backward, t_small, t_full};
  comm_.allreduce(figures, figures, 3, DataType::f64, ReduceOp::max).wait();
  BucketSizingInput in;
  in.backward_seconds = figures[0];
  in.gradient_bytes = static_cast<double>(model_.grads().size_bytes());
  double small_bytes = static_cast<double>(small * sizeof(float));
  double per_byte = std::max(1e-12, (figures[2] - figures[1]) / std::max(1.0, in.gradient_bytes - small_bytes));
  in.allreduce_bytes_per_second = 1.0 / per_byte;
  in.allreduce_alpha_seconds = std::max(0.0, figures[1] - small_bytes * per_byte);
  BucketSizingResult result = sizeBuckets(in);
  BucketOptions b = options_.buckets;
  b.single_bucket = false;
  b.bucket_bytes = b.first_bucket_bytes = std::max<size_t>(result.bucket_bytes, 4096);
  replan(b);
  return result;
}

}  // namespace coll::trainer
