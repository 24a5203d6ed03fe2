// Periodic simulation: where the cluster repeats itself every P ranks (P = the ranks under one
// leaf switch, or one host without leaves; ranks numbered host by host, every host alike) and
// the algorithm's schedules do too (rank r's schedule is rank r mod P's with every peer moved
// by the same r - r mod P), every block of P ranks lives the same history shifted in space, so
// coll-sim runs only ranks 0..P-1 and lets each message to rank p land on p mod P, on the links
// p's block would use. Whether a message crosses hosts or leaves is still decided by the real
// ranks. This is what makes a ring or a direct all-reduce at 16,384 ranks (about 10^9 messages
// in all) cost only P ranks' worth of events.
//
// The schedules' part of the condition is checked, not assumed: a sample of ranks is built and
// compared step by step with its representative (kind, deps, peer offset, and bytes to within a
// few elements: chunks of a count that n does not divide differ by one element). A root, a
// tree or a recursive-halving partner breaks the symmetry and the simulation is then exact.
#pragma once

#include <string>

#include "cluster_model.h"
#include "sim_engine.h"

namespace coll::sim {

// The period to simulate: m.topo.nranks (every rank, exact) when the cluster or the algorithm
// does not repeat, or when asked for exactness; *why says which.
int simulationPeriod(const ClusterModel& m, const SimRequest& q, std::string* why);

// The parameters the communicator would give rank `rank`'s builder (exposed for the check).
algo::BuildParams buildParamsFor(const ClusterModel& m, const SimRequest& q, int rank);

}  // namespace coll::sim
