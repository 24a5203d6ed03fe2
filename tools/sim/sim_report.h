// coll-sim's output: one nccl-tests table per algorithm (size, count, type, redop, root, time,
// algbw, busbw, and the cost model's time beside the simulated one), then the selector's
// choice at each size against the fastest simulated algorithm, and optionally a CSV.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cluster_model.h"
#include "sim_engine.h"
#include "sim_options.h"

namespace coll::sim {

struct Row {
  std::string algorithm;
  size_t bytes = 0;
  SimResult sim;
  double model_s = -1;    // the cost model's prediction; < 0: it has no formula
  std::string refused;    // non-empty: the algorithm cannot run on this layout (why)
  double wall_s = 0;
};

class Report {
 public:
  Report(const SimOptions& o, const ClusterModel& m);
  void table(const std::string& title, const std::vector<Row>& rows) const;
  // Needs every algorithm's rows for "the simulator's best"; with the selector's choices only,
  // it compares the model with the simulation of what it chose.
  void selector(const std::vector<Row>& chosen, const std::map<std::string, std::vector<Row>>& tables) const;
  Status writeCsv(const std::map<std::string, std::vector<Row>>& tables, const std::vector<Row>& chosen) const;

 private:
  double busFactor() const;

  const SimOptions& o_;
  const ClusterModel& m_;
};

}  // namespace coll::sim
