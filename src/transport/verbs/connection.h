// A verbs Connection: one RC queue pair to one peer, written against VerbsDevice only, so it
// runs unchanged over libibverbs (ibv_device_ops.cc) and over the unit tests' fake NICs.
//
// Sending: a message is cut into chunks (flow_control.h's ChunkedSender). Each chunk is one
// RDMA write with immediate of SlotHeader + payload into the next of the peer's landing slots,
// gathered from our header slab and straight from the caller's buffer (registered through
// registration_cache.h, so a buffer reused op after op is pinned once). A chunk needs a credit;
// the peer hands slots back with credit sends once it copied them out. The send completes when
// its last write completed locally (the peer's NIC acknowledged every byte).
//
// Receiving: chunks land in our slots in order (RC), each consuming one buffer-less receive.
// They are checked as they arrive (message number, slot, offset: a peer that breaks the
// protocol fails the connection) and copied into the front posted receive, whose tag and
// length must match the message's (Mismatch otherwise). A slot is freed once copied out.
//
// Failure: the first one sticks. Every posted and later request completes with that Status;
// the peer is told with a goodbye while the queue pair still works. A goodbye from the peer
// fails sends at once and receives once nothing that arrived before it is left to match.
//
// Used by the progress thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/transport.h"
#include "transport/verbs/flow_control.h"
#include "transport/verbs/peer_card.h"
#include "transport/verbs/qp_state.h"
#include "transport/verbs/registration_cache.h"
#include "transport/verbs/slot_layout.h"
#include "transport/verbs/verbs_device.h"

namespace coll::transport::verbs {

struct ConnectionSetup {
  VerbsDevice* device = nullptr;
  RegistrationCache* cache = nullptr;  // send buffers; outlives the connection
  int self = -1;
  int peer = -1;
  uint32_t credits = 16;               // our landing slots for this peer
  uint32_t chunk_bytes = 128 << 10;    // payload per slot
  std::vector<Completion>* completions = nullptr;
};

class VerbsConnection : public Connection {
 public:
  explicit VerbsConnection(const ConnectionSetup& setup);
  ~VerbsConnection() override;  // destroys the QP, deregisters its memory, releases buffers
  VerbsConnection(const VerbsConnection&) = delete;
  VerbsConnection& operator=(const VerbsConnection&) = delete;

  // Creates the queue pair and the landing slots; *ours is what the peer needs from us.
  Status open(PeerCard* ours);
  // Walks the QP to RTS towards the peer's card (qp_state.h) and posts the receives.
  Status connectTo(const PeerCard& theirs);
  uint32_t qpn() const { return qpn_; }

  int peer() const override { return s_.peer; }
  std::string describe() const override;  // "peer 3 (verbs, mlx5_0 port 1, qp 0x1a2)"
  void postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  void postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;

  // A completion of this connection's QP, from the shared CQ.
  void onCompletion(const WorkCompletion& wc);
  // Posts the chunks credits allow and the credits owed; true if anything was posted.
  bool pump();
  void fail(const Status& status);
  bool failAlone(const Status& status) override {
    fail(status);
    return true;
  }
  // Tells the peer we are going, without waiting for delivery (once).
  void sayGoodbye(GoodbyeReason why);
  bool failed() const { return !failure_.isOk(); }
  // Sends still owned by the NIC (their buffers registered until the writes complete).
  bool sendsInFlight() const { return sq_outstanding_ > 0; }

 private:
  struct SendOp {
    uint64_t message;
    const char* data;
    size_t bytes;
    uint64_t tag;
    uint64_t cookie;
    const Registration* reg = nullptr;
    size_t chunks = 0;  // to complete: all of them; after a failure, the ones posted
    size_t posted = 0;
    size_t done = 0;    // completed by the NIC, successfully or not
    bool reported = false;
  };
  struct RecvOp {
    char* data;
    size_t bytes;
    uint64_t tag;
    uint64_t cookie;
    size_t received = 0;
  };
  struct Arrived {
    uint32_t slot;
    SlotHeader header;
    size_t payload;
    bool last;
  };

  Status allocateSlots();
  Status postRecvBuffer(uint64_t index);
  void postChunk(const ChunkWrite& w);
  bool postControl(uint32_t imm);
  void returnCredits();
  void onSent(const WorkCompletion& wc);
  void onChunk(const WorkCompletion& wc);
  void onControl(uint32_t imm);
  Status checkArrival(const ImmData& imm, const SlotHeader& h, uint32_t byte_len) const;
  void deliver();
  void consumeFront();
  void retireSends();
  void peerGone(Status why);
  void complete(uint64_t cookie, Status status);
  Status completionError(const WorkCompletion& wc, const char* what) const;
  char* slot(uint32_t i) const { return slots_.get() + static_cast<size_t>(i) * slotBytes(); }
  size_t slotBytes() const { return kSlotHeaderBytes + s_.chunk_bytes; }

  ConnectionSetup s_;
  uint32_t qpn_ = 0;
  QpStateMachine qp_;
  uint32_t psn_ = 0;
  PeerCard theirs_;

  struct FreeDelete {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, FreeDelete> slots_;   // ours: the peer writes chunks here
  std::unique_ptr<char, FreeDelete> headers_; // one SlotHeader per peer slot, gathered into writes
  MemoryRegion slots_mr_, headers_mr_;

  std::optional<ChunkedSender> sender_;
  std::deque<SendOp> sends_;  // in message order; leave once completed and off the NIC
  uint64_t next_send_message_ = 0;
  uint32_t sq_depth_ = 0, sq_outstanding_ = 0;

  CreditReturner returner_;
  uint32_t credits_owed_ = 0;  // taken from the returner, not yet posted (send queue full)
  std::deque<RecvOp> recvs_;
  std::deque<Arrived> arrived_;
  uint64_t arrive_message_ = 0;
  size_t arrive_offset_ = 0;
  uint32_t arrive_slot_ = 0;

  bool said_goodbye_ = false;
  Status gone_;     // the peer said goodbye
  Status failure_;  // the first error sticks
};

}  // namespace coll::transport::verbs
