// coll-sim's command line: the perf programs' size sweep (-b -e -f -i), the collective and
// algorithms, and the cluster (a topology file, or flags).
#pragma once

#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "cluster_model.h"
#include "startup_model.h"

namespace coll::sim {

struct SimOptions {
  size_t min_bytes = 8, max_bytes = size_t{256} << 20;
  size_t step_factor = 2, step_bytes = 0;  // step_bytes used when step_factor is 1
  algo::Collective collective = algo::Collective::allreduce;
  std::vector<std::string> algos;  // empty: the selector's choice per size; {"all"}: every one
  std::string topology_file;
  ClusterFlags cluster;
  std::vector<std::string> fabric_given;  // fabric fields set by flags (they override a file's)
  size_t elem_size = 4;
  std::string type_name = "float";
  size_t slice_bytes = 512 << 10;
  int pipeline_depth = 8;
  int root = 0;
  bool in_place = false;
  int iters = 1, warmup = 0;      // -n, -w: back-to-back runs (1, 0: one op from idle links)
  bool exact = false;              // no periodic shortcut (symmetry.h)
  size_t max_memory_bytes = size_t{4} << 30;
  bool stats = false;              // steps, messages, memory, wall time per row
  std::string csv_path;            // every (algorithm, size) as CSV, for docs and plots
  bool startup = false;            // model start-up to the first all-reduce instead (startup_model.h)
  StartupCosts startup_costs;
  double cpu_scale = 1;            // --cpu-scale: startup_costs' CPU times multiplied by it (StartupCosts::cpuScaled)
  std::vector<int> plan_layout;    // --startup-plan: ranks per host; print each rank's store requests
};

enum class ParseOutcome { run, help, error };

ParseOutcome parseSimOptions(int argc, char** argv, SimOptions* o, std::string* error);
std::string simUsage();
std::vector<size_t> simSizes(const SimOptions& o);

}  // namespace coll::sim
