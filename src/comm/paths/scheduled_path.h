// The scheduled path: an op on host buffers mapped onto a schedule's two buffers (exec/op.h's
// planOp), the algorithm the selector picks (select/selector.h), its schedule built once and
// cached (comm/schedule_cache.h), and the executor running it over the transports
// (exec/executor.h). Every collective that no other path takes runs here, and so do the
// device path's staged transfers and the board's COLL_CHECK exchange.
//
// Threading: run(), runHost(), runSchedule() and setRules() on the thread that holds the
// communicator's engine (progress thread or waiter); init() before the progress thread starts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/lazy_buffer.h"
#include "bootstrap/host_grouping.h"
#include "bootstrap/store.h"
#include "comm/ledger.h"
#include "comm/paths/execution_path.h"
#include "comm/schedule_cache.h"
#include "exec/executor.h"
#include "select/selector.h"
#include "transport/registry.h"

namespace coll {

class ScheduledPath final : public ExecutionPath {
 public:
  ScheduledPath(int rank, int size, const Config& config, const bootstrap::HostGrouping& hosts,
                transport::TransportSet& transports, Ledger& ledger);
  ~ScheduledPath() override;

  // The topology (probed over the connections made so far, or loaded) and the selector over
  // it; under COLL_TUNE, the tuned choices too.
  Status init(bootstrap::StoreClient& store, const std::string& key_prefix, std::vector<select::AlgoRule> rules);

  const char* name() const override { return "scheduled"; }
  bool accepts(const OpRequest& op) const override { return op.device < 0; }
  Status run(const OpRequest& op, RunReport* report) override;

  // An op on host buffers for the device path, with the device op's wire tag: no ledger entry
  // or call check of its own (the device op had them).
  Status runHost(const OpRequest& op, uint64_t tag, std::string* algorithm);
  // Records the op in the ledger and, under COLL_CHECK, compares the call with every rank's
  // before any of its data moves (a disagreement sets *refused: nothing was sent).
  Status begin(const OpRequest& op, const std::string& algorithm, bool* refused);
  // Runs any schedule with a fresh deadline over this communicator's connections (the link
  // probe, autotune, the call check).
  Status runSchedule(const algo::Schedule& schedule, ExecContext& ctx);

  // The board (algorithms/board.h) is a catalogue entry the selector scores: the board path
  // tells it the board's capacity, then asks whether it is picked (issuing thread).
  void setBoard(size_t allreduce_bytes, size_t broadcast_bytes) { selector_->setBoard(allreduce_bytes, broadcast_bytes); }
  bool picksBoard(algo::Collective collective, size_t bytes) const { return selector_->picksBoard(collective, bytes); }
  size_t boardUpTo(algo::Collective collective) const { return selector_->boardUpTo(collective); }
  void setRules(std::vector<select::AlgoRule> rules) { selector_->setRules(std::move(rules)); }

 private:
  algo::BuildParams buildParams(const OpRequest& op) const;
  const CachedSchedule* scheduleFor(const OpRequest& op, OpPlan* plan);
  Status runScheduled(const CachedSchedule& cached, const OpRequest& op, uint64_t tag, const OpPlan& plan);
  bool resultGoesDirect(const CachedSchedule& cached, const OpRequest& op, const OpPlan& plan) const;
  Status runGroup(const OpRequest& group, std::string* algorithm);
  void prepare(ExecContext& ctx);  // deadline, scratch and connections for one run
  void releaseBuffers(int peer);   // the start-up probe's, after its large transfers
  Status timedAllreduce(const algo::AlgorithmInfo& algorithm, size_t bytes, double* seconds);

  const int rank_, size_;
  const Config& config_;
  const bootstrap::HostGrouping& hosts_;
  transport::TransportSet& transports_;
  Ledger& ledger_;
  std::unique_ptr<select::Selector> selector_;
  ScheduleCache schedules_;
  std::vector<char> scratch_;    // received slices awaiting reduction
  LazyBuffer workspace_;         // reductions whose result is not the user's buffer
  ExecState exec_state_;         // the executor's bookkeeping, its vectors kept between ops
  ExecContext op_ctx_;           // run()'s, reused
  uint8_t barrier_byte_[1] = {0};
  uint64_t tune_sequence_ = 0;   // autotune's runs at init
};

}  // namespace coll
