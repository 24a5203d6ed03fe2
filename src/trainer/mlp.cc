#include "trainer/mlp.h"

#include <stdexcept>

#include "trainer/adam.h"
#include "trainer/batch_norm.h"
#include "trainer/dense.h"
#include "trainer/relu.h"
#include "trainer/sgd.h"
#include "trainer/softmax_cross_entropy.h"

namespace coll::trainer {

std::vector<std::unique_ptr<Layer>> mlpLayers(const MlpSpec& spec, Communicator* comm) {
  std::vector<std::unique_ptr<Layer>> layers;
  size_t in = spec.inputs;
  for (size_t width : spec.hidden) {
    layers.push_back(std::make_unique<Dense>(in, width));
    if (spec.batch_norm) layers.push_back(std::make_unique<CrossReplicaBatchNorm>(width, comm));
    layers.push_back(std::make_unique<Relu>());
    in = width;
  }
  layers.push_back(std::make_unique<Dense>(in, spec.classes));
  return layers;
}

void buildMlp(Model& model, const MlpSpec& spec, Communicator* comm, unsigned seed) {
  for (auto& layer : mlpLayers(spec, comm)) model.add(std::move(layer));
  model.build(seed);
}

std::unique_ptr<Optimizer> makeOptimizer(const std::string& name, float lr) {
  if (name == "sgd") return std::make_unique<SgdMomentum>(lr, 0.9f);
  if (name == "adam") return std::make_unique<Adam>(lr);
  throw std::invalid_argument("unknown optimizer '" + name + "' (sgd, adam)");
}

double evaluateAccuracy(Model& model, const Dataset& shard, Communicator& comm) {
  model.setTraining(false);
  Matrix logits;
  model.forward(shard.features, &logits);
  model.setTraining(true);
  double counts[2] = {static_cast<double>(countCorrect(logits, shard.labels)), static_cast<double>(shard.size())};
  comm.allreduce(counts, counts, 2, DataType::f64, ReduceOp::sum).wait();
  return counts[1] > 0 ? counts[0] / counts[1] : 0.0;
}

}  // namespace coll::trainer
