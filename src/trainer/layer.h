// Layer: one stage of a sequential model with an explicit forward and backward pass.
//
// A layer declares its parameters (name and element count); the Model places every parameter
// in one flat value buffer and one flat gradient buffer and hands each layer views into them
// (bind). Backward *overwrites* the gradients of its parameters (each parameter is used once
// per step), so nothing needs zeroing between steps. Layers are driven by one thread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "trainer/matrix.h"

namespace coll::trainer {

struct ParamSpec {
  std::string name;
  size_t count = 0;
};

// Where a parameter lives in the model's flat buffers.
struct ParamView {
  std::span<float> value;
  std::span<float> grad;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string name() const = 0;
  virtual std::vector<ParamSpec> parameters() const { return {}; }
  // Receives one view per ParamSpec, in the same order. Called once, before initialize.
  virtual void bind(std::vector<ParamView> views) {}
  // Sets initial values; every rank must produce the same ones for the same seed.
  virtual void initialize(unsigned seed) {}
  // out = f(in). The layer may keep what backward needs (its input, masks).
  virtual void forward(const Matrix& in, Matrix* out) = 0;
  // Given dL/dout, writes dL/din and the gradients of the layer's parameters.
  virtual void backward(const Matrix& grad_out, Matrix* grad_in) = 0;
  // Evaluation mode (batch norm uses its running statistics, no communication).
  virtual void setTraining(bool training) {}
  // Replay mode: the next forwards recompute passes already run (a pipeline's re-materialisation
  // before a backward), so they must leave what persists across batches untouched (batch norm's
  // running statistics) while rebuilding what backward needs.
  virtual void setReplay(bool replay) {}
};

}  // namespace coll::trainer
