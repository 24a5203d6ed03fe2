#include "transport/ucx/connection.h"

#include <ucs/config/global_opts.h>

#include "base/log.h"
#include "base/wire_tag.h"
#include "transport/ucx/tag.h"
#include "transport/ucx/worker.h"

namespace coll::transport::ucx {
namespace {

// How long receives still wait for messages after the peer is known to be gone.
constexpr auto kGoneGrace = std::chrono::milliseconds(100);

bool meansPeerLost(ucs_status_t st) {
  return st == UCS_ERR_CONNECTION_RESET || st == UCS_ERR_ENDPOINT_TIMEOUT || st == UCS_ERR_UNREACHABLE ||
         st == UCS_ERR_CANCELED || st == UCS_ERR_REJECTED;
}

ucp_request_param_t requestParam(void* user) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = user;
  return p;
}

}  // namespace

UcxConnection::UcxConnection(const ConnectionSetup& setup) : s_(setup) {
  if (s_.watched_pid) process_.emplace(*s_.watched_pid);
}

UcxConnection::~UcxConnection() = default;  // the worker is gone by now: no callback can come

Status UcxConnection::open(const std::string& remote_address, Deadline deadline) {
  // A refusal here is expected (see below): keep UCX from logging it as an ERROR.
  ucs_log_level_t level = ucs_global_opts.log_component.log_level;
  if (s_.watched_pid) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
  ucs_status_t st = createEndpoint(remote_address, UCP_ERR_HANDLING_MODE_PEER);
  ucs_global_opts.log_component.log_level = level;
  // UCX 1.13's shared-memory transports cannot report a failed peer, and asking for that makes
  // them unreachable; on one kernel a pidfd watches the peer instead.
  if (st == UCS_ERR_UNREACHABLE && s_.watched_pid) st = createEndpoint(remote_address, UCP_ERR_HANDLING_MODE_NONE);
  if (st != UCS_OK) return ucxFailure("ucp_ep_create", st);
  return wireUp(deadline);
}

ucs_status_t UcxConnection::createEndpoint(const std::string& remote_address, ucp_err_handling_mode_t mode) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
  p.err_mode = mode;
  p.err_handler.cb = &UcxConnection::onEndpointError;
  p.err_handler.arg = this;
  return ucp_ep_create(s_.worker, &p, &ep_);
}

// UCX connects lazily, and finishing a connection takes both sides' progress (TCP's handshake,
// UCP's wire-up); a send queued inside UCP meanwhile would wait for this rank to call progress()
// again. So each side sends a hello when it opens the endpoint, and awaitReady() waits for both
// hellos (ours sent, the peer's received). The transport opens endpoints to every peer before
// awaiting any, so ranks that connect in different orders never wait for each other in a cycle.
Status UcxConnection::wireUp(Deadline) {
  static const char kHello[] = "hello";
  Pending* out = track(0, Pending::hello_out, kHello);
  out->reported = true;
  sendOwned(out, controlTag(s_.self, Control::hello));
  Pending* in = track(0, Pending::hello_in, std::string(sizeof kHello, '\0'));
  in->reported = true;
  ucp_request_param_t prm = requestParam(in);
  prm.cb.recv = &UcxConnection::onReceived;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(s_.worker, in->owned.data(), in->owned.size(),
                                        controlTag(s_.peer, Control::hello), kExactMask, &prm);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) finish(in, UCS_PTR_STATUS(r), in->owned.size());
  else in->request = r;
  return Status::ok();
}

Status UcxConnection::awaitReady(Deadline deadline) {
  while (hellos_ < 2 && failure_.isOk() && Clock::now() < deadline) ucp_worker_progress(s_.worker);
  if (!failure_.isOk()) return failure_;
  if (hellos_ < 2)
    return timeoutError(format("peer %d (%s) did not finish connecting (ucx hello %s) before the deadline", s_.peer,
                               s_.where.c_str(), hellos_ == 0 ? "neither way" : "one way"), s_.peer);
  return Status::ok();
}

Status UcxConnection::awaitRequest(void* request, Deadline deadline, const char* what) {
  if (UCS_PTR_IS_ERR(request)) return ucxFailure(what, UCS_PTR_STATUS(request));
  if (request == nullptr) return Status::ok();
  ucs_status_t st;
  while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS && Clock::now() < deadline)
    ucp_worker_progress(s_.worker);
  if (st == UCS_INPROGRESS) {
    ucp_request_cancel(s_.worker, request);
    while (ucp_request_check_status(request) == UCS_INPROGRESS && ucp_worker_progress(s_.worker)) {}
    ucp_request_free(request);
    return timeoutError(format("peer %d (%s): %s did not finish before the deadline", s_.peer, s_.where.c_str(), what),
                        s_.peer);
  }
  ucp_request_free(request);
  return st == UCS_OK ? Status::ok() : ucxFailure(what, st);
}

std::string UcxConnection::describe() const { return format("peer %d (%s, ucx)", s_.peer, s_.where.c_str()); }

Status UcxConnection::ucxFailure(const char* what, ucs_status_t st) const {
  std::string m = format("peer %d (%s): ucx %s failed: %s", s_.peer, s_.where.c_str(), what, ucsError(st).c_str());
  return meansPeerLost(st) ? peerLostError(m, s_.peer) : transportError(m, s_.peer);
}

void UcxConnection::complete(uint64_t cookie, Status status) {
  s_.completions->push_back(Completion{cookie, std::move(status)});
}

UcxConnection::Pending* UcxConnection::track(uint64_t cookie, Pending::Kind kind, std::string owned) {
  auto p = std::make_unique<Pending>(Pending{this, cookie, kind, std::move(owned)});
  Pending* raw = p.get();
  in_flight_.emplace(raw, std::move(p));
  return raw;
}

// --- sending -------------------------------------------------------------------------------

void UcxConnection::postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (failure_.isOk() && !gone_.isOk()) fail(gone_);
  if (!failure_.isOk()) return complete(cookie, failure_);
  Pending* p = track(cookie, Pending::send);
  ucp_request_param_t prm = requestParam(p);
  prm.cb.send = &UcxConnection::onSent;
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep_, data, bytes, dataTag(s_.self, tag), &prm);
  if (r == nullptr) return finish(p, UCS_OK, 0);
  if (UCS_PTR_IS_ERR(r)) return finish(p, UCS_PTR_STATUS(r), 0);
  p->request = r;
}

void UcxConnection::sendOwned(Pending* p, uint64_t ucp_tag) {
  ucp_request_param_t prm = requestParam(p);
  prm.cb.send = &UcxConnection::onSent;
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep_, p->owned.data(), p->owned.size(), ucp_tag, &prm);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) return finish(p, UCS_PTR_STATUS(r), 0);
  p->request = r;
}

void UcxConnection::sayGoodbye(const std::string& reason) {
  if (said_goodbye_ || !ep_ || !gone_.isOk()) return;  // a peer that is gone hears nothing
  said_goodbye_ = true;
  Pending* p = track(0, Pending::goodbye_out, reason.substr(0, 512));
  p->reported = true;
  sendOwned(p, controlTag(s_.self, Control::goodbye));
}

void UcxConnection::onSent(void* request, ucs_status_t status, void* user) {
  auto* p = static_cast<Pending*>(user);
  bool released = p->released;
  p->conn->finish(p, status, 0);
  if (!released) ucp_request_free(request);
}

// --- receiving -----------------------------------------------------------------------------

// Receives are posted to UCP at once, matching "the next data message from this peer" (tag.h),
// so UCP lands eager data straight in the user's buffer and starts a rendezvous the moment its
// request arrives, instead of parking both in its unexpected queue until a probe. UCP matches
// posted receives in order, so FIFO per peer holds; tag and length are checked on completion.
void UcxConnection::postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!failure_.isOk()) return complete(cookie, failure_);
  Pending* p = track(cookie, Pending::recv);
  p->expected_tag = tag;
  p->expected_bytes = bytes;
  ucp_request_param_t prm = requestParam(p);
  prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // the callback always runs, with the sender's tag
  prm.cb.recv = &UcxConnection::onReceived;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(s_.worker, data, bytes, dataTag(s_.peer, 0), kProbeMask, &prm);
  if (UCS_PTR_IS_ERR(r)) return finish(p, UCS_PTR_STATUS(r), 0);
  p->request = r;
}

// Posted receives that nothing arrived for after the peer went away fail, after a grace: UCX
// may report the loss (a reset connection) before it delivered the bytes that came ahead of it.
bool UcxConnection::poll() {
  if (failure_.isOk() && !gone_.isOk() && Clock::now() - gone_since_ >= kGoneGrace) {
    for (const auto& [raw, p] : in_flight_)
      if (p->kind == Pending::recv && !p->reported) {
        fail(gone_);
        return true;
      }
  }
  return false;
}

Status UcxConnection::checkMessage(const ucp_tag_recv_info_t& info, uint64_t tag, size_t bytes) const {
  uint64_t sent_tag = payloadOf(info.sender_tag);
  if (sent_tag == (tag & kPayloadMask) && info.length == bytes) return Status::ok();
  return messageMismatch(s_.peer, sent_tag, info.length, tag & kPayloadMask, bytes);
}

void UcxConnection::startRecv(Pending* p, void* data, size_t bytes, ucp_tag_message_h msg) {
  ucp_request_param_t prm = requestParam(p);
  prm.cb.recv = &UcxConnection::onReceived;
  ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(s_.worker, data, bytes, msg, &prm);
  if (r == nullptr) return finish(p, UCS_OK, bytes);
  if (UCS_PTR_IS_ERR(r)) return finish(p, UCS_PTR_STATUS(r), 0);
  p->request = r;
}

void UcxConnection::onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* p = static_cast<Pending*>(user);
  if (info) p->info = *info;
  bool released = p->released;
  p->conn->finish(p, status, info ? info->length : 0);
  if (!released) ucp_request_free(request);
}

// --- completion and failure ------------------------------------------------------------------

void UcxConnection::finish(Pending* p, ucs_status_t status, size_t received) {
  if ((p->kind == Pending::hello_out || p->kind == Pending::hello_in) && status == UCS_OK) ++hellos_;
  if ((p->kind == Pending::hello_out || p->kind == Pending::hello_in) && status != UCS_OK)
    fail(ucxFailure("hello", status));
  if (p->kind == Pending::goodbye_in && status == UCS_OK)
    peerGone(peerLostError(format("peer %d (%s) left: %s", s_.peer, s_.where.c_str(),
                                  p->owned.substr(0, received).c_str()), s_.peer));
  if (!p->reported && (p->kind == Pending::send || p->kind == Pending::recv)) {
    p->reported = true;
    Status st = status == UCS_OK ? Status::ok() : ucxFailure(p->kind == Pending::send ? "send" : "receive", status);
    if (p->kind == Pending::recv && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED))
      st = checkMessage(p->info, p->expected_tag, p->expected_bytes);
    if (p->kind == Pending::recv && st && status == UCS_ERR_MESSAGE_TRUNCATED)
      st = mismatchError(format("peer %d sent a message longer than the %zu bytes expected", s_.peer,
                                p->expected_bytes), s_.peer);
    complete(p->cookie, st);
    if (!st) fail(st);
  }
  in_flight_.erase(p);
}

void UcxConnection::checkPeer(bool check_process) {
  if (!failure_.isOk() || !gone_.isOk()) return;
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h msg = ucp_tag_probe_nb(s_.worker, controlTag(s_.peer, Control::goodbye), kExactMask, 1, &info);
  if (msg) {
    Pending* p = track(0, Pending::goodbye_in, std::string(info.length, '\0'));
    p->reported = true;
    startRecv(p, p->owned.data(), info.length, msg);
  }
  if (check_process && process_ && process_->gone() && gone_.isOk())
    peerGone(peerLostError(format("peer %d (%s) died", s_.peer, s_.where.c_str()), s_.peer));
}

void UcxConnection::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* c = static_cast<UcxConnection*>(arg);
  c->ep_failed_ = true;
  c->peerGone(c->ucxFailure("connection", status));
}

// Sends cannot finish any more; receives still get what arrived (poll() fails the first that
// finds nothing).
void UcxConnection::peerGone(Status why) {
  if (!gone_.isOk() || !failure_.isOk()) return;
  gone_ = std::move(why);
  gone_since_ = Clock::now();
  COLL_INFO("NET", "%s: %s", describe().c_str(), gone_.message().c_str());
  for (auto& [raw, p] : in_flight_) {
    if (p->kind != Pending::send || p->reported) continue;
    p->reported = true;
    complete(p->cookie, gone_);
  }
  poll();
}

void UcxConnection::fail(const Status& status) {
  if (!failure_.isOk()) return;
  failure_ = status;
  COLL_INFO("NET", "%s failed: %s", describe().c_str(), status.message().c_str());
  std::vector<void*> posted;
  for (auto& [raw, p] : in_flight_) {
    if (p->reported || (p->kind != Pending::send && p->kind != Pending::recv)) continue;
    p->reported = true;
    complete(p->cookie, status);
    if (p->kind == Pending::recv && p->request && !p->released) posted.push_back(p->request);
  }
  // A posted receive must not land in a buffer its owner is about to reuse. Cancelling may run
  // its callback at once (which erases it from in_flight_), hence after the loop.
  for (void* request : posted) ucp_request_cancel(s_.worker, request);
  sayGoodbye(status.message());  // the peer fails too, as if we had closed a socket
}

bool UcxConnection::busyWithOwnTraffic() const {
  for (const auto& [raw, p] : in_flight_)
    if (p->kind != Pending::send && p->kind != Pending::recv && p->kind != Pending::hello_in) return true;
  return false;
}

void UcxConnection::releaseRequests() {
  // A receive still posted (the p2p engine always has one per peer) would stay in UCX's
  // expected queue, which then warns at teardown that its request was never returned:
  // cancel it first. Cancelling may run its callback at once, hence after the loop.
  std::vector<void*> posted;
  for (auto& [raw, p] : in_flight_) {
    if (p->kind != Pending::recv || !p->request || p->released) continue;
    p->reported = true;
    posted.push_back(p->request);
  }
  for (void* request : posted) ucp_request_cancel(s_.worker, request);
  for (auto& [raw, p] : in_flight_) {
    if (!p->request || p->released) continue;
    p->released = true;
    p->reported = true;
    ucp_request_free(p->request);  // UCX frees it when it ends; the callback may still run
  }
}

void* UcxConnection::close(bool force) {
  if (!ep_) return nullptr;
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = (force || ep_failed_) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucp_ep_close_nbx(ep_, &prm);
  ep_ = nullptr;
  return UCS_PTR_IS_PTR(r) ? r : nullptr;
}

}  // namespace coll::transport::ucx
