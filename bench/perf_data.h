// Data for the perf tests' check (-c): input values every rank can recompute for any rank
// and index, and typed fill / poison / compare over raw buffers.
//
// The check has to be exact, so the values are small integers chosen per (type, op, ranks)
// so that every partial result of the reduction is representable in the element type: no
// rounding in f16/bf16, no integer overflow, in whatever order the algorithm combines
// ranks. Averages are exact too (inputs are multiples of the rank count), except with more
// ranks than the type has exact integers for, where a tolerance applies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "coll/types.h"

namespace coll::bench {

class InputPattern {
 public:
  // op: the reduction the values go through; nullopt for data that is only moved
  // (broadcast, gather, alltoall), which gets the widest value range.
  InputPattern(DataType type, std::optional<ReduceOp> op, int nranks);

  // What `rank` holds at element `index` of its send buffer.
  double value(int rank, size_t index) const;

  // op over all ranks of value(r, index), as the element type computes it. Requires an op.
  double reduced(size_t index) const;

  // value(r, i) == value(r, i + period()) for every rank.
  size_t period() const { return period_; }

  // Largest |got - expected| / |expected| still counted as right: 0 (exact) except for avg
  // on floating types with too many ranks for exact inputs (e.g. over 16 for bfloat16).
  double tolerance() const { return tolerance_; }

 private:
  enum class Kind {
    kSpread,  // scale_ * (offset_ + (rank * stride_ + index) % modulus_)
    kPowers,  // 2 on a few ranks and 1 elsewhere, so products stay small powers of two
    kOneHot,  // 1 on one rank per index: too many ranks for any wider range to sum exactly
  };

  DataType type_;
  std::optional<ReduceOp> op_;
  int nranks_;
  Kind kind_ = Kind::kSpread;
  int64_t modulus_ = 1;
  int64_t offset_ = 0;
  int64_t stride_ = 1;
  int64_t scale_ = 1;
  int powerRanks_ = 0;  // kPowers: ranks below this may hold a 2
  size_t period_ = 1;
  double tolerance_ = 0;
};

// Writes value(rank, first + k) to element k of buf, for k < count.
void fillInput(void* buf, DataType type, size_t count, const InputPattern& pattern, int rank,
               size_t first = 0);

// Fills with a value no check ever expects (NaN, or the type's extreme the patterns leave
// unused), so that elements a collective forgot to write are counted as wrong.
void fillPoison(void* buf, DataType type, size_t count);

// Number of elements k < count with |buf[k] - expected(k)| > tolerance * |expected(k)|;
// NaN counts as wrong.
int64_t countWrong(const void* buf, DataType type, size_t count,
                   const std::function<double(size_t)>& expected, double tolerance);

// The names nccl-tests prints in its "type" and "redop" columns.
const char* ncclTypeName(DataType type);
const char* ncclOpName(ReduceOp op);

}  // namespace coll::bench
