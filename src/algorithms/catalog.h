// Every algorithm coll can run, by collective and name: what COLL_ALGO may force, what the
// tests iterate over, and what the selector chooses among. Each entry carries its one-line
// description and its cost formula (cost/fabric.h), both defined beside its builder, as UCC's
// tl/ucp/allreduce/allreduce.c table names each algorithm with its description.
#pragma once

#include <string>
#include <vector>

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

enum class Collective { allreduce, broadcast, reduce, allgather, reducescatter, alltoall, gather, scatter };
inline constexpr Collective kAllCollectives[] = {Collective::allreduce, Collective::broadcast, Collective::reduce,
                                                Collective::allgather, Collective::reducescatter, Collective::alltoall,
                                                Collective::gather, Collective::scatter};

const char* toString(Collective c);
bool parseCollective(const std::string& name, Collective* out);

using Builder = Schedule (*)(const BuildParams&);

struct AlgorithmInfo {
  Collective collective;
  const char* name;
  const char* description;  // one line, for --explain, logs and docs
  Builder build;            // null: not a schedule (the board: board.h, run by its own path)
  cost::Formula cost;       // null: no formula (the selector refuses it unless forced)

  bool isSchedule() const { return build != nullptr; }
};

const std::vector<AlgorithmInfo>& catalog();

// nullptr when the collective has no algorithm of that name.
const AlgorithmInfo* findAlgorithm(Collective collective, const std::string& name);

// The first algorithm listed for the collective (every collective has at least one).
const AlgorithmInfo* firstAlgorithm(Collective collective);

// "ring, direct" for error messages.
std::string algorithmNames(Collective collective);

}  // namespace coll::algo
