#include "exec/executor.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "base/fnv1a.h"
#include "base/log.h"
#include "base/wire_tag.h"
#include "reduce/reduce.h"
#include "reduce/stream_copy.h"

namespace coll {
namespace {

using algo::Step;
using algo::StepKind;

// How long one transport may block while another may also have work, where they cannot be
// polled together (see progress()).
constexpr auto kMixedWaitSlice = std::chrono::microseconds(200);
// The longest single poll() on several transports: a transport notices a dead peer, or an
// abort from another thread, between polls.
constexpr auto kMixedPollSlice = std::chrono::milliseconds(20);
// How often a stuck op peeks at its peers' unread messages (checkUnreadMessages()).
constexpr auto kPeekInterval = std::chrono::milliseconds(100);

// Whether send i may go out as its recvReduce (Step::forwards) combines: that step exists
// earlier, to the same peer, over the same bytes of the output, and send i waits for it.
bool forwardsItsReceive(const algo::Schedule& schedule, uint32_t i) {
  const Step& send = schedule.steps[i];
  if (send.kind != StepKind::send || send.forwards < 0 || static_cast<uint32_t>(send.forwards) >= i) return false;
  const Step& from = schedule.steps[send.forwards];
  const bool sends_the_sum = from.partial() ? send.source == algo::BufferId::scratch && send.offset == from.partial_at
                                            : send.source == algo::BufferId::output && send.offset == from.offset;
  return from.kind == StepKind::recvReduce && from.peer == send.peer && sends_the_sum &&
         from.bytes == send.bytes && from.op_index == send.op_index &&
         std::find(send.deps.begin(), send.deps.end(), static_cast<uint32_t>(send.forwards)) != send.deps.end();
}

// Whether send i passes on, unchanged, what one receive wrote (Connection::postRecvRelay): it
// waits for that receive alone, over the same bytes of the output. Returns the receive, or -1.
int32_t relaysReceive(const algo::Schedule& schedule, uint32_t i) {
  const Step& send = schedule.steps[i];
  if (send.kind != StepKind::send || send.source != algo::BufferId::output || send.copy_to_output ||
      send.deps.size() != 1)
    return -1;
  const Step& from = schedule.steps[send.deps[0]];
  bool same = from.kind == StepKind::recv && from.offset == send.offset && from.bytes == send.bytes &&
              from.op_index == send.op_index;
  return same ? static_cast<int32_t>(send.deps[0]) : -1;
}

class Executor {
 public:
  Executor(const algo::Schedule& s, const ExecPlan& plan, ExecContext& ctx, ExecState& state)
      : s_(s), plan_(plan), ctx_(ctx), st_(state), walk_(plan, state.walk) {}

  Status run() {
    COLL_RETURN_IF_ERROR(prepare());
    std::vector<transport::Completion>& completions = st_.completions;
    while (!walk_.allDone()) {
      COLL_RETURN_IF_ERROR(walk_.postReady(*this));
      if (walk_.allDone()) break;
      completions.clear();
      Status st = progress(&completions);
      for (const auto& c : completions) COLL_RETURN_IF_ERROR(onCompletion(c));
      if (!st) return withStep(st, walk_.firstPending());
      if (completions.empty()) COLL_RETURN_IF_ERROR(whileStuck());
    }
    for (uint32_t l : plan_.connect_order) st_.lane_conn[l]->opEnds(ctx_.ops[0].tag);
    return Status::ok();
  }

  // The walker's sink: starts step i, the head of its lane, whose dependencies are done.
  Status post(uint32_t i, uint32_t lane) {
    transport::Connection* conn = st_.lane_conn[lane];
    const Step& step = s_.steps[i];
    size_t elems = step.bytes / sizeOf(ctx_.type);
    uint64_t tag = ctx_.ops[step.op_index].tag;
    switch (step.kind) {
      case StepKind::send: postSend(i, conn, tag); break;
      case StepKind::recv: {
        bool relayed = false;
        COLL_RETURN_IF_ERROR(postWithRelay(i, conn, &relayed));
        if (!relayed) conn->postRecv(address(algo::BufferId::output, step, step.offset), step.bytes, tag, i);
        break;
      }
      case StepKind::recvReduce:
        COLL_RETURN_IF_ERROR(postWithForward(i, conn, &st_.fused[i]));
        if (st_.fused[i]) break;
        st_.fused[i] = step.reduce_after < 0 && conn->caps().recv_reduce;
        if (st_.fused[i])
          conn->postRecvReduce(sumAddress(step), address(step.source, step, step.offset),
                               step.bytes, tag, i, ctx_.type, ctx_.op);
        else
          conn->postRecv(ctx_.scratch->data() + step.scratch_offset, step.bytes, tag, i);
        break;
      case StepKind::copy:
        if (ctx_.ops[step.op_index].input != ctx_.ops[step.op_index].output)
          copyOut(address(algo::BufferId::output, step, step.offset), address(algo::BufferId::input, step, step.offset),
                  step.bytes);
        finish(i);
        break;
      case StepKind::divide:
        reduce::divideBy(address(algo::BufferId::output, step, step.offset), elems, ctx_.type, ctx_.nranks);
        finish(i);
        break;
      case StepKind::stash:
        std::memcpy(ctx_.scratch->data() + step.scratch_offset, address(algo::BufferId::output, step, step.offset),
                    step.bytes);
        finish(i);
        break;
      case StepKind::combine: {
        const char* operand = step.source == algo::BufferId::input ? address(algo::BufferId::input, step, step.offset)
                                                                   : ctx_.scratch->data() + step.scratch_offset;
        reduce::reduceInto(address(algo::BufferId::output, step, step.offset), operand, elems, ctx_.type, ctx_.op);
        finish(i);
        break;
      }
    }
    return Status::ok();
  }

 private:
  // The schedule's kind, and whether the op runs in place: one schedule may serve both, and an
  // op whose input is its output skips the copies between them.
  uint64_t opKind() const {
    constexpr uint64_t kInPlace = 0x9e3779b97f4a7c15ull;  // any bits that flip the hash's
    const OpBuffers& op = ctx_.ops[0];
    return plan_.kind ^ (op.input == op.output ? kInPlace : 0);
  }

  Status prepare() {
    walk_.reset();
    st_.fused.assign(s_.steps.size(), 0);
    st_.lane_conn.assign(plan_.lanes.size(), nullptr);
    st_.lane_via.assign(plan_.lanes.size(), nullptr);
    st_.active.clear();
    for (uint32_t l : plan_.connect_order) {
      transport::Transport* via = nullptr;
      COLL_RETURN_IF_ERROR(ctx_.connect(plan_.lanes[l].peer, &st_.lane_conn[l], &via));
      st_.lane_via[l] = via;
      st_.lane_conn[l]->setStreamingReceives(ctx_.stream_receives);
      st_.lane_conn[l]->opBegins(ctx_.ops[0].tag, opKind());
      if (std::find(st_.active.begin(), st_.active.end(), via) == st_.active.end()) st_.active.push_back(via);
    }
    if (ctx_.scratch->size() < s_.scratch_bytes) ctx_.scratch->resize(s_.scratch_bytes);
    return Status::ok();
  }

  // One transport: block in it until the deadline. Several (shm to some peers, sockets to
  // others): poll all, then block on all at once in one poll() where each can be waited on by
  // descriptor, else in each in turn for a short slice, so neither starves.
  Status progress(std::vector<transport::Completion>* out) {
    if (st_.active.empty()) return internalError("schedule waits for data but has no peers");
    if (st_.active.size() == 1) {
      // No polling of our own where the transport does it, or where the op does not poll.
      if (ctx_.spin.count() > 0 && !st_.active[0]->pollsBeforeSleeping()) COLL_RETURN_IF_ERROR(pollAllBriefly(out));
      if (!out->empty()) return Status::ok();
      return st_.active[0]->progress(out, std::min(ctx_.deadline, next_peek_));
    }
    COLL_RETURN_IF_ERROR(pollAllBriefly(out));
    if (!out->empty()) return Status::ok();
    if (blockOnAll()) {
      for (transport::Transport* t : st_.active) COLL_RETURN_IF_ERROR(t->progress(out, transport::Clock::now()));
      return Status::ok();
    }
    for (transport::Transport* t : st_.active) {
      if (!out->empty()) break;
      COLL_RETURN_IF_ERROR(t->progress(out, std::min(ctx_.deadline, transport::Clock::now() + kMixedWaitSlice)));
    }
    return Status::ok();
  }

  // Nothing completed: the deadline, or every kPeekInterval a look at what peers sent.
  Status whileStuck() {
    const auto now = transport::Clock::now();
    if (now >= ctx_.deadline) return timeout();
    if (now < next_peek_) return Status::ok();
    next_peek_ = now + kPeekInterval;
    Status st = checkUnreadMessages();
    return st ? st : withStep(st, walk_.firstPending());
  }

  // A peer whose oldest unread message belongs to another call disagrees with this rank
  // about this one. Without this, a disagreement where nobody receives what the others send
  // (a broadcast whose ranks name different roots) would wait for the deadline once the
  // sends outgrow the transport's buffers. A later call's message is fine where this rank
  // expects nothing more from that peer: the peer finished this call and went on.
  Status checkUnreadMessages() {
    const uint64_t mine = ctx_.ops[0].tag;
    if (ctx_.ops.size() != 1 || !carriesCall(mine)) return Status::ok();
    for (size_t l = 0; l < plan_.lanes.size(); ++l) {
      const ExecPlan::Lane& lane = plan_.lanes[l];
      // A peer's receiving lane comes just before its sending one (WalkPlan::of): one peek each.
      if (l > 0 && lane.sending && plan_.lanes[l - 1].peer == lane.peer) continue;
      uint64_t tag = 0, bytes = 0;
      if (lane.peer < 0 || !st_.lane_conn[l] || !st_.lane_conn[l]->caps().peeks ||
          !st_.lane_conn[l]->unreadMessage(&tag, &bytes) || tag == mine)
        continue;
      const int64_t receive = walk_.nextUnfinished(plan_.laneTo(lane.peer, false));
      if (receive >= 0) return messageMismatch(lane.peer, tag, bytes, mine, s_.steps[receive].bytes);
      if (callDistance(tag, mine) <= 0) return unexpectedMessage(lane.peer, tag, bytes, mine);
    }
    return Status::ok();
  }

  // Polls every active transport until something completes or ctx_.spin passed, yielding the
  // core between rounds: a reply a few µs away is not paid with a wake-up.
  Status pollAllBriefly(std::vector<transport::Completion>* out) {
    const auto end = std::min(ctx_.deadline, transport::Clock::now() + ctx_.spin);
    for (;;) {
      for (transport::Transport* t : st_.active) COLL_RETURN_IF_ERROR(t->progress(out, transport::Clock::now()));
      if (!out->empty() || transport::Clock::now() >= end) return Status::ok();
      ::sched_yield();
    }
  }

  // One poll() on every active transport's descriptors, at most kMixedPollSlice (transports
  // check their peers' liveness between waits). False: some transport cannot be polled.
  bool blockOnAll() {
    st_.fds.clear();
    for (transport::Transport* t : st_.active)
      if (!t->pollFds(&st_.fds)) return false;
    size_t armed = 0;
    bool news = false;
    for (; armed < st_.active.size() && !news; ++armed) news = !st_.active[armed]->armForPoll();
    if (!news) {
      auto wait = std::min<transport::Clock::duration>(ctx_.deadline - transport::Clock::now(), kMixedPollSlice);
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max<transport::Clock::duration>(wait, {}));
      timespec ts{static_cast<time_t>(ns.count() / 1'000'000'000), static_cast<long>(ns.count() % 1'000'000'000)};
      ::ppoll(st_.fds.data(), st_.fds.size(), &ts, nullptr);
    }
    for (size_t i = 0; i < armed; ++i) st_.active[i]->disarmAfterPoll();
    return true;
  }

  char* address(algo::BufferId id, const Step& step, size_t offset) const {
    const OpBuffers& op = ctx_.ops[step.op_index];
    if (id == algo::BufferId::output && op.result && offset - op.result_at < op.result_bytes)
      return op.result + (offset - op.result_at);
    if (id == algo::BufferId::scratch) return ctx_.scratch->data() + offset;
    const void* base = id == algo::BufferId::input ? op.input : op.output;
    return const_cast<char*>(static_cast<const char*>(base)) + offset;
  }

  // Where a recvReduce's sum goes: the output, or scratch for a partial sum (Step::partial_at).
  char* sumAddress(const Step& step) const {
    return step.partial() ? address(algo::BufferId::scratch, step, step.partial_at)
                          : address(algo::BufferId::output, step, step.offset);
  }

  // A send that also fills the output (Step::copy_to_output) lets the transport write that
  // copy from its own; where it cannot, the send goes first, so that a peer reading our memory
  // (CMA) reads while we copy.
  void postSend(uint32_t i, transport::Connection* conn, uint64_t tag) {
    const Step& step = s_.steps[i];
    const char* data = address(step.source, step, step.offset);
    if (!step.copy_to_output) return conn->postSend(data, step.bytes, tag, i);
    char* out = address(algo::BufferId::output, step, step.offset);
    if (conn->caps().sendsCopying(step.bytes)) return conn->postSendCopying(data, out, step.bytes, tag, i);
    conn->postSend(data, step.bytes, tag, i);  // reads data; the copy writes the output
    copyOut(out, data, step.bytes);
  }

  // An op's buffers far larger than the caches (ExecContext::stream_receives): write around
  // them, as the receives do, which saves reading every output line before overwriting it.
  void copyOut(void* dst, const void* src, size_t bytes) const {
    if (ctx_.stream_receives) reduce::copyStreaming(dst, src, bytes);
    else std::memcpy(dst, src, bytes);
  }

  // A recvReduce whose result goes back to the same peer (Step::forwards), with that send.
  Status postWithForward(uint32_t i, transport::Connection* conn, uint8_t* posted) {
    const Step& step = s_.steps[i];
    const int32_t f = plan_.forward_send[i];
    bool head = false;
    *posted = 0;
    if (step.reduce_after >= 0 || f < 0 || !conn->caps().forwards(step.bytes))
      return Status::ok();
    COLL_RETURN_IF_ERROR(walk_.bringForward(f, *this, &head));
    if (!head) return Status::ok();
    conn->postRecvReduceForward(sumAddress(step), address(step.source, step, step.offset), step.bytes,
                                ctx_.ops[step.op_index].tag, i, static_cast<uint64_t>(f), ctx_.type, ctx_.op);
    *posted = 1;
    walk_.claim(static_cast<uint32_t>(f));
    return Status::ok();
  }

  // A recv whose bytes a send passes on as they are (ExecPlan::relay_send), with that send.
  Status postWithRelay(uint32_t i, transport::Connection* conn, bool* posted) {
    const Step& step = s_.steps[i];
    const int32_t f = plan_.relay_send[i];
    bool head = false;
    *posted = false;
    // A relay passes bytes from one connection of a transport to another of the same one.
    if (f < 0 || !conn->caps().relays(step.bytes) ||
        st_.lane_via[plan_.step_lane[i]] != st_.lane_via[plan_.step_lane[f]])
      return Status::ok();
    COLL_RETURN_IF_ERROR(walk_.bringForward(f, *this, &head));
    if (!head) return Status::ok();
    conn->postRecvRelay(address(algo::BufferId::output, step, step.offset), step.bytes, ctx_.ops[step.op_index].tag, i,
                        *st_.lane_conn[plan_.step_lane[f]], static_cast<uint64_t>(f));
    *posted = true;
    walk_.claim(static_cast<uint32_t>(f));
    return Status::ok();
  }

  Status onCompletion(const transport::Completion& c) {
    if (c.cookie >= s_.steps.size() || walk_.done(static_cast<uint32_t>(c.cookie)))
      return internalError("completion for an unknown step");
    auto i = static_cast<uint32_t>(c.cookie);
    if (!c.status) return withStep(c.status, i);
    const Step& step = s_.steps[i];
    if (step.kind == StepKind::recvReduce && !st_.fused[i]) {
      if (!walk_.mayCombine(i)) return Status::ok();  // finish() of its reduce_after combines it
      combine(step);
    }
    finish(i);
    return Status::ok();
  }

  // A received slice (in scratch) into the output.
  void combine(const Step& step) {
    char* out = sumAddress(step);
    const char* in = address(step.source, step, step.offset);
    const char* received = ctx_.scratch->data() + step.scratch_offset;
    size_t elems = step.bytes / sizeOf(ctx_.type);
    if (step.received_first) reduce::reduce(out, received, in, elems, ctx_.type, ctx_.op);
    else if (in == out) reduce::reduceInto(out, received, elems, ctx_.type, ctx_.op);
    else reduce::reduce(out, in, received, elems, ctx_.type, ctx_.op);
  }

  // Step i is done: its dependents count down, and a recvReduce held for it combines now.
  void finish(uint32_t i) {
    walk_.finish(i, [this](uint32_t held) {
      combine(s_.steps[held]);
      return true;
    });
  }

  Status withStep(const Status& st, int64_t i) const {
    if (i < 0) return st;
    return Status(st.code(), format("%s at step %u/%u", st.message().c_str(), s_.steps[i].phase + 1, s_.num_phases),
                  st.peer());
  }

  Status timeout() const {
    int64_t i = walk_.firstPending();
    if (i < 0) return timeoutError("deadline expired");
    const Step& step = s_.steps[i];
    const char* what = step.kind == StepKind::send ? "send to" : "receive from";
    return timeoutError(format("deadline expired at step %u/%u waiting to %s peer %d (%s)", step.phase + 1,
                               s_.num_phases, what, step.peer, formatBytes(step.bytes).c_str()), step.peer);
  }

  const algo::Schedule& s_;
  const ExecPlan& plan_;
  ExecContext& ctx_;
  ExecState& st_;
  ScheduleWalker walk_;
  transport::Deadline next_peek_ = transport::Clock::now() + kPeekInterval;
};

uint64_t scheduleKind(const algo::Schedule& schedule) {
  Fnv1a h;
  h.add(schedule.algorithm);
  for (const Step& step : schedule.steps) {
    const auto peer = static_cast<uint64_t>(static_cast<uint32_t>(step.peer));
    h.add(static_cast<uint64_t>(step.kind) | static_cast<uint64_t>(step.source) << 8 |
          static_cast<uint64_t>(step.copy_to_output) << 16 | peer << 32);
    h.add(step.offset);
    h.add(step.bytes);
    h.add(step.partial_at);
  }
  return h.value();
}

}  // namespace

ExecPlan ExecPlan::of(const algo::Schedule& schedule) {
  ExecPlan plan;
  plan.kind = scheduleKind(schedule);
  static_cast<WalkPlan&>(plan) = WalkPlan::of(schedule);
  const size_t n = schedule.steps.size();
  plan.forward_send.assign(n, -1);
  plan.relay_send.assign(n, -1);
  for (uint32_t i = 0; i < n; ++i) {
    if (forwardsItsReceive(schedule, i)) plan.forward_send[schedule.steps[i].forwards] = static_cast<int32_t>(i);
    const int32_t relayed = relaysReceive(schedule, i);
    if (relayed >= 0 && plan.relay_send[relayed] < 0) plan.relay_send[relayed] = static_cast<int32_t>(i);
  }
  return plan;
}

Status execute(const algo::Schedule& schedule, const ExecPlan& plan, ExecContext& ctx, ExecState* state) {
  return Executor(schedule, plan, ctx, *state).run();
}

Status execute(const algo::Schedule& schedule, ExecContext& ctx) {
  ExecState state;
  return execute(schedule, ExecPlan::of(schedule), ctx, &state);
}

}  // namespace coll
