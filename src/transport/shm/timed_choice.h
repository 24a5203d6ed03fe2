// Two ways of moving the same bytes, chosen by timing them as they run: what is faster depends
// on where the kernel and the hypervisor put the processes, and that changes while they run
// (slot_copy_policy.h, and kWayRules in connection.cc, say which two ways and what was measured).
//
// The chooser compares the ways by the median time per byte of their last kSamples timed uses:
// one use held up between two ops (the peer posts no receive there) takes many times as long as
// its neighbours, and would swing an average. It first measures each way `first_samples` times,
// then uses the faster one. Every `explore_every` timed uses it runs the other way for
// `explore_run` uses, so that a move of the processes is noticed. After every switch it leaves
// `settle` uses untimed, where the old way's effects (slots still full of it) would be counted
// against the new one.
//
// Not thread-safe: one connection's progress calls it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coll::transport::shm {

class TimedChoice {
 public:
  static constexpr int kSamples = 5;

  struct Rules {
    double margin = 1.0;       // the second way wins where its median is below margin x the first's
    uint64_t explore_every = 256;
    int explore_run = 8;       // uses of the other way per exploration, settling included
    int settle = 0;
    int first_samples = 1;     // of each way before the first comparison, at most kSamples
  };

  explicit TimedChoice(Rules rules) : rules_(rules), settle_(rules.settle) {}

  // The way of the next use: false the first, true the second. timeable: its time is its own
  // (a forward's waits on its receive; such a use keeps the way in use and is not timed).
  // *timed: record() its time once done.
  bool pick(bool timeable, bool* timed);
  void record(bool second, size_t bytes, std::chrono::nanoseconds took);

  bool second() const { return second_; }  // the way in use
  double medianNsPerByte(bool second) const { return samples_[second ? 1 : 0].median(); }  // 0: none yet

 private:
  struct Samples {
    std::array<double, kSamples> ns_per_byte{};
    int count = 0;    // held, at most kSamples
    size_t next = 0;  // where the next one goes, the oldest
    int taken = 0;    // ever, to know when the first measurements are complete
    void add(double sample);
    double median() const;
  };

  bool fasterIsSecond() const;
  bool next();  // the way of the next timeable use

  Rules rules_;
  Samples samples_[2];
  bool second_ = false;
  int settle_;              // uses left before the next one is timed
  int exploring_ = 0;       // uses left of a run of the other way
  uint64_t since_explored_ = 0;
};

// A TimedChoice per kind of use. Uses of different kinds take different times per byte for
// reasons of their own (an out-of-place broadcast's root also copies its input to its output,
// an in-place one does not), so samples of one kind would decide the way of another: a job
// that ran its out-of-place broadcasts, then its in-place ones, compared the in-place ops'
// times through the slots with the out-of-place ops' by CMA, found the slots faster and kept
// them: 178 ms an op against 145 by CMA (netcluster 2 x 2, 256 MiB; docs/PERFORMANCE.md).
// Keeps the kinds used last, at most kKinds; a kind dropped and seen again starts over.
class TimedChoices {
 public:
  static constexpr size_t kKinds = 8;

  explicit TimedChoices(TimedChoice::Rules rules) : rules_(rules) { kinds_.reserve(kKinds); }

  // The choice of this kind, made where there is none. The reference holds until the next
  // call with another kind (which may drop this one).
  TimedChoice& of(uint64_t kind);

 private:
  struct Kind {
    uint64_t kind;
    uint64_t last_use;
    TimedChoice choice;
  };
  TimedChoice::Rules rules_;
  std::vector<Kind> kinds_;
  uint64_t uses_ = 0;
};

}  // namespace coll::transport::shm
