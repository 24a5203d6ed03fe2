// The envelope protocol of the p2p engine (p2p_engine.h, p2p_wire.h), run by its thread.
//
// Per connection and direction the transport matches in FIFO order, so the two sides keep
// the stream self-describing: a sender posts an envelope and its payload back to back; a
// receiver, on an envelope that announces a payload, posts the payload's receive and then the
// next envelope's, and never anything else in between.
#include <cstring>

#include "base/log.h"
#include "p2p/engine_impl.h"

namespace coll::p2p {

using transport::Clock;

void Engine::Impl::start(Message message) {
  uint64_t id = next_id_++;
  Op& op = ops_[id];
  op.msg = std::move(message);
  op.deadline = Clock::now() + opt_.timeout;
  if (op.msg.send) startSend(id, op);
  else startRecv(id, op);
  // A peer that left can still have its earlier messages received; nothing more.
  auto it = ops_.find(id);
  if (it == ops_.end() || it->second.matched || it->second.msg.peer == kAnySource) return;
  if (const std::optional<Error>& lost = channels_[it->second.msg.peer].lost) {
    matcher_.cancel(id);
    complete(id, Error(lost->code(), it->second.msg.what + ": " + lost->what()));
  }
}

void Engine::Impl::startSend(uint64_t id, Op& op) {
  Channel& ch = channels_[op.msg.peer];
  if (ch.lost) return;  // start() fails it
  if (!ch.conn || !ch.parked.empty()) return park(id, op);  // connecting on demand: behind those before it
  WireEnvelope e;
  e.tag = op.msg.tag;
  e.seq = op.seq = ch.next_seq[op.msg.tag]++;
  e.bytes = op.msg.bytes;
  e.send_id = id;
  const bool eager = op.msg.bytes <= kEagerLimit && ch.eager_out + op.msg.bytes <= opt_.eager_budget;
  e.kind = eager ? EnvelopeKind::eager : EnvelopeKind::rts;
  if (eager) ch.eager_out += op.msg.bytes;
  op.envelope = encode(e);
  if (e.kind == EnvelopeKind::eager && op.msg.bytes == 0) {
    op.pieces = 1;
    return ch.conn->postSend(op.envelope.data(), kEnvelopeBytes, kEnvelopeTag, cookie(kSendDone, id));
  }
  op.pieces = e.kind == EnvelopeKind::eager ? 2 : 1;
  ch.conn->postSend(op.envelope.data(), kEnvelopeBytes, kEnvelopeTag, cookie(kQuiet, id));
  if (e.kind == EnvelopeKind::eager)  // the payload right behind its envelope
    ch.conn->postSend(op.msg.data, op.msg.bytes, kPayloadTag, cookie(kSendDone, id));
}

void Engine::Impl::startRecv(uint64_t id, Op& op) {
  // The sender connects when it sends; connecting from this side too means a peer that left or
  // aborted fails this receive at once, not at its deadline (a receive from anyone cannot).
  if (op.msg.peer != kAnySource) connectFor(op.msg.peer, op.deadline);
  std::optional<Envelope> arrived = matcher_.post({id, op.msg.peer, op.msg.tag, op.msg.bytes});
  if (arrived) bind(arrived->token, id);
}

// A receive and a message that arrived before it, now matched.
void Engine::Impl::bind(uint64_t inbound_id, uint64_t recv_id) {
  Inbound& in = inbound_.at(inbound_id);
  if (in.lost) {
    Op& recv = ops_.at(recv_id);
    complete(recv_id, Error(ErrorCode::PeerLost, format("%s: peer %d left before its message (send #%llu with tag %d) "
                                                        "was received", recv.msg.what.c_str(), in.source,
                                                        static_cast<unsigned long long>(in.envelope.seq),
                                                        in.envelope.tag)));
    inbound_.erase(inbound_id);
    return;
  }
  if (refuseIfSizesDiffer(recv_id, in)) {
    if (in.envelope.kind == EnvelopeKind::rts || in.payload_done) inbound_.erase(inbound_id);
    else in.dropped = true;  // its payload is still coming: drained into the heap, then freed
    return;
  }
  Op& recv = ops_.at(recv_id);
  recv.matched = true;
  recv.msg.work->source = in.source;
  if (in.envelope.kind == EnvelopeKind::rts) {
    WireEnvelope cts = in.envelope;
    cts.kind = EnvelopeKind::cts;
    cts.recv_id = recv_id;
    sendControl(in.source, cts);
    inbound_.erase(inbound_id);
    return;
  }
  in.recv_id = recv_id;
  if (in.payload_done) deliverEager(inbound_id);
}

// Sizes must agree, as gloo requires: the receive fails with Mismatch naming both, and a large
// message is refused to its sender (a CTS without a buffer). The caller disposes of `in`.
bool Engine::Impl::refuseIfSizesDiffer(uint64_t recv_id, Inbound& in) {
  Op& recv = ops_.at(recv_id);
  if (recv.msg.bytes == in.envelope.bytes) return false;
  std::string why = format("%s: the message it matched (peer %d's send #%llu with tag %d) has %llu bytes; the sizes of "
                           "a send and its receive must agree", recv.msg.what.c_str(), in.source,
                           static_cast<unsigned long long>(in.envelope.seq), in.envelope.tag,
                           static_cast<unsigned long long>(in.envelope.bytes));
  if (in.envelope.kind == EnvelopeKind::rts) {
    WireEnvelope refusal = in.envelope;
    refusal.kind = EnvelopeKind::cts;
    refusal.recv_id = 0;
    refusal.bytes = recv.msg.bytes;
    sendControl(in.source, refusal);
  }
  complete(recv_id, Error(ErrorCode::Mismatch, why));
  return true;
}

void Engine::Impl::onCompletion(const transport::Completion& c) {
  const auto kind = static_cast<CookieKind>(c.cookie & 15);
  const uint64_t id = c.cookie >> 4;
  if (!c.status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failed_ || stopping_) return;
    }
    int peer = c.status.peer();
    if (peer < 0 && kind == kEnvelopeIn) peer = static_cast<int>(id);
    Error error(c.status.code(), "point-to-point: " + c.status.message());
    if (peer < 0 || peer >= opt_.size) return failAll(error, !ops_.empty());
    return failPeer(peer, error);
  }
  switch (kind) {
    case kEnvelopeIn: return onEnvelope(static_cast<int>(id));
    case kPayloadInbound: return deliverEager(id);
    case kPayloadInto:
    case kSendDone: return complete(id, std::nullopt);
    case kControl: control_.erase(id); return;
    case kDrain: drains_.erase(id); return;
    case kQuiet:
      if (auto it = ops_.find(id); it != ops_.end()) --it->second.pieces;
      return;
  }
}

void Engine::Impl::onEnvelope(int peer) {
  WireEnvelope e;
  if (Status st = decode(channels_[peer].in.data(), kEnvelopeBytes, &e); !st)
    return failAll(Error(st.code(), format("point-to-point from peer %d: %s", peer, st.message().c_str())), true);
  switch (e.kind) {
    case EnvelopeKind::eager: onEager(peer, e); break;
    case EnvelopeKind::rts: onRts(peer, e); break;
    case EnvelopeKind::cts: onCts(peer, e); break;
    case EnvelopeKind::data: onData(peer, e); break;
    case EnvelopeKind::credit: onCredit(peer, e); break;
    case EnvelopeKind::withdrawn: onWithdrawn(peer, e); break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_) postEnvelopeRecv(peer);
}

void Engine::Impl::onEager(int peer, const WireEnvelope& e) {
  uint64_t iid = next_id_++;
  Inbound& in = inbound_[iid];
  in.source = peer;
  in.envelope = e;
  std::optional<Receive> r = matcher_.arrive({peer, e.tag, e.seq, e.bytes, iid});
  if (e.bytes == 0) {
    in.payload_done = true;
    if (r) bind(iid, r->id);
    return;
  }
  void* target = nullptr;
  if (r && !refuseIfSizesDiffer(r->id, in)) {  // straight into the receive's buffer
    Op& recv = ops_.at(r->id);
    recv.matched = true;
    recv.msg.work->source = peer;
    in.recv_id = r->id;
    recv.pieces = 1;
    target = recv.msg.data;
  } else {
    in.dropped = r.has_value();
    in.into_heap = true;
    in.heap.resize(e.bytes);
    target = in.heap.data();
  }
  channels_[peer].conn->postRecv(target, e.bytes, kPayloadTag, cookie(kPayloadInbound, iid));
}

void Engine::Impl::onRts(int peer, const WireEnvelope& e) {
  uint64_t iid = next_id_++;
  Inbound& in = inbound_[iid];
  in.source = peer;
  in.envelope = e;
  std::optional<Receive> r = matcher_.arrive({peer, e.tag, e.seq, e.bytes, iid});
  if (r) bind(iid, r->id);
}

// The receiver matched our large message (or refused it): send it straight into its buffer.
void Engine::Impl::onCts(int peer, const WireEnvelope& e) {
  if (auto gone = withdrawn_sends_.find(e.send_id); gone != withdrawn_sends_.end() && gone->second == peer) {
    withdrawn_sends_.erase(gone);
    if (e.recv_id == 0) return;  // its receive refused it anyway (sizes differ)
    WireEnvelope answer = e;
    answer.kind = EnvelopeKind::withdrawn;
    return sendControl(peer, answer);
  }
  auto it = ops_.find(e.send_id);
  if (it == ops_.end() || !it->second.msg.send || it->second.msg.peer != peer)
    return failAll(Error(ErrorCode::Mismatch, format("point-to-point from peer %d: a clear-to-send for message %llu, "
                                                     "which is not a send of ours to it", peer,
                                                     static_cast<unsigned long long>(e.send_id))),
                   true);
  Op& op = it->second;
  if (e.recv_id == 0)
    return complete(e.send_id, Error(ErrorCode::Mismatch,
                                     format("%s: the receive it matched on peer %d expects %llu bytes; the sizes of a "
                                            "send and its receive must agree", op.msg.what.c_str(), peer,
                                            static_cast<unsigned long long>(e.bytes))));
  WireEnvelope data = e;
  data.kind = EnvelopeKind::data;
  data.bytes = op.msg.bytes;
  op.data_envelope = encode(data);
  Channel& ch = channels_[peer];
  op.pieces += 2;
  ch.conn->postSend(op.data_envelope.data(), kEnvelopeBytes, kEnvelopeTag, cookie(kQuiet, e.send_id));
  ch.conn->postSend(op.msg.data, op.msg.bytes, kPayloadTag, cookie(kSendDone, e.send_id));
}

void Engine::Impl::onData(int peer, const WireEnvelope& e) {
  if (auto gone = withdrawn_recvs_.find(e.recv_id); gone != withdrawn_recvs_.end() && gone->second == peer) {
    withdrawn_recvs_.erase(gone);  // its receive was given up: the data is read and dropped
    if (e.bytes == 0) return;
    uint64_t did = next_id_++;
    std::vector<char>& drain = drains_[did];
    drain.resize(e.bytes);
    return channels_[peer].conn->postRecv(drain.data(), e.bytes, kPayloadTag, cookie(kDrain, did));
  }
  auto it = ops_.find(e.recv_id);
  if (it == ops_.end() || it->second.msg.send || !it->second.matched || it->second.msg.bytes != e.bytes)
    return failAll(Error(ErrorCode::Mismatch, format("point-to-point from peer %d: data for receive %llu, which is not "
                                                     "a matched receive of %llu bytes here", peer,
                                                     static_cast<unsigned long long>(e.recv_id),
                                                     static_cast<unsigned long long>(e.bytes))),
                   true);
  it->second.pieces = 1;
  channels_[peer].conn->postRecv(it->second.msg.data, e.bytes, kPayloadTag, cookie(kPayloadInto, e.recv_id));
}

// Our CTS met a send its sender had given up: the receive gets nothing.
void Engine::Impl::onWithdrawn(int peer, const WireEnvelope& e) {
  if (auto gone = withdrawn_recvs_.find(e.recv_id); gone != withdrawn_recvs_.end() && gone->second == peer) {
    withdrawn_recvs_.erase(gone);  // both sides gave up
    return;
  }
  auto it = ops_.find(e.recv_id);
  if (it == ops_.end() || it->second.msg.send || !it->second.matched || it->second.msg.work->source != peer)
    return failAll(Error(ErrorCode::Mismatch, format("point-to-point from peer %d: a withdrawal for receive %llu, which "
                                                     "is not a matched receive here", peer,
                                                     static_cast<unsigned long long>(e.recv_id))),
                   true);
  complete(e.recv_id, Error(ErrorCode::Timeout,
                            format("%s: peer %d gave up its send #%llu with tag %d (not matched within its "
                                   "COLL_TIMEOUT) before this receive matched it; nothing was received",
                                   it->second.msg.what.c_str(), peer, static_cast<unsigned long long>(e.seq), e.tag)));
}

void Engine::Impl::onCredit(int peer, const WireEnvelope& e) {
  Channel& ch = channels_[peer];
  ch.eager_out -= std::min(ch.eager_out, e.bytes);
}

void Engine::Impl::credit(int peer, uint64_t bytes) {
  Channel& ch = channels_[peer];
  ch.eager_taken += bytes;
  if (ch.eager_taken == 0 || ch.eager_taken < opt_.eager_budget / 4 || ch.lost) return;
  WireEnvelope c;
  c.kind = EnvelopeKind::credit;
  c.bytes = ch.eager_taken;
  ch.eager_taken = 0;
  sendControl(peer, c);
}

// An eager payload is here (or was matched after it came): hand it to its receive.
void Engine::Impl::deliverEager(uint64_t inbound_id) {
  auto it = inbound_.find(inbound_id);
  if (it == inbound_.end()) return;
  Inbound& in = it->second;
  in.payload_done = true;
  if (in.dropped) {
    credit(in.source, in.envelope.bytes);
    inbound_.erase(it);
    return;
  }
  if (in.recv_id == 0) return;  // unexpected: waits in the matcher for its receive
  uint64_t recv_id = in.recv_id;
  if (!ops_.count(recv_id)) {  // its receive was given up (late) while the payload came
    withdrawn_recvs_.erase(recv_id);
    credit(in.source, in.envelope.bytes);
    inbound_.erase(it);
    return;
  }
  if (in.into_heap && in.envelope.bytes > 0) std::memcpy(ops_.at(recv_id).msg.data, in.heap.data(), in.envelope.bytes);
  const int source = in.source;
  const uint64_t bytes = in.envelope.bytes;
  inbound_.erase(it);
  complete(recv_id, std::nullopt);
  credit(source, bytes);
}

void Engine::Impl::postEnvelopeRecv(int peer) {
  Channel& ch = channels_[peer];
  ch.conn->postRecv(ch.in.data(), kEnvelopeBytes, kEnvelopeTag, cookie(kEnvelopeIn, static_cast<uint64_t>(peer)));
}

void Engine::Impl::sendControl(int peer, const WireEnvelope& e) {
  uint64_t cid = next_id_++;
  EnvelopeBuffer& buffer = control_[cid] = encode(e);
  channels_[peer].conn->postSend(buffer.data(), kEnvelopeBytes, kEnvelopeTag, cookie(kControl, cid));
}

void Engine::Impl::complete(uint64_t id, std::optional<Error> error) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;
  std::shared_ptr<detail::WorkState> work = std::move(it->second.msg.work);
  ops_.erase(it);
  work->complete(std::move(error));
}

// ": unexpected here: from peer 1 with tag 3 (8 bytes), ... (5 in all)", for a receive that
// timed out.
std::string Engine::Impl::unexpectedSummary() const {
  std::string list;
  size_t n = 0;
  for (const auto& [id, in] : inbound_) {
    if (in.recv_id != 0 || in.dropped) continue;
    if (++n <= 4)
      list += format("%sfrom peer %d with tag %d (%llu bytes)", list.empty() ? "" : ", ", in.source, in.envelope.tag,
                     static_cast<unsigned long long>(in.envelope.bytes));
  }
  if (n == 0) return " (no unmatched messages are waiting here)";
  return format("; unmatched messages waiting here: %s%s", list.c_str(), n > 4 ? format(" (%zu in all)", n).c_str() : "");
}

}  // namespace coll::p2p
