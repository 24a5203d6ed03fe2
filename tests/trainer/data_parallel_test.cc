// Data-parallel training on forked ranks (tests/multirank/rank_runner.h), each checked against
// an independent reference: one rank on the same global batch, a locally computed average of
// every rank's gradients, batch norm over the concatenated global batch, and the replicated
// optimizer's loss curve for the sharded one.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "multirank/rank_runner.h"
#include "trainer/batch_norm.h"
#include "trainer/comm_hook.h"
#include "tasks/digits.h"
#include "trainer/mlp.h"
#include "trainer/replicated_update.h"
#include "trainer/sgd.h"
#include "trainer/sharded_update.h"
#include "trainer/trainer.h"

namespace coll::trainer {
namespace {

using test::Rank;

bool haveDigits() {
  std::FILE* f = std::fopen(kDefaultDigitsPath, "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// Every rank's parameter hash equals rank 0's.
void checkParametersIdentical(Communicator& comm, Model& model, int64_t step) {
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  uint64_t mine = hashParameters(model.values());
  comm.allgather(&mine, all.data(), 1, DataType::u64).wait();
  for (size_t r = 1; r < all.size(); ++r)
    RANK_CHECK(all[r] == all[0], "step %lld: rank %zu's parameters differ from rank 0's", static_cast<long long>(step), r);
}

struct DigitsRun {
  size_t global_batch = 64;
  int epochs = 25;
  bool batch_norm = false;
  bool zero = false;
  std::string compress = "none";
  bool check_hash = false;
  size_t bucket_bytes = 4096;  // several buckets even for this small model
};

// Trains on this rank's shard; returns the test accuracy (the same on every rank).
double trainDigits(Communicator& comm, const DigitsRun& run) {
  const int rank = comm.rank(), world = comm.size();
  Dataset train = loadDigitsShard(kDefaultDigitsPath, Split::train, rank, world);
  Dataset test = loadDigitsShard(kDefaultDigitsPath, Split::test, rank, world);
  Model model;
  buildMlp(model, {64, {64}, 10, run.batch_norm}, &comm, 1);
  std::unique_ptr<UpdateStrategy> update;
  if (run.zero) update = std::make_unique<ShardedUpdate>(makeOptimizer("adam", 3e-3f));
  else update = std::make_unique<ReplicatedUpdate>(makeOptimizer("adam", 3e-3f), makeCommHook(run.compress, Reduction::average));
  TrainerOptions options;
  options.buckets = {run.bucket_bytes, run.bucket_bytes, false};
  Trainer trainer(comm, model, std::move(update), options);
  const size_t steps = kDigitsTrain / run.global_batch;
  ShardSampler sampler(train, run.global_batch / static_cast<size_t>(world), steps, 1, rank);
  for (int epoch = 0; epoch < run.epochs; ++epoch) {
    trainer.run(static_cast<int64_t>(steps), [&](int64_t s) { return sampler.batch(s); },
                [&](Trainer& t, const Batch& b, int64_t s) {
                  t.trainStep(b);
                  if (run.check_hash) checkParametersIdentical(comm, model, s);
                });
  }
  return evaluateAccuracy(model, test, comm);
}

// The accuracy travels back in the rank's message slot.
double accuracyOf(int n, const DigitsRun& run) {
  auto outcomes = test::runRanks(n, [&](Communicator& comm, Rank& self) {
    double acc = trainDigits(comm, run);
    std::snprintf(self.slot->message, sizeof self.slot->message, "%.6f", acc);
  });
  if (!test::expectAllSucceeded(outcomes)) return -1;
  for (const auto& o : outcomes) EXPECT_EQ(o.message, outcomes[0].message) << "ranks disagree on the accuracy";
  return std::atof(outcomes[0].message.c_str());
}

TEST(DataParallel, FourRanksReachOneRanksAccuracy) {
  if (!haveDigits()) GTEST_SKIP() << "no " << kDefaultDigitsPath << " (apt-get install python3-sklearn)";
  DigitsRun run;
  double one = accuracyOf(1, run), four = accuracyOf(4, run);
  std::printf("digits test accuracy: 1 rank %.2f%%, 4 ranks %.2f%% (global batch %zu)\n", 100 * one, 100 * four,
              run.global_batch);
  EXPECT_GT(one, 0.93);
  EXPECT_NEAR(four, one, 0.01);
}

TEST(DataParallel, ParametersBitIdenticalAfterEveryStep) {
  if (!haveDigits()) GTEST_SKIP() << "no digits data";
  for (const char* compress : {"none", "bf16"}) {
    DigitsRun run;
    run.epochs = 2;
    run.batch_norm = true;
    run.compress = compress;
    run.check_hash = true;
    EXPECT_GT(accuracyOf(4, run), 0.5) << compress;
  }
  DigitsRun zero;
  zero.epochs = 2;
  zero.zero = true;
  zero.check_hash = true;
  EXPECT_GT(accuracyOf(3, zero), 0.5) << "ZeRO-1 on 3 ranks";
}

struct HookCase {
  const char* hook;      // makeCommHook's name
  Reduction reduction;
  double scale;          // what the step moves by, in units of the average gradient
  double rel_tolerance;  // of the mean magnitude of the addends
};

// A model of several buckets; each rank's batch differs. After one step of plain SGD (lr 1, no
// momentum) each parameter moved by minus the average (or the sum of the) gradients, which the
// reference computes here from every rank's local gradient (gathered before the step).
void expectStepMovesByReducedGradient(const HookCase& hc) {
  auto outcomes = test::runRanks(4, [&](Communicator& comm, Rank& self) {
    Model model;
    buildMlp(model, {16, {32, 24, 16}, 5, false}, &comm, 7);
    Matrix x(6, 16);
    std::vector<int> labels(6);
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37f * static_cast<float>(i) + comm.rank());
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>((i + comm.rank()) % 5);
    Matrix logits, grad;
    model.forward(x, &logits);
    softmaxCrossEntropy(logits, labels, &grad);
    model.backward(grad, nullptr);
    const size_t n = model.parameterCount();
    std::vector<float> all(n * 4);
    comm.allgather(model.grads().data(), all.data(), n, DataType::f32).wait();
    std::vector<float> before(model.values().begin(), model.values().end());
    TrainerOptions options;
    options.buckets = {512, 1024, false};
    Trainer trainer(comm, model,
                    std::make_unique<ReplicatedUpdate>(std::make_unique<SgdMomentum>(1.0f, 0.0f),
                                                       makeCommHook(hc.hook, hc.reduction)),
                    options);
    RANK_CHECK(trainer.buckets().size() >= 4, "only %zu buckets", trainer.buckets().size());
    trainer.trainStep({x, labels});
    for (size_t i = 0; i < n; ++i) {
      // 16-bit wire types round each addend and partial sum: the error scales with the
      // addends' magnitudes, not with their (possibly cancelling) sum.
      double sum = 0, magnitude = 0;
      for (int r = 0; r < 4; ++r) {
        sum += all[static_cast<size_t>(r) * n + i];
        magnitude += std::fabs(all[static_cast<size_t>(r) * n + i]);
      }
      double expected = sum / 4 * hc.scale, scale = magnitude / 4 * hc.scale;
      double moved = static_cast<double>(before[i]) - model.values()[i];
      RANK_CHECK(std::fabs(moved - expected) <= 1e-6 + hc.rel_tolerance * scale,
                 "%s: element %zu moved %g, expected %g", hc.hook, i, moved, expected);
    }
    // The first bucket's all-reduce was issued before backward reached the first layer.
    Clock::time_point first_launch{}, backward_end{};
    for (const TimelineEvent& e : trainer.flushedTimeline().events()) {
      if (e.name == "bucket 0") first_launch = e.start;
      if (e.name.rfind("backward", 0) == 0) backward_end = std::max(backward_end, e.end);
    }
    RANK_CHECK(first_launch != Clock::time_point{} && first_launch < backward_end,
               "bucket 0 was not launched during backward");
  });
  test::expectAllSucceeded(outcomes);
}

TEST(DataParallel, BucketedAllreduceAveragesEveryRanksGradients) {
  expectStepMovesByReducedGradient({"none", Reduction::average, 1.0, 1e-5});
}
TEST(DataParallel, SumHookAddsEveryRanksGradients) {
  expectStepMovesByReducedGradient({"none", Reduction::sum, 4.0, 1e-5});
}
TEST(DataParallel, Fp16HookAveragesWithinHalfPrecision) {
  expectStepMovesByReducedGradient({"fp16", Reduction::average, 1.0, 4e-3});  // 4 roundings of 2^-11
}
TEST(DataParallel, Bf16HookAveragesWithinBfloat16Precision) {
  expectStepMovesByReducedGradient({"bf16", Reduction::average, 1.0, 3e-2});  // 4 roundings of 2^-8
}

// 4 ranks with 8 rows each normalise, and back-propagate, exactly as one batch norm over the
// 32 rows: outputs equal; the rank's input gradient is 4x the global one (the gradient
// average of the layers below divides it back); gamma/beta gradients average to the global.
TEST(DataParallel, CrossReplicaBatchNormEqualsFullBatch) {
  auto outcomes = test::runRanks(4, [](Communicator& comm, Rank& self) {
    const size_t rows = 8, features = 3, world = 4;
    auto value = [](size_t row, size_t c) { return std::cos(0.7f * row + 1.3f * c) * (1.0f + c); };
    auto weight = [](size_t row, size_t c) { return std::sin(0.5f * row - c); };
    Model local, global;
    local.add(std::make_unique<CrossReplicaBatchNorm>(features, &comm));
    global.add(std::make_unique<CrossReplicaBatchNorm>(features, nullptr));
    local.build(1);
    global.build(1);
    Matrix x(rows, features), xg(rows * world, features), dy(rows, features), dyg(rows * world, features);
    for (size_t i = 0; i < rows * world; ++i)
      for (size_t c = 0; c < features; ++c) {
        xg.at(i, c) = value(i, c);
        dyg.at(i, c) = weight(i, c) / (rows * world);  // d(mean over the global batch)
      }
    const size_t base = static_cast<size_t>(comm.rank()) * rows;
    for (size_t i = 0; i < rows; ++i)
      for (size_t c = 0; c < features; ++c) {
        x.at(i, c) = value(base + i, c);
        dy.at(i, c) = weight(base + i, c) / rows;  // d(mean over this replica's batch)
      }
    Matrix y, yg;
    local.forward(x, &y);
    global.forward(xg, &yg);
    for (size_t i = 0; i < rows; ++i)
      for (size_t c = 0; c < features; ++c)
        RANK_CHECK(std::fabs(y.at(i, c) - yg.at(base + i, c)) < 1e-5f, "y[%zu][%zu]", i, c);
    Matrix dx, dxg;
    auto& bn = static_cast<CrossReplicaBatchNorm&>(local.layer(0));
    auto& bng = static_cast<CrossReplicaBatchNorm&>(global.layer(0));
    bn.backward(dy, &dx);
    bng.backward(dyg, &dxg);
    for (size_t i = 0; i < rows; ++i)
      for (size_t c = 0; c < features; ++c)
        RANK_CHECK(std::fabs(dx.at(i, c) / world - dxg.at(base + i, c)) < 1e-6f, "dx[%zu][%zu]", i, c);
    std::vector<float> g(local.grads().begin(), local.grads().end());
    comm.allreduce(g.data(), g.data(), g.size(), DataType::f32, ReduceOp::avg).wait();
    for (size_t i = 0; i < g.size(); ++i)
      RANK_CHECK(std::fabs(g[i] - global.grads()[i]) < 1e-5f, "gamma/beta gradient %zu: %g vs %g", i, g[i],
                 global.grads()[i]);
  });
  test::expectAllSucceeded(outcomes);
}

// ZeRO-1 follows the replicated optimizer's loss curve and holds 1/n of its state.
TEST(DataParallel, ShardedOptimizerFollowsPlainLossCurveWithOneNthState) {
  if (!haveDigits()) GTEST_SKIP() << "no digits data";
  auto outcomes = test::runRanks(4, [](Communicator& comm, Rank& self) {
    Dataset train = loadDigitsShard(kDefaultDigitsPath, Split::train, comm.rank(), comm.size());
    ShardSampler sampler(train, 16, 22, 3, comm.rank());
    std::vector<double> curves[2];
    size_t state[2];
    for (int sharded = 0; sharded < 2; ++sharded) {
      Model model;
      buildMlp(model, {64, {48, 32}, 10, false}, &comm, 5);
      std::unique_ptr<UpdateStrategy> update;
      if (sharded) update = std::make_unique<ShardedUpdate>(makeOptimizer("adam", 3e-3f));
      else update = std::make_unique<ReplicatedUpdate>(makeOptimizer("adam", 3e-3f), nullptr);
      TrainerOptions options;
      options.buckets = {4096, 8192, false};
      Trainer trainer(comm, model, std::move(update), options);
      for (int64_t s = 0; s < 44; ++s) curves[sharded].push_back(trainer.globalMean(trainer.trainStep(sampler.batch(s)).loss));
      state[sharded] = trainer.update().optimizerStateBytes();
      checkParametersIdentical(comm, model, 44);
    }
    for (size_t s = 0; s < curves[0].size(); ++s)
      RANK_CHECK(std::fabs(curves[0][s] - curves[1][s]) <= 1e-4 * std::fabs(curves[0][s]) + 1e-5,
                 "step %zu: plain loss %.7f, sharded %.7f", s, curves[0][s], curves[1][s]);
    RANK_CHECK(curves[0].back() < 0.6 * curves[0].front(), "loss did not fall: %g -> %g", curves[0].front(), curves[0].back());
    // 1/n of the state, give or take the padding of each bucket to a multiple of n elements.
    RANK_CHECK(state[1] * 4 >= state[0] && state[1] * 4 <= state[0] + 4 * 2 * sizeof(float) * 4 * 16,
               "plain %zu bytes, sharded %zu bytes per rank", state[0], state[1]);
    if (comm.rank() == 0) std::printf("optimizer state per rank: plain %zu bytes, ZeRO-1 %zu bytes\n", state[0], state[1]);
  });
  test::expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::trainer
