#include "core/executor.h"

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/log.h"
#include "reduce/reduce.h"

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

class Executor {
 public:
  Executor(const algo::Schedule& s, ExecContext& ctx)
      : s_(s), ctx_(ctx), waiting_(s.steps.size()), dependents_(s.steps.size()), done_(s.steps.size(), false),
        fused_(s.steps.size(), false) {}

  Status run() {
    COLL_RETURN_IF_ERROR(prepare());
    std::vector<transport::Completion> completions;
    while (finished_ < s_.steps.size()) {
      COLL_RETURN_IF_ERROR(postReady());
      if (finished_ == s_.steps.size()) break;
      completions.clear();
      Status st = progress(&completions);
      for (const auto& c : completions) COLL_RETURN_IF_ERROR(onCompletion(c));
      if (!st) return withStep(st, firstPending());
      if (completions.empty() && transport::Clock::now() >= ctx_.deadline) return timeout();
    }
    return Status::ok();
  }

 private:
  struct Queue {
    std::vector<uint32_t> steps;  // in schedule order
    size_t next = 0;              // first step not yet posted
    transport::Connection* conn = nullptr;
  };

  Status prepare() {
    for (uint32_t i = 0; i < s_.steps.size(); ++i) {
      const Step& step = s_.steps[i];
      waiting_[i] = static_cast<uint32_t>(step.deps.size());
      for (uint32_t d : step.deps) dependents_[d].push_back(i);
      Queue& q = queueFor(step);
      if (step.peer >= 0 && !q.conn) {
        transport::Transport* via = nullptr;
        COLL_RETURN_IF_ERROR(ctx_.connect(step.peer, &q.conn, &via));
        if (std::find(active_.begin(), active_.end(), via) == active_.end()) active_.push_back(via);
      }
      q.steps.push_back(i);
    }
    if (ctx_.scratch->size() < s_.scratch_bytes) ctx_.scratch->resize(s_.scratch_bytes);
    return Status::ok();
  }

  // One transport: block in it until the deadline. Several (shm to some peers, sockets to
  // others): poll all, then block on all at once in one poll() where each can be waited on by
  // descriptor, else in each in turn for a short slice, so neither starves.
  Status progress(std::vector<transport::Completion>* out) {
    if (active_.empty()) return internalError("schedule waits for data but has no peers");
    if (active_.size() == 1) return active_[0]->progress(out, ctx_.deadline);
    for (transport::Transport* t : active_) COLL_RETURN_IF_ERROR(t->progress(out, transport::Clock::now()));
    if (!out->empty()) return Status::ok();
    if (blockOnAll()) {
      for (transport::Transport* t : active_) COLL_RETURN_IF_ERROR(t->progress(out, transport::Clock::now()));
      return Status::ok();
    }
    for (transport::Transport* t : active_) {
      if (!out->empty()) break;
      COLL_RETURN_IF_ERROR(t->progress(out, std::min(ctx_.deadline, transport::Clock::now() + kMixedWaitSlice)));
    }
    return Status::ok();
  }

  // One poll() on every active transport's descriptors, at most kMixedPollSlice (transports
  // check their peers' liveness between waits). False: some transport cannot be polled.
  bool blockOnAll() {
    fds_.clear();
    for (transport::Transport* t : active_)
      if (!t->pollFds(&fds_)) return false;
    size_t armed = 0;
    bool news = false;
    for (; armed < active_.size() && !news; ++armed) news = !active_[armed]->armForPoll();
    if (!news) {
      auto wait = std::min<transport::Clock::duration>(ctx_.deadline - transport::Clock::now(), kMixedPollSlice);
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max<transport::Clock::duration>(wait, {}));
      timespec ts{static_cast<time_t>(ns.count() / 1'000'000'000), static_cast<long>(ns.count() % 1'000'000'000)};
      ::ppoll(fds_.data(), fds_.size(), &ts, nullptr);
    }
    for (size_t i = 0; i < armed; ++i) active_[i]->disarmAfterPoll();
    return true;
  }

  Queue& queueFor(const Step& step) {
    bool sending = step.kind == StepKind::send;
    int key = step.peer < 0 ? -1 : step.peer * 2 + (sending ? 1 : 0);
    return queues_[key];
  }

  // Posts queue heads whose dependencies are done until nothing changes. Transfers go first
  // and local steps (copies, divisions: they run inline and may take milliseconds) last, so a
  // root's copy of its own buffer overlaps the peers' reads instead of delaying them.
  Status postReady() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (auto& [key, q] : queues_)
        if (key >= 0) COLL_RETURN_IF_ERROR(postHeads(q, &progressed));
      auto local = queues_.find(-1);
      if (local != queues_.end()) COLL_RETURN_IF_ERROR(postHeads(local->second, &progressed));
    }
    return Status::ok();
  }

  Status postHeads(Queue& q, bool* progressed) {
    while (q.next < q.steps.size() && waiting_[q.steps[q.next]] == 0) {
      COLL_RETURN_IF_ERROR(post(q.steps[q.next], q.conn));
      ++q.next;
      *progressed = true;
    }
    return Status::ok();
  }

  char* address(algo::BufferId id, const Step& step, size_t offset) const {
    const OpBuffers& op = ctx_.ops[step.op_index];
    const void* base = id == algo::BufferId::input ? op.input : op.output;
    return const_cast<char*>(static_cast<const char*>(base)) + offset;
  }

  Status post(uint32_t i, transport::Connection* conn) {
    const Step& step = s_.steps[i];
    size_t elems = step.bytes / sizeOf(ctx_.type);
    uint64_t tag = ctx_.ops[step.op_index].tag;
    switch (step.kind) {
      case StepKind::send: conn->postSend(address(step.source, step, step.offset), step.bytes, tag, i); break;
      case StepKind::recv: conn->postRecv(address(algo::BufferId::output, step, step.offset), step.bytes, tag, i); break;
      case StepKind::recvReduce:
        fused_[i] = conn->postRecvReduce(address(algo::BufferId::output, step, step.offset),
                                         address(step.source, step, step.offset), step.bytes, tag, i, ctx_.type,
                                         ctx_.op);
        if (!fused_[i]) conn->postRecv(ctx_.scratch->data() + step.scratch_offset, step.bytes, tag, i);
        break;
      case StepKind::copy:
        if (ctx_.ops[step.op_index].input != ctx_.ops[step.op_index].output)
          std::memcpy(address(algo::BufferId::output, step, step.offset), address(algo::BufferId::input, step, step.offset),
                      step.bytes);
        finish(i);
        break;
      case StepKind::divide:
        reduce::divideBy(address(algo::BufferId::output, step, step.offset), elems, ctx_.type, ctx_.nranks);
        finish(i);
        break;
    }
    return Status::ok();
  }

  Status onCompletion(const transport::Completion& c) {
    if (c.cookie >= s_.steps.size() || done_[c.cookie]) return internalError("completion for an unknown step");
    auto i = static_cast<uint32_t>(c.cookie);
    if (!c.status) return withStep(c.status, i);
    const Step& step = s_.steps[i];
    if (step.kind == StepKind::recvReduce && !fused_[i]) {
      char* out = address(algo::BufferId::output, step, step.offset);
      const char* in = address(step.source, step, step.offset);
      const char* received = ctx_.scratch->data() + step.scratch_offset;
      size_t elems = step.bytes / sizeOf(ctx_.type);
      if (in == out) reduce::reduceInto(out, received, elems, ctx_.type, ctx_.op);
      else reduce::reduce(out, in, received, elems, ctx_.type, ctx_.op);
    }
    finish(i);
    return Status::ok();
  }

  void finish(uint32_t i) {
    done_[i] = true;
    ++finished_;
    for (uint32_t d : dependents_[i]) --waiting_[d];
  }

  // The earliest step that was posted but has not finished: what we are stuck on.
  int64_t firstPending() const {
    for (const auto& [key, q] : queues_)
      for (size_t k = 0; k < q.next; ++k)
        if (!done_[q.steps[k]]) return q.steps[k];
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
  ExecContext& ctx_;
  std::vector<uint32_t> waiting_;
  std::vector<std::vector<uint32_t>> dependents_;
  std::vector<bool> done_;
  std::vector<bool> fused_;  // recvReduce steps the transport reduces as the bytes arrive
  size_t finished_ = 0;
  std::map<int, Queue> queues_;
  std::vector<transport::Transport*> active_;  // transports this schedule's peers use
  std::vector<pollfd> fds_;                    // blockOnAll()'s, kept to reuse the memory
};

}  // namespace

Status execute(const algo::Schedule& schedule, ExecContext& ctx) { return Executor(schedule, ctx).run(); }

}  // namespace coll
