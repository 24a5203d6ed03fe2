// Who does what in an elastic pipeline job (coll-train --elastic --stages P), decided anew each
// time its membership changes: at the start, after a fault (the survivors shrank), and after a
// grow (processes joined). Every member computes the same plan from the same gathered roles.
//
// A replica is P ranks, one per stage, that pass activations and gradients to each other; it is
// the unit that fails and comes back, as a replica group is in torchft. A replica whose P ranks
// are all still members is kept whole (same stages, its state intact). The others' survivors
// and the processes that joined form a pool, cut in member order into new replicas of P; the
// few left over (fewer than P) sit the next stretch out and ask to join again. Kept replicas
// come first, so replica 0 of the new pipeline always holds the model's state when any
// replica was kept.
//
// The step to resume from is the lowest count of steps a kept rank has applied: a fault leaves
// some stages one step ahead of others (their gradient all-reduce finished before the fault
// stopped the rest), never more, since every stage of a step needs every replica's same stage
// and its own replica's neighbours. Those ahead roll back one step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::trainer {

// A member's part in the formation before (replica -1: none; a process that joined, or that
// sat out), and the steps it has applied (-1: it holds no state).
struct ElasticRole {
  int64_t replica = -1, stage = -1, steps_done = -1;
};

struct ElasticPlacement {
  int replica = -1, stage = -1;  // -1: sits this formation out
  bool keeps_state = false;      // its replica was kept whole: it loads its own snapshot
};

struct ElasticFormation {
  std::vector<ElasticPlacement> placement;  // by member rank
  int replicas = 0;                         // complete replicas in the new pipeline
  int kept = 0;                             // of them, kept whole from the formation before
  int64_t resume_step = 0;                  // the steps every replica has applied afterwards
};

// Throws std::runtime_error naming the cause when no formation can go on: no member holds the
// state any more (every replica lost a stage), or kept ranks are more than one step apart.
ElasticFormation planElasticFormation(const std::vector<ElasticRole>& roles, int stages);

// One line for the log: "2 replicas (1 kept, 1 new), 1 sitting out, resuming at step 20".
std::string describeFormation(const ElasticFormation& f);

}  // namespace coll::trainer
