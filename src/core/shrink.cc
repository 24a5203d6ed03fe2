#include "core/shrink.h"

#include <algorithm>

#include "core/log.h"

namespace coll {
namespace {

Status checkExcluded(int rank, int size, const std::vector<int>& sorted) {
  for (size_t i = 0; i < sorted.size(); ++i) {
    int r = sorted[i];
    if (r < 0 || r >= size) return invalidArgument(format("shrink: excluded rank %d is out of range for %d ranks", r, size));
    if (i > 0 && sorted[i - 1] == r) return invalidArgument(format("shrink: rank %d is excluded twice", r));
    if (r == rank) return invalidArgument(format("shrink: rank %d excludes itself (only survivors call shrink)", r));
  }
  return Status::ok();
}

}  // namespace

Status planShrink(const CommOptions& parent, int rank, int size, const std::vector<int>& excluded,
                  uint64_t generation, CommOptions* out) {
  std::vector<int> sorted = excluded;
  std::sort(sorted.begin(), sorted.end());
  COLL_RETURN_IF_ERROR(checkExcluded(rank, size, sorted));
  *out = parent;
  out->rank = rank - static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), rank) - sorted.begin());
  out->size = size - static_cast<int>(sorted.size());
  out->local_rank = -1;     // the survivors' host grouping decides it again
  out->host_store = false;  // the store keeps running where it runs (the parent may own it)
  out->name = parent.name + "/shrink" + std::to_string(generation) + "-x";
  for (size_t i = 0; i < sorted.size(); ++i) out->name += (i ? "," : "") + std::to_string(sorted[i]);
  return Status::ok();
}

}  // namespace coll
