// A Chrome trace of one communicator's ops (COLL_TRACE_FILE), for finding where a job's time
// goes between coll and its caller: when each op was issued, when the thread that runs ops
// (the progress thread or a waiter) started it, when it finished, its size and algorithm.
// A gap between two ops on the "run" row is time the link sat idle because nothing was issued;
// a long "queued" bar is an op waiting behind others. Recorded by the engine_mu_ holder, written
// when the communicator is destroyed; tools/op_trace.py merges the ranks' files into one view and
// sums the gaps. Collectives and groups are traced (board ops too); host send/recv, which the
// point-to-point engine runs on its own thread, is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace coll {

class OpTrace {
 public:
  using Clock = std::chrono::steady_clock;

  struct Event {
    const char* name = "";  // "allreduce": toString(OpKind), static
    std::string algorithm;  // the schedule's, empty where none ran
    uint64_t sequence = 0;
    uint64_t bytes = 0;
    Clock::time_point issued, started, finished;
    bool ok = true;
  };

  // `path` empty: disabled, record() does nothing. Otherwise the file's name is `path` with
  // "%r" replaced by the rank, "%p" by the process id and "%c" by n, which counts this
  // process's traced communicators (torch: one per group); without any of them,
  // ".<pid>.c<n>.r<rank>.json" is appended, so every communicator of every process writes its
  // own file. `name` (the communicator's) goes into the file beside them.
  OpTrace(std::string path, std::string name, int rank, int size);

  bool enabled() const { return !path_.empty(); }
  void record(Event event);
  // Writes the file; an error names it. Nothing to do when disabled.
  Status write() const;
  const std::string& path() const { return path_; }

 private:
  // Microseconds since the Unix epoch: every rank of one machine on one time axis.
  double wallMicros(Clock::time_point t) const;

  int number_;  // n above
  std::string path_, name_;
  int rank_, size_;
  Clock::time_point steady_zero_;
  std::chrono::system_clock::time_point wall_zero_;
  std::vector<Event> events_;
  uint64_t dropped_ = 0;  // past kMaxEvents
};

}  // namespace coll
