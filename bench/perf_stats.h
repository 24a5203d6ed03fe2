// What -K adds to a cell beside nccl-tests' mean time: the spread of per-op times and the
// CPU the job spends per byte. Mean times hide the tail that a loaded machine gives small
// messages, and busbw hides what a CPU-bound library costs its host.
#pragma once

#include <cstddef>
#include <vector>

namespace coll::bench {

// User plus system CPU time of this process (all its threads) so far, in seconds.
double processCpuSeconds();

// The q-quantile (0..1) of samples by the nearest-rank rule; NaN when there are none.
// Sorts *samples.
double quantile(std::vector<double>* samples, double q);

// CPU-seconds per GB (1e9 bytes) of buffer: cpu_seconds spent over ops ops of bytes each.
double cpuSecondsPerGB(double cpu_seconds, size_t ops, size_t bytes);

}  // namespace coll::bench
