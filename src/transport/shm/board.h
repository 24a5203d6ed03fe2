// The shared-memory side of the small-op board (transport/small_op_board.h): two cells in each
// rank's segment (layout.h), posting an operand, seeing who has posted, and combining.
//
// Op k (1, 2, ...) uses cell k % 2. A rank posts op k only after it saw every peer post op
// k - 1, and a peer posts k - 1 only after it finished reading op k - 2: so the cell being
// overwritten is one nobody reads any more, and a cell being read never changes under its
// reader (the fast peer's next post goes to the other cell). The owner writes the operand and
// fingerprint, then the sequence with release; readers load the sequence with acquire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/types.h"
#include "transport/shm/layout.h"

namespace coll::transport::shm {

class Board {
 public:
  // cells[r]: rank r's two cells, this rank's own among them (mapped from every segment).
  Board(int rank, std::vector<BoardCell*> cells);

  // What every rank's call must agree on: count, type, op and root (-1: all-reduce), packed.
  // count (< 2^24: the board holds 4 KiB) | root + 1 (< 2^24) | type | op (0 for a broadcast).
  // Inline, as post() is: both run on every board op.
  static uint64_t fingerprint(size_t count, DataType type, ReduceOp op, int root) {
    const uint64_t reduce_op = root < 0 ? static_cast<uint64_t>(op) : 0;
    return (static_cast<uint64_t>(count) << 40) | (static_cast<uint64_t>(root + 1) << 16) |
           (static_cast<uint64_t>(type) << 8) | reduce_op;
  }
  static std::string describe(uint64_t fingerprint);  // "4 x f32 sum", "4 x f32 from root 2"

  // bytes: what this rank posts (0 for a broadcast's others); operand_bytes: the op's operand,
  // which allPosted() prefetches from peers that have not posted yet.
  void post(uint64_t sequence, uint64_t fingerprint, const void* data, size_t bytes, size_t operand_bytes) {
    const size_t lines = (kOperandOffset + operand_bytes + 63) / 64;
    extra_lines_ = lines <= kMaxPrefetchLines + 1 ? static_cast<int>(lines) - 1 : 0;
    BoardCell& mine = cell(rank_, sequence);
    if (bytes > 0) std::memcpy(mine.data, data, bytes);  // a broadcast's non-roots may have no buffer
    mine.fingerprint = fingerprint;
    mine.sequence.store(sequence, std::memory_order_release);
  }
  // True once every rank has posted op `sequence`.
  bool allPosted(uint64_t sequence);
  bool posted(int rank, uint64_t sequence) const { return cell(rank, sequence).sequence.load(std::memory_order_acquire) == sequence; }
  // The ranks that have not posted op `sequence` yet.
  std::vector<int> missing(uint64_t sequence) const;
  // The lowest rank whose posted op `sequence` differs from `fingerprint`, or -1.
  int disagreeing(uint64_t sequence, uint64_t fingerprint) const;
  uint64_t fingerprintOf(int rank, uint64_t sequence) const { return cell(rank, sequence).fingerprint; }
  // out = operand(0) op operand(1) op ... in rank order (avg as sum: the caller divides).
  void combine(uint64_t sequence, void* out, size_t count, DataType type, ReduceOp op) const;
  void copyFrom(uint64_t sequence, int rank, void* out, size_t bytes) const;

  int size() const { return static_cast<int>(cells_.size()); }

 private:
  BoardCell& cell(int rank, uint64_t sequence) const { return cells_[rank][sequence % 2]; }

  int rank_;
  std::vector<BoardCell*> cells_;
  static constexpr size_t kOperandOffset = offsetof(BoardCell, data);
  // Larger operands are not prefetched: pulling lines the owner is still writing makes each
  // of its stores wait (2 ranks, 1-4 KiB: 10-20% slower with the prefetch, 64-512 B 10-20%
  // faster where the two cores are far apart, the same where they are close).
  static constexpr size_t kMaxPrefetchLines = 7;
  int extra_lines_ = 0;  // the current op's operand lines past the sequence's (0: none, or too many)
  int waiting_for_ = 0;  // allPosted() resumes here: ranks below it have posted this op
  uint64_t waiting_op_ = 0;
};

}  // namespace coll::transport::shm
