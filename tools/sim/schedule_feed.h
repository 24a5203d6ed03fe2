// Every simulated rank's Schedule, built with the library's own builders on worker threads that
// run ahead of the caller by a window of ranks, and handed over in rank order. At 16,384 ranks
// building the schedules (the builders' hazard tracking) costs as much as running them, so it
// overlaps with the engine compacting what is already built.
#pragma once

#include <functional>

#include "algorithms/schedule.h"
#include "base/status.h"
#include "cluster_model.h"
#include "sim_engine.h"

namespace coll::sim {

// Calls take(r, schedule of rank r) for r = 0..ranks-1, in order; stops at its first error.
Status buildInOrder(const ClusterModel& m, const SimRequest& q, int ranks,
                    const std::function<Status(int, const algo::Schedule&)>& take);

}  // namespace coll::sim
