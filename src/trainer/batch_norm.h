// Cross-replica batch normalisation (TF-Replicator's trick): the batch mean and variance are
// computed over the *global* batch by all-reducing each replica's per-feature sums, so N
// replicas with B rows each normalise exactly as one replica with N*B rows would.
//
// Forward (training) all-reduces [sum x, sum x^2, rows] per feature; backward all-reduces
// [sum dy, sum dy*xhat], the two global sums the input gradient needs. Both are blocking
// (bounded by COLL_TIMEOUT) and are issued on the same communicator as the gradient buckets,
// so backward's all-reduce completes after every bucket launched before it (ops complete in
// issue order): place batch norm early in the model, or accept that wait.
//
// The gradient it writes for x is that of the global mean loss times the number of replicas,
// which the gradient average of the layers below divides back out (docs/TRAINER.md).
// comm == nullptr: plain (per-replica) batch norm. In a pipeline, the statistics are a micro-
// batch's: over the stage's replicas when the pipeline hands its stage communicator to
// setCommunicator, else over the replica's micro-batch alone (pipeline_trainer.h).
#pragma once

#include <vector>

#include "coll/communicator.h"
#include "trainer/layer.h"

namespace coll::trainer {

class CrossReplicaBatchNorm : public Layer {
 public:
  CrossReplicaBatchNorm(size_t features, Communicator* comm, float momentum = 0.9f, float epsilon = 1e-5f)
      : features_(features), comm_(comm), momentum_(momentum), epsilon_(epsilon),
        running_mean_(features, 0.0f), running_var_(features, 1.0f) {}
  std::string name() const override { return "batchnorm" + std::to_string(features_); }
  std::vector<ParamSpec> parameters() const override { return {{"gamma", features_}, {"beta", features_}}; }
  void bind(std::vector<ParamView> views) override;
  void initialize(unsigned seed) override;  // gamma = 1, beta = 0
  void forward(const Matrix& in, Matrix* out) override;
  void backward(const Matrix& grad_out, Matrix* grad_in) override;
  void setTraining(bool training) override { training_ = training; }
  // A replayed forward computes the same statistics (and all-reduces them again, as every
  // replica replays the same micro-batches in the same order) but leaves the running ones as
  // they are, so each micro-batch moves them once.
  void setReplay(bool replay) override { replay_ = replay; }
  // Who the statistics are summed over from now on (nullptr: this replica alone).
  void setCommunicator(Communicator* comm) { comm_ = comm; }

  const std::vector<float>& runningMean() const { return running_mean_; }
  const std::vector<float>& runningVar() const { return running_var_; }

 private:
  // In place: sums[i] over every replica (sum). Doubles, so the sums of many rows stay exact
  // enough that ranks and a single replica agree to float precision.
  void sumAcrossReplicas(std::vector<double>* sums, const char* what);
  void normalise(const Matrix& in, Matrix* out);

  size_t features_;
  Communicator* comm_;
  float momentum_, epsilon_;
  bool training_ = true, replay_ = false;
  ParamView gamma_, beta_;
  std::vector<float> running_mean_, running_var_;
  // Kept from forward for backward.
  Matrix xhat_;
  std::vector<float> mean_, inv_std_;
  double global_rows_ = 0;
};

}  // namespace coll::trainer
