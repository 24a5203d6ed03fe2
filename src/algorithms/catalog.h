// Every algorithm coll can run, by collective and name: what COLL_ALGO may force, what the
// tests iterate over, and what the selector chooses among.
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule_builder.h"

namespace coll::algo {

enum class Collective { allreduce, broadcast };

const char* toString(Collective c);

using Builder = Schedule (*)(const BuildParams&);

struct AlgorithmInfo {
  Collective collective;
  const char* name;
  Builder build;
};

const std::vector<AlgorithmInfo>& catalog();

// nullptr when the collective has no algorithm of that name.
const AlgorithmInfo* findAlgorithm(Collective collective, const std::string& name);

// "ring, direct" for error messages.
std::string algorithmNames(Collective collective);

}  // namespace coll::algo
