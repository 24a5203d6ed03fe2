#include "sim_report.h"

#include <cstdio>

#include "base/log.h"
#include "perf_report.h"

namespace coll::sim {
namespace {

using bench::formatFixedWidth;

std::string us(double s) { return s < 0 ? std::string("-") : formatFixedWidth(s * 1e6, 9); }

bool rooted(algo::Collective c) {
  return c == algo::Collective::broadcast || c == algo::Collective::reduce || c == algo::Collective::gather ||
         c == algo::Collective::scatter;
}

}  // namespace

Report::Report(const SimOptions& o, const ClusterModel& m) : o_(o), m_(m) {
  std::printf("# coll-sim: %s on a modelled cluster\n", algo::toString(o.collective));
  std::printf("#   %s\n", m.describe().c_str());
  std::printf("#   slice %zu B, pipeline depth %d, per-message software time %.2f us inside a host (%.2f reading), "
              "%.2f us at each end across hosts%s\n", o.slice_bytes, o.pipeline_depth,
              m.perMessageSeconds() * 1e6, m.receiveSeconds(false) * 1e6, m.perMessageSeconds(true) * 1e6,
              o.in_place ? ", in place" : ", out of place");
}

double Report::busFactor() const {
  const double n = m_.topo.nranks;
  switch (o_.collective) {
    case algo::Collective::allreduce: return 2 * (n - 1) / n;
    case algo::Collective::broadcast: case algo::Collective::reduce: return 1;
    default: return (n - 1) / n;
  }
}

void Report::table(const std::string& title, const std::vector<Row>& rows) const {
  std::printf("#\n# algorithm: %s\n", title.c_str());
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %6s  %6s  %9s  %-12s%s\n", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "model", "algorithm", o_.stats ? "       steps    messages  mem(MiB)  wall(s)  ranks run" : "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %6s  %6s  %9s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
              "(GB/s)", "(us)");
  for (const Row& r : rows) {
    std::printf("  %10zu  %12zu  %8s  %6s  %6d", r.bytes, r.bytes / o_.elem_size, o_.type_name.c_str(), "sum",
                rooted(o_.collective) ? o_.root : -1);
    if (!r.refused.empty()) {
      std::printf("  %9s  %6s  %6s  %9s  %-12s (%s)\n", "-", "-", "-", "-", r.algorithm.c_str(), r.refused.c_str());
      continue;
    }
    const double t = r.sim.seconds;
    const double algbw = t > 0 ? r.bytes / t / 1e9 : 0;
    std::printf("  %9s  %6s  %6s  %9s  %-12s", us(t).c_str(), formatFixedWidth(algbw, 6).c_str(),
                formatFixedWidth(algbw * busFactor(), 6).c_str(), us(r.model_s).c_str(), r.algorithm.c_str());
    if (o_.stats)
      std::printf("  %10llu  %10llu  %8.1f  %7.2f  %9d", static_cast<unsigned long long>(r.sim.steps),
                  static_cast<unsigned long long>(r.sim.messages), r.sim.memory_bytes / 1048576.0, r.wall_s,
                  r.sim.simulated_ranks);
    if (o_.stats) std::printf("  (build %.1f s, run %.1f s; %s)", r.sim.load_s, r.sim.run_s, r.sim.how.c_str());
    std::printf("\n");
  }
}

void Report::selector(const std::vector<Row>& chosen, const std::map<std::string, std::vector<Row>>& tables) const {
  std::printf("#\n# the selector's choice (cost model) against the simulation\n");
  std::printf("# %10s  %-12s  %9s  %9s  %-12s  %9s  %7s\n", "size", "choice", "model", "simulated", "sim's best",
              "best", "choice/");
  std::printf("# %10s  %-12s  %9s  %9s  %-12s  %9s  %7s\n", "(B)", "", "(us)", "(us)", "", "(us)", "best");
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Row& c = chosen[i];
    const Row* best = nullptr;
    for (const auto& [name, rows] : tables) {
      const Row& r = rows[i];
      if (r.refused.empty() && (!best || r.sim.seconds < best->sim.seconds)) best = &r;
    }
    std::printf("  %10zu  %-12s  %9s  %9s", c.bytes, c.algorithm.c_str(), us(c.model_s).c_str(), us(c.sim.seconds).c_str());
    if (best)
      std::printf("  %-12s  %9s  %7.2f", best->algorithm.c_str(), us(best->sim.seconds).c_str(),
                  c.sim.seconds / best->sim.seconds);
    std::printf("\n");
  }
}

Status Report::writeCsv(const std::map<std::string, std::vector<Row>>& tables, const std::vector<Row>& chosen) const {
  if (o_.csv_path.empty()) return Status::ok();
  std::FILE* f = std::fopen(o_.csv_path.c_str(), "w");
  if (!f) return invalidArgument("--csv " + o_.csv_path + ": cannot write");
  std::fprintf(f, "collective,ranks,hosts,algorithm,bytes,sim_us,model_us,chosen\n");
  auto line = [&](const Row& r, bool is_choice) {
    if (!r.refused.empty()) return;
    std::fprintf(f, "%s,%d,%d,%s,%zu,%.3f,%.3f,%d\n", algo::toString(o_.collective), m_.topo.nranks, m_.numHosts(),
                 r.algorithm.c_str(), r.bytes, r.sim.seconds * 1e6, r.model_s * 1e6, is_choice ? 1 : 0);
  };
  for (const auto& [name, rows] : tables)
    for (const Row& r : rows) line(r, false);
  for (const Row& r : chosen) line(r, true);
  return std::fclose(f) == 0 ? Status::ok() : invalidArgument("--csv " + o_.csv_path + ": write failed");
}

}  // namespace coll::sim
