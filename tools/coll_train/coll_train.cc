// coll-train: data-parallel training on coll, on sklearn's handwritten digits or on a synthetic
// teacher-student task whose model size is a flag. Prints loss and accuracy per epoch, the
// step time and the fraction of communication hidden behind compute; --no-overlap is the
// baseline with one all-reduce after backward. `coll-train --help` lists the options.
//
//   build/bin/collrun -n 4 build/bin/coll-train --epochs 20
//   build/bin/collrun -n 4 build/bin/coll-train --task teacher --width 768 --layers 12 --json
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "coll_train_options.h"
#include "coll_train_common.h"
#include "trainer/comm_hook.h"
#include "tasks/device_timed_dense.h"
#include "tasks/digits.h"
#include "trainer/mlp.h"
#include "trainer/relu.h"
#include "trainer/replicated_update.h"
#include "trainer/sharded_update.h"
#include "trainer/step_figures.h"
#include "tasks/teacher_task.h"
#include "trainer/trainer.h"

using namespace coll::trainer;

namespace {

TrainerOptions trainerOptions(const TrainOptions& o) {
  TrainerOptions t;
  t.buckets.single_bucket = o.no_overlap;
  if (o.bucket_mb > 0) t.buckets.bucket_bytes = static_cast<size_t>(o.bucket_mb * (1 << 20));
  return t;
}

// Every rank's parameter hash must equal rank 0's.
void checkIdentical(coll::Communicator& comm, Model& model, int64_t step) {
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  uint64_t mine = hashParameters(model.values());
  comm.allgather(&mine, all.data(), 1, coll::DataType::u64).wait();
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw std::runtime_error("step " + std::to_string(step) + ": rank " + std::to_string(r) +
                               "'s parameters differ from rank 0's");
}

struct Summary {
  std::vector<double> steps, hidden;  // per step after the first, seconds and fractions
  double loss = 0, accuracy = 0;
};

// One epoch: trains, then reports on rank 0 (every rank takes part in the reductions).
void runEpoch(const TrainOptions& o, int epoch, Trainer& trainer, const ShardSampler& sampler, const Task& task,
              size_t steps_per_epoch, Summary* summary) {
  coll::Communicator& comm = trainer.comm();
  double epoch_loss = 0;
  trainer.timeline().clear();
  auto step = [&](Trainer& t, const Batch& batch, int64_t s) {
    epoch_loss += t.trainStep(batch).loss;
    if (o.check_hash) checkIdentical(comm, t.model(), s);
  };
  trainer.run(static_cast<int64_t>(steps_per_epoch), [&](int64_t s) { return sampler.batch(s); }, step);
  std::vector<StepFigures> figures = analyseSteps(trainer.flushedTimeline());
  std::vector<double> step_s, hidden;
  for (size_t i = epoch == 0 ? 1 : 0; i < figures.size(); ++i) {  // the very first step warms up
    step_s.push_back(figures[i].step);
    hidden.push_back(figures[i].hiddenFraction());
  }
  summary->steps.insert(summary->steps.end(), step_s.begin(), step_s.end());
  summary->hidden.insert(summary->hidden.end(), hidden.begin(), hidden.end());
  summary->loss = trainer.globalMean(epoch_loss / static_cast<double>(steps_per_epoch));
  summary->accuracy = evaluateAccuracy(trainer.model(), task.test, comm);
  if (comm.rank() == 0)
    std::printf("epoch %3d  loss %.4f  test accuracy %6.2f%%  step %8.2f ms  hidden %.2f\n", epoch + 1, summary->loss,
                100 * summary->accuracy, 1e3 * median(step_s), median(hidden));
}

int run(const TrainOptions& o) {
  auto comm = coll::Communicator::fromEnvironment();
  const int rank = comm->rank(), world = comm->size();
  if (o.batch % static_cast<size_t>(world) != 0)
    throw std::runtime_error("--batch " + std::to_string(o.batch) + " is not a multiple of " + std::to_string(world) +
                             " ranks");
  const Task task = loadTask(o, rank, world);
  if (o.stages > 1) return runPipeline(o, *comm);
  Model model;
  for (auto& layer : modelLayers(o, comm.get())) model.add(std::move(layer));
  model.build(o.seed);
  Trainer trainer(*comm, model, makeUpdate(o), trainerOptions(o));
  const size_t local_batch = o.batch / static_cast<size_t>(world);
  const size_t steps_per_epoch = o.steps > 0 ? o.steps : std::max<size_t>(task.train_total / o.batch, 1);
  ShardSampler sampler(task.train, local_batch, steps_per_epoch, o.seed, rank);
  if (o.auto_buckets && !o.no_overlap) trainer.autoSizeBuckets(sampler.batch(0));
  if (rank == 0)
    std::printf("# coll-train: task %s, %d ranks, global batch %zu, %zu parameters (%.2f MiB of gradients) in %zu "
                "buckets%s, %s%s\n",
                o.task.c_str(), world, o.batch, model.parameterCount(),
                static_cast<double>(model.grads().size_bytes()) / (1 << 20), trainer.buckets().size(),
                o.no_overlap ? " (one all-reduce after backward)" : "", o.optimizer.c_str(), o.zero ? " (ZeRO-1)" : "");
  Summary summary;
  for (int epoch = 0; epoch < o.epochs; ++epoch) runEpoch(o, epoch, trainer, sampler, task, steps_per_epoch, &summary);
  if (!o.trace.empty()) {
    std::vector<std::string> lists = allgatherStrings(*comm, trainer.flushedTimeline().chromeTraceEvents(rank));
    if (rank == 0) writeChromeTraceFile(o.trace, lists);
  }
  if (rank == 0) {
    std::printf("median step %.2f ms, hidden fraction %.2f, optimizer state %zu bytes/rank\n",
                1e3 * median(summary.steps), median(summary.hidden), trainer.update().optimizerStateBytes());
    if (o.json)
      std::printf("{\"task\": \"%s\", \"ranks\": %d, \"overlap\": %s, \"median_step_ms\": %.4f, "
                  "\"hidden_fraction\": %.4f, \"final_loss\": %.6f, \"test_accuracy\": %.6f}\n",
                  o.task.c_str(), world, o.no_overlap ? "false" : "true", 1e3 * median(summary.steps),
                  median(summary.hidden), summary.loss, summary.accuracy);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a line at a time: a rank killed mid-run has said what it did
  TrainOptions options = parseTrainOptions(argc, argv);
  try {
    if (options.elastic && options.stages > 1) return runElasticPipeline(options, argv);
    if (options.elastic) return runElastic(options, argv);
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll-train: %s\n", e.what());
    return 1;
  }
}
