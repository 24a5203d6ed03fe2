// coll-train --elastic: data-parallel training that survives a lost replica and grows back, as
// torchft and elastic Horovod do, on coll's fault-tolerance calls (Communicator::shrink, grow,
// join). Each step trains on one global batch (--batch rows, the same rows whatever the world
// size) cut evenly among the replicas, so the averaged gradient is the global batch's however
// many replicas there are.
//
// A step's state is committed when it ends: parameters, the optimizer's state and the step
// counter. When an op fails mid-step, each survivor restores the state at the step's start,
// shrinks to the ranks alive, and the survivors resume from the replica furthest ahead (one
// that finished the step before the fault has applied it; the others take its state): no step
// is applied twice or lost, and the replicas are bit-identical again. Every --grow-every
// steps the replicas admit processes waiting in `coll-train --join`, which take the state from
// the replica furthest ahead the same way.
#include <signal.h>

#include <climits>
#include <cstdio>

#include "coll/communicator.h"
#include "coll_train_common.h"
#include "coll_train_options.h"
#include "elastic_support.h"
#include "trainer/mlp.h"
#include "trainer/model.h"
#include "trainer/trainer.h"

namespace coll::trainer {
namespace {

struct Snapshot {
  std::vector<float> params, state;
};

class ElasticRun {
 public:
  ElasticRun(const TrainOptions& o, char** argv) : o_(o), argv_(argv) {}

  int run() {
    comm_ = o_.join ? joinRunningJob() : Communicator::fromEnvironment();
    if (o_.join) std::printf("elastic: a new replica joined as rank %d of %d\n", comm_->rank(), comm_->size());
    task_ = loadTask(o_, 0, 1);  // every replica reads the whole set: its part of a batch changes
    order_ = shuffledOrder(task_.train, o_.seed);
    for (auto& layer : modelLayers(o_, nullptr)) model_.add(std::move(layer));
    model_.build(o_.seed);
    while (step_ < static_cast<int64_t>(o_.steps)) {
      try {
        trainOn();
      } catch (const Error& e) {
        recover(e);
      }
    }
    return finish();
  }

 private:
  // Trains on the current membership until the run ends, a grow changes it, or an op fails.
  void trainOn() {
    trainer_ = std::make_unique<Trainer>(*comm_, model_, makeUpdate(o_));
    resumeFromTheFurthest();
    while (step_ < static_cast<int64_t>(o_.steps)) {
      if (step_ == o_.kill_at && comm_->rank() == o_.kill_rank && !o_.join && faults_ == 0) ::raise(SIGKILL);
      commit();
      in_step_ = true;
      float loss = trainer_->trainStep(myPart(step_)).loss;
      in_step_ = false;
      ++step_;
      losses_.push_back(loss);
      if (comm_->rank() == 0 && (step_ % 10 == 0 || step_ == 1))
        std::printf("elastic: step %4lld  loss %.4f  (rank 0's part)  %d replicas\n", (long long)step_, loss, comm_->size());
      if (o_.grow_every > 0 && step_ % o_.grow_every == 0 && step_ < static_cast<int64_t>(o_.steps)) {
        std::unique_ptr<Communicator> grown = comm_->grow();
        const bool bigger = grown->size() > comm_->size();
        trainer_.reset();
        if (bigger && grown->rank() == 0)
          std::printf("elastic: step %lld: grew from %d to %d replicas\n", (long long)step_, comm_->size(), grown->size());
        comm_ = std::move(grown);
        return;  // a new communicator: a new trainer on it
      }
    }
  }

  // This replica's rows of the global batch of `step`.
  Batch myPart(int64_t step) const {
    return partOfGlobalBatch(o_, task_.train, order_, step, comm_->rank(), comm_->size());
  }

  void commit() {
    std::span<float> params = model_.values(), state = trainer_->update().optimizerState();
    committed_.params.assign(params.begin(), params.end());
    committed_.state.assign(state.begin(), state.end());
  }

  void restoreCommitted() {
    std::span<float> params = model_.values();
    std::copy(committed_.params.begin(), committed_.params.end(), params.begin());
    if (trainer_) {
      std::span<float> state = trainer_->update().optimizerState();
      if (state.size() == committed_.state.size()) std::copy(committed_.state.begin(), committed_.state.end(), state.begin());
    }
  }

  // Every replica takes the state of the one furthest ahead (the lowest rank among them): the
  // survivors of a fault that one of them outlived by a step, and replicas that just joined.
  void resumeFromTheFurthest() {
    int64_t furthest = step_;
    comm_->allreduce(&furthest, &furthest, 1, DataType::i64, ReduceOp::max).wait();
    int32_t source = step_ == furthest ? comm_->rank() : INT_MAX;
    comm_->allreduce(&source, &source, 1, DataType::i32, ReduceOp::min).wait();
    std::span<float> params = model_.values(), state = trainer_->update().optimizerState();
    if (state.empty()) throw std::runtime_error("--elastic: this optimizer cannot hand its state over");
    comm_->broadcast(params.data(), params.data(), params.size(), DataType::f32, source).wait();
    comm_->broadcast(state.data(), state.data(), state.size(), DataType::f32, source).wait();
    if (comm_->rank() == 0 && comm_->size() != last_size_)
      std::printf("elastic: step %lld: %d replicas take the state of rank %d\n", (long long)furthest, comm_->size(),
                  source);
    last_size_ = comm_->size();
    step_ = furthest;
  }

  void recover(const Error& e) {
    if (in_step_) restoreCommitted();  // the step that failed is redone, or taken from one ahead
    in_step_ = false;
    trainer_.reset();
    const int before = comm_->size();
    comm_ = comm_->shrink();
    ++faults_;
    if (comm_->rank() == 0)
      std::printf("elastic: step %lld: lost %d replica(s) (%s); going on with %d\n", (long long)step_,
                  before - comm_->size(), e.what(), comm_->size());
    if (o_.respawn && comm_->rank() == 0)
      if (pid_t pid = spawnReplacement(argv_); pid > 0) replacements_.push_back(pid);
  }

  int finish() {
    std::vector<uint64_t> hashes(static_cast<size_t>(comm_->size()));
    uint64_t mine = hashParameters(model_.values());
    comm_->allgather(&mine, hashes.data(), 1, DataType::u64).wait();
    bool identical = std::all_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h == hashes[0]; });
    int64_t steps = step_, lowest = step_;
    comm_->allreduce(&lowest, &lowest, 1, DataType::i64, ReduceOp::min).wait();
    double accuracy = evaluateAccuracy(model_, task_.test, *comm_);
    if (comm_->rank() == 0)
      std::printf("elastic: done: %lld steps on every replica (lowest %lld), %d replicas at the end, %d fault(s) "
                  "survived, parameters identical on every replica: %s, test accuracy %.2f%%\n",
                  (long long)steps, (long long)lowest, comm_->size(), faults_, identical ? "yes" : "NO",
                  100 * accuracy);
    comm_.reset();
    reapReplacements(replacements_);
    return identical && lowest == static_cast<int64_t>(o_.steps) ? 0 : 1;
  }

  const TrainOptions& o_;
  char** argv_;
  std::unique_ptr<Communicator> comm_;
  Task task_;
  std::vector<size_t> order_;  // the training set, shuffled once: step s takes rows s*B .. s*B+B-1
  Model model_;
  std::unique_ptr<Trainer> trainer_;
  Snapshot committed_;
  int64_t step_ = 0;
  bool in_step_ = false;
  int faults_ = 0, last_size_ = 0;
  std::vector<float> losses_;
  std::vector<pid_t> replacements_;
};

}  // namespace

int runElastic(const TrainOptions& o, char** argv) { return ElasticRun(o, argv).run(); }

}  // namespace coll::trainer
