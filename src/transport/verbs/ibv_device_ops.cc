#include "transport/verbs/ibv_device_ops.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/log.h"

namespace coll::transport::verbs {
namespace {

// RTS timing: local ACK timeout 4.096 µs * 2^14 ≈ 67 ms, 7 retries (the most the spec allows):
// a peer that vanished fails our writes with "retry exceeded" in about half a second. RNR
// retry 7 means "forever": a receive is always reposted, so RNR can only be momentary.
constexpr uint8_t kAckTimeout = 14, kRetryCount = 7, kRnrRetry = 7, kMinRnrTimer = 12;
constexpr uint8_t kHopLimit = 64;  // RoCE v2 may cross routers

Status errnoError(const std::string& what, int err) {
  return transportError(format("verbs: %s failed: %s", what.c_str(), std::strerror(err)));
}

// The GID to address this port by on RoCE: a RoCE v2 entry (routable) if the port has one,
// else the first non-zero entry. Index 0 on InfiniBand, where the LID is used instead.
int chooseGid(ibv_context* ctx, uint8_t port, const ibv_port_attr& pa, ibv_gid* gid) {
  int fallback = -1;
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx, port, i, &e, 0) != 0) continue;
    bool zero = std::all_of(e.gid.raw, e.gid.raw + 16, [](uint8_t b) { return b == 0; });
    if (zero) continue;
    if (e.gid_type == IBV_GID_TYPE_ROCE_V2) return std::memcpy(gid, &e.gid, sizeof *gid), i;
    if (fallback < 0) fallback = i, std::memcpy(gid, &e.gid, sizeof *gid);
  }
  return fallback < 0 ? 0 : fallback;
}

class IbvDevice : public VerbsDevice {
 public:
  ~IbvDevice() override;
  Status open(const DeviceChoice& choice, int cq_depth);
  std::string describe() const override { return format("%s port %d", name_.c_str(), port_); }
  Status registerMemory(void* addr, size_t bytes, bool remote_write, MemoryRegion* out) override;
  void deregisterMemory(const MemoryRegion& mr) override { ibv_dereg_mr(static_cast<ibv_mr*>(mr.handle)); }
  Status createQp(uint32_t max_send, uint32_t max_recv, uint32_t* qpn) override;
  void destroyQp(uint32_t qpn) override;
  Status localAddress(uint32_t qpn, uint32_t psn, QpAddress* out) override;
  Status modifyQp(uint32_t qpn, QpState from, QpState to, const QpAddress& remote) override;
  Status postSend(uint32_t qpn, const SendRequest& wr) override;
  Status postRecv(uint32_t qpn, uint64_t wr_id) override;
  int pollCq(WorkCompletion* out, int max, Status* error) override;

 private:
  struct Qp {
    ibv_qp* qp;
    uint32_t psn;
  };
  Status openContext(const DeviceChoice& choice);
  ibv_qp* find(uint32_t qpn) const {
    auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second.qp;
  }
  int fillAttributes(uint32_t attrs, uint32_t qpn, const QpAddress& remote, ibv_qp_attr* a) const;
  WorkCompletion translate(const ibv_wc& wc) const;

  std::string name_;
  uint8_t port_ = 1;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_port_attr port_attr_{};
  ibv_gid gid_{};
  int gid_index_ = 0;
  std::map<uint32_t, Qp> qps_;
};

IbvDevice::~IbvDevice() {
  for (auto& [qpn, q] : qps_) ibv_destroy_qp(q.qp);
  if (cq_) ibv_destroy_cq(cq_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

Status IbvDevice::openContext(const DeviceChoice& choice) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return errnoError("ibv_get_device_list", errno);
  for (int i = 0; i < n && !ctx_; ++i)
    if (choice.name == ibv_get_device_name(list[i])) ctx_ = ibv_open_device(list[i]);
  int err = errno;
  ibv_free_device_list(list);
  if (!ctx_) return errnoError("ibv_open_device(" + choice.name + ")", err);
  return Status::ok();
}

Status IbvDevice::open(const DeviceChoice& choice, int cq_depth) {
  name_ = choice.name;
  port_ = static_cast<uint8_t>(choice.port);
  COLL_RETURN_IF_ERROR(openContext(choice));
  if (ibv_query_port(ctx_, port_, &port_attr_) != 0) return errnoError("ibv_query_port(" + describe() + ")", errno);
  if (port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET) gid_index_ = chooseGid(ctx_, port_, port_attr_, &gid_);
  if (!(pd_ = ibv_alloc_pd(ctx_))) return errnoError("ibv_alloc_pd on " + describe(), errno);
  if (!(cq_ = ibv_create_cq(ctx_, cq_depth, nullptr, nullptr, 0)))
    return errnoError(format("ibv_create_cq of %d entries on %s", cq_depth, describe().c_str()), errno);
  return Status::ok();
}

Status IbvDevice::registerMemory(void* addr, size_t bytes, bool remote_write, MemoryRegion* out) {
  int access = remote_write ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;  // 0: read-only buffers work too
  ibv_mr* mr = ibv_reg_mr(pd_, addr, bytes, access);
  if (!mr)
    return errnoError(format("ibv_reg_mr of %s on %s (is `ulimit -l` large enough?)", formatBytes(bytes).c_str(),
                             describe().c_str()), errno);
  *out = MemoryRegion{mr, mr->lkey, mr->rkey};
  return Status::ok();
}

Status IbvDevice::createQp(uint32_t max_send, uint32_t max_recv, uint32_t* qpn) {
  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = max_send;
  init.cap.max_recv_wr = max_recv;
  init.cap.max_send_sge = 2;  // header + payload
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd_, &init);
  if (!qp) return errnoError(format("ibv_create_qp (RC, %u sends, %u receives) on %s", max_send, max_recv,
                                    describe().c_str()), errno);
  *qpn = qp->qp_num;
  qps_[qp->qp_num] = Qp{qp, 0};
  return Status::ok();
}

void IbvDevice::destroyQp(uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return;
  ibv_destroy_qp(it->second.qp);
  qps_.erase(it);
}

Status IbvDevice::localAddress(uint32_t qpn, uint32_t psn, QpAddress* out) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return internalError(format("verbs: no queue pair %#x on %s", qpn, describe().c_str()));
  it->second.psn = psn;
  *out = QpAddress{};
  out->lid = port_attr_.lid;
  std::memcpy(out->gid, gid_.raw, sizeof out->gid);
  out->qpn = qpn;
  out->psn = psn;
  out->mtu = static_cast<uint8_t>(port_attr_.active_mtu);
  return Status::ok();
}

// Sets exactly the attribute groups qp_state.h requires; returns the IBV_QP_* mask.
int IbvDevice::fillAttributes(uint32_t attrs, uint32_t qpn, const QpAddress& remote, ibv_qp_attr* a) const {
  int mask = 0;
  auto set = [&](uint32_t flag, int ibv_flag, auto fill) {
    if (attrs & flag) fill(), mask |= ibv_flag;
  };
  set(kAttrPkeyIndex, IBV_QP_PKEY_INDEX, [&] { a->pkey_index = 0; });
  set(kAttrPort, IBV_QP_PORT, [&] { a->port_num = port_; });
  set(kAttrAccessFlags, IBV_QP_ACCESS_FLAGS,
      [&] { a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE; });
  set(kAttrPathMtu, IBV_QP_PATH_MTU, [&] {
    int theirs = remote.mtu ? int{remote.mtu} : int{IBV_MTU_1024};
    a->path_mtu = static_cast<ibv_mtu>(std::min<int>(port_attr_.active_mtu, theirs));
  });
  set(kAttrDestQpn, IBV_QP_DEST_QPN, [&] { a->dest_qp_num = remote.qpn; });
  set(kAttrRqPsn, IBV_QP_RQ_PSN, [&] { a->rq_psn = remote.psn; });
  set(kAttrMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC, [&] { a->max_dest_rd_atomic = 1; });
  set(kAttrMinRnrTimer, IBV_QP_MIN_RNR_TIMER, [&] { a->min_rnr_timer = kMinRnrTimer; });
  set(kAttrAddressVector, IBV_QP_AV, [&] {
    a->ah_attr.port_num = port_;
    a->ah_attr.dlid = remote.lid;
    if (port_attr_.link_layer != IBV_LINK_LAYER_ETHERNET) return;
    a->ah_attr.is_global = 1;
    std::memcpy(a->ah_attr.grh.dgid.raw, remote.gid, 16);
    a->ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
    a->ah_attr.grh.hop_limit = kHopLimit;
  });
  set(kAttrTimeout, IBV_QP_TIMEOUT, [&] { a->timeout = kAckTimeout; });
  set(kAttrRetryCount, IBV_QP_RETRY_CNT, [&] { a->retry_cnt = kRetryCount; });
  set(kAttrRnrRetry, IBV_QP_RNR_RETRY, [&] { a->rnr_retry = kRnrRetry; });
  set(kAttrSqPsn, IBV_QP_SQ_PSN, [&] { a->sq_psn = qps_.at(qpn).psn; });
  set(kAttrMaxQpRdAtomic, IBV_QP_MAX_QP_RD_ATOMIC, [&] { a->max_rd_atomic = 1; });
  return mask | IBV_QP_STATE;
}

Status IbvDevice::modifyQp(uint32_t qpn, QpState from, QpState to, const QpAddress& remote) {
  ibv_qp* qp = find(qpn);
  uint32_t attrs = requiredAttributes(from, to);
  if (!qp || attrs == 0)
    return internalError(format("verbs: queue pair %#x on %s cannot go from %s to %s", qpn, describe().c_str(),
                                toString(from), toString(to)));
  static const ibv_qp_state kIbv[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR};
  ibv_qp_attr a{};
  a.qp_state = kIbv[static_cast<int>(to)];
  int mask = fillAttributes(attrs, qpn, remote, &a);
  int err = ibv_modify_qp(qp, &a, mask);
  if (err != 0)
    return errnoError(format("ibv_modify_qp %s -> %s of queue pair %#x on %s (towards qp %#x)", toString(from),
                             toString(to), qpn, describe().c_str(), remote.qpn), err);
  return Status::ok();
}

Status IbvDevice::postSend(uint32_t qpn, const SendRequest& r) {
  ibv_qp* qp = find(qpn);
  if (!qp) return internalError(format("verbs: no queue pair %#x on %s", qpn, describe().c_str()));
  ibv_sge sge[2];
  for (int i = 0; i < r.num_sge; ++i) sge[i] = ibv_sge{r.sge[i].addr, r.sge[i].length, r.sge[i].lkey};
  ibv_send_wr wr{};
  wr.wr_id = r.wr_id;
  wr.sg_list = r.num_sge > 0 ? sge : nullptr;
  wr.num_sge = r.num_sge;
  wr.opcode = r.kind == SendRequest::writeImm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(r.imm);
  wr.wr.rdma.remote_addr = r.remote_addr;
  wr.wr.rdma.rkey = r.rkey;
  ibv_send_wr* bad = nullptr;
  int err = ibv_post_send(qp, &wr, &bad);
  if (err != 0) return errnoError(format("ibv_post_send on queue pair %#x of %s", qpn, describe().c_str()), err);
  return Status::ok();
}

Status IbvDevice::postRecv(uint32_t qpn, uint64_t wr_id) {
  ibv_qp* qp = find(qpn);
  if (!qp) return internalError(format("verbs: no queue pair %#x on %s", qpn, describe().c_str()));
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  ibv_recv_wr* bad = nullptr;
  int err = ibv_post_recv(qp, &wr, &bad);
  if (err != 0) return errnoError(format("ibv_post_recv on queue pair %#x of %s", qpn, describe().c_str()), err);
  return Status::ok();
}

// A failed completion's opcode is undefined (only wr_id, status and qp_num are): the caller
// tells sends from receives by wr_id, and `kind` is left at `sent`.
WorkCompletion IbvDevice::translate(const ibv_wc& wc) const {
  WorkCompletion out;
  out.wr_id = wc.wr_id;
  out.qpn = wc.qp_num;
  out.ok = wc.status == IBV_WC_SUCCESS;
  if (!out.ok) {
    out.flushed = wc.status == IBV_WC_WR_FLUSH_ERR;
    out.peer_unreachable = wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_RNR_RETRY_EXC_ERR;
    out.error = format("%s (status %d, vendor error %#x)", ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
    return out;
  }
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) out.kind = WorkCompletion::recvWriteImm;
  else if (wc.opcode == IBV_WC_RECV) out.kind = WorkCompletion::recvSendImm;
  if (wc.wc_flags & IBV_WC_WITH_IMM) out.imm = ntohl(wc.imm_data);
  out.byte_len = wc.byte_len;
  return out;
}

int IbvDevice::pollCq(WorkCompletion* out, int max, Status* error) {
  ibv_wc wcs[64];
  int n = ibv_poll_cq(cq_, std::min(max, 64), wcs);
  if (n < 0) {
    *error = transportError(format("ibv_poll_cq on %s returned %d", describe().c_str(), n));
    return -1;
  }
  for (int i = 0; i < n; ++i) out[i] = translate(wcs[i]);
  return n;
}

}  // namespace

Status openIbvDevice(const DeviceChoice& choice, int cq_depth, std::unique_ptr<VerbsDevice>* out) {
  auto dev = std::make_unique<IbvDevice>();
  COLL_RETURN_IF_ERROR(dev->open(choice, cq_depth));
  *out = std::move(dev);
  return Status::ok();
}

}  // namespace coll::transport::verbs
