// Pipeline parallelism (src/trainer/pipeline_trainer.h) on forked ranks: for P stages in
// {2, 3, 4}, M micro-batches in {1, P, 4P}, D replicas in {1, 2} and both schedules, the
// parameters after three SGD-with-momentum steps equal those of a single-process run of the
// whole model on the whole global batch (the D replicas' batches one after another), within
// 1e-5 of each parameter tensor's largest magnitude: the sums differ only in order (micro-
// batches summed one by one, replicas averaged by the all-reduce), f32 rounding. The D
// replicas of a stage are bit-identical. With batch norm (statistics per micro-batch, across
// the stage's replicas or not), the reference is gradient accumulation over the same micro-
// batches, and the running statistics match it too. Bad configurations are refused on every
// rank before anything is sent.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "multirank/rank_runner.h"
#include "trainer/batch_norm.h"
#include "trainer/comm_hook.h"
#include "trainer/dense.h"
#include "trainer/mlp.h"
#include "trainer/pipeline_trainer.h"
#include "trainer/relu.h"
#include "trainer/replicated_update.h"
#include "trainer/softmax_cross_entropy.h"

namespace coll::trainer {
namespace {

using test::Rank;

constexpr size_t kInputs = 6, kClasses = 4, kRowsPerReplica = 48;
constexpr int kSteps = 3;
constexpr unsigned kSeed = 11;
constexpr float kLr = 0.05f;

std::vector<std::unique_ptr<Layer>> layers() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(std::make_unique<Dense>(kInputs, 16));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(16, 12));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(12, 10));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(10, kClasses));
  return l;
}

// Rows [replica * kRowsPerReplica, ...) of step `step`'s global batch.
Batch batchOf(int64_t step, int replica, int replicas) {
  std::mt19937 rng(static_cast<unsigned>(1000 + step));
  std::normal_distribution<float> x;
  const size_t rows = kRowsPerReplica * static_cast<size_t>(replicas);
  Matrix all(rows, kInputs);
  std::vector<int> labels(rows);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < kInputs; ++j) all.at(i, j) = x(rng);
    labels[i] = static_cast<int>(rng() % kClasses);
  }
  if (replica < 0) return {all, labels};  // the whole global batch
  Batch b{Matrix(kRowsPerReplica, kInputs), {}};
  const size_t first = static_cast<size_t>(replica) * kRowsPerReplica;
  std::copy(all.row(first), all.row(first) + kRowsPerReplica * kInputs, b.features.data.begin());
  b.labels.assign(labels.begin() + static_cast<long>(first), labels.begin() + static_cast<long>(first + kRowsPerReplica));
  return b;
}

// The whole model trained in one process on the global batches: the parameters by slot name.
std::map<std::string, std::vector<float>> reference(int replicas) {
  Model model;
  for (auto& l : layers()) model.add(std::move(l));
  model.build(kSeed);
  auto sgd = makeOptimizer("sgd", kLr);
  sgd->initState(model.parameterCount());
  Matrix logits, grad;
  for (int64_t step = 0; step < kSteps; ++step) {
    Batch b = batchOf(step, -1, replicas);
    model.forward(b.features, &logits);
    softmaxCrossEntropy(logits, b.labels, &grad);
    model.backward(grad, nullptr);
    sgd->beginStep();
    sgd->update(0, model.values(), model.grads());
  }
  std::map<std::string, std::vector<float>> params;
  for (const ParamSlot& s : model.slots())
    params[s.name] = std::vector<float>(model.values().begin() + static_cast<long>(s.offset),
                                        model.values().begin() + static_cast<long>(s.offset + s.count));
  return params;
}

std::unique_ptr<UpdateStrategy> sgdUpdate() {
  return std::make_unique<ReplicatedUpdate>(makeOptimizer("sgd", kLr), makeCommHook("none", Reduction::average));
}

// A stage's replicas hold bit-identical parameters (a hash of each, all-gathered among them).
void expectReplicasBitIdentical(PipelineTrainer& trainer) {
  std::vector<uint64_t> hashes(static_cast<size_t>(trainer.replicas()));
  uint64_t mine = hashParameters(trainer.model().values());
  trainer.stageComm().allgather(&mine, hashes.data(), 1, DataType::u64).wait();
  for (int r = 1; r < trainer.replicas(); ++r)
    RANK_CHECK(hashes[r] == hashes[0], "stage %d: replica %d's parameters differ from replica 0's", trainer.stage(), r);
}

using Config = std::tuple<int, int, int, PipelineSchedule>;  // stages, micro-batches (x P when negative), replicas

class Pipeline : public ::testing::TestWithParam<Config> {};

TEST_P(Pipeline, EqualsOneProcessOnTheGlobalBatchAndReplicasAgree) {
  auto [p, m_code, d, schedule] = GetParam();
  const int m = m_code < 0 ? -m_code * p : m_code;
  auto outcomes = test::runRanks(p * d, [&, p = p, d = d, schedule = schedule](Communicator& comm, Rank&) {
    PipelineOptions o;
    o.stages = p;
    o.micro_batches = m;
    o.schedule = schedule;
    o.input_width = kInputs;
    o.seed = kSeed;
    o.timeline = false;
    PipelineTrainer trainer(comm, layers(), sgdUpdate(), o);
    for (int64_t step = 0; step < kSteps; ++step) trainer.trainStep(batchOf(step, trainer.replica(), d));
    const auto want = reference(d);
    Model& model = trainer.model();
    for (const ParamSlot& s : model.slots()) {
      const std::vector<float>& ref = want.at(s.name);
      float largest = 0;
      for (float v : ref) largest = std::max(largest, std::fabs(v));
      for (size_t i = 0; i < s.count; ++i) {
        float got = model.values()[s.offset + i];
        RANK_CHECK(std::fabs(got - ref[i]) <= 1e-5f * largest, "stage %d replica %d: %s[%zu] = %.9g, one process: %.9g",
                   trainer.stage(), trainer.replica(), s.name.c_str(), i, got, ref[i]);
      }
    }
    const int expected_peak = schedule == PipelineSchedule::gpipe ? m : std::min(m, p - trainer.stage());
    RANK_CHECK(trainer.peakAliveMicroBatches() == expected_peak, "stage %d: %d micro-batches alive at once, expected %d",
               trainer.stage(), trainer.peakAliveMicroBatches(), expected_peak);
    expectReplicasBitIdentical(trainer);
  });
  test::expectAllSucceeded(outcomes);
}

std::string configName(const ::testing::TestParamInfo<Config>& info) {
  auto [p, m, d, s] = info.param;
  return "P" + std::to_string(p) + "_M" + (m < 0 ? std::to_string(-m) + "P" : std::to_string(m)) + "_D" +
         std::to_string(d) + "_" + (s == PipelineSchedule::gpipe ? "gpipe" : "1f1b");
}

INSTANTIATE_TEST_SUITE_P(Schedules, Pipeline,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Values(1, -1, -4),
                                            ::testing::Values(1, 2),
                                            ::testing::Values(PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b)),
                         configName);

// Each refusal comes from every rank, before anything is sent (no rank waits for another).
void expectRefused(int ranks, const std::function<void(Communicator&)>& body, const char* words) {
  auto outcomes = test::runRanks(ranks, [&](Communicator& comm, Rank&) {
    try {
      body(comm);
      RANK_CHECK(false, "accepted; expected a refusal saying '%s'", words);
    } catch (const std::invalid_argument& e) {
      RANK_CHECK(std::string(e.what()).find(words) != std::string::npos, "'%s' does not say '%s'", e.what(), words);
    }
  });
  test::expectAllSucceeded(outcomes);
}

PipelineOptions options(int stages, int micro) {
  PipelineOptions o;
  o.stages = stages;
  o.micro_batches = micro;
  o.input_width = kInputs;
  o.timeline = false;
  return o;
}

TEST(PipelineRefuses, StagesThatDoNotDivideTheWorld) {
  expectRefused(4, [](Communicator& c) { PipelineTrainer t(c, layers(), sgdUpdate(), options(3, 1)); },
                "is not stages (3) x replicas");
}
TEST(PipelineRefuses, MoreStagesThanLayers) {
  expectRefused(8, [](Communicator& c) { PipelineTrainer t(c, layers(), sgdUpdate(), options(8, 1)); },
                "needs at least as many layers; the model has 7");
}
TEST(PipelineRefuses, ABatchTheMicroBatchesDoNotDivide) {
  expectRefused(2, [](Communicator& c) {
    PipelineTrainer t(c, layers(), sgdUpdate(), options(2, 5));
    t.trainStep(batchOf(0, 0, 1));
  }, "cannot be cut into 5 equal micro-batches");
}

// --- batch norm ----------------------------------------------------------------------------
// Its statistics are a micro-batch's, so the one-process reference is gradient accumulation:
// it runs the same micro-batches one by one (micro-batch m of every replica together when the
// statistics span the replicas, each replica's alone when not), each loss gradient scaled by
// 1 / (the number of micro-batches summed), and applies the sum once per step.

std::vector<std::unique_ptr<Layer>> layersWithBatchNorm() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(std::make_unique<Dense>(kInputs, 16));
  l.push_back(std::make_unique<CrossReplicaBatchNorm>(16, nullptr));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(16, 12));
  l.push_back(std::make_unique<CrossReplicaBatchNorm>(12, nullptr));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(12, 10));
  l.push_back(std::make_unique<Relu>());
  l.push_back(std::make_unique<Dense>(10, kClasses));
  return l;
}

struct BatchNormReference {
  std::map<std::string, std::vector<float>> params;     // by slot name
  std::map<size_t, std::vector<float>> running_means;  // by layer index in the whole model
};

// The micro-batches of one step as rows of the global batch, in the order they are summed.
std::vector<std::vector<size_t>> microBatchRows(int replicas, int micro, PipelineBatchNorm bn) {
  const size_t rows = kRowsPerReplica / static_cast<size_t>(micro);
  auto rowsOf = [&](int r, int m, std::vector<size_t>* out) {
    for (size_t i = 0; i < rows; ++i) out->push_back(static_cast<size_t>(r) * kRowsPerReplica + m * rows + i);
  };
  std::vector<std::vector<size_t>> groups;
  if (bn == PipelineBatchNorm::across_replicas) {
    for (int m = 0; m < micro; ++m) {
      groups.emplace_back();
      for (int r = 0; r < replicas; ++r) rowsOf(r, m, &groups.back());
    }
  } else {
    for (int r = 0; r < replicas; ++r)
      for (int m = 0; m < micro; ++m) rowsOf(r, m, &groups.emplace_back());
  }
  return groups;
}

BatchNormReference referenceWithBatchNorm(int replicas, int micro, PipelineBatchNorm bn) {
  Model model;
  for (auto& l : layersWithBatchNorm()) model.add(std::move(l));
  model.build(kSeed);
  auto sgd = makeOptimizer("sgd", kLr);
  sgd->initState(model.parameterCount());
  const std::vector<std::vector<size_t>> groups = microBatchRows(replicas, micro, bn);
  const float scale = 1.0f / static_cast<float>(groups.size());
  Matrix logits, grad;
  std::vector<float> sum(model.parameterCount());
  for (int64_t step = 0; step < kSteps; ++step) {
    const Batch global = batchOf(step, -1, replicas);
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (const std::vector<size_t>& rows : groups) {
      Matrix x(rows.size(), kInputs);
      std::vector<int> labels;
      for (size_t i = 0; i < rows.size(); ++i) {
        std::copy(global.features.row(rows[i]), global.features.row(rows[i]) + kInputs, x.row(i));
        labels.push_back(global.labels[rows[i]]);
      }
      model.forward(x, &logits);
      softmaxCrossEntropy(logits, labels, &grad);
      for (float& g : grad.data) g *= scale;
      model.backward(grad, nullptr);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += model.grads()[i];
    }
    sgd->beginStep();
    sgd->update(0, model.values(), sum);
  }
  BatchNormReference ref;
  for (const ParamSlot& s : model.slots())
    ref.params[s.name] = std::vector<float>(model.values().begin() + static_cast<long>(s.offset),
                                            model.values().begin() + static_cast<long>(s.offset + s.count));
  for (size_t l = 0; l < model.numLayers(); ++l)
    if (auto* b = dynamic_cast<CrossReplicaBatchNorm*>(&model.layer(l))) ref.running_means[l] = b->runningMean();
  return ref;
}

// Within 1e-5 of the tensor's largest magnitude, and 1e-7 at least: a dense bias feeding batch
// norm has a zero gradient in exact arithmetic (the normalisation removes any shift), so what
// it holds after training is rounding noise of about 1e-10, in the reference as in the pipeline.
void expectClose(std::span<const float> got, const std::vector<float>& want, const char* what, const PipelineTrainer& t) {
  float largest = 0;
  for (float v : want) largest = std::max(largest, std::fabs(v));
  for (size_t i = 0; i < want.size(); ++i)
    RANK_CHECK(std::fabs(got[i] - want[i]) <= std::max(1e-5f * largest, 1e-7f), "stage %d replica %d: %s[%zu] = %.9g, one process: %.9g",
               t.stage(), t.replica(), what, i, got[i], want[i]);
}

using BatchNormConfig = std::tuple<int, int, int, PipelineSchedule, PipelineBatchNorm>;

class PipelineWithBatchNorm : public ::testing::TestWithParam<BatchNormConfig> {};

TEST_P(PipelineWithBatchNorm, EqualsGradientAccumulationOverTheSameMicroBatches) {
  auto [p, m_code, d, schedule, bn] = GetParam();
  const int m = m_code < 0 ? -m_code * p : m_code;
  auto outcomes = test::runRanks(p * d, [&, p = p, d = d, schedule = schedule, bn = bn](Communicator& comm, Rank&) {
    PipelineOptions o = options(p, m);
    o.schedule = schedule;
    o.seed = kSeed;
    o.batch_norm = bn;
    PipelineTrainer trainer(comm, layersWithBatchNorm(), sgdUpdate(), o);
    for (int64_t step = 0; step < kSteps; ++step) trainer.trainStep(batchOf(step, trainer.replica(), d));
    const BatchNormReference want = referenceWithBatchNorm(d, m, bn);
    Model& model = trainer.model();
    for (const ParamSlot& s : model.slots())
      expectClose(model.values().subspan(s.offset, s.count), want.params.at(s.name), s.name.c_str(), trainer);
    // Each micro-batch moves the running statistics once (not again when re-materialised).
    // Replicas that normalise alone each see their own rows, which the reference does not keep.
    if (bn == PipelineBatchNorm::across_replicas || d == 1)
      for (size_t l = 0; l < model.numLayers(); ++l)
        if (auto* b = dynamic_cast<CrossReplicaBatchNorm*>(&model.layer(l)))
          expectClose(b->runningMean(), want.running_means.at(trainer.layerRange().first + l), "running mean", trainer);
    expectReplicasBitIdentical(trainer);
  });
  test::expectAllSucceeded(outcomes);
}

std::string batchNormConfigName(const ::testing::TestParamInfo<BatchNormConfig>& info) {
  auto [p, m, d, s, bn] = info.param;
  return configName({std::make_tuple(p, m, d, s), info.index}) +
         (bn == PipelineBatchNorm::across_replicas ? "_across" : "_alone");
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineWithBatchNorm,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(-1, -4), ::testing::Values(1, 2),
                                            ::testing::Values(PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b),
                                            ::testing::Values(PipelineBatchNorm::across_replicas,
                                                              PipelineBatchNorm::per_replica)),
                         batchNormConfigName);

}  // namespace
}  // namespace coll::trainer
