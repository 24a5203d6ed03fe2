#include "comm/shrink.h"

#include <algorithm>

#include "base/log.h"
#include "comm/agreement.h"

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

Status agreeOnShrink(bootstrap::StoreClient& store, const std::string& key_prefix, uint64_t generation, int rank,
                     int size, const std::vector<int>& excluded, bootstrap::Deadline deadline) {
  const std::string mine = rankSet(excluded);
  const std::string base = key_prefix + "shrink" + std::to_string(generation) + "/excluded/";
  auto failed = [&](const Status& st, const std::string& what) {
    return Status(st.code(), format("shrink #%llu (rank %d): %s through the store: %s",
                                    static_cast<unsigned long long>(generation), rank, what.c_str(),
                                    st.message().c_str()), st.peer());
  };
  Status st = store.set(base + std::to_string(rank), mine, deadline);
  if (!st) return failed(st, "publishing the ranks it excludes");
  std::string disagree;
  for (int r = 0; r < size; ++r) {
    if (r == rank || std::find(excluded.begin(), excluded.end(), r) != excluded.end()) continue;
    std::string theirs;
    st = store.get(base + std::to_string(r), &theirs, deadline);
    if (!st) return failed(st, format("waiting for survivor rank %d to shrink too", r));
    if (theirs != mine) disagree += format("; rank %d excludes %s", r, theirs.c_str());
  }
  if (disagree.empty()) return Status::ok();
  return mismatchError(format("shrink #%llu: the survivors disagree on whom to exclude: rank %d excludes %s%s",
                              static_cast<unsigned long long>(generation), rank, mine.c_str(), disagree.c_str()));
}

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
