// Every algorithm coll can run, by collective and name: what COLL_ALGO may force, what the
// tests iterate over, and what the selector chooses among.
#pragma once

#include <string>
#include <vector>

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
  Builder build;
};

const std::vector<AlgorithmInfo>& catalog();

// nullptr when the collective has no algorithm of that name.
const AlgorithmInfo* findAlgorithm(Collective collective, const std::string& name);

// The first algorithm listed for the collective (every collective has at least one).
const AlgorithmInfo* firstAlgorithm(Collective collective);

// "ring, direct" for error messages.
std::string algorithmNames(Collective collective);

}  // namespace coll::algo
