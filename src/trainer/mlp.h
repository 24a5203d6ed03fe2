// Building blocks shared by the digits example, the overlap benchmark and the tests: a
// multi-layer perceptron, optimizers by name, and accuracy over every replica's shard.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "trainer/dataset.h"
#include "trainer/model.h"
#include "trainer/optimizer.h"

namespace coll::trainer {

struct MlpSpec {
  size_t inputs = 64;
  std::vector<size_t> hidden = {64};
  size_t classes = 10;
  bool batch_norm = false;  // cross-replica batch norm after each hidden dense layer
};

// dense -> [batch norm] -> relu per hidden layer, then dense to the classes; built and seeded.
// comm is used by batch norm only (nullptr: per-replica statistics).
void buildMlp(Model& model, const MlpSpec& spec, Communicator* comm, unsigned seed);
// The same layers, unbuilt (a pipeline keeps a stage's share of them).
std::vector<std::unique_ptr<Layer>> mlpLayers(const MlpSpec& spec, Communicator* comm);

// "sgd" (momentum 0.9) or "adam"; throws std::invalid_argument otherwise.
std::unique_ptr<Optimizer> makeOptimizer(const std::string& name, float lr);

// Fraction of correct predictions over the union of every rank's shard (evaluation mode; one
// all-reduce of the counts). Every rank gets the same value.
double evaluateAccuracy(Model& model, const Dataset& shard, Communicator& comm);

}  // namespace coll::trainer
