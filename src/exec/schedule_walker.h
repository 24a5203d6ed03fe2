// The rules of walking a Schedule (schedule.h), written once for everyone who walks one: the
// executor (over Connections), the test interpreter (tests/unit/schedule_interpreter.cc) and
// the simulator (tools/sim/sim_engine.cc). Three rules:
//  - readiness: a step may start once its deps finished; a recvReduce with reduce_after may be
//    received before that step finished, but combines only after it;
//  - lane order: the steps to one peer in one direction (a lane) start in index order, and a
//    lane's head starts only when it is ready; local steps form one lane, posted last;
//  - pairing: the k-th send on lane (a -> b) meets the k-th receive on lane (b <- a).
// The walker never reads a Step: what a step does (transport calls, copies, reductions, timing)
// stays with the caller, the *sink*. The hot path is templates on the sink, so calls inline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "algorithms/schedule.h"
#include "base/status.h"

namespace coll {

// What walking needs of a schedule, derived once (the schedule cache keeps it beside the
// schedule, coll-sim once per simulated rank for all its runs).
struct WalkPlan {
  struct Lane {
    int peer = -1;  // -1: the local steps (copies, divisions), always the last lane
    bool sending = false;
    std::vector<uint32_t> steps;  // in schedule order
  };
  std::vector<uint32_t> dep_count;        // per step
  std::vector<uint32_t> dependent_begin;  // per step, +1: its dependents are dependents[begin, next)
  std::vector<uint32_t> dependents;
  std::vector<int32_t> reduce_after;      // per step: Step::reduce_after (-1 but on some recvReduce)
  std::vector<int32_t> reduce_waiter;     // per step: the recvReduce whose combining waits for it, or -1
  std::vector<uint32_t> step_lane;        // per step: its lane
  std::vector<uint32_t> lane_pos;         // per step: its index in its lane (message k on that lane)
  std::vector<Lane> lanes;                // by peer, receiving before sending; the local lane last
  std::vector<uint32_t> connect_order;    // lanes with a peer, in the order the steps first meet them
  // The order lanes are posted in: connect_order, then the local lane. Following the schedule,
  // not peer numbers, keeps the ranks' order alike up to rotation (rank r's first message goes
  // to r + 1, not to rank 0 from everyone), which coll-sim's periodic simulation relies on.
  std::vector<uint32_t> post_order;

  static WalkPlan of(const algo::Schedule& schedule);
  size_t size() const { return dep_count.size(); }
  // The lane to or from peer, or -1 where the schedule has none.
  int32_t laneTo(int peer, bool sending) const;
};

// The structural rules of schedule.h that walking relies on: a dep points back; a remote step
// names a peer in [0, nranks) other than rank; a local step names none; reduce_after is on a
// recvReduce, names an existing step, and no step is named twice. Checked when a schedule is
// planned (tests, coll-sim), never on the hot path. what == nullptr: walkable.
struct WalkFault {
  int64_t step = -1;
  const char* what = nullptr;  // "depends on a later step", "has a bad peer", ...
};
WalkFault checkWalkable(const algo::Schedule& schedule, int rank, int nranks);

// One walk's bookkeeping, kept between walks so its vectors keep their memory.
struct WalkState {
  std::vector<uint32_t> waiting;    // deps not finished
  std::vector<uint8_t> done;
  std::vector<uint8_t> held;        // recvReduce received, its combining waits for reduce_after
  std::vector<uint32_t> lane_next;  // per lane: its first step not yet posted
  size_t finished = 0;
};

class ScheduleWalker {
 public:
  ScheduleWalker(const WalkPlan& plan, WalkState& state) : plan_(plan), st_(state) {}

  void reset() {
    st_.waiting.assign(plan_.dep_count.begin(), plan_.dep_count.end());
    st_.done.assign(plan_.size(), 0);
    st_.held.assign(plan_.size(), 0);
    st_.lane_next.assign(plan_.lanes.size(), 0);
    st_.finished = 0;
  }

  bool allDone() const { return st_.finished == plan_.size(); }
  size_t finished() const { return st_.finished; }
  bool done(uint32_t i) const { return st_.done[i] != 0; }
  uint32_t waiting(uint32_t i) const { return st_.waiting[i]; }
  bool posted(uint32_t i) const { return plan_.lane_pos[i] < st_.lane_next[plan_.step_lane[i]]; }
  uint32_t laneNext(uint32_t lane) const { return st_.lane_next[lane]; }

  // Posts lane's heads while they are ready: sink.post(step, lane) -> Status. post may finish
  // steps (local ones run inline), bring sends of other lanes forward, or post other lanes:
  // lane_next is read again after every call.
  template <class Sink>
  Status postLane(uint32_t lane, Sink& sink, bool* progressed = nullptr) {
    const std::vector<uint32_t>& steps = plan_.lanes[lane].steps;
    uint32_t& next = st_.lane_next[lane];
    while (next < steps.size() && st_.waiting[steps[next]] == 0) {
      const uint32_t i = steps[next];
      COLL_RETURN_IF_ERROR(sink.post(i, lane));
      ++next;
      if (progressed) *progressed = true;
    }
    return Status::ok();
  }

  // Every lane in post_order (transfers before local steps: a root's copy of its own buffer
  // overlaps the peers' reads instead of delaying them), until nothing changes.
  template <class Sink>
  Status postReady(Sink& sink) {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (uint32_t l : plan_.post_order) COLL_RETURN_IF_ERROR(postLane(l, sink, &progressed));
    }
    return Status::ok();
  }

  // Send f waits for one receive alone, and may go out together with it (a forward, a relay)
  // where it heads its lane once the steps before it are posted. Posts those; *head: f heads
  // its lane now. The caller claim()s f if the transport took the pair.
  template <class Sink>
  Status bringForward(int32_t f, Sink& sink, bool* head) {
    *head = false;
    if (f < 0 || st_.waiting[f] != 1) return Status::ok();
    const uint32_t lane = plan_.step_lane[f];
    COLL_RETURN_IF_ERROR(postLane(lane, sink));
    *head = st_.lane_next[lane] == plan_.lane_pos[f];
    return Status::ok();
  }
  // f went out with its receive: it never posts again, although its waiting drops to 0.
  void claim(uint32_t f) { ++st_.lane_next[plan_.step_lane[f]]; }

  // A recvReduce's message is in: true where it may combine now; false: held, and finish() of
  // its reduce_after releases it.
  bool mayCombine(uint32_t i) {
    const int32_t after = plan_.reduce_after[i];
    if (after < 0 || st_.done[after]) return true;
    st_.held[i] = 1;
    return false;
  }

  // Marks i finished (false where it was already) and counts down its dependents (ready(d) for
  // each one that reaches 0). A recvReduce held for i is handed to release(w): true where the
  // caller combined it and it is finished now, false where the caller finishes it later.
  template <class Release, class Ready>
  bool finish(uint32_t i, Release&& release, Ready&& ready) {
    if (st_.done[i]) return false;
    st_.done[i] = 1;
    ++st_.finished;
    for (uint32_t k = plan_.dependent_begin[i]; k < plan_.dependent_begin[i + 1]; ++k)
      if (--st_.waiting[plan_.dependents[k]] == 0) ready(plan_.dependents[k]);
    const int32_t waiter = plan_.reduce_waiter[i];
    if (waiter >= 0 && st_.held[waiter]) {
      st_.held[waiter] = 0;
      if (release(static_cast<uint32_t>(waiter))) finish(static_cast<uint32_t>(waiter), release, ready);
    }
    return true;
  }
  template <class Release>
  bool finish(uint32_t i, Release&& release) {
    return finish(i, release, [](uint32_t) {});
  }

  // The earliest step posted and not finished, in lane order: what a stuck walk waits for.
  int64_t firstPending() const {
    for (size_t l = 0; l < plan_.lanes.size(); ++l)
      for (uint32_t k = 0; k < st_.lane_next[l]; ++k)
        if (!st_.done[plan_.lanes[l].steps[k]]) return plan_.lanes[l].steps[k];
    return -1;
  }
  // The first step of a lane not finished, or -1 (also for lane -1).
  int64_t nextUnfinished(int32_t lane) const {
    if (lane < 0) return -1;
    for (uint32_t i : plan_.lanes[lane].steps)
      if (!st_.done[i]) return i;
    return -1;
  }

 private:
  const WalkPlan& plan_;
  WalkState& st_;
};

// Pairing between ranks' plans. resolve(r, p) -> PeerEnd: the plan that stands for rank r's
// peer p, and how that plan names r (identity when every rank has its plan; coll-sim's
// periodic simulation maps p to its image).
struct PeerEnd {
  int plan;
  int name;
};
// The first lane pair that disagrees: message counts, or the bytes of message k.
struct LaneMismatch {
  int from = -1, to = -1;            // plan of the sender; the peer it names
  size_t sent = 0, received = 0;     // messages on the two lanes
  size_t k = 0;                      // the first message that differs (== min(sent, received) on a count)
  size_t sent_bytes = 0, expected_bytes = 0;
};

// For every sending lane (a -> b) of every plan, calls pair(a, send, q, recv) for the k-th
// messages of it and of the receiving lane (q <- a's name) for k below both lengths, and returns
// the first disagreement in count or bytes (bytes(plan, step) -> size_t); a receiving lane with
// no sending lane is one too.
template <class Resolve, class Bytes, class Pair>
std::optional<LaneMismatch> pairMessages(const std::vector<const WalkPlan*>& plans, Resolve&& resolve, Bytes&& bytes,
                                         Pair&& pair) {
  std::optional<LaneMismatch> first;
  auto note = [&](LaneMismatch m) {
    if (!first) first = m;
  };
  for (int a = 0; a < static_cast<int>(plans.size()); ++a) {
    for (const WalkPlan::Lane& lane : plans[a]->lanes) {
      if (lane.peer < 0) continue;
      const PeerEnd end = resolve(a, lane.peer);
      const int32_t other = plans[end.plan]->laneTo(end.name, !lane.sending);
      const size_t theirs = other < 0 ? 0 : plans[end.plan]->lanes[other].steps.size();
      if (!lane.sending) {  // only a receiving lane with no sender left is news here
        if (other < 0) note({lane.peer, a, 0, lane.steps.size(), 0, 0, bytes(a, lane.steps[0])});
        continue;
      }
      const size_t both = std::min(lane.steps.size(), theirs);
      for (size_t k = 0; k < both; ++k) {
        const uint32_t s = lane.steps[k], q = plans[end.plan]->lanes[other].steps[k];
        const size_t sb = bytes(a, s), qb = bytes(end.plan, q);
        if (sb != qb) note({a, lane.peer, lane.steps.size(), theirs, k, sb, qb});
        pair(a, s, end.plan, q);
      }
      if (lane.steps.size() != theirs) note({a, lane.peer, lane.steps.size(), theirs, both, 0, 0});
    }
  }
  return first;
}

}  // namespace coll
