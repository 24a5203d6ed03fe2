// Point-to-point that progresses on its own (docs/design/p2p_progress.md): sends and receives
// posted from any thread are matched by (source, tag) as MPI and gloo match them and complete
// as their partners arrive, in any order and number, beside the collectives of the same
// communicator, which run on other connections.
//
// The engine owns a transport set of its own (made by the communicator with the others, so
// collectives and point-to-point never share a connection's ordering) and one thread, which
// connects where the transport needs both sides at start (shared memory, UCX, verbs: in one
// global order, so no two ranks wait on each other), and over sockets when a peer is first
// sent to or received from (made on demand by either side: a peer nobody exchanges messages
// with costs no socket and no store read), and drives the envelope protocol (p2p_wire.h): an
// envelope receive is always posted on every connection, so whatever a peer sends is read;
// small messages go eager, large ones after the receiver has matched a buffer (RTS, CTS,
// DATA), straight into that buffer.
// Eager data a receiver holds before its receives are posted is bounded: a sender may have at
// most eager_budget bytes of eager messages to one peer that the peer has not yet handed to a
// receive; the receiver returns credit (CREDIT) as it hands them over, and a message past the
// budget goes by rendezvous instead, so a sender far ahead waits rather than filling its peer.
//
// Each op must complete within COLL_TIMEOUT of its posting. A late op the transport holds
// nothing of fails alone with Timeout: a receive nothing matched, a large send nobody matched
// (its RTS went; a receive that matches it later is told it was withdrawn), a matched large
// receive whose data has not come (the data is dropped if it comes). A lost peer fails the ops
// that involve it. A late op whose buffers the transport may still touch (an eager send not
// taken, data under way) closes its peer's connection alone (Connection::failAlone), and every
// op with that peer fails. Any other failure (a transport that cannot close one connection, a
// malformed envelope) fails every outstanding op with the error, which names the op, the peer,
// the tag and the cause, and is reported through on_failure; later posts fail with it. Completions run on the engine's thread, which keeps a heartbeat
// (watchdog()): Work::wait() on its ops gives up when it stops.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coll/error.h"
#include "p2p/matcher.h"
#include "exec/work_state.h"
#include "transport/transport.h"

namespace coll::p2p {

struct EngineOptions {
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{300'000};  // per op, from its posting (COLL_TIMEOUT)
  std::chrono::microseconds spin{50};           // polling before sleeping while ops are outstanding
  // Eager bytes in flight to one peer (sent, not yet handed to a receive there) at most; a
  // message past it goes by rendezvous (COLL_P2P_EAGER_BUDGET; 0: every message does).
  uint64_t eager_budget = 4 << 20;
  transport::Deadline connect_deadline;         // for connecting at start (transports not on demand)
  std::function<void(const Error&)> on_failure;  // called once, from the engine's thread
};

// One send or receive. A receive from kAnySource reports the sender in work->source.
struct Message {
  bool send = false;
  int peer = 0;  // the destination, or the source (kAnySource: anyone)
  int tag = 0;   // >= 0
  void* data = nullptr;  // read for a send, written for a receive
  size_t bytes = 0;
  std::string what;  // for errors: "send of 1024 bytes to peer 1 (tag 0)"
  std::shared_ptr<detail::WorkState> work;
};

class Engine {
 public:
  // owned: the engine's transports; for_peer: which one reaches each rank (nullptr for self).
  Engine(EngineOptions options, std::vector<std::unique_ptr<transport::Transport>> owned,
         std::vector<transport::Transport*> for_peer);
  // Fails what is outstanding ("the communicator was destroyed") and stops the thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Any thread. The messages of one call are posted together (a group), in order.
  void post(std::vector<Message> messages);
  // Any thread: fails every outstanding and later op with PeerLost naming the reason.
  void abort(const std::string& reason);
  // After abort(): waits until the engine's thread has failed every op it held, so none of
  // their buffers is touched any more. False: `deadline` came first, or the caller is that
  // thread (a completion callback), which fails them once it returns. Any thread.
  bool settle(std::chrono::steady_clock::time_point deadline);
  // "recv #4 of 8 bytes from peer 2 (tag 0) and 2 more": the oldest outstanding op, for stall
  // reports (the ledger); empty when none is outstanding. Any thread.
  std::string describeOutstanding() const;
  // The engine thread's heartbeat, for the Works of its ops (detail::WorkState::link).
  std::shared_ptr<detail::DriverLink> watchdog() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace coll::p2p
