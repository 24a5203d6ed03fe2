// The pipeline's arithmetic (src/trainer/pipeline_schedule.h): every order runs each
// micro-batch's forward once and before its backward; 1F1B keeps at most P - s micro-batches
// alive on stage s and GPipe M; stages cover the layers in order and balance their costs.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "trainer/pipeline_schedule.h"

namespace coll::trainer {
namespace {

TEST(PipelineSchedule, EveryMicroBatchForwardThenBackwardOnceAndThePeakIsBounded) {
  for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int p = 1; p <= 6; ++p)
      for (int s = 0; s < p; ++s)
        for (int m = 1; m <= 17; ++m) {
          auto order = pipelineOrder(schedule, s, p, m);
          std::vector<int> forwards(m, 0), backwards(m, 0);
          for (const PipelineAction& a : order) {
            if (a.forward) {
              ++forwards[a.micro];
            } else {
              ASSERT_EQ(forwards[a.micro], 1) << "backward before forward, micro " << a.micro;
              ++backwards[a.micro];
            }
          }
          for (int i = 0; i < m; ++i) ASSERT_TRUE(forwards[i] == 1 && backwards[i] == 1) << "micro " << i;
          const int want = schedule == PipelineSchedule::gpipe ? m : std::min(m, p - s);
          EXPECT_EQ(peakAlive(order), want) << toString(schedule) << " P " << p << " stage " << s << " M " << m;
        }
}

TEST(PipelineSchedule, OneFOneBAlternatesAfterTheWarmUp) {
  auto order = pipelineOrder(PipelineSchedule::one_f_one_b, 1, 4, 6);  // warm-up 2
  std::string got;
  for (const PipelineAction& a : order) got += (a.forward ? "F" : "B") + std::to_string(a.micro) + " ";
  EXPECT_EQ(got, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 ");
}

TEST(PipelineSchedule, StagesCoverTheLayersAndBalanceTheirCost) {
  std::vector<double> costs = {10, 1, 10, 1, 10, 1, 10};
  auto ranges = assignStages(costs, 4);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges.front().first, 0u);
  EXPECT_EQ(ranges.back().second, costs.size());
  double largest = 0;
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (k > 0) {
      EXPECT_EQ(ranges[k].first, ranges[k - 1].second);
    }
    EXPECT_LT(ranges[k].first, ranges[k].second);
    largest = std::max(largest, std::accumulate(costs.begin() + ranges[k].first, costs.begin() + ranges[k].second, 0.0));
  }
  EXPECT_EQ(largest, 11);  // each dense layer with at most one relu
  EXPECT_THROW(assignStages(costs, 8), std::invalid_argument);
  EXPECT_THROW(assignStages(costs, 0), std::invalid_argument);
  EXPECT_THROW(parsePipelineSchedule("zero-bubble"), std::invalid_argument);
}

}  // namespace
}  // namespace coll::trainer
