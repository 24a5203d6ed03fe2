#include "unit/fake_verbs_device.h"

#include <cstring>

#include "base/log.h"

namespace coll::transport::verbs::fake {

std::unique_ptr<VerbsDevice> FakeFabric::addNic(const std::string& name, FakeNic** nic) {
  auto n = std::make_unique<FakeNic>(this, name);
  *nic = n.get();
  return n;
}

FakeNic::~FakeNic() {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  std::erase_if(fabric_->qps_, [this](const auto& kv) { return kv.second.nic == this; });
  std::erase_if(fabric_->mrs_, [this](const auto& kv) { return kv.second.nic == this; });
}

void FakeNic::failSend(int after_ok, std::string why, bool peer_unreachable) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  fail_after_ = after_ok;
  fail_why_ = std::move(why);
  fail_unreachable_ = peer_unreachable;
}

Status FakeNic::registerMemory(void* addr, size_t bytes, bool remote_write, MemoryRegion* out) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  uint32_t key = fabric_->next_key_++;
  fabric_->mrs_[key] = FakeFabric::Mr{this, reinterpret_cast<uintptr_t>(addr), bytes, remote_write};
  ++registrations_;
  *out = MemoryRegion{reinterpret_cast<void*>(uintptr_t{key}), key, key};
  return Status::ok();
}

void FakeNic::deregisterMemory(const MemoryRegion& mr) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  fabric_->mrs_.erase(mr.lkey);
}

Status FakeNic::createQp(uint32_t max_send, uint32_t max_recv, uint32_t* qpn) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  *qpn = fabric_->next_qpn_++;
  fabric_->qps_.emplace(*qpn, Qp{this, *qpn, QpState::reset, 0, 0, max_send, max_recv});
  return Status::ok();
}

void FakeNic::destroyQp(uint32_t qpn) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  fabric_->qps_.erase(qpn);
}

FakeNic::Qp* FakeNic::qp(uint32_t qpn) {
  auto it = fabric_->qps_.find(qpn);
  return it == fabric_->qps_.end() || it->second.nic != this ? nullptr : &it->second;
}

Status FakeNic::localAddress(uint32_t qpn, uint32_t psn, QpAddress* out) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  Qp* q = qp(qpn);
  if (!q) return internalError(format("fake: no qp %#x", qpn));
  q->psn = psn;
  *out = QpAddress{};
  out->lid = static_cast<uint16_t>(qpn);
  out->gid[15] = 0xfa;
  out->qpn = qpn;
  out->psn = psn;
  out->mtu = 5;
  return Status::ok();
}

// Checks what a NIC would: a legal step from the state the QP is really in, and at RTR an
// address that matches the peer QP's own (so card encoding bugs show up here).
Status FakeNic::modifyQp(uint32_t qpn, QpState from, QpState to, const QpAddress& remote) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  Qp* q = qp(qpn);
  if (!q || q->state != from || requiredAttributes(from, to) == 0)
    return transportError(format("fake: modify qp %#x %s -> %s refused", qpn, toString(from), toString(to)));
  if (to == QpState::rtr) {
    auto it = fabric_->qps_.find(remote.qpn);
    if (it == fabric_->qps_.end() || it->second.psn != remote.psn || remote.lid != static_cast<uint16_t>(remote.qpn) ||
        remote.gid[15] != 0xfa || remote.mtu != 5)
      return transportError(format("fake: qp %#x: remote address (qp %#x) does not match any qp", qpn, remote.qpn));
    q->remote_qpn = remote.qpn;
  }
  q->state = to;
  return Status::ok();
}

// Moves the QP to ERROR: this request fails with `why`, posted receives are flushed.
void FakeNic::failQp(Qp& q, uint64_t wr_id, const std::string& why, bool unreachable) {
  q.state = QpState::error;
  WorkCompletion wc;
  wc.wr_id = wr_id;
  wc.qpn = q.qpn;
  wc.ok = false;
  wc.error = why;
  wc.peer_unreachable = unreachable;
  push(wc, true);
  for (uint64_t r : q.recvs) {
    WorkCompletion f;
    f.wr_id = r;
    f.qpn = q.qpn;
    f.ok = false;
    f.flushed = true;
    f.error = "Work Request Flushed Error";
    push(f, false);
  }
  q.recvs.clear();
}

Status FakeNic::postSend(uint32_t qpn, const SendRequest& wr) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  Qp* q = qp(qpn);
  if (!q) return transportError(format("fake: post_send on unknown qp %#x", qpn));
  if (q->state != QpState::rts && q->state != QpState::error)
    return transportError(format("fake: post_send on qp %#x in %s", qpn, toString(q->state)));
  if (q->sends_outstanding >= q->max_send)
    return transportError(format("fake: send queue of qp %#x overflows (%u entries)", qpn, q->max_send));
  ++q->sends_outstanding;
  if (q->state == QpState::error) return failQp(*q, wr.wr_id, "Work Request Flushed Error", false), Status::ok();
  if (fail_after_ == 0) {
    fail_after_ = -1;
    failQp(*q, wr.wr_id, fail_why_, fail_unreachable_);
    return Status::ok();
  }
  if (fail_after_ > 0) --fail_after_;
  auto to = fabric_->qps_.find(q->remote_qpn);
  if (to == fabric_->qps_.end() || (to->second.state != QpState::rtr && to->second.state != QpState::rts)) {
    failQp(*q, wr.wr_id, "transport retry counter exceeded", true);
    return Status::ok();
  }
  if (to->second.recvs.empty()) {  // RNR: the peer NIC NAKs; ours retries once a receive is there
    to->second.rnr.push_back(wr);
    to->second.rnr_from.push_back(qpn);
    return Status::ok();
  }
  execute(*q, to->second, wr);
  return Status::ok();
}

bool FakeNic::copyGather(const SendRequest& wr, std::string* why) {
  size_t total = 0;
  for (int i = 0; i < wr.num_sge; ++i) total += wr.sge[i].length;
  if (wr.kind == SendRequest::sendImm) return total == 0 || (*why = "sends carry no payload here", false);
  auto dst = fabric_->mrs_.find(wr.rkey);
  if (dst == fabric_->mrs_.end() || !dst->second.remote_write || wr.remote_addr < dst->second.addr ||
      wr.remote_addr + total > dst->second.addr + dst->second.bytes)
    return *why = "remote access error", false;
  uintptr_t at = wr.remote_addr;
  for (int i = 0; i < wr.num_sge; ++i) {
    auto src = fabric_->mrs_.find(wr.sge[i].lkey);
    if (src == fabric_->mrs_.end() || src->second.nic != this || wr.sge[i].addr < src->second.addr ||
        wr.sge[i].addr + wr.sge[i].length > src->second.addr + src->second.bytes)
      return *why = "local protection error", false;
    std::memcpy(reinterpret_cast<void*>(at), reinterpret_cast<const void*>(wr.sge[i].addr), wr.sge[i].length);
    at += wr.sge[i].length;
  }
  return true;
}

// The peer has a receive posted: the bytes land, then both sides see their completion.
void FakeNic::execute(Qp& from, Qp& to, const SendRequest& wr) {
  std::string why;
  if (!copyGather(wr, &why)) return from.nic->failQp(from, wr.wr_id, why, false);
  WorkCompletion in;
  in.kind = wr.kind == SendRequest::writeImm ? WorkCompletion::recvWriteImm : WorkCompletion::recvSendImm;
  in.wr_id = to.recvs.front();
  to.recvs.pop_front();
  in.qpn = to.qpn;
  in.imm = wr.imm;
  for (int i = 0; i < wr.num_sge && wr.kind == SendRequest::writeImm; ++i) in.byte_len += wr.sge[i].length;
  to.nic->push(in, false);
  WorkCompletion out;
  out.wr_id = wr.wr_id;
  out.qpn = from.qpn;
  from.nic->push(out, true);
}

Status FakeNic::postRecv(uint32_t qpn, uint64_t wr_id) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  Qp* q = qp(qpn);
  if (!q) return transportError(format("fake: post_recv on unknown qp %#x", qpn));
  if (q->recvs.size() >= q->max_recv)
    return transportError(format("fake: receive queue of qp %#x overflows (%u entries)", qpn, q->max_recv));
  q->recvs.push_back(wr_id);
  while (!q->rnr.empty() && !q->recvs.empty()) {
    SendRequest wr = q->rnr.front();
    uint32_t from = q->rnr_from.front();
    q->rnr.pop_front();
    q->rnr_from.pop_front();
    auto it = fabric_->qps_.find(from);
    if (it != fabric_->qps_.end()) it->second.nic->execute(it->second, *q, wr);
  }
  return Status::ok();
}

int FakeNic::pollCq(WorkCompletion* out, int max, Status*) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  int n = 0;
  for (; n < max && !cq_.empty(); ++n) {
    out[n] = cq_.front().wc;
    Qp* q = qp(out[n].qpn);
    if (q && cq_.front().send) --q->sends_outstanding;
    cq_.pop_front();
  }
  return n;
}

}  // namespace coll::transport::verbs::fake
