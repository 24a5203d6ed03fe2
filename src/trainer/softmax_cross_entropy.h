// Softmax cross-entropy loss over integer labels, with its gradient.
//
// The loss is the mean over this replica's rows. `scale` lets a data-parallel step weight the
// gradient by the replica's share of the global batch (1 for equal shards, as the gradient
// all-reduce averages).
#pragma once

#include <span>

#include "trainer/matrix.h"

namespace coll::trainer {

struct LossResult {
  float loss = 0.0f;   // mean cross-entropy over the rows
  size_t correct = 0;  // rows whose arg-max logit is the label
};

// grad (same shape as logits) = d(mean loss)/d logits. labels.size() == logits.rows.
LossResult softmaxCrossEntropy(const Matrix& logits, std::span<const int> labels, Matrix* grad);

// Accuracy only (evaluation).
size_t countCorrect(const Matrix& logits, std::span<const int> labels);

}  // namespace coll::trainer
