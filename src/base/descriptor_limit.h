// The open-file limit a rank needs. The point-to-point engine holds a socket to every peer on
// another host (and each rank a few more: store clients, listeners, the ring's neighbours), so
// a job of a few thousand ranks needs more descriptors than the common soft limit of 1,024.
// A rank raises its soft limit towards the hard one when the job needs it, and says so; where
// the hard limit is too low it warns, naming the knob, before anything fails with EMFILE.
#pragma once

#include <cstdint>
#include <string>

namespace coll {

struct DescriptorBudget {
  uint64_t needed = 0;
  uint64_t soft_before = 0, soft_after = 0, hard = 0;
  bool raised = false;  // soft_after > soft_before
  bool short_of_it = false;  // even the hard limit is below `needed`
};

// Raises RLIMIT_NOFILE's soft limit to at least `needed` (twice it where the hard limit allows:
// room for the user's own files) when it is below.
DescriptorBudget ensureDescriptors(uint64_t needed);

// What start-up logs: "" when nothing changed and nothing is short.
std::string describeDescriptors(const DescriptorBudget& b, int rank, int size);

}  // namespace coll
