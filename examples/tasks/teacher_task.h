// A synthetic teacher-student task whose size is a flag: points drawn uniformly from a
// 16-dimensional cube, shown to the student as `inputs` features (a fixed random linear
// embedding) and labelled by a fixed random teacher (16 -> 32 tanh units -> `classes`, argmax). A student MLP of any width and depth learns it, so large-gradient runs
// still train on something with a measurable accuracy.
//
// Example i of a split is a pure function of (seed, split, i): a rank generates only its own
// shard (example i belongs to rank i % world) and every world size sees the same examples.
#pragma once

#include <cstddef>

#include "trainer/dataset.h"
#include "tasks/digits.h"

namespace coll::trainer {

struct TeacherSpec {
  size_t inputs = 256;
  size_t classes = 10;
  size_t train_examples = 8192;
  size_t test_examples = 2048;
  unsigned seed = 7;  // the teacher's weights and the examples
};

Dataset makeTeacherShard(const TeacherSpec& spec, Split split, int rank, int world);

}  // namespace coll::trainer
