#include "algorithms/ring_allreduce.h"

#include <algorithm>

#include "algorithms/patterns/ring.h"

namespace coll::algo {
namespace {

// Maps (chunk, slice) to a region index and a byte range of the output buffer.
class SlicedChunks {
 public:
  SlicedChunks(const BuildParams& p) : p_(p), per_slice_(std::max<size_t>(1, p.slice_bytes / p.elem_size)) {
    size_t region = 0;
    for (int c = 0; c < p.nranks; ++c) {
      first_region_.push_back(region);
      region += slices(c);
    }
    num_regions_ = region;
  }
  size_t numRegions() const { return num_regions_; }
  size_t slices(int c) const { return ring::numSlices(ring::chunk(p_.count, p_.nranks, c).count, per_slice_); }
  size_t region(int c, size_t j) const { return first_region_[c] + j; }
  size_t offset(int c, size_t j) const {
    return (ring::chunk(p_.count, p_.nranks, c).first + j * per_slice_) * p_.elem_size;
  }
  size_t bytes(int c, size_t j) const {
    size_t elems = ring::chunk(p_.count, p_.nranks, c).count;
    return std::min(per_slice_, elems - j * per_slice_) * p_.elem_size;
  }

 private:
  const BuildParams& p_;
  size_t per_slice_;
  std::vector<size_t> first_region_;
  size_t num_regions_ = 0;
};

void addReduceScatter(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b) {
  const int n = p.nranks, r = p.rank;
  const int right = ring::right(r, n), left = ring::left(r, n);
  const auto depth = static_cast<size_t>(p.pipeline_depth);
  std::vector<uint32_t> slot_users;  // recvReduce steps in order; slot k is reused by k + depth
  for (int s = 0; s < n - 1; ++s) {
    int send_c = ring::reduceScatterSendChunk(r, n, s), recv_c = ring::reduceScatterRecvChunk(r, n, s);
    // Out of place, nothing is copied up front: step 0 sends the rank's own chunk straight
    // from the input, and each other chunk's first reduction reads the input (out = in op
    // received). The own chunk's output is written only by the all-gather.
    BufferId first_touch = p.in_place ? BufferId::output : BufferId::input;
    for (size_t j = 0; j < sc.slices(send_c); ++j)
      b.add({StepKind::send, s == 0 ? first_touch : BufferId::output, right, sc.offset(send_c, j),
             sc.bytes(send_c, j), 0, uint32_t(s)},
            {sc.region(send_c, j)}, {});
    for (size_t j = 0; j < sc.slices(recv_c); ++j) {
      size_t k = slot_users.size();
      Step step{StepKind::recvReduce, first_touch, left, sc.offset(recv_c, j), sc.bytes(recv_c, j),
                (k % depth) * p.slice_bytes, uint32_t(s)};
      if (k >= depth) step.deps.push_back(slot_users[k - depth]);
      slot_users.push_back(b.add(std::move(step), {sc.region(recv_c, j)}, {sc.region(recv_c, j)}));
    }
  }
  b.setScratchBytes(std::min(slot_users.size(), depth) * p.slice_bytes);
}

void addAllGather(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b) {
  const int n = p.nranks, r = p.rank;
  const int right = ring::right(r, n), left = ring::left(r, n);
  const auto phase0 = static_cast<uint32_t>(n - 1);
  for (int s = 0; s < n - 1; ++s) {
    int send_c = ring::allGatherSendChunk(r, n, s), recv_c = ring::allGatherRecvChunk(r, n, s);
    for (size_t j = 0; j < sc.slices(send_c); ++j)
      b.add({StepKind::send, BufferId::output, right, sc.offset(send_c, j), sc.bytes(send_c, j), 0, phase0 + s},
            {sc.region(send_c, j)}, {});
    for (size_t j = 0; j < sc.slices(recv_c); ++j)
      b.add({StepKind::recv, BufferId::output, left, sc.offset(recv_c, j), sc.bytes(recv_c, j), 0, phase0 + s}, {},
            {sc.region(recv_c, j)});
  }
}

}  // namespace

Schedule buildRingAllreduce(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("ring", sc.numRegions());
  b.setNumPhases(p.nranks > 1 ? static_cast<uint32_t>(2 * (p.nranks - 1)) : 1);
  if (p.count == 0) return b.finish();
  if (p.nranks == 1) {
    if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  addReduceScatter(p, sc, b);
  if (p.average) {
    int owned = ring::ownedChunk(p.rank, p.nranks);
    for (size_t j = 0; j < sc.slices(owned); ++j)
      b.add({StepKind::divide, BufferId::output, -1, sc.offset(owned, j), sc.bytes(owned, j), 0,
             uint32_t(p.nranks - 2)},
            {sc.region(owned, j)}, {sc.region(owned, j)});
  }
  addAllGather(p, sc, b);
  return b.finish();
}

}  // namespace coll::algo
