// Timeline: per-step events of one rank (forward, backward per layer, each bucket's
// communication, optimizer), written as a Chrome trace (chrome://tracing, Perfetto) and
// rendered to a PNG by tools/trainer_timeline.py.
//
// Thread-safe: the training thread records compute events, the bucketer's completion watcher
// records communication events. Times are steady_clock, shown relative to the timeline's start.
// Memory is bounded: past kMaxEvents the older half is dropped (a long run keeps its recent
// steps), so leaving the timeline on costs a few hundred bytes per event at most.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace coll::trainer {

using Clock = std::chrono::steady_clock;

enum class Lane { compute = 0, comm = 1, input = 2 };

struct TimelineEvent {
  std::string name;
  Lane lane = Lane::compute;
  int64_t step = 0;
  Clock::time_point start, end;
  size_t bytes = 0;  // communicated bytes, for comm events
};

class Timeline {
 public:
  static constexpr size_t kMaxEvents = 1 << 18;
  explicit Timeline(bool enabled = true) : enabled_(enabled), origin_(Clock::now()) {}
  bool enabled() const { return enabled_; }
  void record(TimelineEvent event);
  std::vector<TimelineEvent> events() const;
  void clear();
  // Trace times count from now. Ranks that call it as they leave one barrier share a time base
  // (to within the barrier's skew), so their traces line up in one file.
  void restartClock() { origin_ = Clock::now(); }
  // {"traceEvents": [...]} with pid = rank, tid = lane; bytes and step in args. Throws
  // std::runtime_error naming the path when it cannot be written.
  void writeChromeTrace(const std::string& path, int rank) const;
  // The same events as a comma-separated list of trace objects (no brackets), so the lists
  // of several ranks can go into one file.
  std::string chromeTraceEvents(int rank) const;

 private:
  bool enabled_;
  Clock::time_point origin_;
  mutable std::mutex mu_;
  std::vector<TimelineEvent> events_;
};

// One Chrome trace file holding several ranks' chromeTraceEvents() lists (each list is never
// empty: it always names its lanes).
void writeChromeTraceFile(const std::string& path, const std::vector<std::string>& event_lists);

// Records [start, now) as an event when it goes out of scope.
class ScopedEvent {
 public:
  ScopedEvent(Timeline& t, std::string name, int64_t step, Lane lane = Lane::compute)
      : t_(t), name_(std::move(name)), step_(step), lane_(lane), start_(Clock::now()) {}
  ~ScopedEvent() {
    if (t_.enabled()) t_.record({std::move(name_), lane_, step_, start_, Clock::now(), 0});
  }

 private:
  Timeline& t_;
  std::string name_;
  int64_t step_;
  Lane lane_;
  Clock::time_point start_;
};

}  // namespace coll::trainer
