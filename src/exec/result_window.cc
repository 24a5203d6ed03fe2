#include "exec/result_window.h"

#include <utility>
#include <vector>

namespace coll {
namespace {

using algo::BufferId;
using algo::Step;
using algo::StepKind;

bool overlaps(size_t first, size_t last, size_t at, size_t end) { return first < end && last > at; }

bool readsInput(const Step& s) {
  switch (s.kind) {
    case StepKind::send: case StepKind::recvReduce: case StepKind::combine: return s.source == BufferId::input;
    case StepKind::copy: return true;
    default: return false;
  }
}

// Whether the step writes output[offset, +bytes) (a recvReduce that leaves a partial sum in
// scratch does not; a stash reads the output and writes scratch).
bool writesOutput(const Step& s) {
  switch (s.kind) {
    case StepKind::recv: case StepKind::copy: case StepKind::divide: case StepKind::combine: return true;
    case StepKind::recvReduce: return !s.partial();
    default: return false;
  }
}

}  // namespace

bool windowFits(const algo::Schedule& schedule, size_t at, size_t bytes) {
  const size_t end = at + bytes;
  for (const Step& step : schedule.steps) {
    if (step.kind == StepKind::send && step.source == BufferId::scratch) continue;  // not the output
    const size_t first = step.offset, last = step.offset + step.bytes;
    if (overlaps(first, last, at, end) && (first < at || last > end)) return false;
  }
  return true;
}

// Steps in index order: a step that writes a region depends on every earlier step touching it
// (algorithms/schedule.h), so a later writer of the bytes an input-reading step writes runs
// after it, and an earlier writer before it.
bool windowMayOverwriteInput(const algo::Schedule& schedule, size_t at, size_t bytes) {
  const size_t end = at + bytes;
  std::vector<std::pair<size_t, size_t>> written;  // output ranges inside the window so far
  auto writtenBefore = [&](size_t first, size_t last) {
    for (const auto& [a, b] : written)
      if (first < b && last > a) return true;
    return false;
  };
  for (const Step& step : schedule.steps) {
    const size_t first = step.offset, last = step.offset + step.bytes;
    if (!overlaps(first, last, at, end)) continue;
    if (readsInput(step) && (!writesOutput(step) || writtenBefore(first, last))) return false;
    if (writesOutput(step)) written.emplace_back(first, last);
  }
  return true;
}

}  // namespace coll
