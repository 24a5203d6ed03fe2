// Inputs for the reducing collectives' tests and their reduction as a closed formula. Every
// value and every partial result is exact in its type, in whatever order an algorithm
// combines ranks, so results must match bit for bit (up to 8 ranks).
#pragma once

#include <algorithm>
#include <cstdint>

#include "multirank/typed_data.h"

namespace coll::test {

inline double scaleOf(DataType t) {
  switch (t) {
    case DataType::i32: case DataType::u32: return 65537;           // sums use the upper bytes
    case DataType::i64: case DataType::u64: return 8589934593.0;    // 2^33 + 1
    case DataType::f32: return 0.25;
    case DataType::f64: return 0.375;
    default: return 1;  // 8- and 16-bit types: |sum| <= 7 * 18 fits i8/u8 and is exact in bf16
  }
}

// Rank r's element i. Chosen so that every partial result is exact in the type.
inline double inputValue(DataType t, ReduceOp op, int r, size_t i) {
  uint64_t h = mix(static_cast<uint64_t>(r), i, static_cast<uint64_t>(t), static_cast<uint64_t>(op));
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return (isSigned(t) ? static_cast<double>(static_cast<int>(h % 19) - 9) : static_cast<double>(h % 19)) * scaleOf(t);
    case ReduceOp::prod:
      if (h % 4 == 0 && r < 6) return 2;  // at most six 2s: |product| <= 64 fits i8
      if (h % 4 == 1 && isSigned(t)) return -1;
      return 1;
    case ReduceOp::min:
    case ReduceOp::max:
      switch (t) {
        case DataType::i8: return static_cast<int>(h % 256) - 128;
        case DataType::u8: return static_cast<double>(h % 256);
        case DataType::i32: return static_cast<double>(static_cast<int64_t>(h % (1ull << 32)) - (1ll << 31));
        case DataType::u32: return static_cast<double>(h % (1ull << 32));
        case DataType::i64: return static_cast<double>(static_cast<int64_t>(h % (1ull << 53)) - (1ll << 52));
        case DataType::u64: return static_cast<double>(h % (1ull << 53));
        case DataType::f16: return (static_cast<int>(h % 4001) - 2000) / 4.0;
        case DataType::bf16: return static_cast<int>(h % 511) - 255;
        case DataType::f32: return static_cast<double>(static_cast<int64_t>(h % (1ull << 24)) - (1ll << 23)) / 8;
        case DataType::f64: return static_cast<double>(static_cast<int64_t>(h % (1ull << 53)) - (1ll << 52)) / 1024;
      }
  }
  return 0;
}

// The closed formula: op over ranks, exact in double; avg divides once at the end like the
// library: integer division (truncation toward zero) for integers, a division in the type's
// own precision (f32 for f16/bf16) for floating types.
inline double expectedValue(DataType t, ReduceOp op, int n, size_t i) {
  double acc = inputValue(t, op, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(t, op, r, i);
    switch (op) {
      case ReduceOp::sum: case ReduceOp::avg: acc += v; break;
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
    }
  }
  if (op != ReduceOp::avg) return acc;
  if (!isFloating(t)) return static_cast<double>(static_cast<int64_t>(acc) / n);
  if (t == DataType::f64) return acc / n;
  return static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
}

}  // namespace coll::test
