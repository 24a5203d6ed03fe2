// The perf tests' output: nccl-tests' header, table and footer on stdout, so that scripts
// parsing nccl-tests output read coll's unchanged, plus optional JSON lines (-J).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "perf_options.h"

namespace coll::bench {

// One measurement: one placement (out-of-place or in-place) of one table row.
struct CellResult {
  double timeUs = 0;  // per op, aggregated over ranks as -a says
  double algBw = 0;   // GB/s (1e9 bytes per second)
  double busBw = 0;
  int64_t wrong = -1;  // wrong elements summed over ranks; -1: not checked
  // NaN: not measured. p50/p99 of per-op times with -K; CPU-seconds per GB always (the JSON
  // has it; the table with -K).
  double p50Us = std::numeric_limits<double>::quiet_NaN();
  double p99Us = std::numeric_limits<double>::quiet_NaN();
  double cpuPerGB = std::numeric_limits<double>::quiet_NaN();
};

// The columns left of the measurements.
struct RowLabel {
  size_t bytes = 0;
  size_t count = 0;
  const char* type = "";
  const char* redop = "";
  int root = -1;
  const char* algo = nullptr;  // -Q: the row's algorithm, printed after its cells
};

// Only an active reporter (rank 0's) writes anything; the other ranks make the same calls,
// so the driver needs no rank tests. Not thread-safe.
class Reporter {
 public:
  Reporter(bool active, std::string collective, const PerfOptions& options,
           std::FILE* out = stdout);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Creates (truncates) the -J file. False, with *error, if that fails; no-op when inactive
  // or without -J.
  bool openJson(std::string* error);

  // The lines above the table: parameters and one "#  Rank" line per rank.
  // device_line: the GPU and its copy bandwidth, with -X 1 (empty otherwise).
  void printPreamble(int nranks, const std::vector<std::string>& rankLines, const std::string& device_line = "");
  const PerfOptions& options() const { return options_; }
  void printTableHeader();

  // A row is written piecewise and flushed, so a slow size shows progress as it runs.
  void beginRow(const RowLabel& row);
  void printCell(const RowLabel& row, bool inPlace, const CellResult& result);
  void endRow(const RowLabel& row);

  // errors: measurements that had wrong elements, summed over ranks.
  void printFooter(int64_t errors, double avgBusBw);

 private:
  void writeJsonLine(const RowLabel& row, bool inPlace, const CellResult& result);

  bool active_;
  std::string collective_;
  PerfOptions options_;
  std::FILE* out_;
  std::FILE* json_ = nullptr;
  int nranks_ = 0;
};

// nccl-tests' number format: right-aligned in `width` characters, with as many decimals
// (2, 1 or 0) as fit, and exponent notation beyond that.
std::string formatFixedWidth(double value, int width);

// This process's "#  Rank  3 Group  0 Pid  4242 on      host1 device  1 [cpu] host memory".
std::string rankLine(int rank, int localRank);

}  // namespace coll::bench
