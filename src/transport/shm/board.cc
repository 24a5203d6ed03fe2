#include "transport/shm/board.h"

#include <cstring>

#include "base/log.h"
#include "reduce/reduce.h"

namespace coll::transport::shm {

Board::Board(int rank, std::vector<BoardCell*> cells) : rank_(rank), cells_(std::move(cells)) {}

std::string Board::describe(uint64_t fingerprint) {
  auto count = static_cast<unsigned long long>(fingerprint >> 40);
  auto type = static_cast<DataType>((fingerprint >> 8) & 0xff);
  const int root = static_cast<int>((fingerprint >> 16) & 0xffffff) - 1;
  if (root >= 0) return format("a broadcast of %llu x %s from root %d", count, toString(type), root);
  return format("an all-reduce of %llu x %s %s", count, toString(type), toString(static_cast<ReduceOp>(fingerprint & 0xff)));
}

bool Board::allPosted(uint64_t sequence) {
  if (waiting_op_ != sequence) {
    waiting_op_ = sequence;
    waiting_for_ = 0;
  }
  while (waiting_for_ < size() && posted(waiting_for_, sequence)) ++waiting_for_;
  if (waiting_for_ == size()) return true;
  // While a peer has not posted, ask for the rest of its operand: those lines then travel
  // beside the one holding its sequence instead of one after another once it has posted.
  const auto* lines = reinterpret_cast<const char*>(&cell(waiting_for_, sequence));
  for (int l = 1; l <= extra_lines_; ++l) __builtin_prefetch(lines + 64 * l);
  return false;
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

void Board::copyFrom(uint64_t sequence, int rank, void* out, size_t bytes) const {
  std::memcpy(out, cell(rank, sequence).data, bytes);
}

}  // namespace coll::transport::shm
