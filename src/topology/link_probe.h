// The start-up link probe (COLL_PROBE, on by default): measures α and β of each link class
// the job has, over the real transports, right after the ring neighbours are connected.
//
// One pair of ring neighbours per class does the measuring (so the probe costs the same on 4
// ranks or 400): same host, the first two ranks of the first host holding several; across
// hosts, the last rank of host 0 and the first of host 1. The initiator times 64 ping-pongs of
// 8 B (α = half the median round trip inside a host, half the lower quartile across hosts,
// where idle peers wake late: link_probe.cc; as an algorithm's step sees it, executor
// included) and two 2 MiB transfers answered by 8 B (β = 2 MiB / (best time - 2α)). It
// publishes the figures in the store and every rank reads the same ones: the values are
// agreed. The initiator then hands back the shared-memory pages its transfers filled (a 1 MiB
// ring inside a host), so the probe leaves no more than small messages need. γ is the
// reduction kernel's speed (f32 sum of 2 MiB, best of 3) on the first rank of each host; all
// ranks take the minimum. Then every rank runs one op of 16 chained ring-shift
// rounds (8 B to the right, reduced on arrival, then passed on), a warm-up and 3 timed: the
// loaded step (Topology::loaded_step_s) is the median run / 16, the slowest rank's agreed.
// Kept apart from the idle α, it tells the cost model what each step of a collective costs
// with every rank busy (ranks outnumbering cores, a shared host link). On netcluster 4 x 1 at
// 1 Gbit/s the probe takes about 60 ms, on one host about 1 ms.
#pragma once

#include <functional>
#include <vector>

#include "bootstrap/store.h"
#include "exec/executor.h"
#include "topology/topology.h"

namespace coll::topology {

// The wire kinds of the probe's messages (collectives use OpKind values, COLL_CHECK 0xC0,
// autotune 0xB1).
constexpr uint8_t kProbeWireKind = 0xB0;
constexpr uint8_t kProbeShiftWireKind = 0xB2;

// The pair's ping-pongs of 8 B. 16 were too few where ranks outnumber cores: on netcluster 4 x 1
// at 1 Gbit/s (4 ranks, 2 cores) the pair's round trips ran at 110-200 us, against 15-17, for up
// to 20 ping-pongs in a row in some start-ups (a spinning rank holding the core its peer needs,
// until the scheduler moves one), and 16 gave an inter-host alpha of 41-66 us in 6 of 48
// start-ups where most gave 6-9 (2026-12-06). The stretch passes within about 3 ms: with 64,
// 48 start-ups gave 7.5-18.4 us (the first 16 of 24 of them alone: up to 65.8). Interleaved, 12
// start-ups each: 16 gave 7.2-60.5 us, 3 of them above 30; 64 gave 7.2-34.2, 1 above 30. The
// probe took 58 and 61 ms (medians; 51-89 and 53-72) with the loaded step no different.
constexpr int kProbePingPongs = 64;
// Then two transfers of this size, each answered by 8 B, give β.
constexpr size_t kProbeLargeBytes = 2 << 20;

using RunProbeSchedule = std::function<Status(const algo::Schedule&, ExecContext&)>;

struct ProbeContext {
  int rank = 0;
  bootstrap::StoreClient* store = nullptr;
  std::string key_prefix;
  bootstrap::Deadline deadline;
  RunProbeSchedule run;  // executes a schedule over this rank's connections (init thread)
  // Optional: the connection to a peer gives back what the probe's large transfers took from
  // buffers shared with it (Connection::releaseIdleBuffers; init thread).
  std::function<void(int peer)> release_buffers;
};

// Collective: every rank of the job calls it. Fills topo->intra / inter / gamma for the
// classes present (the others keep their defaults) and topo->loaded_step_s, and logs them at
// INFO (TOPO).
Status probeLinks(const ProbeContext& ctx, Topology* topo);

// The loaded step's op, one rank's schedule: `rounds` ring-shift rounds of 8 B each, round k
// sending (from the in-place buffer's bytes [8k, 8k + 8)) what round k - 1 received and
// reduced (f32 sum into [8k, 8k + 8)), so each round's send waits for the previous round's
// receive: 2 x rounds steps, a send to the right and a recvReduce from the left per round.
// Empty when nranks < 2. The buffer is (rounds + 1) x 8 B, the scratch rounds x 8 B.
constexpr int kLoadedStepRounds = 16;
constexpr int kLoadedStepRuns = 3;  // timed runs, after one untimed
algo::Schedule loadedStepSchedule(int rank, int nranks, int rounds);

// One rank's loaded step from its timed runs of that op: the median run (the upper middle of
// an even count) divided by rounds; 0 without runs.
double loadedStepFromRuns(std::vector<double> run_seconds, int rounds);

// γ of this machine's reduction kernel (bytes of f32 output per second), best of 3 on 2 MiB.
double measureReduceBandwidth();

}  // namespace coll::topology
