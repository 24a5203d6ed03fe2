// The p2p engine's insides (p2p_engine.h), private to src/exec: the thread and its waiting in
// p2p_engine.cc, the envelope protocol in p2p_protocol.cc.
#pragma once

#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/fd_io.h"
#include "p2p/engine.h"
#include "p2p/wire.h"

namespace coll::p2p {

// The wire tags of the engine's connections: the transport checks them against the posted
// receive, so a payload can never be read as an envelope or the other way round.
inline constexpr uint64_t kEnvelopeTag = 1;
inline constexpr uint64_t kPayloadTag = 2;

// The engine is its ops' runner for Work::wait's watchdog (detail::OpDriver): nobody drives it
// inline, and a waiter that finds its thread wedged abandons it (the engine fails).
class Engine::Impl final : private detail::OpDriver {
 public:
  Impl(EngineOptions options, std::vector<std::unique_ptr<transport::Transport>> owned,
       std::vector<transport::Transport*> for_peer);
  ~Impl();
  void post(std::vector<Message> messages);
  void abort(const std::string& reason);
  bool settle(std::chrono::steady_clock::time_point deadline);
  std::string describeOutstanding() const;
  bool driveUntilDone(const detail::WorkState&) override { return false; }
  void kick() override {}
  void expedite() override {}
  void abandon(const Error& why) override { failFromAnyThread(why); }
  const std::shared_ptr<detail::DriverLink>& watchdog() const { return link_; }

 private:
  // A send or receive the engine has taken from the inbox.
  struct Op {
    Message msg;
    transport::Deadline deadline;
    uint64_t seq = 0;            // sends: the message's number in (peer, tag)
    EnvelopeBuffer envelope{};   // sends: EAGER or RTS (stable: ops_ is a map)
    EnvelopeBuffer data_envelope{};  // sends: DATA, after the receiver's CTS
    bool matched = false;        // receives: bound to a message
    bool parked = false;         // sends: waiting for the connection to its peer (made on demand)
    // How many of its pieces the transport holds (op-owned envelopes, its data). A late op
    // with none can fail alone; one with some fails everything (the transport may still
    // touch its buffers).
    int pieces = 0;
  };
  // A message announced by a peer and not yet delivered to a receive.
  struct Inbound {
    int source = 0;
    WireEnvelope envelope;
    std::vector<char> heap;     // an eager payload that arrived before its receive
    bool payload_done = false;  // eager: the payload is in heap (or in the matched buffer)
    uint64_t recv_id = 0;       // the receive it matched (0: none yet)
    bool into_heap = false;     // eager: its payload lands in heap
    bool dropped = false;       // eager: its receive refused it (sizes disagree); freed on arrival
    bool lost = false;          // its sender left before the whole message was here
  };
  struct Channel {
    transport::Connection* conn = nullptr;
    EnvelopeBuffer in{};                   // the envelope receive, always posted
    std::map<int, uint64_t> next_seq;      // per tag, for sends
    std::optional<Error> lost;             // the peer left or its connection failed
    uint64_t eager_out = 0;   // eager bytes sent to the peer that it has not credited back
    uint64_t eager_taken = 0;  // eager bytes from the peer handed to receives, not yet credited
    // A transport that connects on demand: the connection is being made, and the sends that
    // wait for it, in posting order (they start in that order once it is made).
    bool connecting = false;
    std::vector<uint64_t> parked;
  };
  enum CookieKind : uint64_t {
    kEnvelopeIn = 1,      // id: peer
    kPayloadInbound = 2,  // id: inbound message (eager payload)
    kPayloadInto = 3,     // id: receive op (DATA payload, straight into its buffer)
    kSendDone = 4,        // id: send op, whose last piece this is
    kQuiet = 5,           // id: op; an envelope whose buffer lives in the op went
    kControl = 6,         // id: control_ entry (a CTS), freed on completion
    kDrain = 7,           // id: drains_ entry (the data of a receive given up), freed on completion
  };
  static uint64_t cookie(CookieKind kind, uint64_t id) { return id << 4 | kind; }

  // Thread and waiting (p2p_engine.cc).
  void run();
  bool connectAll();
  // Sends to a peer not yet connected wait for the connection, which either side may start.
  void park(uint64_t id, Op& op);
  void connectFor(int peer, transport::Deadline deadline);  // on demand, unless made or under way
  void adoptConnections();
  bool takeInbox();
  void waitForNews(std::vector<transport::Completion>* out);
  bool blockOnAll(transport::Deadline until);
  void checkDeadlines();
  void collectArrived();
  // A late op the transport holds nothing of: it fails alone, and what its peer sends for it
  // later is answered (a withdrawn send) or dropped (a receive given up).
  void failLateAlone(uint64_t id, Op& op);
  bool failLateWithItsPeer(uint64_t id, Op& op);
  // A peer's connection failed: the ops with that peer fail, the others go on (a rank that
  // finished its part and left is no error for ranks that do not wait on it).
  void failPeer(int peer, const Error& error);
  // Fails every outstanding op (and later posts) with the first error; report: tell the
  // communicator (on_failure), which it does only for failures the engine itself found.
  void failAll(const Error& error, bool report);
  void failFromAnyThread(const Error& error);
  void wake();
  void noteOldest();

  // Protocol (p2p_protocol.cc).
  void start(Message message);
  void startSend(uint64_t id, Op& op);
  void startRecv(uint64_t id, Op& op);
  void onCompletion(const transport::Completion& c);
  void onEnvelope(int peer);
  void onEager(int peer, const WireEnvelope& e);
  void onRts(int peer, const WireEnvelope& e);
  void onCts(int peer, const WireEnvelope& e);
  void onData(int peer, const WireEnvelope& e);
  void onCredit(int peer, const WireEnvelope& e);
  void onWithdrawn(int peer, const WireEnvelope& e);
  // `bytes` of the peer's eager messages left this rank's hands (delivered, or dropped):
  // credit them back once a quarter of the budget has gathered.
  void credit(int peer, uint64_t bytes);
  void bind(uint64_t inbound_id, uint64_t recv_id);
  void deliverEager(uint64_t inbound_id);
  void postEnvelopeRecv(int peer);
  void sendControl(int peer, const WireEnvelope& e);
  bool refuseIfSizesDiffer(uint64_t recv_id, Inbound& in);
  void complete(uint64_t id, std::optional<Error> error);
  std::string unexpectedSummary() const;

  EngineOptions opt_;
  std::vector<std::unique_ptr<transport::Transport>> owned_;
  std::vector<transport::Transport*> for_peer_;
  std::vector<transport::Transport*> active_;  // distinct transports of for_peer_
  std::vector<Channel> channels_;             // by peer
  Matcher matcher_;
  std::map<uint64_t, Op> ops_;                // outstanding, by id (= posting order = deadline order)
  std::map<uint64_t, Inbound> inbound_;
  std::map<uint64_t, EnvelopeBuffer> control_;  // CTS envelopes in flight
  std::map<uint64_t, int> withdrawn_sends_;     // sends given up after their RTS went, by id: the peer
  std::map<uint64_t, int> withdrawn_recvs_;     // matched receives given up before their data, by id: the peer
  std::map<uint64_t, std::vector<char>> drains_;  // the data of receives given up, arriving
  uint64_t next_id_ = 1;
  bool dead_ = false;  // failAll ran: the transports are aborted, nothing more to drive
  std::vector<pollfd> fds_;
  std::vector<transport::Completion> completions_;

  mutable std::mutex mu_;  // guards the fields below
  std::vector<Message> inbox_;
  std::atomic<size_t> inbox_count_{0};   // inbox_.size(), for the engine's spin
  std::atomic<size_t> outstanding_{0};   // ops_.size(), for describeOutstanding()
  std::string oldest_what_;              // the oldest outstanding op's `what`, for the same
  uint64_t oldest_id_ = 0;               // engine thread: whose `what` oldest_what_ holds
  std::optional<Error> failed_;  // the first failure: every later op fails with it
  std::atomic<bool> failed_from_outside_{false};  // failFromAnyThread ran: stop handling completions
  bool stopping_ = false;
  bool failed_all_ = false;       // failAll has failed every op it held (settle() waits for it)
  std::condition_variable failed_all_cv_;
  UniqueFd wake_fd_;         // an eventfd: posts and abort wake the engine's poll
  // The engine thread's heartbeat, which Work::wait() on a p2p op watches: completions run on
  // this thread, and one that never returns must not leave waiters unbounded.
  std::shared_ptr<detail::DriverLink> link_;
  std::thread thread_;
};

}  // namespace coll::p2p
