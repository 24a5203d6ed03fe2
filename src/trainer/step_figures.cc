#include "trainer/step_figures.h"

#include <algorithm>
#include <map>

namespace coll::trainer {
namespace {

struct Interval {
  double start, end;
};

double seconds(Clock::time_point t, Clock::time_point origin) { return std::chrono::duration<double>(t - origin).count(); }

// Length of the union of intervals, clipped to [lo, hi].
double unionLength(std::vector<Interval> v, double lo, double hi) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double total = 0, cur_s = 0, cur_e = -1e300;
  for (Interval i : v) {
    i.start = std::max(i.start, lo);
    i.end = std::min(i.end, hi);
    if (i.end <= i.start) continue;
    if (i.start > cur_e) {
      if (cur_e > cur_s) total += cur_e - cur_s;
      cur_s = i.start;
      cur_e = i.end;
    } else {
      cur_e = std::max(cur_e, i.end);
    }
  }
  if (cur_e > cur_s) total += cur_e - cur_s;
  return total;
}

StepFigures figuresOf(const std::vector<TimelineEvent>& events) {
  Clock::time_point origin = events.front().start;
  for (const auto& e : events) origin = std::min(origin, e.start);
  double first = 1e300, last = 0, bw_start = 1e300, bw_end = 0;
  std::vector<Interval> comm;
  for (const auto& e : events) {
    if (e.lane == Lane::input) continue;
    double s = seconds(e.start, origin), t = seconds(e.end, origin);
    first = std::min(first, s);
    last = std::max(last, t);
    if (e.name.rfind("backward", 0) == 0) bw_start = std::min(bw_start, s), bw_end = std::max(bw_end, t);
    if (e.lane == Lane::comm) comm.push_back({s, t});
  }
  StepFigures f;
  f.step = last > first ? last - first : 0;
  f.backward = bw_end > bw_start ? bw_end - bw_start : 0;
  f.comm = unionLength(comm, -1e300, 1e300);
  f.hidden = unionLength(comm, bw_start, bw_end);
  return f;
}

}  // namespace

std::vector<StepFigures> analyseSteps(const Timeline& timeline) {
  std::map<int64_t, std::vector<TimelineEvent>> by_step;
  for (const TimelineEvent& e : timeline.events()) by_step[e.step].push_back(e);
  std::vector<StepFigures> out;
  for (auto& [step, events] : by_step) out.push_back(figuresOf(events));
  return out;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace coll::trainer
