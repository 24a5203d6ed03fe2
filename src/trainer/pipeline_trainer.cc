#include "trainer/pipeline_trainer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "trainer/batch_norm.h"
#include "trainer/softmax_cross_entropy.h"

namespace coll::trainer {
namespace {

constexpr int kWidthTag = 1 << 30;  // the activation widths, passed down the pipeline once

int activationTag(int micro) { return 2 * micro; }
int gradientTag(int micro) { return 2 * micro + 1; }

std::vector<double> layerCosts(const std::vector<std::unique_ptr<Layer>>& layers) {
  std::vector<double> costs;
  for (const auto& layer : layers) {
    double params = 0;
    for (const ParamSpec& p : layer->parameters()) params += static_cast<double>(p.count);
    costs.push_back(params + 1.0);
  }
  return costs;
}

void refuse(const std::string& why) { throw std::invalid_argument("pipeline: " + why); }

}  // namespace

PipelineTrainer::PipelineTrainer(Communicator& world, std::vector<std::unique_ptr<Layer>> layers,
                                 std::unique_ptr<UpdateStrategy> update, PipelineOptions options)
    : world_(world), options_(options), update_(std::move(update)), timeline_(options.timeline) {
  const int p = options_.stages, n = world_.size();
  if (p < 1 || n % p != 0)
    refuse("the world size " + std::to_string(n) + " is not stages (" + std::to_string(p) + ") x replicas");
  if (options_.micro_batches < 1) refuse("at least one micro-batch per step");
  if (options_.input_width == 0) refuse("input_width (features per example) is not set");
  replicas_ = n / p;
  stage_ = world_.rank() % p;
  replica_ = world_.rank() / p;
  range_ = assignStages(layerCosts(layers), p)[static_cast<size_t>(stage_)];
  for (size_t l = range_.first; l < range_.second; ++l) model_.add(std::move(layers[l]));
  model_.build(options_.seed, range_.first);
  layer_slots_.resize(model_.numLayers());
  for (size_t s = 0; s < model_.slots().size(); ++s) layer_slots_[model_.slots()[s].layer].push_back(s);
  stage_comm_ = world_.split(stage_, replica_);  // this stage's replicas
  bindBatchNorms();
  std::span<float> v = model_.values();
  stage_comm_->broadcast(v.data(), v.data(), v.size(), DataType::f32, 0).wait();  // as DDP does
  bucketer_ = std::make_unique<Bucketer>(model_, planBuckets(model_.slots(), options_.buckets), timeline_);
  update_->setup(*stage_comm_, model_, bucketer_->buckets());
  accumulated_.assign(model_.parameterCount(), 0.0f);
  inputs_.resize(options_.micro_batches);
  exchangeWidths();
}

PipelineTrainer::~PipelineTrainer() {
  // A step that failed may leave a receive posted into this trainer's buffers: abort the
  // communicator (the pipeline is broken anyway) so nothing lands in freed memory.
  if (activation_receive_.valid() || gradient_receive_.valid()) world_.abort();
  for (InFlightSend& s : sends_) {
    try {
      s.work.wait();
    } catch (const Error&) {  // the step that sent it already failed; nothing to add here
    }
  }
}

// Whatever communicator a batch norm layer was built with (the world's, in a data-parallel
// model), in a pipeline its peers are the stage's replicas or none.
void PipelineTrainer::bindBatchNorms() {
  Communicator* peers = options_.batch_norm == PipelineBatchNorm::across_replicas ? stage_comm_.get() : nullptr;
  for (size_t l = 0; l < model_.numLayers(); ++l)
    if (auto* bn = dynamic_cast<CrossReplicaBatchNorm*>(&model_.layer(l))) bn->setCommunicator(peers);
}

// Stage s learns its input width from stage s - 1 and finds its output width with one
// single-row forward pass, which it passes on.
void PipelineTrainer::exchangeWidths() {
  int64_t width = static_cast<int64_t>(options_.input_width);
  if (stage_ > 0) world_.recv(&width, 1, DataType::i64, world_.rank() - 1, kWidthTag).wait();
  in_width_ = static_cast<size_t>(width);
  Matrix probe(1, in_width_);
  model_.setTraining(false);  // no statistics from the probe, and no communication
  model_.forward(probe, &out_);
  model_.setTraining(true);
  out_width_ = out_.cols;
  width = static_cast<int64_t>(out_width_);
  if (stage_ + 1 < options_.stages) world_.send(&width, 1, DataType::i64, world_.rank() + 1, kWidthTag).wait();
}

std::span<const int> PipelineTrainer::labelsOf(const Batch& batch, int m) const {
  return std::span<const int>(batch.labels).subspan(static_cast<size_t>(m) * micro_rows_, micro_rows_);
}

StepResult PipelineTrainer::trainStep(const Batch& batch) {
  const size_t rows = batch.labels.size();
  const size_t m_count = static_cast<size_t>(options_.micro_batches);
  if (rows == 0 || rows % m_count != 0)
    refuse("a batch of " + std::to_string(rows) + " rows cannot be cut into " + std::to_string(m_count) +
           " equal micro-batches");
  if (stage_ == 0 && batch.features.cols != in_width_)
    refuse("the batch has " + std::to_string(batch.features.cols) + " features per example, the model takes " +
           std::to_string(in_width_));
  micro_rows_ = rows / m_count;
  StepResult result;
  update_->beginStep();
  bucketer_->beginStep(step_, [this](const Bucket& b) { return update_->launch(b); });
  std::fill(accumulated_.begin(), accumulated_.end(), 0.0f);
  alive_ = peak_alive_ = 0;
  alive_bytes_ = peak_bytes_ = 0;
  const std::vector<PipelineAction> order = pipelineOrder(options_.schedule, stage_, options_.stages,
                                                          options_.micro_batches);
  forward_order_.clear();
  backward_order_.clear();
  for (const PipelineAction& a : order) (a.forward ? forward_order_ : backward_order_).push_back(a.micro);
  next_forward_ = next_backward_ = 0;
  postNextActivationReceive();
  postNextGradientReceive();
  for (size_t k = 0; k < order.size(); ++k) {
    if (order[k].forward) forward(order[k].micro, batch, &result);
    else backward(order[k].micro, batch, k + 1 == order.size());
    releaseCompletedSends();
  }
  applyInBucketOrder(*bucketer_, *update_, timeline_, step_);
  for (InFlightSend& s : sends_) s.work.wait();
  sends_.clear();
  alive_bytes_ = 0;
  if (stage_ + 1 == options_.stages) result.loss /= static_cast<float>(m_count);
  ++step_;
  return result;
}

// The bytes the stage holds for activations and gradients in flight or alive, and their peak.
void PipelineTrainer::holdBytes(std::ptrdiff_t delta) {
  alive_bytes_ = static_cast<size_t>(static_cast<std::ptrdiff_t>(alive_bytes_) + delta);
  peak_bytes_ = std::max(peak_bytes_, alive_bytes_);
}

void PipelineTrainer::postNextActivationReceive() {
  if (stage_ == 0 || next_forward_ == forward_order_.size()) return;
  const int m = forward_order_[next_forward_++];
  Matrix& in = inputs_[m];
  in.resize(micro_rows_, in_width_);
  holdBytes(static_cast<std::ptrdiff_t>(in.data.size() * sizeof(float)));
  activation_receive_ = world_.recv(in.data.data(), in.data.size(), DataType::f32, world_.rank() - 1, activationTag(m));
}

void PipelineTrainer::postNextGradientReceive() {
  if (stage_ + 1 == options_.stages || next_backward_ == backward_order_.size()) return;
  const int m = backward_order_[next_backward_++];
  next_grad_.resize(micro_rows_, out_width_);
  holdBytes(static_cast<std::ptrdiff_t>(next_grad_.data.size() * sizeof(float)));
  gradient_receive_ = world_.recv(next_grad_.data.data(), next_grad_.data.size(), DataType::f32, world_.rank() + 1,
                                  gradientTag(m));
}

void PipelineTrainer::send(Matrix&& data, int peer, int tag) {
  holdBytes(static_cast<std::ptrdiff_t>(data.data.size() * sizeof(float)));
  InFlightSend& s = sends_.emplace_back(InFlightSend{std::move(data), Work()});
  s.work = world_.send(s.data.data.data(), s.data.data.size(), DataType::f32, peer, tag);
}

// A send that failed is left for the step's end, whose wait throws its error.
void PipelineTrainer::releaseCompletedSends() {
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (!it->work.test()) {
      ++it;
      continue;
    }
    holdBytes(-static_cast<std::ptrdiff_t>(it->data.data.size() * sizeof(float)));
    it = sends_.erase(it);
  }
}

// Waits are timeline events of their own (lane comm), so the compute events show the stage's
// busy time and the gaps between them its bubble.
void PipelineTrainer::forward(int m, const Batch& batch, StepResult* result) {
  Matrix& in = inputs_[m];
  if (stage_ == 0) {
    in.resize(micro_rows_, in_width_);
    holdBytes(static_cast<std::ptrdiff_t>(in.data.size() * sizeof(float)));
    std::memcpy(in.data.data(), batch.features.row(static_cast<size_t>(m) * micro_rows_), in.data.size() * sizeof(float));
  } else {
    ScopedEvent wait(timeline_, "wait activation " + std::to_string(m), step_, Lane::comm);
    activation_receive_.wait();
    activation_receive_ = Work();
    postNextActivationReceive();
  }
  ScopedEvent e(timeline_, "forward " + std::to_string(m), step_);
  model_.forward(in, &out_);
  last_forward_ = m;
  peak_alive_ = std::max(peak_alive_, ++alive_);
  if (stage_ + 1 == options_.stages) {
    LossResult loss = softmaxCrossEntropy(out_, labelsOf(batch, m), &grad_);
    result->loss += loss.loss;
    result->correct += loss.correct;
    result->rows += micro_rows_;
    return;
  }
  send(Matrix(out_), world_.rank() + 1, activationTag(m));
}

void PipelineTrainer::backward(int m, const Batch& batch, bool last_of_step) {
  if (stage_ + 1 < options_.stages) {
    ScopedEvent wait(timeline_, "wait gradient " + std::to_string(m), step_, Lane::comm);
    gradient_receive_.wait();
    gradient_receive_ = Work();
    std::swap(grad_, next_grad_);
    holdBytes(-static_cast<std::ptrdiff_t>(grad_.data.size() * sizeof(float)));  // consumed below
    postNextGradientReceive();
  }
  ScopedEvent e(timeline_, "backward " + std::to_string(m), step_);
  if (last_forward_ != m) {  // re-materialise micro-batch m's state
    model_.setReplay(true);
    model_.forward(inputs_[m], &out_);
    model_.setReplay(false);
  }
  if (stage_ + 1 == options_.stages) {
    softmaxCrossEntropy(out_, labelsOf(batch, m), &grad_);
    const float scale = 1.0f / static_cast<float>(options_.micro_batches);  // the mean over the replica's batch
    for (float& g : grad_.data) g *= scale;
  }
  if (last_of_step) {
    model_.backward(grad_, [this](size_t layer) {
      addToAccumulated(layer);
      bucketer_->layerDone(layer);
    });
  } else {
    model_.backward(grad_, nullptr);
    std::span<const float> g = model_.grads();
    for (size_t i = 0; i < g.size(); ++i) accumulated_[i] += g[i];
  }
  last_forward_ = -1;
  holdBytes(-static_cast<std::ptrdiff_t>(inputs_[m].data.size() * sizeof(float)));
  inputs_[m] = Matrix();  // freed: 1F1B's memory bound is real, not only counted
  --alive_;
  if (stage_ > 0) send(Matrix(model_.inputGradient()), world_.rank() - 1, gradientTag(m));
}

// The step's last backward wrote this layer's gradients of one micro-batch: add the others'.
void PipelineTrainer::addToAccumulated(size_t layer) {
  std::span<float> g = model_.grads();
  for (size_t s : layer_slots_[layer]) {
    const ParamSlot& slot = model_.slots()[s];
    for (size_t i = slot.offset; i < slot.offset + slot.count; ++i) g[i] += accumulated_[i];
  }
}

}  // namespace coll::trainer
