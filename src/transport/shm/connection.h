// A shm Connection: one local peer, both directions, over two rings (see layout.h): the
// inbound one in this rank's segment (the peer writes, we read) and the outbound one in the
// peer's segment (we write, the peer reads).
//
// Sends are queued and copied into free outbound slots as they free up; an inline send
// completes once its last byte is in a slot. A send of at least the CMA threshold (when the
// peer could read our memory at init) puts only a descriptor in a slot and completes when the
// peer reports it read the data (cma_done), so its buffer must stay untouched until then, as
// for any send. A send of at least kMappedThreshold bytes from the sender's collMemAlloc memory
// (shared_memory.h), to a peer that could read our memory at init, goes the same way but the
// peer maps that memory and copies with memcpy (peer_regions.h). Receives are matched FIFO
// against the inbound slots; tag and length are checked on a message's first slot (Mismatch
// otherwise).
//
// The channel's controls are a hole until the pair first talks (layout.h): the first send
// either way reserves both and marks the pair in use; a receive waits for that mark, reading
// nothing before. Failing or closing marks the pair gone in our header.
//
// Used by the progress thread only. The first failure sticks: it completes every posted and
// later request with the same Status and tells the peer (gone bit, doorbell), whose
// requests then fail with PeerLost, as a closed socket would.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm/layout.h"
#include "transport/shm/peer_regions.h"
#include "transport/shm/segment.h"
#include "transport/shm/shared_memory.h"
#include "transport/shm/slot_copy_policy.h"
#include "transport/shm/timed_choice.h"
#include "transport/transport.h"

namespace coll::transport::shm {

struct Endpoints {
  int peer = -1;
  Ring inbound;                          // in our segment
  Ring outbound;                         // in the peer's segment
  SegmentHeader* peer_header = nullptr;  // its doorbell, aborted flag and bitmaps
  SegmentHeader* own_header = nullptr;   // our segment's: the peer marks in_use there
  uint32_t inbound_channel = 0;          // the channel's index in our segment
  uint32_t outbound_channel = 0;         // ... and ours in the peer's
  bool read_peer = false;                // our probe: we may read the peer's memory
  size_t cma_threshold = 0;              // 0: never use CMA for our sends
  bool cma_huge_only = false;            // ... and then only from huge pages (huge_pages.h)
  int wake_sender = -1;                  // our wake socket: rings the peer waiting in poll()
  bool parks = false;                    // both ends park idle receives (layout.h: parked, news)
};

class ShmConnection : public Connection {
 public:
  ShmConnection(const Endpoints& e, std::shared_ptr<const PeerProcess> process, std::vector<Completion>* completions);

  int peer() const override { return e_.peer; }
  std::string describe() const override;  // "peer 3 (same host, shm, cma)"
  void releaseIdleBuffers() override;
  void postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  // Each slot's payload, once copied in, is streamed on into `copy` from the slot (in cache).
  void postSendCopying(const void* data, void* copy, size_t bytes, uint64_t tag, uint64_t cookie) override;
  void postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  // Reduces straight out of the slots (and, for CMA messages, out of a bounce buffer in
  // cache-sized chunks): the receiver reads each byte once instead of copying it first.
  void postRecvReduce(void* data, const void* operand, size_t bytes, uint64_t tag, uint64_t cookie, DataType type,
                      ReduceOp op) override;
  // Each slot's worth of the result is combined straight into the next outbound slot where
  // the send is next in line and a slot is free (else into data, and sent from there later),
  // then copied to data: the result goes out from L1 instead of being read back from memory.
  void postRecvReduceForward(void* data, const void* operand, size_t bytes, uint64_t tag, uint64_t recv_cookie,
                             uint64_t send_cookie, DataType type, ReduceOp op) override;

  // Moves what can move now. True if anything did (a slot written or read, a send finished).
  bool poll();
  // The transport's list of connections with requests outstanding, the only ones its progress
  // polls: one with none has nothing to move (what its peer writes waits in the ring until a
  // receive is posted), so a local peer nobody talks to costs a rank's progress nothing. Every
  // post joins it; the transport drops a connection after a poll that left it idle (delist).
  void setActiveList(std::vector<ShmConnection*>* list) { active_list_ = list; }
  void delist() { listed_ = false; }
  // Where the pair parks receives (Endpoints::parks): after a poll that moved nothing, a
  // connection whose only requests are receives with nothing to read leaves the list and marks
  // its channel parked; the peer's next message (or its closing or abort) sets the channel's
  // news bit, and the transport resumes it. False where it has other work or something arrived.
  // Called after every poll; parks only after kParkAfterPolls polls in a row moved nothing, so
  // a pair exchanging messages keeps polling between them (parking at once cost a ping-pong
  // 0.15-0.2 us a message: the mark, the news and the resume each time).
  bool park(bool moved);
  bool parked() const { return parked_; }
  static constexpr uint32_t kParkAfterPolls = 256;
  void resume() { enlist(); }
  // For a connection with requests outstanding that made no progress: fails it if the peer
  // aborted or closed its end, or (check_process, a system call) its process died.
  void checkPeer(bool check_process);
  // Whether checkPeer() looks at anything: requests are outstanding and it has not failed.
  bool watched() const { return failure_.isOk() && !idle(); }
  bool idle() const { return sends_.empty() && cma_waiting_.empty() && recvs_.empty(); }
  // The peer's state whether or not requests are posted (a board op posts none): its abort,
  // its closing or (check_process) its death, as the Status this connection would fail with.
  Status peerStatus(bool check_process) const;
  // The oldest message the peer put in our inbound ring that no receive has started on.
  bool unreadMessage(uint64_t* tag, uint64_t* bytes) override;
  void fail(const Status& status);
  bool failAlone(const Status& status) override {
    fail(status);
    return true;
  }
  // This side is going away (transport destroyed): the peer's requests stop waiting for us.
  void close();
  void opBegins(uint64_t op_tag, uint64_t op_kind) override;
  void opEnds(uint64_t op_tag) override;

 private:
  // Most a receiver copies by CMA in one poll, so one large message does not starve the other
  // peers' channels (about 0.5 ms at memory bandwidth).
  static constexpr size_t kCmaChunk = 4 << 20;
  // A CMA send's copy to its second destination (postSendCopying) goes this much per poll, in
  // step with the peer reading the same bytes a kCmaChunk at a time.
  static constexpr size_t kOwnCopyPiece = kCmaChunk;
  static constexpr auto kAcquire = std::memory_order_acquire;
  static constexpr auto kRelease = std::memory_order_release;

  bool reserveSlot(size_t bytes);
  struct SendRequest {
    const uint8_t* data;
    size_t bytes;
    uint64_t tag;
    uint64_t cookie;
    bool cma;
    size_t ready;             // bytes that may be sent: less for a forward whose receive is under way
    size_t offset = 0;        // inline: bytes already in slots; CMA: bytes copied to copy_to
    uint64_t cma_sequence = 0;
    uint8_t* copy_to = nullptr;  // postSendCopying: the second destination of the bytes
    bool streamed = false;       // its slots written around the cache (slot_copy_policy.h)
    bool timed = false;          // ... and its time reported to the policy when written
    std::chrono::steady_clock::time_point first_slot;
    SharedMemory::Location region;  // fd >= 0: a mapped descriptor (cma is set too)
  };
  // An op as this connection sees it (opBegins to opEnds). A sender's whole buffers from
  // huge pages go one way for the whole op: its pieces are posted as the op goes and complete
  // one after another, so only the op's time says which way moved them faster. The op is timed
  // where nearly all its large sends could go either way: the 2 MiB pages at a buffer's ends
  // often hold other objects too, and stay small.
  struct OpWay {
    bool open = false;
    uint64_t tag = 0;
    bool chosen = false;     // the way of its first eligible send was picked
    bool cma = false;        // ... and it is CMA
    bool timed = false;      // its time goes to *way
    uint64_t kind = 0;       // Connection::opBegins
    TimedChoice* way = nullptr;  // ways_ of its kind, once a send asked
    size_t bytes = 0;        // of its eligible sends
    size_t other_bytes = 0;  // of its large sends that could not go by CMA (the pages at its ends)
    std::chrono::steady_clock::time_point start;
  };
  struct RecvRequest {
    uint8_t* data;
    size_t bytes;
    uint64_t tag;
    uint64_t cookie;
    size_t offset = 0;  // bytes received
    const uint8_t* operand = nullptr;  // set: data = operand op message (postRecvReduce)
    DataType type = DataType::u8;
    ReduceOp op = ReduceOp::sum;
    bool stream = false;  // write data around the caches (Connection::setStreamingReceives)
    SendRequest* forward = nullptr;  // in sends_: the send of the result (postRecvReduceForward)
  };

  // By a descriptor (mapped where *region is filled, else CMA), else through the slots.
  bool sendsByDescriptor(const void* data, size_t bytes, SharedMemory::Location* region);
  bool sendsByCma(const void* data, size_t bytes);
  bool pushSends(size_t max_slots = SIZE_MAX);  // true if it wrote a slot
  bool outboundFull();
  void publishSlot();  // the slot at head_ is written: hand it to the peer
  bool writeSlot(SendRequest& s);  // true when the request left the queue
  void chooseCopy(SendRequest& s);  // at its first slot: how it goes in, and whether it is timed
  bool copyBesideCma();  // true if it copied
  bool reapCmaSends();
  // True if it read a slot. inline_only (a receive being posted): stops at a descriptor, whose
  // read (up to kCmaChunk) is left to poll(). A receive's post that read its whole message
  // there kept the executor from posting the op's sends meanwhile: posting 8 receives of
  // 4 MiB read 32 MiB before the peer got a descriptor, and the two ranks of an in-place
  // all-gather from collMemAlloc memory took turns: 5.0 ms for 64 MiB, 2.7 in one slice.
  bool pullRecvs(size_t max_slots = SIZE_MAX, bool inline_only = false);
  bool readSlot(const SlotHeader& h, RecvRequest& r);  // true when the slot is done with
  bool readDescribed(const SlotHeader& h, RecvRequest& r);  // a CMA or mapped descriptor
  Status mappedMessage(const SlotHeader& h, const uint8_t** message);  // null: read it by CMA
  Status readCmaReducing(const SlotHeader& h, RecvRequest& r, size_t* copied);
  void land(RecvRequest& r, const uint8_t* bytes, size_t n);  // copy or combine at r.offset
  bool combineIntoOutbound(RecvRequest& r, const uint8_t* bytes, size_t n);  // false: land() it
  bool received(RecvRequest& r, size_t n);  // n more bytes landed: forwardable; true: r completed
  void landStreaming(RecvRequest& r, const uint8_t* bytes, size_t n);
  void releaseSlot();
  Status checkSlot(const SlotHeader& h, const RecvRequest& r) const;
  void complete(uint64_t cookie, Status status);
  bool start();  // reserves the controls at first use: false (and failed) where it cannot
  bool peerBegan();  // started, or the peer marked the pair in use (and now we start)
  bool usable() { return failure_.isOk() && start(); }
  void tellPeer();
  void enlist() {
    if (listed_ || !active_list_) return;
    if (parked_) {
      parked_ = false;
      e_.own_header->parked.clear(e_.inbound_channel);
    }
    listed_ = true;
    active_list_->push_back(this);
  }
  // Rings the peer; first, where it parks, tells it our channel has news if it parked it. After
  // what we published (the fence pairs with park()'s: it sees our message or we see its mark).
  void notifyPeer();
  std::string peerName() const;  // "peer 2 (pid 1234, same host)"
  bool peerClosed() const;

  Endpoints e_;
  std::shared_ptr<const PeerProcess> process_;  // shared with the other plane's connection (layout.h)
  std::vector<Completion>* completions_;
  int32_t self_pid_;       // goes into CMA descriptors
  bool cma_send_ = false;  // the peer may read our memory
  bool mapped_send_ = false;  // ... and so map our collMemAlloc memory
  bool map_failed_ = false;   // we could not map the peer's: its mapped descriptors are read by CMA
  PeerRegions peer_regions_;  // the peer's collMemAlloc memory we mapped
  std::deque<SendRequest> sends_;        // front is being written into slots
  std::deque<SendRequest> cma_waiting_;  // descriptors out, the peer has not read them yet
  std::deque<RecvRequest> recvs_;        // front is being filled
  std::vector<uint8_t> bounce_;          // CMA reads of reducing receives
  std::vector<uint8_t> combined_;        // streaming reducing receives combine here first
  uint64_t head_ = 0;       // outbound: slots we published
  uint64_t tail_seen_ = 0;  // outbound: the peer's tail, last read
  uint64_t cma_sent_ = 0;   // outbound: descriptors sent
  uint64_t tail_ = 0;       // inbound: slots we released
  uint64_t head_seen_ = 0;  // inbound: the peer's head, last read
  Status failure_;          // the first error sticks
  bool started_ = false;    // the controls are reserved (start)
  std::vector<uint32_t> reserved_;  // per outbound slot: how many of its bytes have pages (reserveSlot)
  SlotCopyPolicy copy_policy_;  // outbound: how large payloads go into slots
  TimedChoices ways_;           // outbound, large sends from huge pages: slots (first) or CMA (second), per kind of op
  OpWay op_;
  bool read_cma_ = false;       // poll(): the last slot read was a CMA piece
  std::vector<ShmConnection*>* active_list_ = nullptr;  // setActiveList
  bool listed_ = false;                                 // in it
  bool parked_ = false;                                 // out of it, our channel marked parked
  uint32_t still_polls_ = 0;                            // polls in a row that moved nothing
};

}  // namespace coll::transport::shm
