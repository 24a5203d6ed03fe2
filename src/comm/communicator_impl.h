// The communicator's context: init (store, roll call, transports, the execution paths), the
// op queue and who runs it (progress.cc), group buffering, failure handling, shrink and split.
// Running an op is the execution paths' (comm/paths/execution_path.h): the context hands each
// request to the first path that accepts it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/config.h"
#include "base/fork_guard.h"
#include "base/owned_mutex.h"
#include "bootstrap/host_grouping.h"
#include "bootstrap/store.h"
#include "coll/communicator.h"
#include "comm/agreement.h"
#include "comm/ledger.h"
#include "comm/ledger_exchange.h"
#include "comm/op_trace.h"
#include "comm/paths/board_path.h"
#include "comm/paths/device_path.h"
#include "comm/paths/p2p_path.h"
#include "comm/paths/scheduled_path.h"
#include "comm/startup_report.h"
#include "exec/op.h"
#include "transport/registry.h"

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
  // Fault tolerance, as ULFM has it (comm/fault_tolerance.cc, comm/agreement.h). Issuing
  // thread, or any thread for failedRanks and revoke.
  // The ranks known failed: the store saw them go, or they did not answer a ledger question.
  std::vector<int> failedRanks();
  Status agree(uint64_t value, AgreementResult* out);
  // Fails every pending and future op here and, through the ledger responders, on every rank.
  Status revoke(const std::string& why);
  // shrink() without a list: revokes, agrees on who is alive, and makes their communicator.
  Status shrinkToSurvivors(std::unique_ptr<CommunicatorImpl>* out);
  // A communicator of the members and the processes waiting to join (comm/grow.h). Issuing
  // thread; every member calls it.
  Status grow(std::unique_ptr<CommunicatorImpl>* out);
  // A process that is not a member asks to join the job of options.name's lobby and, once
  // the members grow(), becomes a rank of the new communicator.
  static Status join(const CommOptions& options, const Config& config, std::unique_ptr<CommunicatorImpl>* out);
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
  void sayClosed();  // ~CommunicatorImpl: tells the peers' ledger responders
  void refuseInForkedChild(const char* what) const;
  CommunicatorImpl(const CommOptions& options, const Config& config);
  Status connectStore(const CommOptions& options);
  // Opens another client of the same store (the ledger responder parks a GET on its own).
  LedgerResponder::Connect storeConnector() const;
  Status connectNeighbours();
  void budgetDescriptors();  // raises the open-file limit the job needs, or warns (base/descriptor_limit.h)
  // The paths, made once the transports exist (comm/paths/).
  Status startPaths(const CommOptions& options, const transport::PeerDirectory& dir, std::vector<select::AlgoRule> rules);
  ExecutionPath& pathFor(const OpRequest& op);
  // Gives the op to its path at issue; false: queue it (*quietly: without waking the progress thread).
  enum class Nudge { keep_hot, none, wake_if_cold };  // how push() stirs the progress thread
  bool issueOnPath(ExecutionPath& path, OpRequest& op, Work* work, Nudge* nudge);
  std::optional<Error> firstError() const;
  // The progress thread and caller-driven progress (comm/progress.cc).
  void progressLoop();
  bool waitForWork(std::unique_lock<std::mutex>& lock);
  bool driveUntilDone(const detail::WorkState& work) override;
  bool runNext();
  void runOp(OpRequest& op, const std::optional<Error>& failed);
  void ran(OpRequest& op, const Status& st, const RunReport& report, std::chrono::steady_clock::time_point started);
  bool finishReadyBoardOps();
  void catchUpOnBoard();
  void onFailure(OpRequest& op, Error error);
  Error withLedger(const OpRequest& op, const Error& error);
  // The store's "gone" list: the store appends a rank to it when that rank's presence
  // connection ends (coll's own store only).
  std::string goneKey() const { return key_prefix_ + "gone"; }
  Status announcePresence();
  // Runs `call` with the fault-tolerance store client, connecting it first if needed.
  Status withFtStore(const std::function<Status(bootstrap::StoreClient&)>& call);
  void revokedBy(int64_t question, const std::string& why);
  AgreementCall agreementCall(const std::string& key, const std::string& what);
  void closeConnectionsNow(const std::string& reason);
  // How a push stirs the progress thread. keep_hot: wakes it if it sleeps and keeps it polling
  // (kHotFor). none, for an op whose issuer will most likely wait on it at once (a board op
  // found pending): neither; the op is then run by a waiter, by the progress thread once the
  // next push or a kick() wakes it (Work::test, a bounded wait), or at destruction; peers do
  // not wait for its finishing. wake_if_cold, for an op peers do wait for (Issued::queue_behind):
  // wakes a sleeping progress thread, which then runs it unless someone else has within
  // kInlineGrace, without keeping it polling.
  void push(OpRequest op, Nudge nudge = Nudge::keep_hot);
  void kick() override;
  void expedite() override;
  void abandon(const Error& why) override;
  static void complete(OpRequest& op, const std::optional<Error>& error);
  void fail(const Error& error);
  void markFailed(const Error& error, std::deque<OpRequest>* pending);
  void settleAfterAbort();
  std::string opLabel(const OpRequest& op, const std::string& algorithm) const;

  Config config_;
  CommOptions options_;  // as given, secret and timeout resolved: the base of a shrink
  uint64_t shrinks_ = 0;  // issuing thread only
  uint64_t splits_ = 0;   // issuing thread only
  uint64_t grows_ = 0;    // issuing thread only
  const ForkStamp created_ = ForkStamp::now();
  int rank_, size_, local_rank_;
  std::string key_prefix_;
  std::string secret_;
  std::string store_host_;
  std::shared_ptr<bootstrap::StoreServer> store_server_;
  std::unique_ptr<bootstrap::StoreClient> store_;
  bootstrap::HostGrouping hosts_;
  StartupReport startup_;  // create()'s phases, logged when ready
  transport::TransportSet transports_;
  Ledger ledger_;
  std::unique_ptr<OpTrace> trace_;  // COLL_TRACE_FILE set (engine_mu_ holder; written at destruction)
  std::unique_ptr<LedgerResponder> responder_;  // answers peers' questions about ledger_
  // A store connection that does nothing but stay open: when it ends the store appends this
  // rank to goneKey(). Null over a caller's store, which cannot.
  std::unique_ptr<bootstrap::StoreClient> presence_;
  std::mutex ft_mu_;  // guards ft_store_ and agreements_
  std::unique_ptr<bootstrap::StoreClient> ft_store_;  // for failedRanks/agree/revoke (made on first use)
  uint64_t agreements_ = 0;
  std::atomic<int64_t> revoke_question_{0};  // the ledger question that revoked this communicator
  std::atomic<int64_t> revoke_seen_ns_{0};   // when this rank learnt of it (steady clock)
  std::set<int> silent_ranks_;  // under mu_: ranks that did not answer a ledger question
  // The execution paths, asked in this order (execution_path.h). scheduled_ first: the others
  // use it (the call check, COLL_ALGO's rules, the device path's host transfers).
  std::unique_ptr<ScheduledPath> scheduled_;
  std::unique_ptr<P2pPath> p2p_;
  std::unique_ptr<DevicePath> device_;
  std::unique_ptr<BoardPath> board_;
  std::vector<ExecutionPath*> paths_;
  bool gpu_present_ = false;  // cuda::gpuPresent(), read once

  // Held by the thread running ops (the progress thread, or a waiter driving them inline):
  // the transports and the paths' run() are its alone. Taken before mu_.
  OwnedMutex engine_mu_;
  std::shared_ptr<detail::DriverLink> link_ = std::make_shared<detail::DriverLink>();
  mutable std::mutex mu_;  // guards queue_, stopping_, first_error_, close_pending_, progress_cold_
  std::condition_variable queue_cv_;
  std::deque<OpRequest> queue_;
  std::atomic<size_t> queued_{0};  // queue_.size(), for the progress thread's spin
  bool progress_cold_ = true;      // the progress thread sleeps until notified (else it polls)
  std::atomic<bool> unkicked_{false};  // an op was queued without waking the progress thread
  bool expedited_ = false;  // run what is queued without kInlineGrace (Work::onComplete)
  std::chrono::steady_clock::time_point last_push_{};
  // The idle progress thread's current poll period while ops keep coming (progress.cc): short
  // while it runs ops itself, longer while waiters run them all inline. Under mu_.
  std::chrono::microseconds hot_poll_{200};
  bool stopping_ = false;
  bool close_pending_ = false;  // fail() ran: the progress thread must close the connections
  std::optional<Error> first_error_;
  std::atomic<bool> failed_{false};  // first_error_ is set: lets the fast path skip mu_
  uint64_t next_sequence_ = 0;  // issuing thread only, like the two below
  uint64_t collective_sequence_ = 0;
  std::map<int, uint64_t> p2p_sequence_;  // key 2 * peer + (1 for sends, 0 for receives)
  int group_depth_ = 0;             // issuing thread only
  std::vector<OpRequest> group_;    // ops held back until the outermost groupEnd
  std::thread thread_;
};

}  // namespace coll
