// Direct ("two-shot") all-reduce: every rank sends chunk c straight to rank c, which reduces
// it from all peers, then sends the finished chunk straight to everyone. Two phases instead of
// the ring's 2(n-1), each rank moves the same 2(n-1)/n of the buffer, but every rank talks to
// every other at once: right where all peers are equally close (one host over shared memory)
// and for small messages; on a network it oversubscribes links, where the ring does not.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildDirectAllreduce(const BuildParams& p);

// Direct broadcast: the root sends the whole buffer to every rank (one writer, n readers).
// One hop, so lowest latency; the root's link carries n-1 copies, so on a network the
// pipelined chain wins for large messages.
Schedule buildDirectBroadcast(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction directAllreduce(const Fabric& x);
Prediction directBroadcast(const Fabric& x);
}  // namespace coll::algo::cost
