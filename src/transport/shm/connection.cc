#include "transport/shm/connection.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "reduce/reduce.h"
#include "reduce/stream_copy.h"
#include "transport/shm/huge_pages.h"
#include "transport/shm/doorbell.h"

namespace coll::transport::shm {
namespace {

// Payloads at least this big are copied into slots with reduce::copyPrefetching: below it
// the source is likely in cache and memcpy's shorter start wins.
constexpr size_t kPrefetchingCopyBytes = 16 << 10;

void copyPayload(uint8_t* slot, const uint8_t* data, size_t n, bool streamed) {
  if (streamed) reduce::copyStreaming(slot, data, n);  // ends with a fence: visible before the slot's header
  else if (n >= kPrefetchingCopyBytes) reduce::copyPrefetching(slot, data, n);
  else std::memcpy(slot, data, n);
}

// A sender's whole buffers from huge pages go by CMA or through the slots, whichever timing
// finds faster (timed_choice.h): all of an op's one way, the op timed from opBegins to opEnds,
// which is what the caller waits for, each kind of op apart from the others (TimedChoices).
// Measured on this project's 2-vCPU VM, all-gather of 64 MiB on 2 ranks, out of place: cores
// far apart (a cache-line ping-pong of 0.5 us), CMA 3.7-4.2 ms and the slots 4.1-5.5; cores
// near (0.1 us), CMA 5.1-5.3 ms and the slots 3.4-4.6. Which state the VM is in changes every
// few seconds to minutes, as a cross-socket pair's does when the scheduler moves it. Every 64
// ops of a kind (about 0.25 s of 64 MiB all-gathers) 3 go the other way: at most about 1.5 % of
// the time where that way is a third slower.
constexpr TimedChoice::Rules kWayRules{1.0, 64, 3, 0, 3};
// An op is timed where at most 1/kWayOtherShare of its large sends' bytes had to take the slots.
constexpr size_t kWayOtherShare = 8;

// Sends at least this big from collMemAlloc memory go by a mapped descriptor: one memcpy by
// the receiver instead of two through the slots, for a round trip through the slots.
constexpr size_t kMappedThreshold = 64 << 10;

}  // namespace

ShmConnection::ShmConnection(const Endpoints& e, std::shared_ptr<const PeerProcess> process, std::vector<Completion>* completions)
    : e_(e),
      process_(std::move(process)),
      completions_(completions),
      self_pid_(e.own_header->owner_pid),  // getpid() at set-up: a system call a pair otherwise
      peer_regions_(process_->pid(), e.peer),
      ways_(kWayRules) {
  mapped_send_ = e_.peer_header->cma_readable.test(e_.outbound_channel);
  cma_send_ = e_.cma_threshold > 0 && mapped_send_;
  caps_.recv_reduce = true;
  caps_.send_copying = true;
  caps_.peeks = true;
  // CMA sends are read from data once the receive is done, so a forward, which sends what it
  // combines as it goes, keeps to the slots: below the CMA threshold where the user set one.
  // Huge pages are sought only for sends of whole buffers.
  caps_.forward_below = cma_send_ && !e_.cma_huge_only ? e_.cma_threshold : SIZE_MAX;
  // The counters start at 0 in a new segment; the peer's head is read when a receive waits.
  reserved_.assign(e_.outbound.nslots, 0);
}

// Sends reserve the pair's controls at once, receives once the peer has begun: a receive posted
// on a pair the peer never uses (the point-to-point engine posts one on every local peer)
// costs no memory.
bool ShmConnection::peerBegan() {
  return started_ || (e_.own_header->in_use.test(e_.inbound_channel) && start());
}

bool ShmConnection::start() {
  if (started_) return true;
  Status st = commitRange(e_.inbound.control, kControlBytes, format("the control of the channel from peer %d", e_.peer));
  if (st) st = commitRange(e_.outbound.control, kControlBytes, format("the control of the channel to peer %d", e_.peer));
  if (!st) {
    fail(st);
    return false;
  }
  started_ = true;
  e_.peer_header->in_use.set(e_.outbound_channel);
  return true;
}

std::string ShmConnection::describe() const {
  bool cma = cma_send_ && e_.read_peer;
  return format("peer %d (same host, shm, %s)", e_.peer, cma ? "cma" : cma_send_ || e_.read_peer ? "cma one way" : "slots");
}

std::string ShmConnection::peerName() const {
  return format("peer %d (pid %d, same host)", e_.peer, static_cast<int>(process_->pid()));
}

void ShmConnection::complete(uint64_t cookie, Status status) {
  completions_->push_back(Completion{cookie, std::move(status)});
}

void ShmConnection::postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!usable()) return complete(cookie, failure_);
  SendRequest s{static_cast<const uint8_t*>(data), bytes, tag, cookie, false, bytes};
  s.cma = sendsByDescriptor(data, bytes, &s.region);
  sends_.push_back(s);
  enlist();
  if (sends_.size() == 1) pushSends();
}

bool ShmConnection::sendsByDescriptor(const void* data, size_t bytes, SharedMemory::Location* region) {
  if (mapped_send_ && bytes >= kMappedThreshold && SharedMemory::process().find(data, bytes, region)) return true;
  return sendsByCma(data, bytes);
}

// Where the threshold is ours, not the user's: only from huge pages (huge_pages.h), and only
// where timing says CMA is faster (kWayRules). Which is faster is not the sender's to know: a
// sender with a core to spare copies into the slots while its receiver copies out, two cores
// on it (a 64 MiB broadcast's root on one host of 2 cores: 5.9 ms through the slots, 6.8 by
// CMA), but where other ranks want those cores the second copy is all cost (netcluster 2 x 2,
// 4 ranks on 2 cores: the chain broadcast of 64 MiB 56.0 ms with its root kept to the slots,
// 43.8 timed, 42.3 with every sender by CMA; docs/PERFORMANCE.md).
bool ShmConnection::sendsByCma(const void* data, size_t bytes) {
  if (!cma_send_ || bytes < e_.cma_threshold) return false;
  if (!e_.cma_huge_only) return true;  // the user's threshold: every message above it
  if (!HugePages::process().backs(data, bytes)) {
    op_.other_bytes += bytes;
    return false;
  }
  if (!op_.chosen) {
    op_.chosen = true;
    op_.way = &ways_.of(op_.kind);
    const bool was = op_.way->second();
    op_.cma = op_.way->pick(op_.open, &op_.timed);
    if (op_.cma != was)
      COLL_TRACE("SHM", "%s: large sends of ops of kind %016llx go %s now (median ns/byte: slots %.4f, CMA %.4f)",
                 describe().c_str(), static_cast<unsigned long long>(op_.kind),
                 op_.cma ? "by CMA" : "through the slots", op_.way->medianNsPerByte(false),
                 op_.way->medianNsPerByte(true));
  }
  op_.bytes += bytes;
  return op_.cma;
}

void ShmConnection::opBegins(uint64_t op_tag, uint64_t op_kind) {
  if (op_.open && op_.tag == op_tag) return;  // its other lane
  op_ = OpWay{};
  op_.open = true;
  op_.tag = op_tag;
  op_.kind = op_kind;
  if (cma_send_ && e_.cma_huge_only) op_.start = std::chrono::steady_clock::now();
}

void ShmConnection::opEnds(uint64_t op_tag) {
  if (!op_.open || op_.tag != op_tag) return;
  op_.open = false;
  if (!op_.timed || op_.other_bytes > op_.bytes / kWayOtherShare) return;
  op_.way->record(op_.cma, op_.bytes, std::chrono::steady_clock::now() - op_.start);
}

void ShmConnection::postSendCopying(const void* data, void* copy, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!usable()) return complete(cookie, failure_);
  // By CMA too: the copy goes a piece per poll while the peer reads the same bytes
  // (copyBesideCma), and the way is chosen once per send.
  SendRequest s{static_cast<const uint8_t*>(data), bytes, tag, cookie, false, bytes};
  s.cma = sendsByDescriptor(data, bytes, &s.region);
  s.copy_to = static_cast<uint8_t*>(copy);
  sends_.push_back(s);
  enlist();
  if (sends_.size() == 1) pushSends();
}

void ShmConnection::postRecvReduce(void* data, const void* operand, size_t bytes, uint64_t tag, uint64_t cookie,
                                   DataType type, ReduceOp op) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  RecvRequest r{static_cast<uint8_t*>(data), bytes, tag, cookie};
  r.operand = static_cast<const uint8_t*>(operand);
  r.type = type;
  r.op = op;
  r.stream = streaming_receives_;
  recvs_.push_back(r);
  enlist();
  if (recvs_.size() == 1) pullRecvs(SIZE_MAX, true);
}

void ShmConnection::postRecvReduceForward(void* data, const void* operand, size_t bytes, uint64_t tag,
                                          uint64_t recv_cookie, uint64_t send_cookie, DataType type, ReduceOp op) {
  if (!usable()) {
    complete(recv_cookie, failure_);
    return complete(send_cookie, failure_);
  }
  sends_.push_back(SendRequest{static_cast<const uint8_t*>(data), bytes, tag, send_cookie, false, 0});
  RecvRequest r{static_cast<uint8_t*>(data), bytes, tag, recv_cookie};
  r.operand = static_cast<const uint8_t*>(operand);
  r.type = type;
  r.op = op;
  r.stream = streaming_receives_;
  r.forward = &sends_.back();  // deque elements stay where they are while others come and go
  recvs_.push_back(r);
  enlist();
  if (recvs_.size() == 1) pullRecvs(SIZE_MAX, true);
}

void ShmConnection::postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  RecvRequest r{static_cast<uint8_t*>(data), bytes, tag, cookie};
  r.stream = streaming_receives_;
  recvs_.push_back(r);
  enlist();
  if (recvs_.size() == 1) pullRecvs(SIZE_MAX, true);
}

// Both directions a slot at a time. Writing until the ring was full before reading left the
// peer's slots unread meanwhile, and its writes then waited for ours to drain: the two sides of
// an exchange took turns instead of copying at once; so did a CMA read (30 us for 512 KiB)
// while the peer waited for our next descriptor. At most a ring's worth each way, and at most
// one CMA piece, per call: the caller polls other peers and transports, and checks for aborts
// and deadlines, between calls.
bool ShmConnection::poll() {
  if (!failure_.isOk()) return false;
  bool moved = reapCmaSends();
  const uint64_t turns = std::max<uint64_t>(e_.outbound.nslots, e_.inbound.nslots);
  for (uint64_t turn = 0; turn < turns; ++turn) {
    read_cma_ = false;
    bool step = pushSends(1);
    step |= copyBesideCma();
    step |= pullRecvs(1);
    if (!step) break;
    moved = true;
    if (read_cma_) break;
  }
  return moved;
}

// --- sending -------------------------------------------------------------------------------

bool ShmConnection::pushSends(size_t max_slots) {
  bool moved = false;
  for (size_t n = 0; n < max_slots && !sends_.empty() && failure_.isOk(); ++n) {
    const SendRequest& s = sends_.front();
    if (s.offset == s.ready && s.offset < s.bytes) break;  // a forward whose receive has not combined more
    if (outboundFull()) break;  // the peer rings us when it frees a slot
    const size_t writes = kSlotHeaderBytes + (s.cma ? 0 : std::min(s.ready - s.offset, e_.outbound.payloadBytes()));
    if (!reserveSlot(writes)) break;  // failed: the queue is empty now
    if (writeSlot(sends_.front())) sends_.pop_front();
    publishSlot();
    moved = true;
  }
  return moved;
}

bool ShmConnection::outboundFull() {
  if (head_ - tail_seen_ < e_.outbound.nslots) return false;
  tail_seen_ = e_.outbound.control->tail.load(kAcquire);
  return head_ - tail_seen_ >= e_.outbound.nslots;
}

void ShmConnection::publishSlot() {
  e_.outbound.control->head.store(++head_, kRelease);
  notifyPeer();
}

void ShmConnection::notifyPeer() {
  if (e_.parks) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (e_.peer_header->parked.test(e_.outbound_channel)) e_.peer_header->news.set(e_.outbound_channel);
  }
  ring(e_.peer_header, e_.wake_sender);
}

bool ShmConnection::writeSlot(SendRequest& s) {
  uint8_t* slot = e_.outbound.slot(head_);
  SlotHeader h{kSlotMagic, SlotKind::inline_data, s.tag, s.bytes, s.offset, 0, 0, 0, 0, 0};
  if (s.cma) {
    h.kind = SlotKind::cma_descriptor;
    h.cma_address = reinterpret_cast<uint64_t>(s.data);
    h.cma_sequence = s.cma_sequence = ++cma_sent_;
    h.cma_pid = self_pid_;
    if (s.region.fd >= 0) {
      h.kind = SlotKind::mapped_descriptor;
      h.offset = s.region.offset;
      h.length = s.region.id;
      h.region_fd = s.region.fd;
    }
    std::memcpy(slot, &h, sizeof h);
    if (!s.copy_to) s.offset = s.bytes;  // offset: how much of the copy to copy_to is made
    cma_waiting_.push_back(s);
    return true;
  }
  h.length = std::min<uint64_t>(s.ready - s.offset, e_.outbound.payloadBytes());
  if (s.offset == 0) chooseCopy(s);
  copyPayload(slot + kSlotHeaderBytes, s.data + s.offset, h.length, s.streamed);
  if (s.copy_to) {  // around the caches only where the op's buffers dwarf them, as receives do
    // From the slot while it is in the cache; a streamed slot is not, the source is as near.
    const uint8_t* from = s.streamed ? s.data + s.offset : slot + kSlotHeaderBytes;
    if (streaming_receives_) reduce::copyStreaming(s.copy_to + s.offset, from, h.length);
    else std::memcpy(s.copy_to + s.offset, from, h.length);
  }
  std::memcpy(slot, &h, sizeof h);
  s.offset += h.length;
  if (s.offset < s.bytes) return false;
  if (s.timed) copy_policy_.record(s.streamed, s.bytes, std::chrono::steady_clock::now() - s.first_slot);
  complete(s.cookie, Status::ok());  // every byte is in the ring: the buffer is free again
  return true;
}

// A message's first slot: how its payload goes in (slot_copy_policy.h).
void ShmConnection::chooseCopy(SendRequest& s) {
  s.streamed = copy_policy_.streams(s.bytes, s.ready == s.bytes, &s.timed);
  if (s.timed) s.first_slot = std::chrono::steady_clock::now();
}

// A piece of the copy a CMA send makes to copy_to (postSendCopying), as the peer reads. Where
// the two cores share a cache, the second read of a line may find it there. Where they do not
// (this VM's cores far apart), it measured the same as the whole copy at once: 4.4-5.0 ms for a
// 64 MiB all-gather on 2 ranks either way.
bool ShmConnection::copyBesideCma() {
  for (SendRequest& s : cma_waiting_) {
    if (s.offset == s.bytes) continue;
    const size_t n = std::min(kOwnCopyPiece, s.bytes - s.offset);
    if (streaming_receives_) reduce::copyStreaming(s.copy_to + s.offset, s.data + s.offset, n);
    else std::memcpy(s.copy_to + s.offset, s.data + s.offset, n);
    s.offset += n;
    return true;
  }
  return false;
}

bool ShmConnection::reapCmaSends() {
  if (cma_waiting_.empty()) return false;
  uint64_t done = e_.outbound.control->cma_done.load(kAcquire);
  bool moved = false;
  while (!cma_waiting_.empty() && cma_waiting_.front().cma_sequence <= done &&
         cma_waiting_.front().offset == cma_waiting_.front().bytes) {
    complete(cma_waiting_.front().cookie, Status::ok());
    cma_waiting_.pop_front();
    moved = true;
  }
  return moved;
}

// --- failure -------------------------------------------------------------------------------

void ShmConnection::checkPeer(bool check_process) {
  if (!watched()) return;
  Status st = peerStatus(check_process);
  if (st.isOk()) return;
  // A peer that closed may have written its last messages first: take them before failing.
  if (peerClosed() && !e_.peer_header->aborted.load(kAcquire) && (poll() || idle())) return;
  fail(st);
}

Status ShmConnection::peerStatus(bool check_process) const {
  if (!failure_.isOk()) return failure_;
  if (e_.peer_header->aborted.load(kAcquire)) {
    std::string reason(e_.peer_header->abort_reason, strnlen(e_.peer_header->abort_reason, kReasonBytes - 1));
    return peerLostError(format("%s aborted%s%s", peerName().c_str(), reason.empty() ? "" : ": ", reason.c_str()),
                         e_.peer);
  }
  if (peerClosed()) return peerLostError(format("%s closed the connection", peerName().c_str()), e_.peer);
  if (check_process && process_->gone()) return peerLostError(format("%s died", peerName().c_str()), e_.peer);
  return Status::ok();
}

bool ShmConnection::unreadMessage(uint64_t* tag, uint64_t* bytes) {
  // A peer that never used the pair wrote nothing: its control may not even have a page yet.
  if (!recvs_.empty() || !peerBegan() || e_.inbound.control->head.load(kAcquire) <= tail_) return false;
  const auto* h = reinterpret_cast<const SlotHeader*>(e_.inbound.slot(tail_));
  // A message's first slot; a mapped descriptor's offset is its place in the sender's region.
  if (h->magic != kSlotMagic || (h->kind == SlotKind::inline_data && h->offset != 0)) return false;
  *tag = h->tag;
  *bytes = h->bytes;
  return true;
}

bool ShmConnection::peerClosed() const { return e_.peer_header->gone.test(e_.outbound_channel); }

void ShmConnection::fail(const Status& status) {
  if (!failure_.isOk()) return;
  failure_ = status;
  COLL_INFO("SHM", "%s failed: %s", describe().c_str(), status.message().c_str());
  for (auto& s : sends_) complete(s.cookie, status);
  for (auto& s : cma_waiting_) complete(s.cookie, status);
  for (auto& r : recvs_) complete(r.cookie, status);
  sends_.clear();
  cma_waiting_.clear();
  recvs_.clear();
  tellPeer();
}

void ShmConnection::close() {
  if (failure_.isOk()) tellPeer();
}

void ShmConnection::tellPeer() {
  e_.own_header->gone.set(e_.inbound_channel);
  notifyPeer();
}

bool ShmConnection::park(bool moved) {
  if (!e_.parks) return false;
  if (moved) {
    still_polls_ = 0;
    return false;
  }
  if (++still_polls_ < kParkAfterPolls) return false;
  still_polls_ = 0;
  if (!failure_.isOk() || recvs_.empty() || !sends_.empty() || !cma_waiting_.empty()) return false;
  e_.own_header->parked.set(e_.inbound_channel);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // The peer's first use marks the pair in use before its first message; later ones move head.
  const bool arrived = started_ ? e_.inbound.control->head.load(kAcquire) != tail_
                                : e_.own_header->in_use.test(e_.inbound_channel);
  if (arrived || e_.peer_header->aborted.load(kAcquire) || peerClosed()) {
    e_.own_header->parked.clear(e_.inbound_channel);
    return false;
  }
  parked_ = true;
  listed_ = false;
  return true;
}

}  // namespace coll::transport::shm
