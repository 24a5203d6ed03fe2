// ShmConnection's receive side: a slot's message read, copied or combined into the receive,
// a CMA or mapped descriptor followed, and the slot handed back (connection.cc has the rest).
#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/wire_tag.h"
#include "reduce/reduce.h"
#include "reduce/stream_copy.h"
#include "transport/shm/cma.h"
#include "transport/shm/connection.h"
#include "transport/shm/doorbell.h"

namespace coll::transport::shm {
namespace {

// A reducing receive reads CMA messages through a buffer this big: it stays in L2 between the
// kernel's copy and the reduction.
constexpr size_t kCmaBounceBytes = 256 << 10;
// A streaming receive that combines does so through a buffer this big, in L1, and streams it
// out from there.
constexpr size_t kCombineBytes = 8 << 10;

}  // namespace

bool ShmConnection::pullRecvs(size_t max_slots, bool inline_only) {
  if (recvs_.empty() || !peerBegan()) return false;
  bool moved = false;
  for (size_t n = 0; n < max_slots && !recvs_.empty() && failure_.isOk(); ++n) {
    if (tail_ == head_seen_) {
      head_seen_ = e_.inbound.control->head.load(kAcquire);
      if (tail_ == head_seen_) break;  // empty: the peer rings us when it writes
    }
    SlotHeader h;
    std::memcpy(&h, e_.inbound.slot(tail_), sizeof h);
    if (inline_only && h.kind != SlotKind::inline_data) break;
    Status st = checkSlot(h, recvs_.front());
    if (!st) {
      fail(st);
      return true;
    }
    moved = true;
    if (!readSlot(h, recvs_.front())) break;  // a CMA read to continue in the next poll
    releaseSlot();
  }
  return moved;
}

Status ShmConnection::checkSlot(const SlotHeader& h, const RecvRequest& r) const {
  bool inline_data = h.kind == SlotKind::inline_data;
  const bool described = h.kind == SlotKind::cma_descriptor || h.kind == SlotKind::mapped_descriptor;
  if (h.magic != kSlotMagic || !(inline_data || (described && e_.read_peer)))
    return transportError(format("%s wrote a malformed slot", peerName().c_str()), e_.peer);
  if (h.tag != r.tag || h.bytes != r.bytes) {
    return messageMismatch(e_.peer, h.tag, h.bytes, r.tag, r.bytes);
  }
  if (inline_data && (h.offset != r.offset || h.length > e_.inbound.payloadBytes() || h.length > r.bytes - r.offset ||
                      (h.length == 0 && r.bytes > 0)))
    return transportError(format("%s wrote a slot out of sequence", peerName().c_str()), e_.peer);
  return Status::ok();
}

bool ShmConnection::readSlot(const SlotHeader& h, RecvRequest& r) {
  if (h.kind != SlotKind::inline_data) return readDescribed(h, r);
  if (r.operand && h.length % sizeOf(r.type) != 0) {  // every slot but a message's last is full
    fail(transportError(format("%s wrote a slot that splits an element", peerName().c_str()), e_.peer));
    return false;
  }
  const uint8_t* payload = e_.inbound.slot(tail_) + kSlotHeaderBytes;
  if (!r.forward || !combineIntoOutbound(r, payload, h.length)) land(r, payload, h.length);
  received(r, h.length);
  return true;
}

bool ShmConnection::received(RecvRequest& r, size_t n) {
  r.offset += n;
  if (r.forward) r.forward->ready = r.offset;
  if (r.offset < r.bytes) return false;
  complete(r.cookie, Status::ok());
  recvs_.pop_front();
  return true;
}

void ShmConnection::land(RecvRequest& r, const uint8_t* bytes, size_t n) {
  if (r.stream && r.operand != r.data) return landStreaming(r, bytes, n);
  if (!r.operand) {
    std::memcpy(r.data + r.offset, bytes, n);
  } else if (r.operand == r.data) {
    reduce::reduceInto(r.data + r.offset, bytes, n / sizeOf(r.type), r.type, r.op);
  } else {
    reduce::reduce(r.data + r.offset, r.operand + r.offset, bytes, n / sizeOf(r.type), r.type, r.op);
  }
}

// An in-place reduction reads every line it writes, so only copies and out-of-place
// reductions gain from streaming stores; the latter combine in L1 first.
void ShmConnection::landStreaming(RecvRequest& r, const uint8_t* bytes, size_t n) {
  if (!r.operand) return reduce::copyStreaming(r.data + r.offset, bytes, n);
  if (combined_.empty()) combined_.resize(kCombineBytes);
  const size_t elem = sizeOf(r.type);
  for (size_t done = 0; done < n; done += combined_.size()) {
    size_t m = std::min(combined_.size(), n - done);
    reduce::reduce(combined_.data(), r.operand + r.offset + done, bytes + done, m / elem, r.type, r.op);
    reduce::copyStreaming(r.data + r.offset + done, combined_.data(), m);
  }
}

// Where the forward is next in line with nothing of it left behind (what is, goes first), a
// slot is free and the part fits it (a peer with larger slots may send more): combine into
// the slot, copy the result from there (in L1) to data, and hand the slot over.
bool ShmConnection::combineIntoOutbound(RecvRequest& r, const uint8_t* bytes, size_t n) {
  pushSends();
  SendRequest& s = *r.forward;
  // A slot not yet reserved that far takes the plain path, whose pushSends reserves it.
  if (sends_.empty() || &sends_.front() != &s || s.offset != r.offset || n > e_.outbound.payloadBytes() ||
      outboundFull() || reserved_[head_ % e_.outbound.nslots] < kSlotHeaderBytes + n)
    return false;
  uint8_t* slot = e_.outbound.slot(head_);
  uint8_t* result = slot + kSlotHeaderBytes;
  reduce::reduce(result, r.operand + r.offset, bytes, n / sizeOf(r.type), r.type, r.op);
  if (r.stream && r.operand != r.data) reduce::copyStreaming(r.data + r.offset, result, n);
  else std::memcpy(r.data + r.offset, result, n);
  SlotHeader h{kSlotMagic, SlotKind::inline_data, s.tag, s.bytes, s.offset, n, 0, 0, 0, 0};
  std::memcpy(slot, &h, sizeof h);
  s.offset += n;
  publishSlot();
  if (s.offset == s.bytes) {
    complete(s.cookie, Status::ok());
    sends_.pop_front();
    r.forward = nullptr;
  }
  return true;
}

bool ShmConnection::readDescribed(const SlotHeader& h, RecvRequest& r) {
  read_cma_ = true;
  size_t copied = 0;
  const uint8_t* message = nullptr;
  Status st = h.kind == SlotKind::mapped_descriptor ? mappedMessage(h, &message) : Status::ok();
  if (st && message) {
    copied = std::min(kCmaChunk, r.bytes - r.offset);  // copied, or combined, in one pass
    land(r, message + r.offset, copied);
  } else if (st && r.operand) {
    st = readCmaReducing(h, r, &copied);
  } else if (st) {
    size_t chunk = std::min(kCmaChunk, r.bytes - r.offset);
    st = readFrom(h.cma_pid, h.cma_address + r.offset, r.data + r.offset, chunk, &copied, e_.peer);
  }
  if (!st) {
    fail(st);
    return false;
  }
  if (r.offset + copied == r.bytes) e_.inbound.control->cma_done.store(h.cma_sequence, kRelease);  // rung by releaseSlot()
  return received(r, copied);
}

// Where the peer's region cannot be mapped (but CMA works: the peer sends descriptors only
// then), *message stays null and this and later mapped descriptors are read by CMA: their
// cma_address is the message's.
Status ShmConnection::mappedMessage(const SlotHeader& h, const uint8_t** message) {
  if (map_failed_) return Status::ok();
  Status st = peer_regions_.find(h.region_fd, h.length, h.offset, h.bytes, message);
  if (st || st.code() == ErrorCode::PeerLost) return st;
  map_failed_ = true;
  *message = nullptr;
  COLL_INFO("SHM", "%s; reading its collMemAlloc memory by CMA instead", st.message().c_str());
  return Status::ok();
}

// One bounce-sized chunk: read it from the sender, then combine it while it is in cache.
Status ShmConnection::readCmaReducing(const SlotHeader& h, RecvRequest& r, size_t* copied) {
  if (bounce_.empty()) bounce_.resize(kCmaBounceBytes);
  size_t chunk = std::min(bounce_.size(), r.bytes - r.offset);
  Status st = readFrom(h.cma_pid, h.cma_address + r.offset, bounce_.data(), chunk, copied, e_.peer);
  size_t whole = *copied / sizeOf(r.type) * sizeOf(r.type);  // a torn element is read again
  land(r, bounce_.data(), whole);
  *copied = whole;
  return st;
}

void ShmConnection::releaseSlot() {
  e_.inbound.control->tail.store(++tail_, kRelease);
  ring(e_.peer_header, e_.wake_sender);  // the peer may wait for room or for its CMA send
}

}  // namespace coll::transport::shm
