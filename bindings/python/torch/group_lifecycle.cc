// A group's life beyond its ops under torch 2.x: split_group, destroy_process_group's
// shutdown and _abort_process_group's abort (process_group.h says when torch calls which).
#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>

#include "process_group.h"

namespace coll::torch_backend {

Communicator& ProcessGroupColl::live(const char* op) {
  TORCH_CHECK(comm_ != nullptr, op, " (rank ", rank_, "): this coll process group was shut down ",
              "(destroy_process_group); make a new group for further ops");
  return *comm_;
}

#if TORCH_VERSION_MAJOR >= 2

// As gloo's split: only the members of the split meet (through the store torch made for it),
// so ranks outside every split, and the other splits, need not take part. torch's split_group
// checks the splits are disjoint and the same on every rank before it gets here.
c10::intrusive_ptr<c10d::Backend> ProcessGroupColl::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::vector<int>& ranks,
                                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) return nullptr;
  for (int r : ranks)
    TORCH_CHECK(r >= 0 && r < size_, "coll split_group (rank ", rank_, "): rank ", r, " is not in the parent group ",
                "of ", size_, " ranks");
  const auto timeout = opts && opts->timeout.count() > 0 ? opts->timeout : timeout_;
  const int group_rank = static_cast<int>(me - ranks.begin());
  // Released while the members meet: torch's store calls may need another Python thread.
  std::optional<pybind11::gil_scoped_release> unlocked;
  if (Py_IsInitialized() && PyGILState_Check()) unlocked.emplace();
  return c10::make_intrusive<ProcessGroupColl>(store, group_rank, static_cast<int>(ranks.size()), timeout,
                                               profiling_name_);
}

void ProcessGroupColl::shutdown() { close(); }

void ProcessGroupColl::abort() {
  std::lock_guard<std::mutex> lock(issue_mu_);
  if (comm_) comm_->abort();  // the Completer then fails the pending Works with PeerLost
}

#endif

}  // namespace coll::torch_backend
