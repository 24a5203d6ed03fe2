// coll-train --stages P: pipeline-parallel training (src/trainer/pipeline_trainer.h). Each
// replica's ranks read the same shard (stage 0 its features, the last stage its labels);
// rank 0 prints per epoch the loss (the mean over the last stages), the median step time,
// and per stage its bubble: the fraction of the step it spent not computing.
#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "coll_train_common.h"
#include "trainer/dataset.h"
#include "trainer/pipeline_trainer.h"
#include "trainer/step_figures.h"

namespace coll::trainer {
namespace {

PipelineTrainer makeTrainer(const TrainOptions& o, Communicator& world) {
  return PipelineTrainer(world, modelLayers(o, nullptr), makeUpdate(o), pipelineOptionsFrom(o));
}

// Per step of the timeline: 1 - (compute time) / (step time), this rank's.
std::vector<double> bubbles(const Timeline& timeline, const std::map<int64_t, double>& step_seconds) {
  std::map<int64_t, double> busy;
  for (const TimelineEvent& e : timeline.events())
    if (e.lane == Lane::compute && (e.name.rfind("forward", 0) == 0 || e.name.rfind("backward", 0) == 0))
      busy[e.step] += std::chrono::duration<double>(e.end - e.start).count();
  std::vector<double> out;
  for (const auto& [step, seconds] : step_seconds) out.push_back(1.0 - busy[step] / seconds);
  return out;
}

}  // namespace

int runPipeline(const TrainOptions& o, Communicator& world) {
  const int n = world.size(), p = o.stages;
  if (o.replicas > 0 && o.replicas * p != n)
    throw std::invalid_argument("--stages " + std::to_string(p) + " x --replicas " + std::to_string(o.replicas) +
                                " is not the world size " + std::to_string(n));
  if (n % p != 0) throw std::invalid_argument("--stages " + std::to_string(p) + " does not divide " + std::to_string(n) + " ranks");
  const int d = n / p;
  if (o.batch % static_cast<size_t>(d) != 0)
    throw std::invalid_argument("--batch " + std::to_string(o.batch) + " is not a multiple of " + std::to_string(d) + " replicas");
  PipelineTrainer trainer = makeTrainer(o, world);
  const Task task = loadTask(o, trainer.replica(), d);
  const size_t local_batch = o.batch / static_cast<size_t>(d);
  const size_t steps_per_epoch = o.steps > 0 ? o.steps : std::max<size_t>(task.train_total / o.batch, 1);
  ShardSampler sampler(task.train, local_batch, steps_per_epoch, o.seed, trainer.replica());
  if (world.rank() == 0)
    std::printf("# coll-train pipeline: %d stages x %d replicas, %d micro-batches of %zu rows, %s; stage 0 holds "
                "layers [%zu, %zu)\n", p, d, o.micro_batches, local_batch / static_cast<size_t>(o.micro_batches),
                o.schedule.c_str(), trainer.layerRange().first, trainer.layerRange().second);
  std::vector<double> all_steps;
  world.barrier().wait();
  trainer.timeline().restartClock();  // one time base for the stages' rows of the trace
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    trainer.timeline().clear();
    std::map<int64_t, double> step_seconds;
    double loss = 0;
    for (size_t s = 0; s < steps_per_epoch; ++s) {
      Batch batch = sampler.batch(static_cast<int64_t>(s));
      auto start = Clock::now();
      loss += trainer.trainStep(batch).loss;
      step_seconds[static_cast<int64_t>(epoch * steps_per_epoch + s)] =
          std::chrono::duration<double>(Clock::now() - start).count();
    }
    // The last stages' mean loss, and every stage's median bubble, on rank 0.
    const bool last = trainer.stage() + 1 == p;
    double sums[2] = {last ? loss / static_cast<double>(steps_per_epoch) : 0.0, last ? 1.0 : 0.0};
    world.allreduce(sums, sums, 2, DataType::f64, ReduceOp::sum).wait();
    std::vector<double> mine = bubbles(trainer.timeline(), step_seconds), per_rank(static_cast<size_t>(n));
    double bubble = median(mine);
    world.allgather(&bubble, per_rank.data(), 1, DataType::f64).wait();
    std::vector<double> steps;
    for (const auto& [step, seconds] : step_seconds) steps.push_back(seconds);
    if (epoch > 0 || steps.size() > 1) all_steps.insert(all_steps.end(), steps.begin() + (epoch == 0 ? 1 : 0), steps.end());
    if (world.rank() == 0) {
      std::printf("epoch %3d  loss %.4f  step %8.2f ms  bubble per stage", epoch + 1, sums[0] / sums[1],
                  1e3 * median(steps));
      for (int s = 0; s < p; ++s) std::printf(" %.3f", per_rank[static_cast<size_t>(s)]);
      std::printf("\n");
    }
  }
  if (!o.trace.empty()) {
    std::vector<std::string> lists = allgatherStrings(world, trainer.timeline().chromeTraceEvents(world.rank()));
    if (world.rank() == 0) writeChromeTraceFile(o.trace, lists);
  }
  // Of the last step, per stage (replica 0's ranks are ranks 0..P-1).
  double peaks[2] = {static_cast<double>(trainer.peakAliveMicroBatches()),
                     static_cast<double>(trainer.peakActivationBytes()) / (1 << 20)};
  std::vector<double> all_peaks(2 * static_cast<size_t>(n));
  world.allgather(peaks, all_peaks.data(), 2, DataType::f64).wait();
  if (world.rank() == 0) {
    const double theory = static_cast<double>(p - 1) / (o.micro_batches + p - 1);
    std::printf("median step %.2f ms; bubble in theory (P - 1) / (M + P - 1) = %.3f\n", 1e3 * median(all_steps), theory);
    std::printf("peak per stage: micro-batches alive");
    for (int s = 0; s < p; ++s) std::printf(" %.0f", all_peaks[2 * static_cast<size_t>(s)]);
    std::printf("; activation and gradient MiB held");
    for (int s = 0; s < p; ++s) std::printf(" %.2f", all_peaks[2 * static_cast<size_t>(s) + 1]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace coll::trainer
