// Model: a sequence of layers whose parameters live in two flat buffers (values, gradients).
//
// Parameters are laid out in *reverse* layer order: the last layer's parameters come first.
// Backward produces gradients in that order, so a bucket of consecutive parameters (see
// bucketer.h) is a contiguous range of the gradient buffer, all-reduced in place with no copy.
// Every rank builds the same model, so offsets and bucket boundaries agree across ranks.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "trainer/layer.h"

namespace coll::trainer {

// One parameter's place in the flat buffers.
struct ParamSlot {
  std::string name;   // "layer3.dense64x10.weight"
  size_t layer = 0;   // index of its layer in the model
  size_t offset = 0;  // first element in the flat buffers
  size_t count = 0;
};

class Model {
 public:
  // Called during backward once layer `layer` has written its input gradient and its
  // parameters' gradients.
  using LayerDoneFn = std::function<void(size_t layer)>;

  void add(std::unique_ptr<Layer> layer);
  // Lays out the flat buffers, binds every layer and initialises it from `seed`. Call once,
  // after the last add(). first_layer: the index of this model's first layer in a larger
  // model it is a part of (a pipeline stage): names and initial values are those the layers
  // have in the whole model.
  void build(unsigned seed, size_t first_layer = 0);

  void forward(const Matrix& input, Matrix* output);
  // Runs backward from dL/doutput down to the first layer, calling done(layer) after every
  // layer (the bucketer counts the ones with parameters; the timeline times them all).
  void backward(const Matrix& grad_output, const LayerDoneFn& done);
  void setTraining(bool training);
  void setReplay(bool replay);  // Layer::setReplay on every layer
  // dL/dinput of the last backward (what a pipeline stage sends to the stage before it).
  const Matrix& inputGradient() const { return grad_a_; }

  std::span<float> values() { return values_; }
  std::span<float> grads() { return grads_; }
  // Parameters in backward (= buffer) order.
  const std::vector<ParamSlot>& slots() const { return slots_; }
  size_t numLayers() const { return layers_.size(); }
  Layer& layer(size_t i) { return *layers_[i]; }
  size_t parameterCount() const { return values_.size(); }

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<ParamSlot> slots_;
  std::vector<float> values_, grads_;
  std::vector<Matrix> activations_;  // activations_[i] = input of layer i; last = output
  Matrix grad_a_, grad_b_;
};

// FNV-1a over the parameter bytes: equal on every rank iff the parameters are bit-identical.
uint64_t hashParameters(std::span<const float> values);

}  // namespace coll::trainer
