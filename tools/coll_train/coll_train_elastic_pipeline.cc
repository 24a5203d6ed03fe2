// coll-train --elastic --stages P: pipeline-parallel training whose replicas survive a lost
// rank and grow back, on coll's fault-tolerance calls. A replica (P ranks, one per stage) is the
// unit that fails and comes back, as a replica group is in torchft: when one of its ranks dies,
// the survivors of every replica shrink the job, the replicas still whole go on (the global
// batch is cut among fewer), the broken replica's survivors sit out and ask to join again, and
// rank 0 starts a replacement. Every --grow-every steps the replicas admit the processes
// waiting; once P of them are in, they form a new replica, take each stage's parameters and
// optimizer state from replica 0, and the job is whole again (elastic_formation.h says who
// does what; it is decided anew at each change).
//
// Nothing is applied twice or lost: each rank keeps its stage's state at the start of its
// current step and of the one before; after a fault every replica resumes from the lowest step
// a kept rank has applied (a stage whose gradient all-reduce finished before the fault rolls
// back one step), so all replicas go on from the same step with bit-identical state.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <array>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "coll/communicator.h"
#include "coll_train_common.h"
#include "coll_train_options.h"
#include "elastic_support.h"
#include "trainer/elastic_formation.h"
#include "trainer/model.h"
#include "trainer/pipeline_trainer.h"

namespace coll::trainer {
namespace {

using Clock = std::chrono::steady_clock;

struct StageState {
  std::vector<float> params, optimizer;
};

class ElasticPipelineRun {
 public:
  ElasticPipelineRun(const TrainOptions& o, char** argv) : o_(o), argv_(argv) {}

  int run() {
    if (o_.join) {
      world_ = joinRunningJob();
      std::printf("elastic: joined as rank %d of %d\n", world_->rank(), world_->size());
    } else {
      world_ = Communicator::fromEnvironment();
      original_rank_ = world_->rank();
    }
    task_ = loadTask(o_, 0, 1);  // every replica reads the whole set: its part of a batch changes
    order_ = shuffledOrder(task_.train, o_.seed);
    for (;;) {
      try {
        if (!world_ && !rejoin()) return reapAndReturn(0);
        if (!form()) continue;  // this process sits out: it asks to join again
        if (finished_ || trainOn()) break;
      } catch (const Error& e) {
        recover(e);
      }
    }
    return finish();
  }

 private:
  // Decides the new formation on world_ and builds this rank's part of it. False: this
  // process sits out (world_ is gone).
  bool form() {
    const ElasticFormation f = plan();
    if (f.resume_step >= static_cast<int64_t>(o_.steps)) {  // the last grow: everyone ends
      finished_ = true;
      return true;
    }
    const ElasticPlacement me = f.placement[static_cast<size_t>(world_->rank())];
    std::unique_ptr<Communicator> next =
        world_->split(me.replica >= 0 ? 0 : kSplitNoColor, me.replica * o_.stages + me.stage);
    if (!next) {
      world_.reset();
      role_ = ElasticRole{};
      snapshots_.clear();
      return false;
    }
    world_ = std::move(next);
    if (!fault_seen_) whole_replicas_ = std::max(whole_replicas_, f.replicas);
    role_ = ElasticRole{me.replica, me.stage, -1};  // no state until it is loaded
    live_ = false;
    replicas_ = f.replicas;
    PipelineOptions options = pipelineOptionsFrom(o_);
    options.timeline = false;  // a long run's events would only grow
    trainer_ = std::make_unique<PipelineTrainer>(*world_, modelLayers(o_, nullptr), makeUpdate(o_), options);
    loadState(me.keeps_state, f.resume_step);
    role_.steps_done = f.resume_step;
    live_ = true;
    sayRecovered(f);
    return true;
  }

  // After a fault: when the survivors train again, and when the job is whole again (this
  // process's clock, from the failed op it caught).
  void sayRecovered(const ElasticFormation& f) {
    if (!fault_seen_) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - *fault_seen_).count();
    const bool whole = f.replicas >= whole_replicas_;
    if (world_->rank() == 0 && !training_again_said_)
      std::printf("elastic: training again %.3f s after the fault was seen, on %d replica(s)\n", seconds, f.replicas);
    training_again_said_ = true;
    if (world_->rank() == 0 && whole) std::printf("elastic: whole again (%d replicas) %.3f s after the fault was seen\n",
                                                  f.replicas, seconds);
    if (whole) fault_seen_.reset();
  }

  // Every member's role, gathered; the plan every member computes from them.
  ElasticFormation plan() {
    const int n = world_->size();
    ElasticRole mine = role_;
    std::vector<ElasticRole> roles(static_cast<size_t>(n));
    static_assert(sizeof(ElasticRole) == 3 * sizeof(int64_t));
    world_->allgather(&mine, roles.data(), 3, DataType::i64).wait();
    ElasticFormation f = planElasticFormation(roles, o_.stages);
    const size_t rows = o_.batch / static_cast<size_t>(f.replicas);  // the plan has at least one
    if (o_.batch % static_cast<size_t>(f.replicas) != 0 || rows % static_cast<size_t>(o_.micro_batches) != 0)
      throw std::runtime_error("--batch " + std::to_string(o_.batch) + " does not split into " +
                               std::to_string(f.replicas) + " replicas of " + std::to_string(o_.micro_batches) +
                               " micro-batches (pick one divisible by every size the job may have)");
    // Said when the shape changes (most grows admit nobody and keep every replica).
    const int sitting_out = n - f.replicas * o_.stages;
    const std::array<int, 3> shape{n, f.replicas, sitting_out};
    if (world_->rank() == 0 && shape != last_shape_)
      std::printf("elastic: step %lld: %d ranks: %s\n", static_cast<long long>(f.resume_step), n,
                  describeFormation(f).c_str());
    last_shape_ = shape;
    return f;
  }

  // Every replica of a stage takes replica 0's state; a kept rank first loads its own at
  // `step` (so replica 0's is that step's).
  void loadState(bool keeps_state, int64_t step) {
    std::span<float> params = trainer_->model().values(), state = trainer_->update().optimizerState();
    if (state.empty() && !params.empty())  // a stage of activations only holds neither
      throw std::runtime_error("--elastic: this optimizer cannot hand its state over");
    if (keeps_state) {
      auto it = snapshots_.find(step);
      if (it == snapshots_.end() || it->second.params.size() != params.size())
        throw std::runtime_error("elastic pipeline: no snapshot of step " + std::to_string(step) + " (a bug)");
      std::copy(it->second.params.begin(), it->second.params.end(), params.begin());
      std::copy(it->second.optimizer.begin(), it->second.optimizer.end(), state.begin());
    }
    snapshots_.clear();
    Communicator& stage = trainer_->stageComm();
    if (!params.empty()) stage.broadcast(params.data(), params.data(), params.size(), DataType::f32, 0).wait();
    if (!state.empty()) stage.broadcast(state.data(), state.data(), state.size(), DataType::f32, 0).wait();
  }

  // Trains until the run ends (true) or a grow changes the membership (false).
  bool trainOn() {
    int64_t& done = role_.steps_done;
    while (done < static_cast<int64_t>(o_.steps)) {
      if (done == o_.kill_at && original_rank_ == o_.kill_rank && faults_ == 0) ::raise(SIGKILL);
      commit();
      live_ = false;
      Batch batch = partOfGlobalBatch(o_, task_.train, order_, done, static_cast<int>(role_.replica), replicas_);
      float loss = trainer_->trainStep(batch).loss;
      ++done;
      live_ = true;
      if (role_.replica == 0 && role_.stage == o_.stages - 1 && (done % 10 == 0 || done == 1))
        std::printf("elastic: step %4lld  loss %.4f  (replica 0's part)  %d replicas\n", static_cast<long long>(done),
                    loss, replicas_);
      // At the end too: whoever waits then is let in to end with the job.
      if (o_.grow_every > 0 && (done % o_.grow_every == 0 || done == static_cast<int64_t>(o_.steps))) {
        commit();
        trainer_.reset();
        world_ = world_->grow();
        return false;
      }
    }
    return true;
  }

  // This stage's state after role_.steps_done steps; the one of the step before stays.
  void commit() {
    if (!trainer_) return;
    const int64_t done = role_.steps_done;
    std::span<float> params = trainer_->model().values(), state = trainer_->update().optimizerState();
    StageState& s = snapshots_[done];
    s.params.assign(params.begin(), params.end());
    s.optimizer.assign(state.begin(), state.end());
    while (!snapshots_.empty() && snapshots_.begin()->first < done - 1) snapshots_.erase(snapshots_.begin());
  }

  void recover(const Error& e) {
    if (!fault_seen_) fault_seen_ = Clock::now();
    training_again_said_ = false;
    revokeQuietly(trainer_ ? &trainer_->stageComm() : nullptr);  // stage peers stop at once, too
    revokeQuietly(world_.get());
    if (live_) commit();
    live_ = false;
    trainer_.reset();
    if (!world_) throw e;  // it failed while joining again: nothing to shrink
    const int before = world_->size();
    world_ = world_->shrink();
    ++faults_;
    const int lost = before - world_->size();
    if (world_->rank() == 0)
      std::printf("elastic: step %lld: lost %d rank(s) (%s); %d left\n", static_cast<long long>(role_.steps_done),
                  lost, e.what(), world_->size());
    if (o_.respawn && world_->rank() == 0)
      for (int i = 0; i < lost; ++i)
        if (pid_t pid = spawnReplacement(argv_); pid > 0) replacements_.push_back(pid);
  }

  static void revokeQuietly(Communicator* comm) {
    if (!comm) return;
    try {
      comm->revoke();
    } catch (const Error&) {  // already failed: its ops fail anyway
    }
  }

  // Sat out: asks to be let in again. False when nobody lets it in before COLL_TIMEOUT (the
  // job has ended, or no longer grows).
  bool rejoin() {
    try {
      world_ = joinRunningJob();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Timeout) throw;
      std::printf("elastic: not let in again (%s); this process leaves\n", e.what());
      return false;
    }
    return true;
  }

  int finish() {
    if (live_) commit();
    trainer_.reset();
    const int n = world_->size();
    const bool in = role_.replica >= 0 && !snapshots_.empty();
    int64_t mine[3] = {in ? role_.stage : -1, 0, in ? role_.steps_done : INT64_MAX};
    if (in) mine[1] = static_cast<int64_t>(hashParameters(snapshots_.rbegin()->second.params));
    std::vector<int64_t> all(3 * static_cast<size_t>(n));
    world_->allgather(mine, all.data(), 3, DataType::i64).wait();
    int64_t faults = faults_;
    world_->allreduce(&faults, &faults, 1, DataType::i64, ReduceOp::max).wait();
    std::map<int64_t, int64_t> hash_of_stage;
    bool identical = true;
    int64_t lowest = INT64_MAX, trainers = 0;
    for (int r = 0; r < n; ++r) {
      const int64_t* x = &all[3 * static_cast<size_t>(r)];
      if (x[0] < 0) continue;
      ++trainers;
      lowest = std::min(lowest, x[2]);
      auto [it, fresh] = hash_of_stage.emplace(x[0], x[1]);
      identical = identical && (fresh || it->second == x[1]);
    }
    if (world_->rank() == 0)
      std::printf("elastic: done: %lld steps on every replica (lowest %lld), %lld replicas of %d stages at the end, "
                  "%lld fault(s) survived, every stage's parameters identical on its replicas: %s\n",
                  static_cast<long long>(o_.steps), static_cast<long long>(lowest),
                  static_cast<long long>(trainers / o_.stages), o_.stages, static_cast<long long>(faults),
                  identical ? "yes" : "NO");
    world_.reset();
    return reapAndReturn(identical && lowest == static_cast<int64_t>(o_.steps) ? 0 : 1);
  }

  int reapAndReturn(int rc) {
    reapReplacements(replacements_);
    return rc;
  }

  const TrainOptions& o_;
  char** argv_;
  int original_rank_ = -1;  // in the job's first communicator; -1 for a process that joined
  std::unique_ptr<Communicator> world_;  // the pipeline's ranks (and, while forming, those sitting out)
  Task task_;
  std::vector<size_t> order_;
  std::unique_ptr<PipelineTrainer> trainer_;
  ElasticRole role_;  // this rank's replica and stage, and the steps its state has applied
  int replicas_ = 0;
  std::map<int64_t, StageState> snapshots_;  // by steps applied: the current step's start and the one before
  bool live_ = false;                        // the trainer's state is that of role_.steps_done (not mid-step)
  bool finished_ = false;
  int faults_ = 0;
  int whole_replicas_ = 0;                     // the most replicas formed with no fault pending
  std::optional<Clock::time_point> fault_seen_;  // the first failed op of a fault not yet made good
  bool training_again_said_ = false;
  std::array<int, 3> last_shape_{};  // ranks, replicas, sitting out: of the last formation
  std::vector<pid_t> replacements_;
};

}  // namespace

int runElasticPipeline(const TrainOptions& o, char** argv) { return ElasticPipelineRun(o, argv).run(); }

}  // namespace coll::trainer
