// A socket Connection: one or more TCP streams to one peer, driven by the transport's
// io_context on the progress thread. Message k (per direction) travels on stream k mod n, so
// a pipelined algorithm's consecutive slices are striped across streams with no reassembly;
// n is the stripe: every stream, or fewer once the transport learns the link is slow enough
// for one stream to carry it (SocketTransport::adviseLinkRate).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "base/asio.h"
#include "base/fd_io.h"
#include "transport/socket/wire.h"
#include "transport/transport.h"

namespace coll::transport::socket {

class SocketConnection : public Connection {
 public:
  // Takes ownership of the connected, authenticated sockets (one per stream, in order).
  // wake_bytes: Config::socket_wake_bytes; relay: Config::socket_relay.
  SocketConnection(asio::io_context& io, int peer, std::string remote, std::vector<UniqueFd> fds,
                   std::vector<Completion>* completions, size_t wake_bytes, bool relay);
  ~SocketConnection() override;

  int peer() const override { return peer_; }
  std::string describe() const override;
  void postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  void postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  // Large messages to another socket connection of this transport: splice and tee
  // (connection_relay.cc). Smaller ones, and other transports, return false.
  // Relays of fewer bytes save less than their pipes and extra calls cost (ConnectionCaps::relay_from).
  static size_t smallestRelayBytes();
  void postRecvRelay(void* data, size_t bytes, uint64_t tag, uint64_t recv_cookie, Connection& next,
                     uint64_t send_cookie) override;
  // Peeks (MSG_PEEK) at the header of the next message, on the stream it will come by.
  bool unreadMessage(uint64_t* tag, uint64_t* bytes) override;

  // From the next message on in each direction, stripe over the first n streams (at least
  // one). Both ends must change between the same two messages of each direction: the
  // transport changes them where nothing is posted between (adviseLinkRate).
  void setStripe(size_t n) { stripe_ = std::max<size_t>(n, 1); }

  // Fails everything posted, now and later, with `status`, and closes the streams.
  void fail(const Status& status);
  bool failAlone(const Status& status) override {
    fail(status);
    return true;
  }

  // The streams with I/O in flight, for a caller that polls them with other transports'
  // descriptors (Transport::pollFds): readable where a receive waits, writable where a send.
  void addPollFds(std::vector<pollfd>* fds);

 private:
  struct Relay;  // connection_relay.h
  struct SendRequest {
    MessageHeader header;
    const void* data;
    uint64_t cookie;
    std::shared_ptr<Relay> relay;  // set: the bytes come from this relay's receive
  };
  struct RecvRequest {
    void* data;
    size_t bytes;
    uint64_t tag;
    uint64_t cookie;
    std::shared_ptr<Relay> relay;  // set: the bytes also go on to the relay's next connection
  };
  struct Stream {
    explicit Stream(asio::io_context& io) : socket(io) {}
    tcp::socket socket;
    std::deque<SendRequest> sends;  // front is on the wire while `sending`
    std::deque<RecvRequest> recvs;  // front is being read while `receiving`
    bool sending = false;
    bool receiving = false;
    MessageHeader incoming{};
    size_t received = 0;  // of the front receive's payload
    int low_water = 1;    // SO_RCVLOWAT as last set
  };

  void startSend(Stream& s);
  void startRecv(Stream& s);
  void onHeader(Stream& s);
  void readPayload(Stream& s);
  void awaitPayload(Stream& s, size_t owed);
  void setLowWater(Stream& s, size_t bytes);
  void finishRecv(Stream& s);
  // connection_relay.cc: the receiving side runs on the connection the message comes from,
  // the sending side on the one it goes to.
  void readRelayPayload(Stream& s);
  bool pipeRelayPayload(Stream& s, Relay& r);
  void startRelaySend(Stream& s);
  void pumpRelaySend(Stream& s);
  void finishSend(Stream& s);
  void failRelays(Stream& s, const Status& status);
  static void wakeRelaySender(Relay& r);
  static void wakeRelayReceiver(Relay& r);
  void complete(uint64_t cookie, Status status);
  Status ioError(const boost::system::error_code& ec, const char* what) const;

  int peer_;
  std::string remote_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Completion>* completions_;
  size_t wake_bytes_;
  bool relay_;
  uint64_t sends_posted_ = 0;
  uint64_t recvs_posted_ = 0;
  size_t stripe_ = SIZE_MAX;  // streams in use: min(stripe_, streams_.size())
  size_t stripe() const { return std::min(stripe_, streams_.size()); }
  Status failure_;  // the first error sticks
};

}  // namespace coll::transport::socket
