#include "transport/shm/board.h"

#include <cstring>

#include "core/log.h"
#include "reduce/reduce.h"

namespace coll::transport::shm {

Board::Board(int rank, std::vector<BoardCell*> cells) : rank_(rank), cells_(std::move(cells)) {}

uint64_t Board::fingerprint(size_t count, DataType type, ReduceOp op) {
  return (static_cast<uint64_t>(count) << 16) | (static_cast<uint64_t>(type) << 8) | static_cast<uint64_t>(op);
}

std::string Board::describe(uint64_t fingerprint) {
  auto type = static_cast<DataType>((fingerprint >> 8) & 0xff);
  auto op = static_cast<ReduceOp>(fingerprint & 0xff);
  return format("%llu x %s %s", static_cast<unsigned long long>(fingerprint >> 16), toString(type), toString(op));
}

void Board::post(uint64_t sequence, uint64_t fingerprint, const void* data, size_t bytes) {
  BoardCell& mine = cell(rank_, sequence);
  std::memcpy(mine.data, data, bytes);
  mine.fingerprint = fingerprint;
  mine.sequence.store(sequence, std::memory_order_release);
}

bool Board::allPosted(uint64_t sequence) {
  if (waiting_op_ != sequence) {
    waiting_op_ = sequence;
    waiting_for_ = 0;
  }
  while (waiting_for_ < size() && posted(waiting_for_, sequence)) ++waiting_for_;
  return waiting_for_ == size();
}

std::vector<int> Board::missing(uint64_t sequence) const {
  std::vector<int> ranks;
  for (int r = 0; r < size(); ++r)
    if (!posted(r, sequence)) ranks.push_back(r);
  return ranks;
}

int Board::disagreeing(uint64_t sequence, uint64_t fingerprint) const {
  for (int r = 0; r < size(); ++r)
    if (cell(r, sequence).fingerprint != fingerprint) return r;
  return -1;
}

void Board::combine(uint64_t sequence, void* out, size_t count, DataType type, ReduceOp op) const {
  if (size() == 1) {
    std::memcpy(out, cell(0, sequence).data, count * sizeOf(type));
    return;
  }
  reduce::reduce(out, cell(0, sequence).data, cell(1, sequence).data, count, type, op);
  for (int r = 2; r < size(); ++r) reduce::reduceInto(out, cell(r, sequence).data, count, type, op);
}

}  // namespace coll::transport::shm
