#include "trainer/pipeline_schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace coll::trainer {

PipelineSchedule parsePipelineSchedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::gpipe;
  if (name == "1f1b") return PipelineSchedule::one_f_one_b;
  throw std::invalid_argument("unknown pipeline schedule '" + name + "' (gpipe, 1f1b)");
}

const char* toString(PipelineSchedule schedule) { return schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b"; }

std::vector<PipelineAction> pipelineOrder(PipelineSchedule schedule, int stage, int stages, int micro_batches) {
  std::vector<PipelineAction> order;
  const int m = micro_batches;
  if (schedule == PipelineSchedule::gpipe) {
    for (int i = 0; i < m; ++i) order.push_back({true, i});
    for (int i = 0; i < m; ++i) order.push_back({false, i});
    return order;
  }
  const int warmup = std::min(stages - stage - 1, m);
  for (int i = 0; i < warmup; ++i) order.push_back({true, i});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({true, warmup + i});
    order.push_back({false, i});
  }
  for (int i = m - warmup; i < m; ++i) order.push_back({false, i});
  return order;
}

int peakAlive(const std::vector<PipelineAction>& order) {
  int alive = 0, peak = 0;
  for (const PipelineAction& a : order) {
    alive += a.forward ? 1 : -1;
    peak = std::max(peak, alive);
  }
  return peak;
}

std::vector<std::pair<size_t, size_t>> assignStages(const std::vector<double>& layer_costs, int stages) {
  const size_t n = layer_costs.size();
  if (stages < 1) throw std::invalid_argument("a pipeline needs at least one stage");
  if (static_cast<size_t>(stages) > n)
    throw std::invalid_argument("a pipeline of " + std::to_string(stages) + " stages needs at least as many layers; the "
                                "model has " + std::to_string(n));
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  const size_t p = static_cast<size_t>(stages);
  // best[k][i]: the least possible largest stage cost for the first i layers in k stages.
  std::vector<std::vector<double>> best(p + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(p + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0.0;
  for (size_t k = 1; k <= p; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {  // the last stage holds layers [j, i)
        double cost = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (cost < best[k][i]) best[k][i] = cost, cut[k][i] = j;
      }
  std::vector<std::pair<size_t, size_t>> ranges(p);
  for (size_t k = p, i = n; k > 0; --k) {
    ranges[k - 1] = {cut[k][i], i};
    i = cut[k][i];
  }
  return ranges;
}

}  // namespace coll::trainer
