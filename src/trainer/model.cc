#include "trainer/model.h"

#include <cstring>
#include <stdexcept>

#include "base/fnv1a.h"

namespace coll::trainer {

void Model::add(std::unique_ptr<Layer> layer) {
  if (!values_.empty()) throw std::logic_error("Model::add after build");
  layers_.push_back(std::move(layer));
}

void Model::build(unsigned seed, size_t first_layer) {
  size_t total = 0;
  for (size_t l = layers_.size(); l-- > 0;) {
    for (const ParamSpec& p : layers_[l]->parameters()) {
      std::string name = "layer" + std::to_string(l + first_layer) + "." + layers_[l]->name() + "." + p.name;
      slots_.push_back({name, l, total, p.count});
      total += p.count;
    }
  }
  values_.assign(total, 0.0f);
  grads_.assign(total, 0.0f);
  for (size_t l = 0; l < layers_.size(); ++l) {
    std::vector<ParamView> views;
    for (const ParamSlot& s : slots_) {
      if (s.layer != l) continue;
      views.push_back({std::span<float>(values_).subspan(s.offset, s.count),
                       std::span<float>(grads_).subspan(s.offset, s.count)});
    }
    layers_[l]->bind(std::move(views));
    layers_[l]->initialize(seed + static_cast<unsigned>(l + first_layer) * 7919u);
  }
  activations_.resize(layers_.size() + 1);
}

void Model::forward(const Matrix& input, Matrix* output) {
  activations_[0] = input;
  for (size_t l = 0; l < layers_.size(); ++l) layers_[l]->forward(activations_[l], &activations_[l + 1]);
  *output = activations_.back();
}

void Model::backward(const Matrix& grad_output, const LayerDoneFn& done) {
  grad_a_ = grad_output;
  for (size_t l = layers_.size(); l-- > 0;) {
    layers_[l]->backward(grad_a_, &grad_b_);
    std::swap(grad_a_, grad_b_);
    if (done) done(l);
  }
}

void Model::setTraining(bool training) {
  for (auto& l : layers_) l->setTraining(training);
}

void Model::setReplay(bool replay) {
  for (auto& l : layers_) l->setReplay(replay);
}

uint64_t hashParameters(std::span<const float> values) {
  return Fnv1a().addBytes(values.data(), values.size_bytes()).value();
}

}  // namespace coll::trainer
