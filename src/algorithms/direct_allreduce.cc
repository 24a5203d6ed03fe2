#include "algorithms/direct_allreduce.h"

#include <algorithm>

#include "algorithms/patterns/ring.h"

namespace coll::algo {
namespace {

// Same chunking as the ring; region = (chunk, slice).
class Slices {
 public:
  explicit Slices(const BuildParams& p) : p_(p), per_(std::max<size_t>(1, p.slice_bytes / p.elem_size)) {
    size_t region = 0;
    for (int c = 0; c < p.nranks; ++c) {
      first_.push_back(region);
      region += count(c);
    }
    total_ = region;
  }
  size_t total() const { return total_; }
  size_t count(int c) const { return ring::numSlices(ring::chunk(p_.count, p_.nranks, c).count, per_); }
  size_t region(int c, size_t j) const { return first_[c] + j; }
  size_t offset(int c, size_t j) const { return (ring::chunk(p_.count, p_.nranks, c).first + j * per_) * p_.elem_size; }
  size_t bytes(int c, size_t j) const {
    return std::min(per_, ring::chunk(p_.count, p_.nranks, c).count - j * per_) * p_.elem_size;
  }

 private:
  const BuildParams& p_;
  size_t per_;
  std::vector<size_t> first_;
  size_t total_ = 0;
};

// Peers in the order rank+1, rank+2, ...: at each moment the ranks talk to different peers.
std::vector<int> peersOf(const BuildParams& p) {
  std::vector<int> peers;
  for (int k = 1; k < p.nranks; ++k) peers.push_back(ring::mod(p.rank + k, p.nranks));
  return peers;
}

void addReduceScatter(const BuildParams& p, const Slices& sl, ScheduleBuilder& b) {
  const int r = p.rank;
  const BufferId input = p.in_place ? BufferId::output : BufferId::input;
  for (int peer : peersOf(p))
    for (size_t j = 0; j < sl.count(peer); ++j)
      b.add({StepKind::send, input, peer, sl.offset(peer, j), sl.bytes(peer, j), 0, 0}, {sl.region(peer, j)}, {});
  const auto depth = static_cast<size_t>(p.pipeline_depth);
  std::vector<uint32_t> slot_users;
  for (size_t j = 0; j < sl.count(r); ++j) {
    bool first = true;  // the first reduction of a slice reads the input: no up-front copy
    for (int peer : peersOf(p)) {
      size_t k = slot_users.size();
      Step step{StepKind::recvReduce, first ? input : BufferId::output, peer, sl.offset(r, j), sl.bytes(r, j),
                (k % depth) * p.slice_bytes, 0};
      if (k >= depth) step.deps.push_back(slot_users[k - depth]);
      slot_users.push_back(b.add(std::move(step), {sl.region(r, j)}, {sl.region(r, j)}));
      first = false;
    }
    if (p.average) b.add({StepKind::divide, BufferId::output, -1, sl.offset(r, j), sl.bytes(r, j), 0, 0},
                         {sl.region(r, j)}, {sl.region(r, j)});
  }
  b.setScratchBytes(std::min(slot_users.size(), depth) * p.slice_bytes);
}

void addAllGather(const BuildParams& p, const Slices& sl, ScheduleBuilder& b) {
  const int r = p.rank;
  for (int peer : peersOf(p))
    for (size_t j = 0; j < sl.count(r); ++j)
      b.add({StepKind::send, BufferId::output, peer, sl.offset(r, j), sl.bytes(r, j), 0, 1}, {sl.region(r, j)}, {});
  for (int peer : peersOf(p))
    for (size_t j = 0; j < sl.count(peer); ++j)
      b.add({StepKind::recv, BufferId::output, peer, sl.offset(peer, j), sl.bytes(peer, j), 0, 1}, {},
            {sl.region(peer, j)});
}

}  // namespace

Schedule buildDirectAllreduce(const BuildParams& p) {
  Slices sl(p);
  ScheduleBuilder b("direct", sl.total());
  b.setNumPhases(p.nranks > 1 ? 2 : 1);
  if (p.count == 0) return b.finish();
  if (p.nranks == 1) {
    if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  addReduceScatter(p, sl, b);
  addAllGather(p, sl, b);
  return b.finish();
}

Schedule buildDirectBroadcast(const BuildParams& p) {
  const size_t per = std::max<size_t>(1, p.slice_bytes / p.elem_size);
  const size_t slices = ring::numSlices(p.count, per);
  ScheduleBuilder b("direct", slices);
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  const bool is_root = p.rank == p.root;
  if (is_root && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  for (size_t j = 0; j < slices; ++j) {
    size_t offset = j * per * p.elem_size, bytes = std::min(per, p.count - j * per) * p.elem_size;
    if (!is_root) {
      b.add({StepKind::recv, BufferId::output, p.root, offset, bytes, 0, 0}, {}, {j});
      continue;
    }
    for (int k = 1; k < p.nranks; ++k)  // the root streams from its input, never waiting for its copy
      b.add({StepKind::send, BufferId::input, ring::mod(p.rank + k, p.nranks), offset, bytes, 0, 0}, {}, {});
  }
  return b.finish();
}

}  // namespace coll::algo
