// Pipeline parallelism's arithmetic, kept apart from any communication so it can be tested on
// its own: which layers each stage holds, and in which order a stage runs the forward and
// backward passes of a step's micro-batches.
//
// Stages: the layers are cut into P contiguous ranges that minimise the largest stage cost
// (the linear-partition problem, solved exactly by dynamic programming over the prefix
// sums). A layer's cost is its parameter count, plus one so that parameter-free layers
// (ReLU) still weigh something: for dense layers, the work of forward and backward is
// proportional to the weights, so this balances compute.
//
// Orders (for stage s of P, M micro-batches):
//   GPipe: every forward, then every backward (in micro-batch order), so M micro-batches'
//          activations are alive at once on every stage.
//   1F1B (PipeDream-Flush): min(P - s - 1, M) forwards to warm up, then one forward and one
//          backward alternately, then the remaining backwards: at most P - s micro-batches
//          are alive on stage s.
// Both end the step with every backward done, so the update is the same synchronous one.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace coll::trainer {

enum class PipelineSchedule { gpipe, one_f_one_b };

// "gpipe" or "1f1b"; throws std::invalid_argument naming the choices otherwise.
PipelineSchedule parsePipelineSchedule(const std::string& name);
const char* toString(PipelineSchedule schedule);

struct PipelineAction {
  bool forward = true;
  int micro = 0;
};

std::vector<PipelineAction> pipelineOrder(PipelineSchedule schedule, int stage, int stages, int micro_batches);

// The most micro-batches whose activations are alive at once when running `order`.
int peakAlive(const std::vector<PipelineAction>& order);

// [first, last) layer ranges, one per stage, covering every layer. Throws
// std::invalid_argument when stages < 1 or stages > the number of layers.
std::vector<std::pair<size_t, size_t>> assignStages(const std::vector<double>& layer_costs, int stages);

}  // namespace coll::trainer
