// A table of measured choices (COLL_TUNE): for some (collective, size) the algorithm that was
// fastest when measured on this topology. Stored as JSON keyed by topology::Topology::layoutHash(), so a
// later run on the same machines reuses it instead of measuring again.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "base/status.h"
#include "base/json.h"

namespace coll::select {

struct TunedEntry {
  algo::Collective collective;
  size_t bytes = 0;
  std::string algorithm;
  double measured_s = 0;  // the winner's time
};

struct TuningTable {
  std::string layout_hash;
  std::vector<TunedEntry> entries;

  // The entry of that collective nearest in log2(size), if the size lies within a factor of 2
  // of the measured range (beyond it the cost model decides); nullptr otherwise.
  const TunedEntry* lookup(algo::Collective collective, size_t bytes) const;
};

Json toJson(const TuningTable& t);
Status fromJson(const Json& j, TuningTable* out);
Status saveTuningFile(const std::string& path, const TuningTable& t);
// NotFound-like failures (no such file) and a hash other than `expected_hash` are errors the
// caller treats as "measure again".
Status loadTuningFile(const std::string& path, const std::string& expected_hash, TuningTable* out);
// COLL_TUNE_FILE when given, else $XDG_CACHE_HOME or ~/.cache: coll/tune-<hash>.json.
std::string defaultTuningPath(const std::string& configured, const std::string& layout_hash);

}  // namespace coll::select
