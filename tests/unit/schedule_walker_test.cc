// The schedule walker (exec/schedule_walker.h): the readiness, lane and pairing rules the
// executor, the interpreter and coll-sim share, checked with a sink that records what it is
// asked to post.
#include "exec/schedule_walker.h"

#include <gtest/gtest.h>

#include "algorithms/ring_allreduce.h"

namespace coll {
namespace {

using algo::Schedule;
using algo::Step;
using algo::StepKind;

Step step(StepKind kind, int peer, size_t bytes, std::vector<uint32_t> deps = {}) {
  Step s{kind};
  s.peer = peer;
  s.bytes = bytes;
  s.deps = std::move(deps);
  return s;
}

// Records posts; local steps finish inline, as the executor runs them.
struct RecordingSink {
  ScheduleWalker* walker = nullptr;
  const Schedule* s = nullptr;
  std::vector<uint32_t> posted;
  Status post(uint32_t i, uint32_t) {
    posted.push_back(i);
    if (s->steps[i].peer < 0) walker->finish(i, [](uint32_t) { return true; });
    return Status::ok();
  }
};

algo::BuildParams ringParams(int rank, int n) {
  algo::BuildParams p;
  p.rank = rank, p.nranks = n, p.count = 3 * 257, p.slice_bytes = 256, p.in_place = false;
  return p;
}

TEST(WalkPlan, LanesArePerPeerAndDirectionWithTheLocalLaneLast) {
  Schedule s;
  s.steps = {step(StepKind::copy, -1, 4), step(StepKind::send, 2, 4), step(StepKind::recv, 2, 4),
             step(StepKind::send, 1, 4), step(StepKind::send, 2, 8)};
  const WalkPlan plan = WalkPlan::of(s);
  ASSERT_EQ(plan.lanes.size(), 4u);
  EXPECT_EQ(plan.lanes[0].peer, 1);
  EXPECT_TRUE(plan.lanes[0].sending);
  EXPECT_EQ(plan.lanes[1].peer, 2);
  EXPECT_FALSE(plan.lanes[1].sending);  // receiving before sending
  EXPECT_EQ(plan.lanes[2].steps, (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(plan.lanes[3].peer, -1);
  EXPECT_EQ(plan.lane_pos[4], 1u);
  EXPECT_EQ(plan.laneTo(2, true), 2);
  EXPECT_EQ(plan.laneTo(1, false), -1);
  EXPECT_EQ(plan.connect_order, (std::vector<uint32_t>{2, 1, 0}));  // as the steps first meet them
}

TEST(WalkPlan, RingLanePositionsCountMessages) {
  const Schedule s = algo::buildRingAllreduce(ringParams(1, 3));
  const WalkPlan plan = WalkPlan::of(s);
  for (const WalkPlan::Lane& lane : plan.lanes)
    for (uint32_t k = 0; k < lane.steps.size(); ++k) EXPECT_EQ(plan.lane_pos[lane.steps[k]], k);
  EXPECT_GE(plan.laneTo(0, false), 0);
  EXPECT_GE(plan.laneTo(2, true), 0);
}

TEST(CheckWalkable, NamesEachBrokenRule) {
  auto fault = [](std::vector<Step> steps) {
    Schedule s;
    s.steps = std::move(steps);
    WalkFault f = checkWalkable(s, 0, 3);
    return std::string(f.what ? f.what : "");
  };
  EXPECT_EQ(fault({step(StepKind::send, 1, 4), step(StepKind::recv, 2, 4, {0})}), "");
  EXPECT_EQ(fault({step(StepKind::send, 1, 4, {0})}), "depends on a later step");
  EXPECT_EQ(fault({step(StepKind::send, 0, 4)}), "has a bad peer");
  EXPECT_EQ(fault({step(StepKind::recv, 3, 4)}), "has a bad peer");
  EXPECT_EQ(fault({step(StepKind::copy, 1, 4)}), "is a local step that names a peer");
  Step held = step(StepKind::recv, 1, 4);
  held.reduce_after = 0;
  EXPECT_EQ(fault({step(StepKind::send, 1, 4), held}), "has a bad reduce_after");
}

// Heads post in lane order once ready; a local step's finish inside post releases the next.
TEST(ScheduleWalker, PostsLaneHeadsAndReentersFromLocalSteps) {
  Schedule s;
  s.steps = {step(StepKind::copy, -1, 4), step(StepKind::send, 1, 4, {0}), step(StepKind::send, 1, 4),
             step(StepKind::recv, 1, 4), step(StepKind::copy, -1, 4, {3})};
  const WalkPlan plan = WalkPlan::of(s);
  WalkState state;
  ScheduleWalker w(plan, state);
  w.reset();
  RecordingSink sink{&w, &s, {}};
  ASSERT_TRUE(w.postReady(sink));
  // Receive lane, send lane (1 waits for the copy), local lane: copy 0 finishes, then send 1 and
  // 2 go out in lane order on the next pass.
  EXPECT_EQ(sink.posted, (std::vector<uint32_t>{3, 0, 1, 2}));
  EXPECT_TRUE(w.posted(2));
  EXPECT_FALSE(w.posted(4));
  EXPECT_EQ(w.firstPending(), 3);  // the receive: lanes in plan order
  int readied = -1;
  EXPECT_TRUE(w.finish(3, [](uint32_t) { return true; }, [&](uint32_t d) { readied = static_cast<int>(d); }));
  EXPECT_EQ(readied, 4);
  EXPECT_FALSE(w.finish(3, [](uint32_t) { return true; }));  // finished twice
  ASSERT_TRUE(w.postReady(sink));
  EXPECT_EQ(sink.posted.back(), 4u);
  w.finish(1, [](uint32_t) { return true; });
  w.finish(2, [](uint32_t) { return true; });
  EXPECT_TRUE(w.allDone());
}

// A recvReduce received before its reduce_after finished is held, and that finish releases it.
TEST(ScheduleWalker, HoldsACombineUntilReduceAfterFinished) {
  Schedule s;
  Step rr = step(StepKind::recvReduce, 1, 4);
  rr.reduce_after = 0;
  s.steps = {step(StepKind::send, 1, 4), rr, step(StepKind::send, 1, 4, {1})};
  const WalkPlan plan = WalkPlan::of(s);
  WalkState state;
  ScheduleWalker w(plan, state);
  w.reset();
  EXPECT_FALSE(w.mayCombine(1));
  std::vector<uint32_t> released;
  w.finish(0, [&](uint32_t held) {
    released.push_back(held);
    return true;
  });
  EXPECT_EQ(released, (std::vector<uint32_t>{1}));
  EXPECT_TRUE(w.done(1));          // released and finished
  EXPECT_EQ(w.waiting(2), 0u);     // its dependent counted down
  EXPECT_TRUE(w.mayCombine(1));    // reduce_after done: no hold
}

// bringForward posts the heads before a send that waits for one receive, then says whether it
// heads its lane; claim() takes it out of the lane.
TEST(ScheduleWalker, BringsASendForwardOnlyWhereItHeadsItsLane) {
  Schedule s;
  s.steps = {step(StepKind::recv, 1, 4), step(StepKind::send, 2, 4), step(StepKind::send, 2, 4, {0}),
             step(StepKind::send, 2, 4, {0})};
  const WalkPlan plan = WalkPlan::of(s);
  WalkState state;
  ScheduleWalker w(plan, state);
  w.reset();
  RecordingSink sink{&w, &s, {}};
  bool head = false;
  ASSERT_TRUE(w.bringForward(2, sink, &head));
  EXPECT_TRUE(head);  // send 1 went out first
  EXPECT_EQ(sink.posted, (std::vector<uint32_t>{1}));
  w.claim(2);
  ASSERT_TRUE(w.bringForward(3, sink, &head));
  EXPECT_TRUE(head);
  ASSERT_TRUE(w.bringForward(1, sink, &head));
  EXPECT_FALSE(head);  // posted already (waiting 0, not 1)
  w.finish(0, [](uint32_t) { return true; });
  ASSERT_TRUE(w.postReady(sink));
  EXPECT_EQ(sink.posted, (std::vector<uint32_t>{1, 0, 3}));  // 2 was claimed: never posted again
}

// The k-th send on (a -> b) meets the k-th receive on (b <- a), on every rank of a ring.
TEST(PairMessages, RingAllReducePairsEveryMessage) {
  const int n = 5;
  std::vector<Schedule> s;
  std::vector<WalkPlan> plans;
  for (int r = 0; r < n; ++r) s.push_back(algo::buildRingAllreduce(ringParams(r, n)));
  for (int r = 0; r < n; ++r) plans.push_back(WalkPlan::of(s[r]));
  std::vector<const WalkPlan*> view;
  for (const WalkPlan& p : plans) view.push_back(&p);
  size_t pairs = 0, sends = 0;
  auto bytes = [&](int r, uint32_t i) { return s[r].steps[i].bytes; };
  auto same = [](int rank, int peer) { return PeerEnd{peer, rank}; };
  auto m = pairMessages(view, same, bytes, [&](int a, uint32_t send, int b, uint32_t recv) {
    EXPECT_EQ(s[a].steps[send].kind, StepKind::send);
    EXPECT_EQ(s[b].steps[recv].peer, a);
    EXPECT_EQ(plans[a].lane_pos[send], plans[b].lane_pos[recv]);
    ++pairs;
  });
  EXPECT_FALSE(m.has_value());
  for (const Schedule& one : s)
    for (const Step& st : one.steps) sends += st.kind == StepKind::send;
  EXPECT_EQ(pairs, sends);
  // One receive fewer on rank 2: the lanes from rank 1 disagree in count.
  s[2].steps.erase(std::find_if(s[2].steps.begin(), s[2].steps.end(),
                                [](const Step& st) { return st.kind != StepKind::send && st.peer == 1; }));
  plans[2] = WalkPlan::of(s[2]);
  m = pairMessages(view, same, bytes, [](int, uint32_t, int, uint32_t) {});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->from, 1);
  EXPECT_EQ(m->to, 2);
  EXPECT_EQ(m->sent, m->received + 1);
}

}  // namespace
}  // namespace coll
