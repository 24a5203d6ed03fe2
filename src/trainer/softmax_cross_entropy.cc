#include "trainer/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace coll::trainer {
namespace {

size_t argMax(const float* row, size_t n) { return static_cast<size_t>(std::max_element(row, row + n) - row); }

}  // namespace

LossResult softmaxCrossEntropy(const Matrix& logits, std::span<const int> labels, Matrix* grad) {
  LossResult r;
  grad->resize(logits.rows, logits.cols);
  const float inv_rows = 1.0f / static_cast<float>(logits.rows);
  double total = 0.0;
  for (size_t i = 0; i < logits.rows; ++i) {
    const float* z = logits.row(i);
    float* g = grad->row(i);
    // Subtracting the maximum keeps exp() from overflowing; it cancels in the ratio.
    float m = *std::max_element(z, z + logits.cols);
    float sum = 0.0f;
    for (size_t j = 0; j < logits.cols; ++j) sum += g[j] = std::exp(z[j] - m);
    size_t y = static_cast<size_t>(labels[i]);
    total += std::log(sum) - (z[y] - m);
    for (size_t j = 0; j < logits.cols; ++j) g[j] = (g[j] / sum - (j == y ? 1.0f : 0.0f)) * inv_rows;
    if (argMax(z, logits.cols) == y) ++r.correct;
  }
  r.loss = static_cast<float>(total / static_cast<double>(logits.rows));
  return r;
}

size_t countCorrect(const Matrix& logits, std::span<const int> labels) {
  size_t correct = 0;
  for (size_t i = 0; i < logits.rows; ++i)
    if (argMax(logits.row(i), logits.cols) == static_cast<size_t>(labels[i])) ++correct;
  return correct;
}

}  // namespace coll::trainer
