// PipelineTrainer: pipeline parallelism (GPipe, PipeDream-Flush 1F1B) with data parallelism
// across replicas of each stage, on P x D ranks: rank = replica * P + stage.
//
// Every rank is given the whole model's layers and keeps its stage's (pipeline_schedule.h
// says how stages are balanced); its layers have the names and initial values they have in
// the whole model. A step takes the replica's batch (every stage of a replica is given the
// same one: stage 0 reads its features, the last stage its labels), cuts it into M equal
// micro-batches, and runs the stage's forward and backward passes in the schedule's order:
// activations go to the next stage and gradients to the previous one by point-to-point on
// the world communicator (tags 2m and 2m + 1), which progresses on its own in both
// directions. Gradients are summed over the micro-batches (the loss gradient is divided by M,
// so the sum is the mean over the replica's batch); during the step's last backward each
// layer's total is handed to the bucketer, so the stage's buckets are all-reduced (average)
// among its D replicas over a split communicator while the layers below still run backward.
// Then the update strategy applies them, as in the data-parallel Trainer.
//
// Memory: a stage keeps each live micro-batch's input only, and recomputes the forward pass
// before a micro-batch's backward (GPipe's re-materialisation; layers keep the state of one
// forward), except when the micro-batch was the stage's last forward, whose state is intact.
// An input is freed after its backward; a sent activation or gradient once its send completes.
//
// Receives are posted one ahead (the next forward's activation and the next backward's
// gradient), so a message above the eager limit has its rendezvous done, and its data in
// place, by the time the stage needs it, instead of starting the handshake then.
//
// Batch norm (CrossReplicaBatchNorm layers) normalises each micro-batch by its own statistics,
// as GPipe does: over the micro-batch's rows on every replica of the stage (across_replicas,
// one all-reduce of the sums on the stage communicator, like the data-parallel trainer's
// cross-replica batch norm), or over the replica's rows alone (per_replica). Re-materialised
// forwards run in replay mode, so the running statistics move once per micro-batch.
//
// Refused before training: a world size that P does not divide, P above the layer count, and
// a batch of a size M does not divide (refused at the step, before anything is sent, on every
// stage).
#pragma once

#include <list>
#include <memory>
#include <vector>

#include "coll/communicator.h"
#include "trainer/bucketer.h"
#include "trainer/dataset.h"
#include "trainer/model.h"
#include "trainer/pipeline_schedule.h"
#include "trainer/timeline.h"
#include "trainer/trainer.h"
#include "trainer/update_strategy.h"

namespace coll::trainer {

enum class PipelineBatchNorm { across_replicas, per_replica };

struct PipelineOptions {
  int stages = 1;
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  size_t input_width = 0;  // features per example
  unsigned seed = 1;
  BucketOptions buckets = TrainerOptions::defaultBucketOptions();
  bool timeline = true;
  PipelineBatchNorm batch_norm = PipelineBatchNorm::across_replicas;
};

class PipelineTrainer {
 public:
  PipelineTrainer(Communicator& world, std::vector<std::unique_ptr<Layer>> layers,
                  std::unique_ptr<UpdateStrategy> update, PipelineOptions options);
  ~PipelineTrainer();
  PipelineTrainer(const PipelineTrainer&) = delete;  // its bucketer and update hold its model
  PipelineTrainer& operator=(const PipelineTrainer&) = delete;

  // One step on the replica's batch. The loss and counts are the last stage's (zero elsewhere).
  StepResult trainStep(const Batch& replica_batch);

  int stage() const { return stage_; }
  int replica() const { return replica_; }
  int stages() const { return options_.stages; }
  int replicas() const { return replicas_; }
  // [first, last) of the whole model's layers that this stage holds.
  std::pair<size_t, size_t> layerRange() const { return range_; }
  Model& model() { return model_; }
  UpdateStrategy& update() { return *update_; }
  Communicator& stageComm() { return *stage_comm_; }
  Timeline& timeline() { return timeline_; }
  // Of the last step: the most micro-batches alive at once (forwarded, not yet backward), and
  // the most bytes of activations and gradients the stage held at once: the live inputs, the
  // receive posted ahead, and the sends still in flight.
  int peakAliveMicroBatches() const { return peak_alive_; }
  size_t peakActivationBytes() const { return peak_bytes_; }

 private:
  void bindBatchNorms();
  void exchangeWidths();
  void forward(int m, const Batch& batch, StepResult* result);
  void backward(int m, const Batch& batch, bool last_of_step);
  void addToAccumulated(size_t layer);
  void postNextActivationReceive();
  void postNextGradientReceive();
  void send(Matrix&& data, int peer, int tag);
  void releaseCompletedSends();
  void holdBytes(std::ptrdiff_t delta);
  std::span<const int> labelsOf(const Batch& batch, int m) const;

  Communicator& world_;
  PipelineOptions options_;
  int stage_ = 0, replica_ = 0, replicas_ = 1;
  std::pair<size_t, size_t> range_;
  std::unique_ptr<Communicator> stage_comm_;
  Model model_;
  std::unique_ptr<UpdateStrategy> update_;
  Timeline timeline_;
  std::unique_ptr<Bucketer> bucketer_;
  size_t in_width_ = 0, out_width_ = 0;
  size_t micro_rows_ = 0;
  int64_t step_ = 0;
  int last_forward_ = -1;  // the micro-batch whose state the layers hold, or -1
  struct InFlightSend {
    Matrix data;
    Work work;
  };
  std::vector<Matrix> inputs_;  // per micro-batch: the stage's input, from its receive to its backward
  std::list<InFlightSend> sends_;
  std::vector<int> forward_order_, backward_order_;  // micro-batches, in the step's order
  size_t next_forward_ = 0, next_backward_ = 0;      // the next receive to post in each
  Work activation_receive_, gradient_receive_;       // posted ahead
  Matrix next_grad_;                                 // what gradient_receive_ fills
  std::vector<float> accumulated_;  // gradients summed over the step's earlier micro-batches
  std::vector<std::vector<size_t>> layer_slots_;  // per layer: its slots in model_.slots()
  Matrix out_, grad_;
  int alive_ = 0, peak_alive_ = 0;
  size_t alive_bytes_ = 0, peak_bytes_ = 0;
};

}  // namespace coll::trainer
