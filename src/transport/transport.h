// The transport contract every way of moving bytes implements (shm, socket, ucx and verbs;
// device buffers go through src/cuda/). Algorithms never see a transport: the executor talks to
// Connections on their behalf.
//
// Threading: a Transport and its Connections are used by one thread, the communicator's
// progress thread, except abort(), which any thread may call.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coll/types.h"
#include "base/status.h"

namespace coll::bootstrap {
class StoreClient;
}

namespace coll::transport {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Reported by progress() once a posted send or receive finished.
struct Completion {
  uint64_t cookie = 0;  // the value given when posting
  Status status;        // failure names the peer and the cause
};

// What a connection can do besides posting plain sends and receives, declared once when it is
// made, as UCX's transports fill uct_iface_attr's capability flags: the executor plans from it
// instead of calling optional methods that might refuse.
struct ConnectionCaps {
  bool recv_reduce = false;   // postRecvReduce
  // postRecvReduceForward for messages of 1 byte up to (not including) this many; 0: never.
  size_t forward_below = 0;
  bool send_copying = false;  // postSendCopying, messages of at least 1 byte
  // postRecvRelay for messages of at least this many bytes, to a connection of the same
  // transport; SIZE_MAX: never.
  size_t relay_from = SIZE_MAX;
  bool peeks = false;         // unreadMessage can see a message no receive claimed

  // Whether a message of `bytes` may take each call: the one place the size rules are read.
  bool sendsCopying(size_t bytes) const { return send_copying && bytes > 0; }
  bool forwards(size_t bytes) const { return bytes > 0 && bytes < forward_below; }
  bool relays(size_t bytes) const { return bytes >= relay_from; }
};

// One peer, both directions. Messages are matched in FIFO order per direction: the n-th
// receive posted here gets the n-th message the peer sent us. Each message carries a tag and
// its length, both checked against the posted receive (Mismatch otherwise), so ranks that
// disagree about the op fail instead of corrupting data. Buffers must stay valid and
// untouched until their completion. After the first failure every posted and later request
// completes with that same Status.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual int peer() const = 0;
  // "peer 3 (10.0.0.4:41000, socket, 2 streams)"
  virtual std::string describe() const = 0;
  virtual void postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) = 0;
  virtual void postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) = 0;
  // What this connection can do beyond the two calls above, fixed once it is made (see
  // ConnectionCaps). The calls below may be made only where caps() says so (their defaults do
  // nothing: no connection that lacks the capability is ever asked); each then takes the
  // request (after a failure, it completes with the failure, as every post does).
  const ConnectionCaps& caps() const { return caps_; }

  // Like postRecv, but combines the message as it arrives: data[i] = operand[i] op message[i]
  // (operand may be data itself, never partly overlap it), so a reduction reads the bytes
  // where the transport has them instead of after a copy into a scratch buffer.
  virtual void postRecvReduce(void* data, const void* operand, size_t bytes, uint64_t tag, uint64_t cookie,
                              DataType type, ReduceOp op) {}
  // postRecvReduce, then a send of the combined bytes (data[0, bytes)) back to the same peer,
  // queued behind the sends posted before it (send_cookie completes it). The transport may
  // send each part of the result as soon as it is combined, while it is in cache, instead of
  // reading it back from data once the receive finished.
  virtual void postRecvReduceForward(void* data, const void* operand, size_t bytes, uint64_t tag,
                                     uint64_t recv_cookie, uint64_t send_cookie, DataType type, ReduceOp op) {}

  // postRecv, then a send of the same message (same tag, data[0, bytes)) to `next`, a
  // connection of the same transport, queued there behind the sends posted before it
  // (send_cookie completes it): a chain's middle passing a slice on. The transport may pass the
  // bytes on as they arrive instead of reading them back from data once the receive finished
  // (the socket transport hands the received pages to the next socket: one copy instead of
  // two). If the receive fails, the send fails too, and so does everything on `next` from then
  // on (the message may be half sent).
  virtual void postRecvRelay(void* data, size_t bytes, uint64_t tag, uint64_t recv_cookie, Connection& next,
                             uint64_t send_cookie) {}

  // postSend, and `copy` (this process's memory, not overlapping data) receives the same
  // bytes: a transport that copies the message anyway writes that copy from its own, while
  // the bytes are in cache, so data is read once.
  virtual void postSendCopying(const void* data, void* copy, size_t bytes, uint64_t tag, uint64_t cookie) {}

  // The oldest message the peer sent that no posted receive has claimed yet (false: none, or
  // a receive is outstanding; a connection whose caps() has no `peeks` always says false). Only reads: the message stays
  // for the receive that will take it. The executor peeks when an op is stuck, to tell a
  // peer that is in another call from a slow one.
  virtual bool unreadMessage(uint64_t* /*tag*/, uint64_t* /*bytes*/) { return false; }

  // Fails this connection alone: everything posted on it completes with `status` (from the
  // transport's next progress()) and its buffers are no longer touched, the peer is told (its
  // side fails too), and the transport's other connections go on. The p2p engine's way to give
  // up on one stopped peer whose transfer is under way. False where a transport cannot (then
  // nothing happened). The transport's own thread only.
  virtual bool failAlone(const Status& /*status*/) { return false; }

  // A hint for the receives posted from now on: they land in an op's buffers that are far
  // larger than the caches, and nothing reads them again soon. A transport that copies into
  // them may then write around the caches (non-temporal stores), which saves the read of
  // every line it overwrites. Nothing depends on it for correctness.
  void setStreamingReceives(bool on) { streaming_receives_ = on; }

  // An op that uses this connection begins, and ends having succeeded. op_tag is the op's wire
  // tag, the same for every lane of it: a second call for the same op is ignored. op_kind tells
  // kinds of op apart: the same for every run of one schedule on buffers of one shape (in place
  // or not), different otherwise as far as the caller's hash tells. A transport that chooses
  // between ways of moving bytes by timing whole ops (what a benchmark and a training step wait
  // for) hangs its timing on these, and compares only ops of one kind. Nothing depends on them
  // for correctness.
  virtual void opBegins(uint64_t /*op_tag*/, uint64_t /*op_kind*/) {}
  virtual void opEnds(uint64_t /*op_tag*/) {}

  // Gives back the memory a burst of large messages took from a buffer shared with the peer
  // (a shared-memory ring's pages beyond the first of each slot), where nothing sent on this
  // connection is still unread; a later large message takes it again. For a one-off burst
  // such as the start-up link probe's: after it, a pair that only exchanges small messages
  // holds what small messages need. The transport's own thread only; nothing depends on it
  // for correctness.
  virtual void releaseIdleBuffers() {}

 protected:
  ConnectionCaps caps_;  // set by the implementation's constructor
  bool streaming_receives_ = false;
};

// What a transport needs from the bootstrap to find its peers.
struct PeerDirectory {
  int rank = 0;
  int size = 1;
  std::string secret;          // authenticates every connection
  std::string key_prefix;      // namespace in the store, per communicator
  bootstrap::StoreClient* store = nullptr;
  std::string store_host;      // the rendezvous host: the socket transport's default route
};

class SmallOpBoard;  // small_op_board.h

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // The connection to `peer`, established on first use. Both sides must ask for it (in any
  // order) before the deadline. The Transport owns the Connection.
  virtual Status connect(int peer, Deadline deadline, Connection** out) = 0;

  // Connections made on demand (the point-to-point engine's sockets), where connectsOnDemand():
  // connectOnDemand() starts connecting to `peer` without waiting (the peer need not ask: either
  // side may start, and a peer that never does costs nothing), progress() carries it on, and
  // takeConnected() hands over every connection made since its last call, whichever side
  // started it, and the peers that could not be reached (status failed; conn null).
  struct OnDemandConnection {
    int peer = -1;
    Connection* conn = nullptr;
    Status status;
  };
  virtual bool connectsOnDemand() const { return false; }
  virtual void connectOnDemand(int /*peer*/, Deadline /*deadline*/) {}
  virtual void takeConnected(std::vector<OnDemandConnection>* /*out*/) {}

  // Drives I/O. Appends finished requests to *out, waiting until `until` for at least one
  // (until <= now: poll only). Returns a failed Status only if the transport as a whole is
  // unusable (e.g. aborted); per-request failures arrive as Completions.
  virtual Status progress(std::vector<Completion>* out, Deadline until) = 0;

  // Blocking on several transports at once (exec/executor.cc), instead of in each in turn:
  // pollFds() adds the descriptors that turn ready when this transport may have news (false:
  // it cannot be waited on that way); armForPoll(), called next, makes sure its peers' news
  // will make one ready and returns false if news came meanwhile (then nobody blocks);
  // disarmAfterPoll() follows every armForPoll(). The caller then calls progress() with a
  // deadline of now to collect what arrived.
  virtual bool pollFds(std::vector<pollfd>* /*fds*/) { return false; }
  virtual bool armForPoll() { return true; }
  virtual void disarmAfterPoll() {}

  // True where progress() already polls before it sleeps (shm: spin, yield, then the futex),
  // so a caller waiting on this transport alone need not poll it first (executor.cc).
  virtual bool pollsBeforeSleeping() const { return false; }

  // The bandwidth between hosts every rank agreed on (the link probe's, or the topology
  // file's), once, on the thread that ran the probe, after it and before any other message:
  // a transport may choose how it moves bytes by it, for connections made before and after,
  // since every rank changes at the same point of every connection. Nothing else depends on it.
  virtual void adviseLinkRate(double /*inter_host_Bps*/) {}

  // Where every rank of the communicator shares this transport's memory: the board for small
  // all-reduces (small_op_board.h). Null elsewhere.
  virtual SmallOpBoard* board() { return nullptr; }

  // Closes every connection so peers fail fast; posted requests fail with PeerLost. Any
  // thread may call this; it returns without waiting for I/O.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace coll::transport
