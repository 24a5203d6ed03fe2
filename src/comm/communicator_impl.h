// The machinery behind coll::Communicator: bootstrap, transport, and the progress thread that
// executes ops in issue order.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/store.h"
#include "coll/communicator.h"
#include "base/config.h"
#include "cuda/device_ops.h"
#include "cuda/stream_gate.h"
#include "exec/executor.h"
#include "comm/schedule_cache.h"
#include "base/fork_guard.h"
#include "comm/ledger.h"
#include "comm/op_trace.h"
#include "comm/ledger_exchange.h"
#include "exec/op.h"
#include "exec/p2p_engine.h"
#include "bootstrap/host_grouping.h"
#include "topology/selector.h"
#include "transport/registry.h"
#include "transport/small_op_board.h"

namespace coll {

class CommunicatorImpl final : private detail::OpDriver {
 public:
  // inherited_store: a store server this communicator keeps alive though another made it
  // (a shrunk communicator shares its parent's: the parent may be destroyed first).
  static Status create(const CommOptions& options, const Config& config, std::unique_ptr<CommunicatorImpl>* out,
                       std::shared_ptr<bootstrap::StoreServer> inherited_store = nullptr);
  // A new communicator of the survivors, without `excluded` (comm/shrink.h). Issuing thread;
  // every survivor calls it with the same ranks. This one is left as it is.
  Status shrink(const std::vector<int>& excluded, std::unique_ptr<CommunicatorImpl>* out);
  // A communicator of the ranks with this color (comm/split.h); null for kSplitNoColor.
  // Issuing thread; every rank calls it.
  Status split(int color, int key, std::unique_ptr<CommunicatorImpl>* out);
  ~CommunicatorImpl();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int localRank() const { return local_rank_; }

  // Validates, numbers and queues the op; throws coll::Error (InvalidArgument) on bad input.
  Work enqueue(OpRequest&& op);
  Work enqueueOnStream(OpRequest&& op);
  void abort(const std::string& reason);
  // Communicator::setAlgorithms. Issuing thread.
  void setAlgorithms(const std::string& rules);
  // Like ncclGroupStart/End: send/recv issued in between run as one op. Issuing thread only.
  void groupStart();
  void groupEnd();
  std::optional<Error> asyncError() const;
  std::string describe() const;
  // True in a child forked after the communicator was made: it must not be used or torn down.
  bool inForkedChild() const { return created_.inForkedChild(); }

 private:
  void refuseInForkedChild(const char* what) const;
  CommunicatorImpl(const CommOptions& options, const Config& config);
  Status connectStore(const CommOptions& options);
  // Opens another client of the same store (the ledger responder parks a GET on its own).
  LedgerResponder::Connect storeConnector(const CommOptions& options) const;
  Status connectNeighbours();
  // Point-to-point on its own engine (comm/p2p_ops.cc).
  Status startP2p(const CommOptions& options, const transport::PeerDirectory& collectives);
  // Host send/recv go to the point-to-point engine (p2p/engine.h).
  bool takesP2pEngine(const OpRequest& op) const { return isPointToPoint(op.kind) && op.device < 0 && p2p_ != nullptr; }
  void postP2p(std::vector<OpRequest> ops);
  Status initSelector(std::vector<topology::AlgoRule> rules);
  Status timedAllreduce(const algo::AlgorithmInfo& algorithm, size_t bytes, double* seconds);
  // The progress thread and caller-driven progress (comm/progress.cc).
  void progressLoop();
  bool waitForWork(std::unique_lock<std::mutex>& lock);
  bool driveUntilDone(const detail::WorkState& work) override;
  bool runNext();
  void runOp(OpRequest& op, const std::optional<Error>& failed);
  Status execute(const OpRequest& op, std::string* algorithm, bool* refused);
  Status beginOp(const OpRequest& issued, const std::string& algorithm, bool* refused);
  void onFailure(OpRequest& op, Error error);
  Error withLedger(const OpRequest& op, const Error& error);
  void closeConnectionsNow(const std::string& reason);
  Status run(const CachedSchedule& cached, const OpRequest& op, uint64_t tag, const void* input, void* output);
  void prepareContext(ExecContext& ctx);  // deadline, scratch and connections for one run
  void findBoard();
  bool onBoard(const OpRequest& op) const;
  // Runs a small op on the board where it can at issue; true if it did (finished, or posted
  // and queued), with *handle the op's Work.
  bool runNowOnBoard(OpRequest& op, Work* handle);
  transport::BoardCall boardCall(const OpRequest& op);
  std::shared_ptr<detail::WorkState> newWorkState(const OpRequest& op);
  Status runOnBoard(const OpRequest& issued, std::string* algorithm, bool* refused);
  Status executeGroup(const OpRequest& group, algo::BuildParams p, std::string* algorithm);
  Status executeOnDevice(const OpRequest& issued, std::string* algorithm, bool* refused);
  Status runHost(const OpRequest& op, uint64_t tag, std::string* algorithm);
  algo::BuildParams buildParams(const OpRequest& op) const;
  const CachedSchedule* scheduleFor(const OpRequest& op, OpPlan* plan);
  Status runScheduled(const CachedSchedule& cached, const OpRequest& op, uint64_t tag, const OpPlan& plan);
  Status runContext(const algo::Schedule& schedule, ExecContext& ctx);
  // keeps_hot false, for an op whose issuer will most likely wait on it at once (a board op
  // found pending): neither wakes the progress thread nor starts its polling (kHotFor). The
  // op is then run by a waiter, by the progress thread once the next push or a kick() wakes
  // it (Work::test, a bounded wait), or at destruction; peers do not wait for its finishing.
  void push(OpRequest op, bool keeps_hot = true);
  void kick() override;
  static void complete(OpRequest& op, const std::optional<Error>& error);
  void fail(const Error& error);
  std::string opLabel(const OpRequest& op, const std::string& algorithm) const;

  Config config_;
  CommOptions options_;  // as given, secret and timeout resolved: the base of a shrink
  uint64_t shrinks_ = 0;  // issuing thread only
  uint64_t splits_ = 0;   // issuing thread only
  const ForkStamp created_ = ForkStamp::now();
  int rank_, size_, local_rank_;
  std::string key_prefix_;
  std::string secret_;
  std::string store_host_;
  std::shared_ptr<bootstrap::StoreServer> store_server_;
  std::unique_ptr<bootstrap::StoreClient> store_;
  topology::HostGrouping hosts_;
  std::unique_ptr<topology::Selector> selector_;  // engine_mu_ holder only, after init
  transport::SmallOpBoard* board_ = nullptr;       // one-host small all-reduces (small_op_board.h)
  bool gpu_present_ = false;          // cuda::gpuPresent(), read once
  size_t board_bytes_ = 0;            // board_->capacity(), read once
  size_t board_broadcast_bytes_ = 0;  // the largest broadcast that goes there
  transport::TransportSet transports_;
  std::vector<char> scratch_;    // received slices awaiting reduction (engine_mu_ holder)
  std::vector<char> workspace_;  // reductions whose result is not the user's buffer
  ScheduleCache schedules_;      // engine_mu_ holder
  std::unique_ptr<cuda::DeviceOps> device_ops_;
  cuda::StreamGate stream_gate_;  // issuing thread  // made by the first op on device buffers (engine_mu_ holder)
  ExecState exec_state_;         // the executor's bookkeeping for ops' schedules (engine_mu_ holder)
  ExecContext op_ctx_;           // run()'s, reused (engine_mu_ holder)
  uint8_t barrier_byte_[1] = {0};
  Ledger ledger_;
  std::unique_ptr<OpTrace> trace_;  // COLL_TRACE_FILE set (engine_mu_ holder; written at destruction)
  std::unique_ptr<LedgerResponder> responder_;  // answers peers' questions about ledger_

  // Held by the thread running ops (the progress thread, or a waiter driving them inline):
  // the transports, selector_, scratch_ and workspace_ are its alone. Taken before mu_.
  std::mutex engine_mu_;
  std::shared_ptr<detail::DriverLink> link_ = std::make_shared<detail::DriverLink>();
  mutable std::mutex mu_;  // guards queue_, stopping_, first_error_, close_pending_, progress_cold_
  std::condition_variable queue_cv_;
  std::deque<OpRequest> queue_;
  std::atomic<size_t> queued_{0};  // queue_.size(), for the progress thread's spin
  bool progress_cold_ = true;      // the progress thread sleeps until notified (else it polls)
  std::atomic<bool> unkicked_{false};  // an op was queued without waking the progress thread
  std::chrono::steady_clock::time_point last_push_{};
  // The idle progress thread's current poll period while ops keep coming (progress.cc): short
  // while it runs ops itself, longer while waiters run them all inline. Under mu_.
  std::chrono::microseconds hot_poll_{200};
  bool stopping_ = false;
  bool close_pending_ = false;  // fail() ran: the progress thread must close the connections
  std::optional<Error> first_error_;
  std::atomic<bool> failed_{false};  // first_error_ is set: lets the fast path skip mu_
  std::shared_ptr<detail::WorkState> spare_work_;  // the last board op's, reused once nobody holds it
  uint64_t tune_sequence_ = 0;  // autotune's runs at init
  uint64_t next_sequence_ = 0;  // issuing thread only, like the two below
  uint64_t collective_sequence_ = 0;
  std::map<int, uint64_t> p2p_sequence_;
  int group_depth_ = 0;             // issuing thread only
  std::vector<OpRequest> group_;    // ops held back until the outermost groupEnd  // key 2 * peer + (1 for sends, 0 for receives)
  std::thread thread_;
  std::unique_ptr<bootstrap::StoreClient> p2p_store_;  // the p2p engine's (its thread's alone)
  std::unique_ptr<p2p::Engine> p2p_;                   // host send/recv; destroyed before p2p_store_
};

}  // namespace coll
