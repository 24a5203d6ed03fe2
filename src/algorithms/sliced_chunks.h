// The buffer cut into n chunks (one per rank, sizes differing by at most one element) and each
// chunk into slices: the unit of pipelining, and the region unit of hazard tracking.
#pragma once

#include <algorithm>
#include <vector>

#include "algorithms/patterns/ring.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

class SlicedChunks {
 public:
  explicit SlicedChunks(const BuildParams& p)
      : count_(p.count), n_(p.nranks), elem_(p.elem_size), per_slice_(std::max<size_t>(1, p.slice_bytes / p.elem_size)) {
    size_t region = 0;
    for (int c = 0; c < n_; ++c) {
      first_region_.push_back(region);
      region += slices(c);
    }
    num_regions_ = region;
  }
  size_t numRegions() const { return num_regions_; }
  size_t slices(int c) const { return ring::numSlices(ring::chunk(count_, n_, c).count, per_slice_); }
  size_t region(int c, size_t j) const { return first_region_[c] + j; }
  size_t offset(int c, size_t j) const { return (ring::chunk(count_, n_, c).first + j * per_slice_) * elem_; }
  size_t bytes(int c, size_t j) const {
    return std::min(per_slice_, ring::chunk(count_, n_, c).count - j * per_slice_) * elem_;
  }
  size_t chunkOffset(int c) const { return ring::chunk(count_, n_, c).first * elem_; }
  size_t chunkBytes(int c) const { return ring::chunk(count_, n_, c).count * elem_; }

 private:
  size_t count_;
  int n_;
  size_t elem_;
  size_t per_slice_;
  std::vector<size_t> first_region_;
  size_t num_regions_ = 0;
};

// The whole buffer cut into slices, for collectives that do not chunk it per rank (broadcast,
// point-to-point). Slice j is also region j.
class BufferSlices {
 public:
  explicit BufferSlices(const BuildParams& p)
      : count_(p.count), elem_(p.elem_size), per_(std::max<size_t>(1, p.slice_bytes / p.elem_size)),
        slices_(ring::numSlices(p.count, per_)) {}
  size_t size() const { return slices_; }
  size_t offset(size_t j) const { return j * per_ * elem_; }
  size_t bytes(size_t j) const { return std::min(per_, count_ - j * per_) * elem_; }

 private:
  size_t count_, elem_, per_, slices_;
};

}  // namespace coll::algo
