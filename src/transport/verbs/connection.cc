#include "transport/verbs/connection.h"

#include <cstdlib>
#include <cstring>
#include <random>

#include "base/log.h"
#include "base/wire_tag.h"

namespace coll::transport::verbs {
namespace {

// wr_id: the top two bits say what the work request was, the rest which one.
constexpr uint64_t kWrData = 0ull << 62, kWrControl = 1ull << 62, kWrRecv = 2ull << 62;
constexpr uint64_t kWrKindMask = 3ull << 62;

// Receives absorb the peer's chunks (at most one per slot of ours) and its control sends (at
// most one credit return per slot of theirs, plus a goodbye); equal windows make that 2w + 2.
// The send queue holds the mirror image: our chunks and our credit returns and goodbye.
uint32_t queueDepth(uint32_t credits) { return 2 * credits + 2; }

uint32_t randomPsn() { return std::random_device{}() & 0xffffff; }

}  // namespace

void VerbsConnection::FreeDelete::operator()(char* p) const { std::free(p); }

VerbsConnection::VerbsConnection(const ConnectionSetup& setup)
    : s_(setup), qp_(setup.peer), returner_(setup.credits) {}

VerbsConnection::~VerbsConnection() {
  if (qpn_ != 0) s_.device->destroyQp(qpn_);  // no completion of it can come any more
  for (SendOp& op : sends_)
    if (op.reg) s_.cache->release(op.reg);
  if (slots_mr_.handle) s_.device->deregisterMemory(slots_mr_);
  if (headers_mr_.handle) s_.device->deregisterMemory(headers_mr_);
}

std::string VerbsConnection::describe() const {
  return format("peer %d (verbs, %s, qp %#x)", s_.peer, s_.device->describe().c_str(), qpn_);
}

Status VerbsConnection::open(PeerCard* ours) {
  if (s_.credits == 0 || s_.credits > kMaxCredits || s_.chunk_bytes == 0 || s_.chunk_bytes > kMaxChunkBytes)
    return invalidArgument(format("verbs: %u slots of %u bytes per peer (allowed: 1-%u slots, 1-%u bytes)", s_.credits,
                                  s_.chunk_bytes, kMaxCredits, kMaxChunkBytes));
  COLL_RETURN_IF_ERROR(allocateSlots());
  sq_depth_ = queueDepth(s_.credits);
  COLL_RETURN_IF_ERROR(s_.device->createQp(sq_depth_, queueDepth(s_.credits), &qpn_));
  psn_ = randomPsn();
  COLL_RETURN_IF_ERROR(s_.device->localAddress(qpn_, psn_, &ours->qp));
  ours->slots_addr = reinterpret_cast<uintptr_t>(slots_.get());
  ours->slots_rkey = slots_mr_.rkey;
  ours->credits = s_.credits;
  ours->chunk_bytes = s_.chunk_bytes;
  return Status::ok();
}

// Page-aligned so registration pins exactly these pages.
Status VerbsConnection::allocateSlots() {
  size_t slot_total = (s_.credits * slotBytes() + 4095) / 4096 * 4096;
  size_t header_total = (s_.credits * size_t{kSlotHeaderBytes} + 4095) / 4096 * 4096;
  slots_.reset(static_cast<char*>(std::aligned_alloc(4096, slot_total)));
  headers_.reset(static_cast<char*>(std::aligned_alloc(4096, header_total)));
  if (!slots_ || !headers_)
    return transportError(format("verbs: no memory for %zu bytes of landing slots for peer %d", slot_total, s_.peer));
  std::memset(slots_.get(), 0, slot_total);
  std::memset(headers_.get(), 0, header_total);
  COLL_RETURN_IF_ERROR(s_.device->registerMemory(slots_.get(), slot_total, true, &slots_mr_));
  return s_.device->registerMemory(headers_.get(), header_total, false, &headers_mr_);
}

Status VerbsConnection::connectTo(const PeerCard& theirs) {
  if (theirs.credits != s_.credits)
    return invalidArgument(format("verbs: peer %d offers %u landing slots, this rank %u (the ranks run with different "
                                  "settings)", s_.peer, theirs.credits, s_.credits));
  theirs_ = theirs;
  QpState steps[3];
  int n = qp_.stepsToReady(steps);
  for (int i = 0; i < n; ++i) {
    if (steps[i] == QpState::rtr)  // receives must be there before the peer can write
      for (uint64_t r = 0; r < queueDepth(s_.credits); ++r) COLL_RETURN_IF_ERROR(postRecvBuffer(r));
    COLL_RETURN_IF_ERROR(s_.device->modifyQp(qpn_, qp_.state(), steps[i], theirs.qp));
    COLL_RETURN_IF_ERROR(qp_.transition(steps[i]));
  }
  sender_.emplace(theirs.credits, theirs.chunk_bytes);
  return Status::ok();
}

Status VerbsConnection::postRecvBuffer(uint64_t index) { return s_.device->postRecv(qpn_, kWrRecv | index); }

void VerbsConnection::complete(uint64_t cookie, Status status) {
  s_.completions->push_back(Completion{cookie, std::move(status)});
}

Status VerbsConnection::completionError(const WorkCompletion& wc, const char* what) const {
  std::string m = format("peer %d (verbs, qp %#x): %s failed: %s", s_.peer, qpn_, what, wc.error.c_str());
  return wc.peer_unreachable ? peerLostError(m, s_.peer) : transportError(m, s_.peer);
}

// --- sending -------------------------------------------------------------------------------

void VerbsConnection::postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (failure_.isOk() && !gone_.isOk()) fail(gone_);
  if (!failure_.isOk()) return complete(cookie, failure_);
  SendOp op{next_send_message_, static_cast<const char*>(data), bytes, tag, cookie};
  if (bytes > 0) {
    Status st = s_.cache->acquire(data, bytes, &op.reg);
    if (!st) {
      Status named = transportError(format("peer %d (verbs): registering the %s send buffer failed: %s", s_.peer,
                                           formatBytes(bytes).c_str(), st.message().c_str()), s_.peer);
      complete(cookie, named);
      return fail(named);
    }
  }
  op.chunks = bytes == 0 ? 1 : (bytes + theirs_.chunk_bytes - 1) / theirs_.chunk_bytes;
  sender_->enqueue(next_send_message_++, bytes);
  sends_.push_back(op);
  pump();
}

bool VerbsConnection::pump() {
  if (!failure_.isOk() || !sender_) return false;
  bool moved = false;
  // One send-queue entry stays free for a goodbye.
  while (sq_outstanding_ + 1 < sq_depth_ && !failed()) {
    std::optional<ChunkWrite> w = sender_->next();
    if (!w) break;
    postChunk(*w);
    moved = true;
  }
  if (credits_owed_ > 0 && !failed()) {
    uint32_t before = credits_owed_;
    returnCredits();
    moved |= credits_owed_ != before;
  }
  return moved;
}

void VerbsConnection::postChunk(const ChunkWrite& w) {
  SendOp& op = sends_[w.message - sends_.front().message];
  SlotHeader h{op.tag, op.bytes, w.offset, w.message};
  char* header = headers_.get() + static_cast<size_t>(w.slot) * kSlotHeaderBytes;
  std::memcpy(header, &h, sizeof h);
  SendRequest wr;
  wr.kind = SendRequest::writeImm;
  wr.wr_id = kWrData | w.message;
  wr.sge[0] = Sge{reinterpret_cast<uintptr_t>(header), kSlotHeaderBytes, headers_mr_.lkey};
  wr.num_sge = 1;
  if (w.bytes > 0) wr.sge[wr.num_sge++] = Sge{reinterpret_cast<uintptr_t>(op.data + w.offset),
                                              static_cast<uint32_t>(w.bytes), op.reg->lkey};
  wr.remote_addr = theirs_.slots_addr + static_cast<uint64_t>(w.slot) * (kSlotHeaderBytes + theirs_.chunk_bytes);
  wr.rkey = theirs_.slots_rkey;
  wr.imm = ImmData{static_cast<uint16_t>(w.message), static_cast<uint16_t>(w.slot), w.last}.encode();
  Status st = s_.device->postSend(qpn_, wr);
  if (!st) return fail(transportError(format("peer %d (verbs): posting chunk at offset %zu of message #%llu (%s) "
                                             "failed: %s", s_.peer, w.offset, static_cast<unsigned long long>(w.message),
                                             formatBytes(op.bytes).c_str(), st.message().c_str()), s_.peer));
  ++sq_outstanding_;
  ++op.posted;
}

bool VerbsConnection::postControl(uint32_t imm) {
  if (sq_outstanding_ >= sq_depth_) return false;
  SendRequest wr;
  wr.kind = SendRequest::sendImm;
  wr.wr_id = kWrControl;
  wr.imm = imm;
  if (!s_.device->postSend(qpn_, wr)) return false;  // the QP is broken: a failure follows or came
  ++sq_outstanding_;
  return true;
}

void VerbsConnection::returnCredits() {
  credits_owed_ += returner_.take();
  if (credits_owed_ > 0 && postControl(credits_owed_)) credits_owed_ = 0;
}

void VerbsConnection::sayGoodbye(GoodbyeReason why) {
  if (said_goodbye_ || !gone_.isOk() || !sender_) return;  // a peer that left hears nothing
  said_goodbye_ = true;
  postControl(kGoodbyeBit | static_cast<uint32_t>(why));
}

void VerbsConnection::onSent(const WorkCompletion& wc) {
  --sq_outstanding_;
  bool data = (wc.wr_id & kWrKindMask) == kWrData;
  if (!wc.ok && failure_.isOk()) {
    if (data) {
      unsigned long long m = wc.wr_id & ~kWrKindMask;
      fail(completionError(wc, format("RDMA write of message #%llu", m).c_str()));
    } else {
      fail(completionError(wc, "control send"));
    }
  }
  uint64_t m = wc.wr_id & ~kWrKindMask;
  if (!data || sends_.empty() || m - sends_.front().message >= sends_.size()) return;
  ++sends_[m - sends_.front().message].done;
  retireSends();
}

// Sends complete in order: RC completes work requests in the order they were posted.
void VerbsConnection::retireSends() {
  while (!sends_.empty() && sends_.front().done == sends_.front().chunks) {
    SendOp& op = sends_.front();
    if (!op.reported) complete(op.cookie, Status::ok());
    if (op.reg) s_.cache->release(op.reg);
    sends_.pop_front();
  }
}

// --- receiving -----------------------------------------------------------------------------

void VerbsConnection::postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  recvs_.push_back(RecvOp{static_cast<char*>(data), bytes, tag, cookie});
  deliver();
}

// By wr_id, not wc.kind: a failed completion's opcode is undefined in verbs.
void VerbsConnection::onCompletion(const WorkCompletion& wc) {
  if ((wc.wr_id & kWrKindMask) != kWrRecv) return onSent(wc);
  if (!wc.ok) {
    if (failure_.isOk()) fail(completionError(wc, "receive"));
    return;
  }
  if (failure_.isOk()) {
    Status st = postRecvBuffer(wc.wr_id & ~kWrKindMask);
    if (!st) return fail(transportError(format("peer %d (verbs): reposting a receive failed: %s", s_.peer,
                                               st.message().c_str()), s_.peer));
  }
  if (wc.kind == WorkCompletion::recvSendImm) return onControl(wc.imm);
  onChunk(wc);
}

void VerbsConnection::onControl(uint32_t imm) {
  if (imm & kGoodbyeBit) {
    auto why = static_cast<GoodbyeReason>(imm & ~kGoodbyeBit);
    const char* text = why == GoodbyeReason::aborted ? "aborted" : why == GoodbyeReason::failed ? "failed" : "closed";
    return peerGone(peerLostError(format("peer %d (verbs) %s its connection to this rank", s_.peer, text), s_.peer));
  }
  if (!sender_ || failed()) return;
  Status st = sender_->onCredits(imm, s_.peer);
  if (!st) return fail(st);
  pump();
}

void VerbsConnection::onChunk(const WorkCompletion& wc) {
  if (failed()) return;
  ImmData imm = ImmData::decode(wc.imm);
  SlotHeader h;
  if (imm.slot < s_.credits) std::memcpy(&h, slot(imm.slot), sizeof h);
  Status st = checkArrival(imm, h, wc.byte_len);
  if (!st) return fail(st);
  size_t payload = wc.byte_len - kSlotHeaderBytes;
  arrived_.push_back(Arrived{imm.slot, h, payload, imm.last});
  arrive_slot_ = (arrive_slot_ + 1) % s_.credits;
  arrive_offset_ = imm.last ? 0 : arrive_offset_ + payload;
  if (imm.last) ++arrive_message_;
  deliver();
}

// Everything the peer's NIC wrote must follow the protocol before a byte is copied out.
Status VerbsConnection::checkArrival(const ImmData& imm, const SlotHeader& h, uint32_t byte_len) const {
  const char* broken = nullptr;
  size_t payload = byte_len >= kSlotHeaderBytes ? byte_len - kSlotHeaderBytes : 0;
  if (imm.slot != arrive_slot_) broken = "a chunk landed out of slot order";
  else if (byte_len < kSlotHeaderBytes || payload > s_.chunk_bytes) broken = "a chunk's length does not fit a slot";
  else if (h.message != arrive_message_ || imm.message != static_cast<uint16_t>(arrive_message_))
    broken = "a chunk names another message than the one due";
  else if (h.offset != arrive_offset_ || h.offset + payload > h.total_bytes) broken = "a chunk's offset is wrong";
  else if (imm.last != (h.offset + payload == h.total_bytes)) broken = "a message's last chunk is marked wrongly";
  if (!broken) return Status::ok();
  return transportError(format("peer %d (verbs) broke the protocol: %s (message #%llu, slot %u, %u bytes)", s_.peer,
                               broken, static_cast<unsigned long long>(arrive_message_), imm.slot, byte_len), s_.peer);
}

void VerbsConnection::deliver() {
  while (!recvs_.empty() && !arrived_.empty() && !failed()) consumeFront();
  // RC delivers in order, so once the peer's goodbye came nothing more will arrive.
  if (!recvs_.empty() && arrived_.empty() && !gone_.isOk()) fail(gone_);
  if (!failed()) returnCredits();
}

void VerbsConnection::consumeFront() {
  Arrived a = arrived_.front();
  RecvOp& r = recvs_.front();
  if (a.header.offset == 0 && (a.header.tag != r.tag || a.header.total_bytes != r.bytes)) {
    Status st = messageMismatch(s_.peer, a.header.tag, a.header.total_bytes, r.tag, r.bytes);
    complete(r.cookie, st);
    recvs_.pop_front();
    return fail(st);
  }
  arrived_.pop_front();
  if (a.payload > 0) std::memcpy(r.data + a.header.offset, slot(a.slot) + kSlotHeaderBytes, a.payload);
  returner_.slotFreed();
  r.received += a.payload;
  if (!a.last) return;
  complete(r.cookie, Status::ok());
  recvs_.pop_front();
}

// --- failure -------------------------------------------------------------------------------

// Sends cannot finish any more; receives still get what arrived before the goodbye.
void VerbsConnection::peerGone(Status why) {
  if (!gone_.isOk() || !failure_.isOk()) return;
  gone_ = std::move(why);
  COLL_INFO("NET", "%s: %s", describe().c_str(), gone_.message().c_str());
  bool sending = false;
  for (SendOp& op : sends_) sending |= !op.reported;
  if (sending) return fail(gone_);
  deliver();
}

void VerbsConnection::fail(const Status& status) {
  if (!failure_.isOk()) return;
  failure_ = status;
  COLL_INFO("NET", "%s failed: %s", describe().c_str(), status.message().c_str());
  for (const RecvOp& r : recvs_) complete(r.cookie, status);
  recvs_.clear();
  // Chunks never posted will not complete; ones the NIC holds still will (flushed at worst),
  // and only then is their buffer's registration released.
  for (SendOp& op : sends_) {
    if (!op.reported) complete(op.cookie, status);
    op.reported = true;
    op.chunks = op.posted;
  }
  retireSends();
  sayGoodbye(GoodbyeReason::failed);
}

}  // namespace coll::transport::verbs
