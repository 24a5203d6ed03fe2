// scikit-learn's digits (1797 8x8 images of handwritten digits, 64 features in 0..16, label
// 0..9), from the gzipped CSV Debian's python3-sklearn ships.
//
// Fixed split: row i of the file is a test example when i % 5 == 0 (360 examples), a training
// example otherwise (1437). A rank keeps only its shard: the j-th example of the split is kept
// by rank j % world. Every line must be decompressed to find its neighbours (gzip is a stream),
// but only the rank's own lines are parsed and stored. Features are scaled to [0, 1].
#pragma once

#include <string>

#include "trainer/dataset.h"

namespace coll::trainer {

inline constexpr const char* kDefaultDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr size_t kDigitsTrain = 1437, kDigitsTest = 360;

enum class Split { train, test };

// Throws std::runtime_error naming the path and line on a missing file or a malformed line.
Dataset loadDigitsShard(const std::string& path, Split split, int rank, int world);

}  // namespace coll::trainer
