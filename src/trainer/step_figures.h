// What a trainer's timeline says about each step: its wall time, the backward span, the time
// gradients were on the wire, and how much of that ran under backward (the overlap figure).
// coll-train and the overlap benchmark report medians of these.
#pragma once

#include <vector>

#include "trainer/timeline.h"

namespace coll::trainer {

struct StepFigures {
  double step = 0;      // seconds from the step's first event to its last (input lane excluded)
  double backward = 0;  // from the first backward event to the last
  double comm = 0;      // union of the communication lane's events
  double hidden = 0;    // the part of `comm` inside the backward span
  double hiddenFraction() const { return comm > 0 ? hidden / comm : 0; }
};

// One entry per step recorded in the timeline, in step order.
std::vector<StepFigures> analyseSteps(const Timeline& timeline);

double median(std::vector<double> values);  // 0 for none

}  // namespace coll::trainer
