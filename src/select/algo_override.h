// COLL_ALGO: one grammar for users, tests and benches to force algorithms.
//   "ring"                                   every collective that has a "ring"
//   "allreduce:direct;broadcast:chain"       per collective
//   "allreduce:0-64K:direct;allreduce:64K-inf:ring"   per size range [lo, hi), K/M/G suffixes
// Rules are tried in order; the first that matches wins; unmatched ops use the selector.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "base/status.h"

namespace coll::select {

struct AlgoRule {
  std::optional<algo::Collective> collective;  // empty: any collective that has the algorithm
  size_t lo = 0;
  size_t hi = SIZE_MAX;  // exclusive; SIZE_MAX = inf
  std::string algorithm;
  std::string text;  // the rule as written, for logs
};

// Fails with InvalidArgument naming the bad rule and, for an unknown algorithm, the valid ones.
Status parseAlgoOverride(const std::string& text, std::vector<AlgoRule>* rules);

const AlgoRule* matchRule(const std::vector<AlgoRule>& rules, algo::Collective collective, size_t bytes);

}  // namespace coll::select
