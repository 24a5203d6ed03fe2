// A ucx Connection: one UCP endpoint to one peer, messages on the tag API (tag.h).
//
// Sends go out at once (ucp_tag_send_nbx); UCP picks eager or rendezvous by size, and for
// rendezvous registers the buffer through its own registration cache, so large messages move
// zero-copy (CMA on one host, RDMA where there is a NIC) without coll mapping memory itself.
// Receives are posted to UCP at once for the next data message from the peer (UCP keeps them
// in order: FIFO); its tag and length are checked when it completes (Mismatch names both).
//
// Losing the peer: UCP's endpoint error (a reset TCP connection), the peer's goodbye (it closed
// or aborted: a control message), or its process gone (pidfd, same kernel). Messages that
// arrived before are still delivered; sends outstanding fail with PeerLost at once, and the first
// receive that finds nothing left to match 100 ms later. The first failure sticks.
//
// Used by the progress thread only.
#pragma once

#include <ucp/api/ucp.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/shm/segment.h"  // PeerProcess
#include "transport/transport.h"

namespace coll::transport::ucx {

struct ConnectionSetup {
  ucp_worker_h worker = nullptr;
  int self = -1;
  int peer = -1;
  std::string where;                 // "same kernel, pid 1234" / "remote host"
  std::optional<pid_t> watched_pid;  // set when a pidfd can watch the peer
  std::vector<Completion>* completions = nullptr;
};

class UcxConnection : public Connection {
 public:
  explicit UcxConnection(const ConnectionSetup& setup);
  ~UcxConnection() override;
  // Creates the endpoint from the peer's worker address and starts the hello exchange.
  Status open(const std::string& remote_address, Deadline deadline);
  // Until our hello left and the peer's arrived: UCX's connection is then complete both ways,
  // and later small sends go straight to the wire. The peer must be connecting to us too.
  Status awaitReady(Deadline deadline);

  int peer() const override { return s_.peer; }
  std::string describe() const override;  // "peer 3 (remote host, ucx)"
  void postSend(const void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;
  void postRecv(void* data, size_t bytes, uint64_t tag, uint64_t cookie) override;

  // Fails the receives still posted once the peer is gone (after a grace); true if it did.
  bool poll();
  // While idle: looks for the peer's goodbye and (check_process) whether its process died.
  void checkPeer(bool check_process);
  // Tells the peer we are going (it fails what waits for us) without waiting for delivery.
  void sayGoodbye(const std::string& reason);
  void fail(const Status& status);
  bool failAlone(const Status& status) override {
    fail(status);
    return true;
  }
  // Starts closing the endpoint (force: without flushing). Returns the UCP request to wait
  // for, or nullptr when already closed.
  void* close(bool force);
  bool failed() const { return !failure_.isOk(); }
  // Still moving bytes of its own (a goodbye, a mismatched message being drained): closing
  // the endpoint under a running rendezvous trips UCX's assertions.
  bool busyWithOwnTraffic() const;
  bool peerGoneOrFailed() const { return !failure_.isOk() || !gone_.isOk(); }
  // Closing: hands every unfinished UCP request back to UCX, which must not find any at
  // ucp_worker_destroy; nothing is reported for them any more.
  void releaseRequests();

 private:
  struct Pending {
    UcxConnection* conn;
    uint64_t cookie;
    enum Kind { send, recv, hello_out, hello_in, goodbye_out, goodbye_in, discard } kind;
    std::string owned;  // goodbye text, or a mismatched message being drained
    bool reported = false;
    void* request = nullptr;  // UCP's, while it runs
    bool released = false;    // handed back to UCP before it ended (closing)
    uint64_t expected_tag = 0;   // recv: what the op posted
    size_t expected_bytes = 0;
    ucp_tag_recv_info_t info{};  // recv: what arrived
  };

  static void onSent(void* request, ucs_status_t status, void* user);
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  Pending* track(uint64_t cookie, Pending::Kind kind, std::string owned = {});
  void finish(Pending* p, ucs_status_t status, size_t received);
  void sendOwned(Pending* p, uint64_t ucp_tag);
  ucs_status_t createEndpoint(const std::string& remote_address, ucp_err_handling_mode_t mode);
  Status wireUp(Deadline deadline);
  Status awaitRequest(void* request, Deadline deadline, const char* what);
  void startRecv(Pending* p, void* data, size_t bytes, ucp_tag_message_h msg);
  Status checkMessage(const ucp_tag_recv_info_t& info, uint64_t tag, size_t bytes) const;
  void peerGone(Status why);
  void complete(uint64_t cookie, Status status);
  Status ucxFailure(const char* what, ucs_status_t status) const;

  ConnectionSetup s_;
  ucp_ep_h ep_ = nullptr;
  std::optional<shm::PeerProcess> process_;
  std::unordered_map<Pending*, std::unique_ptr<Pending>> in_flight_;
  bool said_goodbye_ = false;
  int hellos_ = 0;  // 2: ours sent and the peer's received
  bool ep_failed_ = false;  // UCP reported an error: the endpoint may only be force-closed
  Status gone_;     // the peer went away: what is left to match still is
  Clock::time_point gone_since_{};
  Status failure_;  // the first error sticks
};

}  // namespace coll::transport::ucx
