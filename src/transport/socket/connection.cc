#include "transport/socket/connection.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/log.h"
#include "base/wire_tag.h"
#include "transport/socket/connection_relay.h"

namespace coll::transport::socket {

namespace {

// Payloads with less than this still to come wake the receiver for every segment, as without
// a low-water mark: a latency-bound message is not delayed, and costs no setsockopt.
constexpr size_t kSmallestWakeBytes = 64 << 10;

// asio's own completion conditions hand the socket at most 64 KiB a call, and each call's
// completion then goes through the io_context's queue before the next. This one lets a call
// take all the send buffer has room for: on netcluster 4 x 1 (4 ranks on 2 cores) the 16 MiB
// ring reduce-scatter went from 23.0 to 19.0 ms, the 64 MiB ring all-reduce from 150 to 138
// (docs/perf/socket_sends).
std::size_t wholeMessage(const boost::system::error_code& ec, std::size_t) {
  return ec ? 0 : std::size_t{1} << 30;
}

}  // namespace

SocketConnection::SocketConnection(asio::io_context& io, int peer, std::string remote,
                                   std::vector<UniqueFd> fds, std::vector<Completion>* completions,
                                   size_t wake_bytes, bool relay)
    : peer_(peer), remote_(std::move(remote)), completions_(completions), wake_bytes_(wake_bytes), relay_(relay) {
  for (UniqueFd& fd : fds) {
    auto s = std::make_unique<Stream>(io);
    boost::system::error_code ec;
    int native = fd.get();
    // Non-blocking for the calls made outside Asio (recv, splice), whatever Asio's own state.
    ::fcntl(native, F_SETFL, ::fcntl(native, F_GETFL) | O_NONBLOCK);
    s->socket.assign(peerAddress(native).find('[') == 0 ? tcp::v6() : tcp::v4(), native, ec);
    if (ec) {
      failure_ = transportError(format("peer %d: cannot adopt socket: %s", peer_, ec.message().c_str()), peer_);
      continue;
    }
    fd.release();
    streams_.push_back(std::move(s));
  }
  caps_.peeks = true;
  caps_.relay_from = relay_ && !streams_.empty() ? smallestRelayBytes() : SIZE_MAX;
}

SocketConnection::~SocketConnection() {
  for (auto& s : streams_) {
    boost::system::error_code ec;
    s->socket.close(ec);
  }
}

std::string SocketConnection::describe() const {
  std::string in_use = stripe() < streams_.size() ? format(", %zu in use", stripe()) : "";
  return format("peer %d (%s, socket, %zu stream%s%s)", peer_, remote_.c_str(), streams_.size(),
                streams_.size() == 1 ? "" : "s", in_use.c_str());
}

void SocketConnection::complete(uint64_t cookie, Status status) {
  completions_->push_back(Completion{cookie, std::move(status)});
}

Status SocketConnection::ioError(const boost::system::error_code& ec, const char* what) const {
  if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
      ec == asio::error::connection_aborted)
    return peerLostError(format("peer %d (%s) closed the connection", peer_, remote_.c_str()), peer_);
  return transportError(format("peer %d (%s): %s failed: %s", peer_, remote_.c_str(), what, ec.message().c_str()), peer_);
}

void SocketConnection::postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  Stream& s = *streams_[sends_posted_++ % stripe()];
  s.sends.push_back(SendRequest{MessageHeader{kDataMagic, 0, tag, bytes}, data, cookie});
  if (!s.sending) startSend(s);
}

void SocketConnection::postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  Stream& s = *streams_[recvs_posted_++ % stripe()];
  s.recvs.push_back(RecvRequest{data, bytes, tag, cookie});
  if (!s.receiving) startRecv(s);
}

bool SocketConnection::unreadMessage(uint64_t* tag, uint64_t* bytes) {
  if (!failure_.isOk() || streams_.empty()) return false;
  for (const auto& s : streams_)
    if (!s->recvs.empty()) return false;
  Stream& next = *streams_[recvs_posted_ % stripe()];
  MessageHeader h{};
  if (::recv(next.socket.native_handle(), &h, sizeof h, MSG_PEEK | MSG_DONTWAIT) != static_cast<ssize_t>(sizeof h) ||
      h.magic != kDataMagic)
    return false;
  *tag = h.tag;
  *bytes = h.bytes;
  return true;
}

void SocketConnection::startSend(Stream& s) {
  if (s.sends.empty() || !failure_.isOk()) return;
  if (s.sends.front().relay) return startRelaySend(s);
  s.sending = true;
  SendRequest& r = s.sends.front();
  std::array<asio::const_buffer, 2> bufs{asio::buffer(&r.header, sizeof r.header),
                                         asio::buffer(r.data, r.header.bytes)};
  asio::async_write(s.socket, bufs, wholeMessage, [this, &s](const boost::system::error_code& ec, size_t) {
    s.sending = false;
    if (!failure_.isOk()) return;  // already failed: fail() completed this request
    if (ec) return fail(ioError(ec, "send"));
    finishSend(s);
  });
}

void SocketConnection::finishSend(Stream& s) {
  s.sending = false;
  uint64_t cookie = s.sends.front().cookie;
  s.sends.pop_front();
  complete(cookie, Status::ok());
  startSend(s);
}

void SocketConnection::startRecv(Stream& s) {
  if (s.recvs.empty() || !failure_.isOk()) return;
  s.receiving = true;
  asio::async_read(s.socket, asio::buffer(&s.incoming, sizeof s.incoming),
                   [this, &s](const boost::system::error_code& ec, size_t) {
                     if (!failure_.isOk()) { s.receiving = false; return; }
                     if (ec) { s.receiving = false; return fail(ioError(ec, "receive")); }
                     onHeader(s);
                   });
}

void SocketConnection::onHeader(Stream& s) {
  const RecvRequest& r = s.recvs.front();
  const MessageHeader& h = s.incoming;
  if (h.magic != kDataMagic) {
    s.receiving = false;
    return fail(transportError(format("peer %d (%s) sent a malformed message header (magic %#x, expected %#x)", peer_,
                                      remote_.c_str(), h.magic, kDataMagic), peer_));
  }
  if (h.tag != r.tag || h.bytes != r.bytes) {
    s.receiving = false;
    return fail(messageMismatch(peer_, h.tag, h.bytes, r.tag, r.bytes));
  }
  s.received = 0;
  readPayload(s);
}

// Reads what has arrived of the front receive's payload; where more is due, sleeps until
// enough of it is queued that the wake-up pays for itself (Config::socket_wake_bytes). The
// kernel wakes a reader for every segment otherwise, and where the CPUs are the limit (many
// ranks per core, fast links) those wake-ups, each a context switch, cost as much as the
// copies: measured on netcluster 4 x 1 with shaping off (4 ranks on 2 cores, 64 MiB, 2 MiB
// slices), a 1 MiB mark made all-reduce 0.49-0.55 GB/s busbw against 0.36-0.42 without, at
// 4.4-4.9 CPU-seconds per GB against 6.1-7.0; direct broadcast (256 KiB-1 MiB marks)
// 0.76-0.99 against 0.68-0.71 (algorithms/slice_size.h has the 2 MiB mark's figures). The
// mark never exceeds what this message still owes, so it cannot wait for bytes the peer has
// no reason to send, and the kernel wakes the reader anyway when its receive window closes
// or the peer closes the connection.
void SocketConnection::readPayload(Stream& s) {
  if (s.recvs.front().relay) return readRelayPayload(s);
  const RecvRequest& r = s.recvs.front();
  const int fd = s.socket.native_handle();
  while (s.received < r.bytes) {
    ssize_t got = ::recv(fd, static_cast<char*>(r.data) + s.received, r.bytes - s.received, MSG_DONTWAIT);
    if (got > 0) {
      s.received += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return awaitPayload(s, r.bytes - s.received);
    s.receiving = false;
    return fail(ioError(got == 0 ? boost::system::error_code(asio::error::eof)
                                 : boost::system::error_code(errno, boost::system::system_category()),
                        "receive"));
  }
  finishRecv(s);
}

void SocketConnection::finishRecv(Stream& s) {
  setLowWater(s, 1);
  s.receiving = false;
  uint64_t cookie = s.recvs.front().cookie;
  s.recvs.pop_front();
  complete(cookie, Status::ok());
  startRecv(s);
}

void SocketConnection::awaitPayload(Stream& s, size_t owed) {
  setLowWater(s, owed >= kSmallestWakeBytes ? std::min(owed, wake_bytes_) : 1);
  s.socket.async_wait(tcp::socket::wait_read, [this, &s](const boost::system::error_code& ec) {
    if (!failure_.isOk()) { s.receiving = false; return; }
    if (ec) { s.receiving = false; return fail(ioError(ec, "receive")); }
    readPayload(s);
  });
}

// One setsockopt where the mark changes; the kernel caps it at half the receive buffer.
void SocketConnection::setLowWater(Stream& s, size_t bytes) {
  int v = static_cast<int>(std::clamp<size_t>(bytes, 1, INT32_MAX));
  if (v == s.low_water) return;
  s.low_water = v;
  ::setsockopt(s.socket.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v);
}

// A relay waiting for its other side (connection_relay.h) waits for no descriptor here: the
// other side's descriptor wakes the poll, and its handler wakes this one.
void SocketConnection::addPollFds(std::vector<pollfd>* fds) {
  for (auto& s : streams_) {
    bool reads = s->receiving && !s->recvs.empty() &&
                 !(s->recvs.front().relay && s->recvs.front().relay->receiver_waits);
    bool writes = s->sending && !s->sends.empty() && !(s->sends.front().relay && s->sends.front().relay->sender_waits);
    short events = static_cast<short>((reads ? POLLIN : 0) | (writes ? POLLOUT : 0));
    if (events && s->socket.is_open()) fds->push_back(pollfd{s->socket.native_handle(), events, 0});
  }
}

void SocketConnection::fail(const Status& status) {
  if (!failure_.isOk()) return;
  failure_ = status;
  COLL_INFO("NET", "%s failed: %s", describe().c_str(), status.message().c_str());
  std::vector<SocketConnection*> relayed_to;  // their messages can no longer be completed
  for (auto& s : streams_) {
    for (auto& r : s->sends) {
      if (r.relay) r.relay->sendFailed();
      complete(r.cookie, status);
    }
    for (auto& r : s->recvs) {
      if (r.relay) r.relay->receive_failed = true, relayed_to.push_back(r.relay->to);
      complete(r.cookie, status);
    }
    s->sends.clear();
    s->recvs.clear();
    boost::system::error_code ec;
    s->socket.close(ec);  // pending handlers run with operation_aborted and see failure_
  }
  for (SocketConnection* to : relayed_to)
    to->fail(Status(status.code(), format("relaying a message of peer %d: %s", peer_, status.message().c_str()), peer_));
}

}  // namespace coll::transport::socket
