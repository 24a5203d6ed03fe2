// Single-process checks of the trainer's pieces against independent references: every
// layer's backward against central finite differences of its forward, the optimizers against
// their update rules written out by hand, the bucket plan, the bucket-sizing model's limits,
// and the Chrome trace's shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "trainer/adam.h"
#include "trainer/bucket_sizing.h"
#include "trainer/bucketer.h"
#include "trainer/mlp.h"
#include "trainer/sgd.h"
#include "trainer/softmax_cross_entropy.h"
#include "trainer/timeline.h"

namespace coll::trainer {
namespace {

Matrix randomMatrix(size_t rows, size_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (float& x : m.data) x = d(gen);
  return m;
}

// Loss of the model on (x, labels), in double where it matters for the difference quotient.
double lossOf(Model& model, const Matrix& x, const std::vector<int>& labels) {
  Matrix logits, grad;
  model.forward(x, &logits);
  return softmaxCrossEntropy(logits, labels, &grad).loss;
}

// Every parameter gradient and the input gradient agree with (L(p+h) - L(p-h)) / 2h.
void expectGradientsMatchFiniteDifferences(bool batch_norm) {
  Model model;
  buildMlp(model, {5, {7, 6}, 4, batch_norm}, nullptr, 3);
  // Positive biases: with zero ones, a row whose hidden units are all off puts the next
  // layer's pre-activations exactly on ReLU's kink, where the difference quotient is wrong.
  for (const ParamSlot& s : model.slots())
    if (s.name.ends_with(".bias") || s.name.ends_with(".beta"))
      std::fill_n(model.values().begin() + static_cast<long>(s.offset), s.count, 0.1f);
  Matrix x = randomMatrix(9, 5, 11);
  std::vector<int> labels = {0, 1, 2, 3, 0, 1, 2, 3, 1};
  Matrix logits, grad;
  model.forward(x, &logits);
  softmaxCrossEntropy(logits, labels, &grad);
  model.backward(grad, nullptr);
  std::vector<float> analytic(model.grads().begin(), model.grads().end());
  const float h = 1e-3f;  // small enough that no pre-activation crosses ReLU's kink
  for (size_t i = 0; i < model.values().size(); ++i) {
    float saved = model.values()[i];
    model.values()[i] = saved + h;
    double up = lossOf(model, x, labels);
    model.values()[i] = saved - h;
    double down = lossOf(model, x, labels);
    model.values()[i] = saved;
    double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "parameter element " << i;
  }
}

TEST(TrainerLayers, DenseReluSoftmaxGradientsMatchFiniteDifferences) { expectGradientsMatchFiniteDifferences(false); }
TEST(TrainerLayers, BatchNormGradientsMatchFiniteDifferences) { expectGradientsMatchFiniteDifferences(true); }

TEST(TrainerLayers, SoftmaxCrossEntropyOfUniformLogitsIsLogClasses) {
  Matrix logits(2, 10), grad;
  std::vector<int> labels = {3, 7};
  LossResult r = softmaxCrossEntropy(logits, labels, &grad);
  EXPECT_NEAR(r.loss, std::log(10.0), 1e-6);
  EXPECT_NEAR(grad.at(0, 3), (0.1 - 1) / 2, 1e-7);
  EXPECT_NEAR(grad.at(1, 0), 0.1 / 2, 1e-7);
}

TEST(TrainerOptimizers, SgdMomentumFollowsItsRule) {
  SgdMomentum sgd(0.1f, 0.9f);
  sgd.initState(3);
  std::vector<float> p = {1, 2, 3}, g = {0.5f, -1, 2};
  sgd.beginStep();
  sgd.update(1, std::span(p).subspan(1), std::span<const float>(g).subspan(1));  // elements 1, 2
  EXPECT_FLOAT_EQ(p[1], 2 - 0.1f * -1);
  sgd.beginStep();
  sgd.update(1, std::span(p).subspan(1), std::span<const float>(g).subspan(1));
  EXPECT_FLOAT_EQ(p[2], 3 - 0.1f * 2 - 0.1f * (0.9f * 2 + 2));  // v2 = 0.9 v1 + g
  EXPECT_FLOAT_EQ(p[0], 1);                                      // outside the range: untouched
  EXPECT_EQ(sgd.stateBytes(), 3 * sizeof(float));
}

TEST(TrainerOptimizers, AdamFollowsItsRule) {
  Adam adam(0.01f, 0.9f, 0.999f, 1e-8f);
  adam.initState(1);
  std::vector<float> p = {1};
  double m = 0, v = 0, ref = 1;
  const float grads[] = {0.3f, -0.2f, 0.5f};
  for (int t = 1; t <= 3; ++t) {
    float g = grads[t - 1];
    adam.beginStep();
    adam.update(0, p, std::span<const float>(&g, 1));
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    ref -= 0.01 * (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
    EXPECT_NEAR(p[0], ref, 1e-6) << "step " << t;
  }
  EXPECT_EQ(adam.stateBytes(), 2 * sizeof(float));
}

std::vector<ParamSlot> slotsOfBytes(std::vector<size_t> bytes) {
  std::vector<ParamSlot> slots;
  size_t offset = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    slots.push_back({"p" + std::to_string(i), bytes.size() - i, offset, bytes[i] / sizeof(float)});
    offset += bytes[i] / sizeof(float);
  }
  return slots;
}

TEST(TrainerBuckets, SmallFirstBucketThenCappedInBackwardOrder) {
  // 600K, 600K, 2M, 3M, 1M, 5M, 4K (bytes) with a 1 MiB first bucket and a 4 MiB cap.
  auto slots = slotsOfBytes({600 << 10, 600 << 10, 2 << 20, 3 << 20, 1 << 20, 5 << 20, 4096});
  auto plan = planBuckets(slots, {1 << 20, 4 << 20, false});
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].slots, (std::vector<size_t>{0, 1}));  // 1.2M: closed once past 1 MiB
  EXPECT_EQ(plan[1].slots, (std::vector<size_t>{2, 3}));  // 2M + 3M: closed once past 4 MiB
  EXPECT_EQ(plan[2].slots, (std::vector<size_t>{4, 5}));  // 1M + 5M: a parameter is never split
  EXPECT_EQ(plan[3].slots, (std::vector<size_t>{6}));     // the rest
  size_t expected_offset = 0;
  for (const Bucket& b : plan) {  // contiguous, in buffer order, covering everything
    EXPECT_EQ(b.offset, expected_offset);
    expected_offset += b.count;
  }
  EXPECT_EQ(expected_offset, slots.back().offset + slots.back().count);
}

TEST(TrainerBuckets, SingleBucketHoldsEverything) {
  auto plan = planBuckets(slotsOfBytes({4 << 20, 4 << 20, 4 << 20}), {1 << 20, 1 << 20, true});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].count, 3u << 20);
}

TEST(TrainerBucketSizing, LimitsOfTheModel) {
  BucketSizingInput in;
  in.backward_seconds = 1.0;
  in.gradient_bytes = 100e6;
  in.allreduce_bytes_per_second = 100e6;  // communication as long as backward
  in.allreduce_alpha_seconds = 0;         // free launches: as many buckets as allowed
  EXPECT_EQ(sizeBuckets(in).buckets, in.max_buckets);
  in.allreduce_alpha_seconds = 10.0;      // launches dearer than everything: one bucket
  EXPECT_EQ(sizeBuckets(in).buckets, 1u);
  in.allreduce_alpha_seconds = 0.005;
  BucketSizingResult r = sizeBuckets(in);
  EXPECT_GT(r.buckets, 1u);
  EXPECT_LT(r.buckets, in.max_buckets);
  // With K buckets the exposed time is at least the last bucket's transfer plus alpha.
  EXPECT_GE(r.predicted_exposed_seconds, 1.0 / static_cast<double>(r.buckets) + 0.005 - 1e-9);
  EXPECT_LT(r.predicted_end_seconds, 2.0);  // better than no overlap (1 + 1)
}

TEST(TrainerTimeline, WritesAChromeTrace) {
  Timeline t;
  Clock::time_point now = Clock::now();
  t.record({"backward dense", Lane::compute, 0, now, now + std::chrono::milliseconds(2), 0});
  t.record({"bucket 0", Lane::comm, 0, now, now + std::chrono::milliseconds(3), 4096});
  std::string path = ::testing::TempDir() + "trainer_trace.json";
  t.writeChromeTrace(path, 2);
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  std::string text = s.str();
  EXPECT_NE(text.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(text.find("\"name\": \"bucket 0\", \"pid\": 2, \"tid\": 1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"dur\": 3000.000"), std::string::npos) << text;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace coll::trainer
