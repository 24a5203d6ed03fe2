// Matrix: a dense row-major float matrix, the only tensor the trainer needs (a batch of rows).
#pragma once

#include <cstddef>
#include <vector>

namespace coll::trainer {

struct Matrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<float> data;

  Matrix() = default;
  Matrix(size_t r, size_t c) : rows(r), cols(c), data(r * c, 0.0f) {}

  // Keeps the allocation when the shape shrinks or stays, so a step allocates nothing.
  void resize(size_t r, size_t c) {
    rows = r;
    cols = c;
    data.resize(r * c);
  }
  float* row(size_t i) { return data.data() + i * cols; }
  const float* row(size_t i) const { return data.data() + i * cols; }
  float& at(size_t i, size_t j) { return data[i * cols + j]; }
  float at(size_t i, size_t j) const { return data[i * cols + j]; }
};

}  // namespace coll::trainer
