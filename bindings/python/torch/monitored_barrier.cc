// ProcessGroupColl::monitoredBarrier, with gloo's semantics and words (torch's tests match
// them): every rank but 0 checks in with a one-byte send to rank 0 and waits for its release;
// rank 0 waits for the check-ins in rank order within the timeout and names the first rank
// that did not come (or all of them with wait_all_ranks), else releases everyone. The
// messages go by coll's point-to-point with tags of their own, one pair per call, so a late
// check-in from an earlier, failed barrier cannot release a later one.
#include <c10/util/Exception.h>

#include <chrono>
#include <string>

#include "process_group.h"

namespace coll::torch_backend {
namespace {

constexpr int kTagBase = 0x3f000000;  // above the tags torch's users pass

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// Waits for w until the deadline; false on timeout or failure.
bool arrived(const coll::Work& w, Clock::time_point deadline) {
  try {
    return w.wait(left(deadline));
  } catch (const coll::Error&) {
    return false;
  }
}

}  // namespace

void ProcessGroupColl::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const auto timeout = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const auto deadline = Clock::now() + timeout;
  const int tag = kTagBase + 2 * (monitored_barriers_++ % (1 << 20));
  uint8_t* bytes = monitored_bytes_.data();  // [0]: what is sent; [r]: rank r's check-in (rank 0), the release (others)
  const std::string ms = std::to_string(timeout.count()) + " ms";
  if (rank_ != 0) {
    coll::Work release;
    {
      std::lock_guard<std::mutex> lock(issue_mu_);
      Communicator& comm = live("monitored_barrier");
      comm.send(&bytes[0], 1, DataType::u8, 0, tag);
      release = comm.recv(&bytes[rank_], 1, DataType::u8, 0, tag + 1);
    }
    TORCH_CHECK(arrived(release, deadline), "Rank ", rank_, " successfully reached monitoredBarrier, but received "
                "errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.");
    return;
  }
  std::vector<coll::Work> works(static_cast<size_t>(size_));
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    Communicator& comm = live("monitored_barrier");
    for (int r = 1; r < size_; ++r) works[r] = comm.recv(&bytes[r], 1, DataType::u8, r, tag);
  }
  std::string missing;
  int missing_count = 0;
  TORCH_CHECK(timeout.count() > 0, "Rank 0 timed out in monitoredBarrier after ", ms);
  for (int r = 1; r < size_; ++r) {  // past the deadline, the ones still to check are checked at once
    if (arrived(works[r], deadline)) continue;
    TORCH_CHECK(wait_all_ranks, "Rank ", r, " failed to pass monitoredBarrier in ", ms);
    missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    ++missing_count;
  }
  TORCH_CHECK(missing_count == 0, "Ranks ", missing, " failed to pass monitoredBarrier in ", ms);
  std::lock_guard<std::mutex> lock(issue_mu_);
  Communicator& comm = live("monitored_barrier");
  for (int r = 1; r < size_; ++r) comm.send(&bytes[0], 1, DataType::u8, r, tag + 1);
}

}  // namespace coll::torch_backend
