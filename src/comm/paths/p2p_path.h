// The point-to-point path: host sends and receives go to the p2p engine (p2p/engine.h), on
// transports of their own, at issue, instead of the queue that collectives run through in
// issue order: there, a posted receive blocked every later op, so two ranks that both
// received first waited for ever. The engine bounds its own ops (COLL_TIMEOUT from posting)
// and completes their Works on its thread. Sends and receives on device buffers take the
// device path.
//
// Threading: issue() and post() on the issuing thread; abort() and settle() from any.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/config.h"
#include "bootstrap/host_grouping.h"
#include "bootstrap/store.h"
#include "comm/paths/execution_path.h"
#include "p2p/engine.h"
#include "transport/registry.h"
#include "transport/transport.h"

namespace coll {

class P2pPath final : public ExecutionPath {
 public:
  using StoreConnect = std::function<Status(bootstrap::Deadline, std::unique_ptr<bootstrap::StoreClient>*)>;
  // Opens the engine's own store client and transports (key prefix "<communicator's>p2p/").
  // shm_files: the collectives' shared-memory segments, made with a second plane for the
  // engine (transport::ShmPlanes; p2pConfig), which it then serves without a set-up of its own.
  // on_failure: the engine failed (its thread): the communicator fails with it.
  static Status start(const Config& config, const transport::PeerDirectory& collectives,
                      const bootstrap::HostGrouping& hosts, std::shared_ptr<transport::shm::SegmentFiles> shm_files,
                      const StoreConnect& connect,
                      std::function<void(const Error&)> on_failure, std::unique_ptr<P2pPath>* out);
  ~P2pPath() override;

  const char* name() const override { return "p2p"; }
  bool accepts(const OpRequest& op) const override { return isPointToPoint(op.kind) && op.device < 0; }
  Issued issue(OpRequest& op, const IssueState& state, Status* failure) override;
  Status run(const OpRequest& op, RunReport* report) override;
  void abort(const std::string& reason) override { engine_->abort(reason); }
  bool settle(std::chrono::steady_clock::time_point deadline) override { return engine_->settle(deadline); }

  // Posts sends and receives together (a group: groupStart/groupEnd); after a failure, fails them.
  void post(std::vector<OpRequest> ops, const Error* failed);
  // What is outstanding, for the ledger's stall report.
  std::string describeOutstanding() const { return engine_->describeOutstanding(); }
  // The engine thread's heartbeat: the link of its ops' Works, for Work::wait()'s watchdog.
  const std::shared_ptr<detail::DriverLink>& watchdog() const { return watchdog_; }
  // What setting up its transports asked of the store (through its own client), for the start-up report.
  const bootstrap::StoreTraffic& startTraffic() const { return start_traffic_; }

 private:
  P2pPath() = default;
  std::unique_ptr<bootstrap::StoreClient> store_;  // the engine's (its thread's alone)
  std::unique_ptr<p2p::Engine> engine_;            // destroyed before store_
  std::shared_ptr<detail::DriverLink> watchdog_;
  bootstrap::StoreTraffic start_traffic_;
};

}  // namespace coll
