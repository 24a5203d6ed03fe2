#include "exec/schedule_walker.h"

#include <algorithm>
#include <climits>

namespace coll {
namespace {

using algo::Step;
using algo::StepKind;

bool isRemote(const Step& step) {
  return step.kind == StepKind::send || step.kind == StepKind::recv || step.kind == StepKind::recvReduce;
}

// Lanes sort by peer, receiving before sending, and the local lane (INT_MAX) last.
int laneKey(int peer, bool sending) { return peer < 0 ? INT_MAX : peer * 2 + (sending ? 1 : 0); }
int laneKey(const Step& step) { return laneKey(step.peer, step.kind == StepKind::send); }

// The sorted, distinct lane keys of a schedule.
std::vector<int> laneKeys(const algo::Schedule& schedule) {
  std::vector<int> keys;
  keys.reserve(schedule.steps.size());
  for (const Step& step : schedule.steps) keys.push_back(laneKey(step));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

void fillDependents(const algo::Schedule& schedule, WalkPlan* plan) {
  const size_t n = schedule.steps.size();
  plan->dependent_begin.assign(n + 1, 0);
  for (const Step& step : schedule.steps)
    for (uint32_t d : step.deps) ++plan->dependent_begin[d + 1];
  for (size_t i = 0; i < n; ++i) plan->dependent_begin[i + 1] += plan->dependent_begin[i];
  plan->dependents.resize(plan->dependent_begin[n]);
  std::vector<uint32_t> fill(plan->dependent_begin.begin(), plan->dependent_begin.end() - 1);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t d : schedule.steps[i].deps) plan->dependents[fill[d]++] = i;
}

}  // namespace

WalkPlan WalkPlan::of(const algo::Schedule& schedule) {
  WalkPlan plan;
  const size_t n = schedule.steps.size();
  plan.dep_count.resize(n);
  plan.reduce_after.assign(n, -1);
  plan.reduce_waiter.assign(n, -1);
  plan.step_lane.assign(n, 0);
  plan.lane_pos.assign(n, 0);
  fillDependents(schedule, &plan);
  const std::vector<int> keys = laneKeys(schedule);
  for (int key : keys) plan.lanes.push_back({key == INT_MAX ? -1 : key / 2, key != INT_MAX && key % 2 == 1, {}});
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = schedule.steps[i];
    plan.dep_count[i] = static_cast<uint32_t>(step.deps.size());
    if (step.kind == StepKind::recvReduce && step.reduce_after >= 0) {
      plan.reduce_after[i] = step.reduce_after;
      plan.reduce_waiter[step.reduce_after] = static_cast<int32_t>(i);
    }
    const auto lane = static_cast<uint32_t>(std::lower_bound(keys.begin(), keys.end(), laneKey(step)) - keys.begin());
    std::vector<uint32_t>& steps = plan.lanes[lane].steps;
    if (steps.empty() && step.peer >= 0) plan.connect_order.push_back(lane);
    plan.step_lane[i] = lane;
    plan.lane_pos[i] = static_cast<uint32_t>(steps.size());
    steps.push_back(i);
  }
  plan.post_order = plan.connect_order;
  if (!plan.lanes.empty() && plan.lanes.back().peer < 0) plan.post_order.push_back(static_cast<uint32_t>(plan.lanes.size() - 1));
  return plan;
}

int32_t WalkPlan::laneTo(int peer, bool sending) const {
  const int key = laneKey(peer, sending);
  auto it = std::lower_bound(lanes.begin(), lanes.end(), key,
                             [](const Lane& lane, int k) { return laneKey(lane.peer, lane.sending) < k; });
  if (it == lanes.end() || laneKey(it->peer, it->sending) != key) return -1;
  return static_cast<int32_t>(it - lanes.begin());
}

WalkFault checkWalkable(const algo::Schedule& schedule, int rank, int nranks) {
  const size_t n = schedule.steps.size();
  std::vector<uint8_t> awaited(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = schedule.steps[i];
    if (step.reduce_after >= 0) {
      if (step.kind != StepKind::recvReduce || static_cast<size_t>(step.reduce_after) >= n ||
          awaited[step.reduce_after])
        return {i, "has a bad reduce_after"};
      awaited[step.reduce_after] = 1;
    }
    for (uint32_t d : step.deps)
      if (d >= i) return {i, "depends on a later step"};
    if (isRemote(step) && (step.peer < 0 || step.peer >= nranks || step.peer == rank)) return {i, "has a bad peer"};
    if (!isRemote(step) && step.peer >= 0) return {i, "is a local step that names a peer"};
  }
  return {};
}

}  // namespace coll
