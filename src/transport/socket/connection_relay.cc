// The relay (connection_relay.h): both of its sides, as SocketConnection members.
#include "transport/socket/connection_relay.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"

namespace coll::transport::socket {

namespace {

// Below this a relay saves less than its pipes and extra calls cost.
constexpr size_t kSmallestRelayBytes = 256 << 10;
// What each pipe is asked to hold; the kernel may grant less (pipe-max-size, a user's quota).
constexpr int kPipeBytes = 1 << 20;

boost::system::error_code lastError() { return {errno, boost::system::system_category()}; }

// Splicing into a socket whose peer is gone raises SIGPIPE (send() has MSG_NOSIGNAL, splice
// has no such flag), which would end the process. Blocked for this thread while the sender
// runs; one it raised (EPIPE) is taken back, one pending before stays.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    if (raised && !was_pending_) {
      timespec none{0, 0};
      (void)sigtimedwait(&pipe_, nullptr, &none);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  bool raised = false;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

bool openPipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  *read_end = UniqueFd(fds[0]);
  *write_end = UniqueFd(fds[1]);
  (void)::fcntl(fds[1], F_SETPIPE_SZ, kPipeBytes);  // where refused, the default 64 KiB works
  return true;
}

// Reads exactly n bytes that are already in the pipe.
bool readPipe(int fd, char* to, size_t n) {
  while (n > 0) {
    ssize_t got = ::read(fd, to, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    to += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

bool SocketConnection::Relay::openPipes() {
  if (!openPipe(&taken_read, &taken_write) || !openPipe(&passed_read, &passed_write)) return false;
  int granted = ::fcntl(taken_write.get(), F_GETPIPE_SZ);
  pipe_bytes = granted > 0 ? static_cast<size_t>(granted) : 64 << 10;
  return true;
}

// The send need not be under way yet, only next on its stream: its header goes out at once,
// and what the pipes hold meanwhile waits there. The pipes are opened here, not when the
// relay is posted, so that an op with many slices in flight holds a pair per stream, not one
// per slice (file descriptors, and the user's pipe-memory quota, past which the kernel hands
// out pipes of 8 KiB). Where they cannot be opened, the buffer carries the whole message.
void SocketConnection::Relay::startPiping() {
  if (piping || pipes_refused || !receiving || send_failed || copied == bytes || out->sends.empty() ||
      out->sends.front().relay.get() != this)
    return;
  if (!openPipes()) {
    pipes_refused = true;
    return;
  }
  piping = true;
  piped_from = copied;
}

size_t SocketConnection::smallestRelayBytes() { return kSmallestRelayBytes; }

void SocketConnection::Relay::sendFailed() {
  send_failed = true;
  sender_waits = false;
  wakeRelayReceiver(*this);
}

void SocketConnection::postRecvRelay(void* data, size_t bytes, uint64_t tag, uint64_t recv_cookie, Connection& next,
                                     uint64_t send_cookie) {
  auto* to = dynamic_cast<SocketConnection*>(&next);
  if (to == nullptr || to->streams_.empty() ||
      &to->streams_[0]->socket.get_executor().context() != &streams_[0]->socket.get_executor().context()) {
    Status st = internalError(format("peer %d: relay to %s, not a connection of this socket transport", peer_,
                                     next.describe().c_str()));
    complete(recv_cookie, st);
    return complete(send_cookie, st);
  }
  if (!failure_.isOk()) {  // the receive fails, and the send of what it would have received with it
    complete(recv_cookie, failure_);
    return to->complete(send_cookie, failure_);
  }
  if (!to->failure_.isOk()) {  // nothing can be passed on; the receive may still land
    postRecv(data, bytes, tag, recv_cookie);
    return to->complete(send_cookie, to->failure_);
  }
  auto r = std::make_shared<Relay>();
  r->data = static_cast<char*>(data);
  r->bytes = bytes;
  r->from = this;
  r->to = to;
  r->in = streams_[recvs_posted_++ % stripe()].get();
  r->out = to->streams_[to->sends_posted_++ % to->stripe()].get();
  r->out->sends.push_back(SendRequest{MessageHeader{kDataMagic, 0, tag, bytes}, data, send_cookie, r});
  r->in->recvs.push_back(RecvRequest{data, bytes, tag, recv_cookie, r});
  if (!r->out->sending) to->startSend(*r->out);
  if (!r->in->receiving) startRecv(*r->in);
}

// The receiving side, once the header matched (readPayload), and again whenever the socket
// has more or the sender made room.
void SocketConnection::readRelayPayload(Stream& s) {
  Relay& r = *s.recvs.front().relay;
  r.receiving = true;
  const int fd = s.socket.native_handle();
  while (r.copied < r.bytes) {
    r.startPiping();
    if (r.piping) {
      if (!pipeRelayPayload(s, r)) return;
      continue;
    }
    ssize_t got = ::recv(fd, r.data + r.copied, r.bytes - r.copied, MSG_DONTWAIT);
    if (got > 0) {
      r.copied += static_cast<size_t>(got);
      r.arrived = r.copied;
      wakeRelaySender(r);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return awaitPayload(s, r.bytes - r.arrived);
    s.receiving = false;
    return fail(ioError(got == 0 ? boost::system::error_code(asio::error::eof) : lastError(), "receive"));
  }
  finishRecv(s);
}

// One step of the piped receive: `taken` into `passed` and the buffer, or the socket into
// `taken`. False: it waits (for the socket, or for the sender to make room) or failed.
bool SocketConnection::pipeRelayPayload(Stream& s, Relay& r) {
  if (r.copied < r.arrived) {
    size_t n = r.arrived - r.copied;
    if (!r.send_failed) {
      ssize_t teed = ::tee(r.taken_read.get(), r.passed_write.get(), n, SPLICE_F_NONBLOCK);
      if (teed < 0 && errno == EAGAIN) {
        r.receiver_waits = true;
        return false;
      }
      if (teed <= 0) {
        s.receiving = false;
        fail(ioError(lastError(), "receive (tee)"));
        return false;
      }
      n = static_cast<size_t>(teed);
    }
    if (!readPipe(r.taken_read.get(), r.data + r.copied, n)) {
      s.receiving = false;
      fail(ioError(lastError(), "receive (read from pipe)"));
      return false;
    }
    r.copied += n;
    wakeRelaySender(r);
    return true;
  }
  ssize_t got = ::splice(s.socket.native_handle(), nullptr, r.taken_write.get(), nullptr,
                         std::min(r.bytes - r.arrived, r.pipe_bytes), SPLICE_F_NONBLOCK);
  if (got > 0) {
    r.arrived += static_cast<size_t>(got);
    return true;
  }
  if (got < 0 && errno == EINTR) return true;
  if (got < 0 && errno == EAGAIN) {
    awaitPayload(s, r.bytes - r.arrived);
    return false;
  }
  s.receiving = false;
  fail(ioError(got == 0 ? boost::system::error_code(asio::error::eof) : lastError(), "receive (splice)"));
  return false;
}

void SocketConnection::startRelaySend(Stream& s) {
  s.sending = true;
  SendRequest& q = s.sends.front();
  asio::async_write(s.socket, asio::buffer(&q.header, sizeof q.header),
                    [this, &s](const boost::system::error_code& ec, size_t) {
                      if (!failure_.isOk()) { s.sending = false; return; }
                      if (ec) { s.sending = false; return fail(ioError(ec, "send")); }
                      Relay& r = *s.sends.front().relay;
                      r.sending = true;
                      r.startPiping();  // the receiver sees it when it next runs
                      pumpRelaySend(s);
                    });
}

// The sending side: what was received and not yet sent, from the buffer or from `passed`.
void SocketConnection::pumpRelaySend(Stream& s) {
  Relay& r = *s.sends.front().relay;
  const int fd = s.socket.native_handle();
  SigpipeBlocked quiet;
  while (r.sent < r.bytes) {
    const size_t from_buffer = r.piping ? r.piped_from : r.copied;  // what may go from the buffer
    if (r.sent >= from_buffer && r.sent == r.copied) {
      r.sender_waits = true;
      return;
    }
    ssize_t put = r.sent >= from_buffer ? ::splice(r.passed_read.get(), nullptr, fd, nullptr, r.copied - r.sent, SPLICE_F_NONBLOCK)
                           : ::send(fd, r.data + r.sent, from_buffer - r.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (put > 0) {
      r.sent += static_cast<size_t>(put);
      if (r.piping && r.sent > r.piped_from) wakeRelayReceiver(r);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      s.socket.async_wait(tcp::socket::wait_write, [this, &s](const boost::system::error_code& ec) {
        if (!failure_.isOk()) { s.sending = false; return; }
        if (ec) { s.sending = false; return fail(ioError(ec, "send")); }
        pumpRelaySend(s);
      });
      return;
    }
    quiet.raised = put < 0 && errno == EPIPE;
    s.sending = false;
    return fail(ioError(put == 0 ? boost::system::error_code(asio::error::broken_pipe) : lastError(), "send"));
  }
  finishSend(s);
}

// Each side wakes the other through the io_context, never by calling it, so that neither
// recurses into the other.
void SocketConnection::wakeRelaySender(Relay& r) {
  if (!r.sender_waits || r.send_failed) return;
  r.sender_waits = false;
  SocketConnection* to = r.to;
  Stream* out = r.out;
  asio::post(out->socket.get_executor(), [to, out] {
    if (to->failure_.isOk() && !out->sends.empty() && out->sends.front().relay) to->pumpRelaySend(*out);
  });
}

void SocketConnection::wakeRelayReceiver(Relay& r) {
  if (!r.receiver_waits || r.receive_failed) return;
  r.receiver_waits = false;
  SocketConnection* from = r.from;
  Stream* in = r.in;
  asio::post(in->socket.get_executor(), [from, in] {
    if (from->failure_.isOk() && !in->recvs.empty() && in->recvs.front().relay) from->readPayload(*in);
  });
}

}  // namespace coll::transport::socket
