#include "perf_report.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace coll::bench {
namespace {

// Column layout of nccl-tests' table: size, count, type, redop, root, then per placement
// time, algbw, busbw, #wrong.
constexpr const char* kLabelColumns = "# %10s  %12s  %8s  %6s  %6s";
constexpr const char* kCellColumns = "  %7s  %6s  %6s  %6s";
// -K: after each placement's cells, the per-op median and 99th percentile and the CPU per GB.
constexpr const char* kStatsColumns = "  %7s  %7s  %6s";
// In ops whose ranks both send and receive without reducing (all-gather, broadcast's chain,
// all-to-all), coll's shared memory reads a send buffer in reuse by CMA once each of its 2 MiB
// pages has been sent from 8 times over and a background thread has made it a huge page
// (src/transport/shm/huge_pages.h), for messages of 256 KiB and more: with fewer untimed ops,
// the timed ones may carry that one-time work and the change of path.
constexpr int kSteadyWarmup = 10;
constexpr size_t kCmaMessageBytes = size_t{256} << 10;

bool readsReusedBuffersByCma(const std::string& collective) {
  return collective == "all_gather" || collective == "broadcast" || collective == "alltoall";
}

struct HeaderCells {
  const char* time;
  const char* algbw;
  const char* busbw;
  const char* wrong;
  const char* p50;
  const char* p99;
  const char* cpu;
};

void printHeaderLine(std::FILE* out, bool stats, const char* size, const char* count, const char* type,
                     const char* redop, const char* root, const HeaderCells& c) {
  std::fprintf(out, kLabelColumns, size, count, type, redop, root);
  for (int placement = 0; placement < 2; ++placement) {
    std::fprintf(out, kCellColumns, c.time, c.algbw, c.busbw, c.wrong);
    if (stats) std::fprintf(out, kStatsColumns, c.p50, c.p99, c.cpu);
  }
  std::fprintf(out, " \n");
}

// JSON has no NaN or infinity.
std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string formatFixedWidth(double value, int width) {
  // Digits left of the point; capped so that infinity ends the loop.
  int digits = 0;
  for (double limit = 1; value >= limit && digits < 40; limit *= 10) ++digits;
  char buf[64];
  if (digits < width - 2) {
    std::snprintf(buf, sizeof buf, "%*.2f", width, value);
  } else if (digits < width - 1) {
    std::snprintf(buf, sizeof buf, "%*.1f", width, value);
  } else if (digits < width + 1) {
    std::snprintf(buf, sizeof buf, "%*.0f", width, value);
  } else if (width >= 7) {
    std::snprintf(buf, sizeof buf, "%*.1e", width, value);
  } else {
    std::snprintf(buf, sizeof buf, "%*.0e", width, value);
  }
  return buf;
}

std::string rankLine(int rank, int localRank) {
  char host[256] = "unknown";
  if (gethostname(host, sizeof host) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "#  Rank %2d Group %2d Pid %6d on %10s device %2d [cpu] host memory", rank, 0,
                static_cast<int>(getpid()), host, localRank < 0 ? 0 : localRank);
  return buf;
}

Reporter::Reporter(bool active, std::string collective, const PerfOptions& options, std::FILE* out)
    : active_(active), collective_(std::move(collective)), options_(options), out_(out) {}

Reporter::~Reporter() {
  if (json_ != nullptr) std::fclose(json_);
}

bool Reporter::openJson(std::string* error) {
  if (!active_ || options_.jsonPath.empty()) return true;
  json_ = std::fopen(options_.jsonPath.c_str(), "w");
  if (json_ != nullptr) return true;
  *error = "cannot write " + options_.jsonPath + ": " + std::strerror(errno);
  return false;
}

void Reporter::printPreamble(int nranks, const std::vector<std::string>& rankLines, const std::string& device_line) {
  nranks_ = nranks;
  if (!active_) return;
  const PerfOptions& o = options_;
  bool byFactor = o.stepFactor > 1;
  std::fprintf(out_, "# Collective test starting: %s_perf\n", collective_.c_str());
  std::fprintf(out_,
               "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
               "iters: %d agg iters: %d validation: %d graph: 0\n",
               o.minBytes, o.maxBytes, byFactor ? o.stepFactor : o.stepBytes,
               byFactor ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check);
  if (o.blocking == 1) {
    std::fprintf(out_,
                 "# Blocking Enabled: wait for completion and barrier after each collective \n");
  } else if (o.blocking > 1) {
    std::fprintf(out_,
                 "# Blocking Enabled: wait for completion after each collective (no barrier) \n");
  }
  if (o.warmupIters < kSteadyWarmup && o.maxBytes >= kCmaMessageBytes && !o.deviceBuffers && nranks > 1 &&
      readsReusedBuffersByCma(collective_))
    std::fprintf(out_,
                 "# warmup iters %d: ops of 256 KiB and more may be timed before shared memory reads the reused "
                 "send buffers by CMA (after 8 uses); -w %d for the steady state\n",
                 o.warmupIters, kSteadyWarmup);
  if (json_ != nullptr) std::fprintf(out_, "# Writing JSON lines to %s\n", o.jsonPath.c_str());
  std::fprintf(out_, "#\n# Using devices\n");
  for (const std::string& line : rankLines) std::fprintf(out_, "%s\n", line.c_str());
  if (o.deviceBuffers) std::fprintf(out_, "#\n# Buffers in GPU memory: %s\n", device_line.c_str());
  else if (o.libraryBuffers) std::fprintf(out_, "#\n# Buffers from collMemAlloc (-R 1)\n");
  std::fflush(out_);
}

void Reporter::printTableHeader() {
  if (!active_) return;
  const char* time = options_.reportCpuTime ? "cputime" : "time";
  std::fprintf(out_, "#\n");
  const bool stats = options_.latencyStats;
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       %s"
               "in-place          \n", "", "", "", "", "", stats ? "                          " : "");
  printHeaderLine(out_, stats, "size", "count", "type", "redop", "root",
                  HeaderCells{time, "algbw", "busbw", "#wrong", "p50", "p99", "cpu/GB"});
  printHeaderLine(out_, stats, "(B)", "(elements)", "", "", "",
                  HeaderCells{"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(s)"});
  std::fflush(out_);
}

void Reporter::beginRow(const RowLabel& row) {
  if (!active_) return;
  std::fprintf(out_, "%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, row.type, row.redop,
               row.root);
  std::fflush(out_);
}

void Reporter::printCell(const RowLabel& row, bool inPlace, const CellResult& result) {
  if (!active_) return;
  char wrong[32];
  if (result.wrong < 0) {
    std::snprintf(wrong, sizeof wrong, "N/A");
  } else {
    std::snprintf(wrong, sizeof wrong, "%g", static_cast<double>(result.wrong));
  }
  // NaN: not measured (a placement the collective does not have).
  auto number = [](double v, int width) { return std::isnan(v) ? std::string("N/A") : formatFixedWidth(v, width); };
  std::fprintf(out_, kCellColumns, number(result.timeUs, 7).c_str(), number(result.algBw, 6).c_str(),
               number(result.busBw, 6).c_str(), wrong);
  if (options_.latencyStats)
    std::fprintf(out_, kStatsColumns, number(result.p50Us, 7).c_str(), number(result.p99Us, 7).c_str(),
                 number(result.cpuPerGB, 6).c_str());
  std::fflush(out_);
  writeJsonLine(row, inPlace, result);
}

void Reporter::endRow(const RowLabel& row) {
  if (!active_) return;
  if (row.algo != nullptr) std::fprintf(out_, "  %s", row.algo);
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void Reporter::printFooter(int64_t errors, double avgBusBw) {
  if (!active_) return;
  std::fprintf(out_, "# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(errors),
               errors ? "FAILED" : "OK");
  std::fprintf(out_, "# %-20s : %g \n", "Avg bus bandwidth", avgBusBw);
  std::fprintf(out_, "#\n# Collective test concluded: %s_perf\n#\n", collective_.c_str());
  std::fflush(out_);
}

void Reporter::writeJsonLine(const RowLabel& row, bool inPlace, const CellResult& result) {
  if (json_ == nullptr) return;
  std::string wrong = result.wrong < 0 ? "null" : std::to_string(result.wrong);
  // Names and numbers only: nothing here needs escaping.
  std::fprintf(json_,
               "{\"collective\":\"%s\",\"nranks\":%d,\"size\":%zu,\"count\":%zu,"
               "\"type\":\"%s\",\"redop\":\"%s\",\"root\":%d,\"inplace\":%s,"
               "\"time_us\":%s,\"algbw\":%s,\"busbw\":%s,\"wrong\":%s,"
               "\"p50_us\":%s,\"p99_us\":%s,\"cpu_s_per_gb\":%s%s%s%s}\n",
               collective_.c_str(), nranks_, row.bytes, row.count, row.type, row.redop, row.root,
               inPlace ? "true" : "false", jsonNumber(result.timeUs).c_str(),
               jsonNumber(result.algBw).c_str(), jsonNumber(result.busBw).c_str(), wrong.c_str(),
               jsonNumber(result.p50Us).c_str(), jsonNumber(result.p99Us).c_str(),
               jsonNumber(result.cpuPerGB).c_str(),
               row.algo ? ",\"algo\":\"" : "", row.algo ? row.algo : "", row.algo ? "\"" : "");
  std::fflush(json_);
}

}  // namespace coll::bench
