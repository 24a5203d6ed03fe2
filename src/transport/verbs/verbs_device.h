// The verbs calls the RC data path makes, behind one small interface, so the protocol above
// it (connection.h, verbs_transport.h) is written once and unit-tested over an in-memory fake
// (tests/unit/fake_verbs_device.h) on machines without an RDMA device. ibv_device_ops.cc is
// the real implementation over libibverbs; nothing else in coll includes <infiniband/verbs.h>
// for the data path.
//
// One VerbsDevice is one opened device: a protection domain and one completion queue that
// every queue pair of the transport shares (sends and receives alike), polled by the progress
// thread. Queue pairs are named by their QP number. Not thread-safe: the progress thread owns
// it (abort() in other threads only sets a flag).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "transport/verbs/qp_state.h"

namespace coll::transport::verbs {

// What the peer needs to reach one of our queue pairs (RoCE: the GID; InfiniBand: the LID).
struct QpAddress {
  uint16_t lid = 0;
  uint8_t gid[16] = {};
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the first packet sequence number this side sends (24 bits)
  uint8_t mtu = 0;   // ibv_mtu enum value of the port: the two sides agree on the smaller
};

struct MemoryRegion {
  void* handle = nullptr;  // the ibv_mr
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct Sge {
  uintptr_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// One send-queue work request, always signaled. writeImm: RDMA write of the gathered bytes to
// (remote_addr, rkey) that also consumes one receive on the peer and reports `imm` there;
// sendImm: zero-byte send whose only payload is `imm` (control messages).
struct SendRequest {
  enum Kind { writeImm, sendImm } kind = writeImm;
  uint64_t wr_id = 0;
  Sge sge[2];
  int num_sge = 0;
  uintptr_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
};

struct WorkCompletion {
  enum Kind { sent, recvWriteImm, recvSendImm } kind = sent;
  uint64_t wr_id = 0;
  uint32_t qpn = 0;
  bool ok = true;
  bool flushed = false;    // the QP was in error: the request never ran
  std::string error;       // the device's words for a failure, e.g. "transport retry counter exceeded"
  bool peer_unreachable = false;  // retry / RNR retry exceeded: the peer is gone or not listening
  uint32_t imm = 0;
  uint32_t byte_len = 0;   // receives: bytes the peer wrote
};

class VerbsDevice {
 public:
  virtual ~VerbsDevice() = default;
  // "mlx5_0 port 1" / "fake nic 0"
  virtual std::string describe() const = 0;

  virtual Status registerMemory(void* addr, size_t bytes, bool remote_write, MemoryRegion* out) = 0;
  virtual void deregisterMemory(const MemoryRegion& mr) = 0;

  // An RC queue pair in RESET on the shared CQ; *qpn names it from now on.
  virtual Status createQp(uint32_t max_send, uint32_t max_recv, uint32_t* qpn) = 0;
  virtual void destroyQp(uint32_t qpn) = 0;
  // Our side's address of `qpn` with `psn` as its first sequence number.
  virtual Status localAddress(uint32_t qpn, uint32_t psn, QpAddress* out) = 0;
  // One legal step of qp_state.h; RTR and RTS use `remote` (the peer's address).
  virtual Status modifyQp(uint32_t qpn, QpState from, QpState to, const QpAddress& remote) = 0;

  virtual Status postSend(uint32_t qpn, const SendRequest& wr) = 0;
  // A receive with no buffer: it only absorbs one incoming writeImm / sendImm.
  virtual Status postRecv(uint32_t qpn, uint64_t wr_id) = 0;
  // Up to `max` completions into out; returns how many, or -1 (then *error says why).
  virtual int pollCq(WorkCompletion* out, int max, Status* error) = 0;
};

}  // namespace coll::transport::verbs
