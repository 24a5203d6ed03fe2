// An in-memory RDMA fabric for the verbs transport's unit tests: any number of fake NICs in
// one process. An RDMA write with immediate copies the gathered bytes into the peer's
// registered memory and posts a completion carrying the immediate on the peer's CQ (after a
// receive of the peer's absorbed it: with none posted it waits, like an RNR retry); a send
// with immediate does the same without data. Keys, ranges, access rights, QP states and queue
// depths are checked the way a NIC would, so the protocol's bookkeeping is tested too.
//
// Errors can be injected per NIC: the n-th next send fails with a given completion error,
// moving the QP to ERROR and flushing what is posted on it, as hardware does.
//
// Thread-safe (one mutex for the whole fabric): tests drive two transports from two threads.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "transport/verbs/verbs_device.h"

namespace coll::transport::verbs::fake {

class FakeNic;

class FakeFabric {
 public:
  // A NIC for a transport to own; *nic stays usable (for injections, counters) while it lives.
  std::unique_ptr<VerbsDevice> addNic(const std::string& name, FakeNic** nic);

 private:
  friend class FakeNic;
  struct Mr {
    FakeNic* nic;
    uintptr_t addr;
    size_t bytes;
    bool remote_write;
  };
  struct Qp {
    FakeNic* nic;
    uint32_t qpn;
    QpState state = QpState::reset;
    uint32_t psn = 0;
    uint32_t remote_qpn = 0;
    uint32_t max_send, max_recv;
    uint32_t sends_outstanding = 0;     // posted, completion not yet polled
    std::deque<uint64_t> recvs;         // posted receives
    std::deque<SendRequest> rnr;        // arrived with no receive posted: replayed on postRecv
    std::deque<uint32_t> rnr_from;      // their senders' QPs
  };

  std::mutex mu_;
  std::map<uint32_t, Mr> mrs_;  // by key (lkey == rkey)
  std::map<uint32_t, Qp> qps_;
  uint32_t next_key_ = 0x100;
  uint32_t next_qpn_ = 0x40;
};

class FakeNic : public VerbsDevice {
 public:
  FakeNic(FakeFabric* fabric, std::string name) : fabric_(fabric), name_(std::move(name)) {}
  ~FakeNic() override;

  // The send after `after_ok` more successful ones completes with `why`.
  void failSend(int after_ok, std::string why, bool peer_unreachable);
  int registrations() const { return registrations_; }

  std::string describe() const override { return "fake nic " + name_; }
  Status registerMemory(void* addr, size_t bytes, bool remote_write, MemoryRegion* out) override;
  void deregisterMemory(const MemoryRegion& mr) override;
  Status createQp(uint32_t max_send, uint32_t max_recv, uint32_t* qpn) override;
  void destroyQp(uint32_t qpn) override;
  Status localAddress(uint32_t qpn, uint32_t psn, QpAddress* out) override;
  Status modifyQp(uint32_t qpn, QpState from, QpState to, const QpAddress& remote) override;
  Status postSend(uint32_t qpn, const SendRequest& wr) override;
  Status postRecv(uint32_t qpn, uint64_t wr_id) override;
  int pollCq(WorkCompletion* out, int max, Status* error) override;

 private:
  using Qp = FakeFabric::Qp;
  Qp* qp(uint32_t qpn);
  void execute(Qp& from, Qp& to, const SendRequest& wr);
  bool copyGather(const SendRequest& wr, std::string* why);
  void failQp(Qp& q, uint64_t wr_id, const std::string& why, bool unreachable);  // a send failed

  FakeFabric* fabric_;
  std::string name_;
  struct Entry {
    WorkCompletion wc;
    bool send;  // a failed completion's kind is undefined: the fake remembers what it was
  };
  void push(const WorkCompletion& wc, bool send) { cq_.push_back(Entry{wc, send}); }
  std::deque<Entry> cq_;
  int registrations_ = 0;
  int fail_after_ = -1;
  std::string fail_why_;
  bool fail_unreachable_ = false;
};

}  // namespace coll::transport::verbs::fake
