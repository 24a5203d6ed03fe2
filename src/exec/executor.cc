#include "exec/executor.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

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
  return from.kind == StepKind::recvReduce && from.peer == send.peer && from.offset == send.offset &&
         from.bytes == send.bytes && from.op_index == send.op_index && send.source == algo::BufferId::output &&
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
      : s_(s), plan_(plan), ctx_(ctx), st_(state) {}

  Status run() {
    COLL_RETURN_IF_ERROR(prepare());
    std::vector<transport::Completion>& completions = st_.completions;
    while (finished_ < s_.steps.size()) {
      COLL_RETURN_IF_ERROR(postReady());
      if (finished_ == s_.steps.size()) break;
      completions.clear();
      Status st = progress(&completions);
      for (const auto& c : completions) COLL_RETURN_IF_ERROR(onCompletion(c));
      if (!st) return withStep(st, firstPending());
      if (completions.empty()) COLL_RETURN_IF_ERROR(whileStuck());
    }
    for (uint32_t l : plan_.connect_order) st_.lane_conn[l]->opEnds(ctx_.ops[0].tag);
    return Status::ok();
  }

 private:
  Status prepare() {
    const size_t n = s_.steps.size();
    st_.waiting.assign(plan_.dep_count.begin(), plan_.dep_count.end());
    st_.done.assign(n, 0);
    st_.fused.assign(n, 0);
    st_.arrived.assign(n, 0);
    st_.lane_next.assign(plan_.lanes.size(), 0);
    st_.lane_conn.assign(plan_.lanes.size(), nullptr);
    st_.lane_via.assign(plan_.lanes.size(), nullptr);
    st_.active.clear();
    for (uint32_t l : plan_.connect_order) {
      transport::Transport* via = nullptr;
      COLL_RETURN_IF_ERROR(ctx_.connect(plan_.lanes[l].peer, &st_.lane_conn[l], &via));
      st_.lane_via[l] = via;
      st_.lane_conn[l]->setStreamingReceives(ctx_.stream_receives);
      st_.lane_conn[l]->setBusySender(plan_.copies_both_ways);
      st_.lane_conn[l]->opBegins(ctx_.ops[0].tag);
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
    return st ? st : withStep(st, firstPending());
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
      // A peer's receiving lane comes just before its sending one (ExecPlan::of): one peek each.
      if (l > 0 && lane.sending && plan_.lanes[l - 1].peer == lane.peer) continue;
      uint64_t tag = 0, bytes = 0;
      if (lane.peer < 0 || !st_.lane_conn[l] || !st_.lane_conn[l]->caps().peeks ||
          !st_.lane_conn[l]->unreadMessage(&tag, &bytes) || tag == mine)
        continue;
      const int64_t receive = nextReceiveFrom(lane.peer);
      if (receive >= 0) return messageMismatch(lane.peer, tag, bytes, mine, s_.steps[receive].bytes);
      if (callDistance(tag, mine) <= 0) return unexpectedMessage(lane.peer, tag, bytes, mine);
    }
    return Status::ok();
  }

  // The first receive from peer this rank has not finished, or -1.
  int64_t nextReceiveFrom(int peer) const {
    for (const ExecPlan::Lane& lane : plan_.lanes) {
      if (lane.peer != peer || lane.sending) continue;
      for (uint32_t i : lane.steps)
        if (!st_.done[i]) return i;
    }
    return -1;
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

  // Posts lane heads whose dependencies are done until nothing changes. Transfers go first
  // and local steps (copies, divisions: they run inline and may take milliseconds) last (the
  // plan's last lane), so a root's copy of its own buffer overlaps the peers' reads instead of
  // delaying them.
  Status postReady() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (size_t l = 0; l < plan_.lanes.size(); ++l) COLL_RETURN_IF_ERROR(postHeads(l, &progressed));
    }
    return Status::ok();
  }

  Status postHeads(size_t lane, bool* progressed) {
    const std::vector<uint32_t>& steps = plan_.lanes[lane].steps;
    size_t& next = st_.lane_next[lane];
    while (next < steps.size() && st_.waiting[steps[next]] == 0) {
      COLL_RETURN_IF_ERROR(post(steps[next], st_.lane_conn[lane]));
      ++next;
      *progressed = true;
    }
    return Status::ok();
  }

  char* address(algo::BufferId id, const Step& step, size_t offset) const {
    const OpBuffers& op = ctx_.ops[step.op_index];
    const void* base = id == algo::BufferId::input ? op.input : op.output;
    return const_cast<char*>(static_cast<const char*>(base)) + offset;
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

  Status post(uint32_t i, transport::Connection* conn) {
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
          conn->postRecvReduce(address(algo::BufferId::output, step, step.offset), address(step.source, step, step.offset),
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

  // An op's buffers far larger than the caches (ExecContext::stream_receives): write around
  // them, as the receives do, which saves reading every output line before overwriting it.
  void copyOut(void* dst, const void* src, size_t bytes) const {
    if (ctx_.stream_receives) reduce::copyStreaming(dst, src, bytes);
    else std::memcpy(dst, src, bytes);
  }

  // Send f, which waits for one receive alone, may be posted together with that receive where
  // it is next in its lane once the sends before it are posted. Posts those; *lane_next: where
  // f is then next, its lane's position (the caller advances it if it posted f), else null.
  Status bringForward(int32_t f, size_t** lane_next) {
    *lane_next = nullptr;
    if (f < 0 || st_.waiting[f] != 1) return Status::ok();
    const uint32_t lane = plan_.step_lane[f];
    bool progressed = false;
    COLL_RETURN_IF_ERROR(postHeads(lane, &progressed));
    size_t& next = st_.lane_next[lane];
    if (next < plan_.lanes[lane].steps.size() && plan_.lanes[lane].steps[next] == static_cast<uint32_t>(f))
      *lane_next = &next;
    return Status::ok();
  }

  // A recvReduce whose result goes back to the same peer (Step::forwards), with that send.
  Status postWithForward(uint32_t i, transport::Connection* conn, uint8_t* posted) {
    const Step& step = s_.steps[i];
    const int32_t f = plan_.forward_send[i];
    size_t* next = nullptr;
    *posted = 0;
    if (step.reduce_after >= 0 || f < 0 || !conn->caps().forwards(step.bytes))
      return Status::ok();
    COLL_RETURN_IF_ERROR(bringForward(f, &next));
    if (next == nullptr) return Status::ok();
    conn->postRecvReduceForward(address(algo::BufferId::output, step, step.offset),
                                address(step.source, step, step.offset), step.bytes, ctx_.ops[step.op_index].tag, i,
                                static_cast<uint64_t>(f), ctx_.type, ctx_.op);
    *posted = 1;
    ++*next;
    return Status::ok();
  }

  // A recv whose bytes a send passes on as they are (ExecPlan::relay_send), with that send.
  Status postWithRelay(uint32_t i, transport::Connection* conn, bool* posted) {
    const Step& step = s_.steps[i];
    const int32_t f = plan_.relay_send[i];
    size_t* next = nullptr;
    *posted = false;
    // A relay passes bytes from one connection of a transport to another of the same one.
    if (f < 0 || !conn->caps().relays(step.bytes) ||
        st_.lane_via[plan_.step_lane[i]] != st_.lane_via[plan_.step_lane[f]])
      return Status::ok();
    COLL_RETURN_IF_ERROR(bringForward(f, &next));
    if (next == nullptr) return Status::ok();
    conn->postRecvRelay(address(algo::BufferId::output, step, step.offset), step.bytes, ctx_.ops[step.op_index].tag, i,
                        *st_.lane_conn[plan_.step_lane[f]], static_cast<uint64_t>(f));
    *posted = true;
    ++*next;
    return Status::ok();
  }

  Status onCompletion(const transport::Completion& c) {
    if (c.cookie >= s_.steps.size() || st_.done[c.cookie]) return internalError("completion for an unknown step");
    auto i = static_cast<uint32_t>(c.cookie);
    if (!c.status) return withStep(c.status, i);
    const Step& step = s_.steps[i];
    if (step.kind == StepKind::recvReduce && !st_.fused[i]) {
      if (step.reduce_after >= 0 && !st_.done[step.reduce_after]) {
        st_.arrived[i] = 1;  // finish() of reduce_after combines it
        return Status::ok();
      }
      combine(step);
    }
    finish(i);
    return Status::ok();
  }

  // A received slice (in scratch) into the output.
  void combine(const Step& step) {
    char* out = address(algo::BufferId::output, step, step.offset);
    const char* in = address(step.source, step, step.offset);
    const char* received = ctx_.scratch->data() + step.scratch_offset;
    size_t elems = step.bytes / sizeOf(ctx_.type);
    if (step.received_first) reduce::reduce(out, received, in, elems, ctx_.type, ctx_.op);
    else if (in == out) reduce::reduceInto(out, received, elems, ctx_.type, ctx_.op);
    else reduce::reduce(out, in, received, elems, ctx_.type, ctx_.op);
  }

  void finish(uint32_t i) {
    st_.done[i] = 1;
    ++finished_;
    for (uint32_t k = plan_.dependent_begin[i]; k < plan_.dependent_begin[i + 1]; ++k) --st_.waiting[plan_.dependents[k]];
    const int32_t waiter = plan_.reduce_waiter[i];
    if (waiter >= 0 && st_.arrived[waiter]) {
      st_.arrived[waiter] = 0;
      combine(s_.steps[waiter]);
      finish(static_cast<uint32_t>(waiter));
    }
  }

  // The earliest step that was posted but has not finished: what we are stuck on.
  int64_t firstPending() const {
    for (size_t l = 0; l < plan_.lanes.size(); ++l)
      for (size_t k = 0; k < st_.lane_next[l]; ++k)
        if (!st_.done[plan_.lanes[l].steps[k]]) return plan_.lanes[l].steps[k];
    return -1;
  }

  Status withStep(const Status& st, int64_t i) const {
    if (i < 0) return st;
    return Status(st.code(), format("%s at step %u/%u", st.message().c_str(), s_.steps[i].phase + 1, s_.num_phases),
                  st.peer());
  }

  Status timeout() const {
    int64_t i = firstPending();
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
  size_t finished_ = 0;
  transport::Deadline next_peek_ = transport::Clock::now() + kPeekInterval;
};

}  // namespace

ExecPlan ExecPlan::of(const algo::Schedule& schedule) {
  ExecPlan plan;
  const size_t n = schedule.steps.size();
  plan.dep_count.resize(n);
  plan.reduce_waiter.assign(n, -1);
  plan.forward_send.assign(n, -1);
  plan.relay_send.assign(n, -1);
  plan.step_lane.assign(n, 0);
  plan.dependent_begin.assign(n + 1, 0);
  for (const Step& step : schedule.steps)
    for (uint32_t d : step.deps) ++plan.dependent_begin[d + 1];
  for (size_t i = 0; i < n; ++i) plan.dependent_begin[i + 1] += plan.dependent_begin[i];
  plan.dependents.resize(plan.dependent_begin[n]);
  std::vector<uint32_t> fill(plan.dependent_begin.begin(), plan.dependent_begin.end() - 1);
  // Keyed peer * 2 + direction, local steps (-1) last: the order the lanes are posted in.
  std::map<int, size_t> lane_of;
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = schedule.steps[i];
    plan.dep_count[i] = static_cast<uint32_t>(step.deps.size());
    if (step.kind == StepKind::recvReduce && step.reduce_after >= 0) plan.reduce_waiter[step.reduce_after] = static_cast<int32_t>(i);
    for (uint32_t d : step.deps) plan.dependents[fill[d]++] = i;
    bool sending = step.kind == StepKind::send;
    lane_of.emplace(step.peer < 0 ? INT_MAX : step.peer * 2 + (sending ? 1 : 0), 0);
  }
  for (auto& [key, index] : lane_of) {
    index = plan.lanes.size();
    plan.lanes.push_back({key == INT_MAX ? -1 : key / 2, key != INT_MAX && key % 2 == 1, {}});
  }
  for (uint32_t i = 0; i < n; ++i) {
    const Step& step = schedule.steps[i];
    int key = step.peer < 0 ? INT_MAX : step.peer * 2 + (step.kind == StepKind::send ? 1 : 0);
    size_t lane = lane_of[key];
    if (plan.lanes[lane].steps.empty() && step.peer >= 0) plan.connect_order.push_back(static_cast<uint32_t>(lane));
    plan.lanes[lane].steps.push_back(i);
    plan.step_lane[i] = static_cast<uint32_t>(lane);
    if (forwardsItsReceive(schedule, i)) plan.forward_send[step.forwards] = static_cast<int32_t>(i);
    const int32_t relayed = relaysReceive(schedule, i);
    if (relayed >= 0 && plan.relay_send[relayed] < 0) plan.relay_send[relayed] = static_cast<int32_t>(i);
  }
  plan.copies_both_ways = algo::copiesBothWays(schedule);
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
