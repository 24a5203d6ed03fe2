#include "perf_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "perf_device.h"
#include "perf_options.h"
#include "perf_report.h"
#include "perf_stats.h"

namespace coll::bench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// -T expired. runPerf aborts the communicator, as nccl-tests does.
struct TestTimeout {
  int seconds;
};

// A zeroed host buffer, from aligned_alloc or (library) collMemAlloc. Zeroing touches every
// page, keeping page faults out of the first timed op.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, bool library) {
    constexpr size_t kAlign = 4096;
    size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    void* p = library ? memAlloc(rounded) : std::aligned_alloc(kAlign, rounded);
    if (!p) throw std::bad_alloc();
    data_ = std::unique_ptr<std::byte, Free>(static_cast<std::byte*>(p), Free{library});
    std::memset(data_.get(), 0, rounded);
  }
  std::byte* data() const { return data_.get(); }

 private:
  struct Free {
    bool library;
    void operator()(std::byte* p) const {
      if (library) memFree(p);
      else std::free(p);
    }
  };
  std::unique_ptr<std::byte, Free> data_;
};

// What one timed loop measured beside its time: this rank's CPU time, and with -K the time
// of each op.
struct LoopStats {
  int ops = 0;
  double cpuSeconds = 0;
  std::vector<double> opSeconds;
};

struct OpBuffers {
  std::byte* send;
  std::byte* recv;
};

// The -e sized buffers as slices of one row's size: successive ops take successive ones.
struct SliceLayout {
  size_t bytes;  // one slice: the row's size
  size_t count;
};

class PerfRunner {
 public:
  PerfRunner(Communicator& comm, const CollDesc& desc, const PerfOptions& options,
             Reporter& reporter)
      : comm_(comm),
        desc_(desc),
        opts_(options),
        reporter_(reporter),
        send_(options.maxBytes, options.libraryBuffers),
        recv_(options.maxBytes, options.libraryBuffers) {
    if (options.deviceBuffers) {
      dsend_ = DeviceArena::make(options.maxBytes, comm.localRank());
      drecv_ = DeviceArena::make(options.maxBytes, comm.localRank());
    }
  }

  void runAll();
  int64_t globalErrors() { return sumOverRanks(localErrors_); }
  double avgBusBw() const { return cells_ ? busBwSum_ / cells_ : 0; }

  // Small collectives the driver itself needs; all wait within -T.
  void barrier();
  int64_t sumOverRanks(int64_t value);
  double aggregateTime(double seconds);
  void wait(const Work& work) const;

 private:
  void runCombination(DataType type, ReduceOp op, int root);
  Row makeRow(size_t bytes, DataType type, ReduceOp op, int root,
              const InputPattern& pattern) const;
  CellResult measure(const Row& row, bool inPlace);
  CellResult cellOf(const Row& row, double seconds, double cpuSeconds) const;
  int64_t checkUntilWrong(const Row& row, bool inPlace);
  void compareAlgorithms(const Row& row, RowLabel label);
  std::string algoRule(const std::string& algo) const;
  double timeOps(const Row& row, bool inPlace, int iters, double* cpuSeconds, LoopStats* stats = nullptr);
  void addStats(const Row& row, LoopStats& stats, CellResult* result);
  int64_t checkOnce(const Row& row, bool inPlace);
  void prepare(const Row& row, bool inPlace);
  // The op's buffers: on the GPU with -X 1, unless host_view asks for their host mirrors
  // (where checks fill and read them).
  OpBuffers buffers(const Row& row, bool inPlace, int iter, bool host_view = false) const;
  SliceLayout slices(const Row& row) const;
  void upload(const Row& row);
  void download(const Row& row);

  Communicator& comm_;
  const CollDesc& desc_;
  const PerfOptions& opts_;
  Reporter& reporter_;
  HostBuffer send_;
  HostBuffer recv_;
  std::unique_ptr<DeviceArena> dsend_, drecv_;  // -X 1
  std::vector<Work> works_;
  int64_t localErrors_ = 0;  // measurements in which this rank saw wrong elements
  double busBwSum_ = 0;
  int cells_ = 0;
};

void PerfRunner::wait(const Work& work) const {
  if (opts_.timeoutSec <= 0) {
    work.wait();
    return;
  }
  if (!work.wait(std::chrono::seconds(opts_.timeoutSec))) throw TestTimeout{opts_.timeoutSec};
}

void PerfRunner::barrier() {
  int32_t one = 1;
  int32_t sum = 0;
  wait(comm_.allreduce(&one, &sum, 1, DataType::i32, ReduceOp::sum));
}

int64_t PerfRunner::sumOverRanks(int64_t value) {
  int64_t sum = 0;
  wait(comm_.allreduce(&value, &sum, 1, DataType::i64, ReduceOp::sum));
  return sum;
}

// -a: rank 0's time, or the mean, min or max over ranks.
double PerfRunner::aggregateTime(double seconds) {
  double out = 0;
  switch (opts_.average) {
    case 0: wait(comm_.broadcast(&seconds, &out, 1, DataType::f64, 0)); return out;
    case 2: wait(comm_.allreduce(&seconds, &out, 1, DataType::f64, ReduceOp::min)); return out;
    case 3: wait(comm_.allreduce(&seconds, &out, 1, DataType::f64, ReduceOp::max)); return out;
    default:
      wait(comm_.allreduce(&seconds, &out, 1, DataType::f64, ReduceOp::sum));
      return out / comm_.size();
  }
}

// Successive ops use successive slices of the -e sized buffers, as nccl-tests does, so that
// small sizes do not just bounce one cache-resident slice around. Checks use slice 0.
SliceLayout PerfRunner::slices(const Row& row) const {
  size_t total = std::max(row.counts.send, row.counts.recv) * sizeOf(row.type);
  if (total > opts_.maxBytes) {
    throw std::logic_error(desc_.name + ": a row needs " + std::to_string(total) +
                           " bytes, more than the " + std::to_string(opts_.maxBytes) +
                           " allocated");
  }
  return {total, total ? std::max<size_t>(opts_.maxBytes / total, 1) : 1};
}

OpBuffers PerfRunner::buffers(const Row& row, bool inPlace, int iter, bool host_view) const {
  size_t elt = sizeOf(row.type);
  const SliceLayout layout = slices(row);
  size_t shift = layout.bytes * (static_cast<size_t>(iter) % layout.count);
  const bool device = dsend_ && !host_view;
  std::byte* send = device ? dsend_->data() : send_.data();
  std::byte* recv = device ? drecv_->data() : recv_.data();
  if (!inPlace) return {send + shift, recv + shift};
  std::byte* base = recv + shift;
  auto rank = static_cast<size_t>(row.rank);
  return {base + row.counts.sendInplaceOffset * rank * elt,
          base + row.counts.recvInplaceOffset * rank * elt};
}

// Poison first: in-place, the send region lies inside the receive region.
void PerfRunner::prepare(const Row& row, bool inPlace) {
  OpBuffers b = buffers(row, inPlace, 0, true);
  fillPoison(b.recv, row.type, row.counts.recv);
  if (!desc_.sends || desc_.sends(row)) {
    fillInput(b.send, row.type, row.counts.send, *row.pattern, row.rank);
  } else {
    fillPoison(b.send, row.type, row.counts.send);
  }
  upload(row);
}

// Slice 0 of both buffers between the host mirrors and the GPU (-X 1 only).
void PerfRunner::upload(const Row& row) {
  if (!dsend_) return;
  size_t bytes = std::max(row.counts.send, row.counts.recv) * sizeOf(row.type);
  dsend_->upload(send_.data(), bytes);
  drecv_->upload(recv_.data(), bytes);
}

void PerfRunner::download(const Row& row) {
  if (!dsend_) return;
  drecv_->download(recv_.data(), std::max(row.counts.send, row.counts.recv) * sizeOf(row.type));
}

// Returns the time per op; *cpuSeconds gets the time per op to issue them. With stats (and
// -K), each op is waited for before the next and timed alone.
double PerfRunner::timeOps(const Row& row, bool inPlace, int iters, double* cpuSeconds, LoopStats* stats) {
  int ops = iters * opts_.aggIters;
  const bool perOp = stats && opts_.latencyStats;
  works_.clear();
  works_.reserve(static_cast<size_t>(ops));
  if (perOp) stats->opSeconds.reserve(static_cast<size_t>(ops));
  // buffers(row, inPlace, i) without two divisions an op (tens of ns, beside a 0.2 us op).
  const SliceLayout layout = slices(row);
  const OpBuffers first = buffers(row, inPlace, 0);
  size_t slice = 0;
  barrier();
  double cpuStart = processCpuSeconds();
  Clock::time_point start = Clock::now();
  for (int i = 0; i < ops; ++i) {
    const size_t shift = layout.bytes * slice;
    if (++slice == layout.count) slice = 0;
    const OpBuffers b{first.send + shift, first.recv + shift};
    Clock::time_point opStart = Clock::now();
    Work work = desc_.run(comm_, b.send, b.recv, row);
    if (opts_.blocking == 0 && !perOp) {
      works_.push_back(std::move(work));
      continue;
    }
    wait(work);
    if (perOp) stats->opSeconds.push_back(secondsSince(opStart));
    if (opts_.blocking == 1) barrier();
  }
  *cpuSeconds = secondsSince(start) / ops;
  // Ops complete in issue order, so the first wait covers nearly all; waiting on each still
  // surfaces the error of any op that failed.
  for (const Work& work : works_) wait(work);
  double seconds = secondsSince(start) / ops;
  if (stats) {
    stats->ops = ops;
    stats->cpuSeconds = processCpuSeconds() - cpuStart;
  }
  works_.clear();
  return seconds;
}

// The CPU all ranks spent per GB, and with -K the median and 99th percentile of every rank's
// per-op times pooled (gathered over the communicator, after the timed loop).
void PerfRunner::addStats(const Row& row, LoopStats& stats, CellResult* result) {
  double cpu = 0;
  wait(comm_.allreduce(&stats.cpuSeconds, &cpu, 1, DataType::f64, ReduceOp::sum));
  size_t bytes = std::max(row.counts.send, row.counts.recv) * sizeOf(row.type);
  result->cpuPerGB = cpuSecondsPerGB(cpu, static_cast<size_t>(stats.ops), bytes);
  if (!opts_.latencyStats) return;
  std::vector<double> pooled(stats.opSeconds.size() * static_cast<size_t>(comm_.size()));
  wait(comm_.allgather(stats.opSeconds.data(), pooled.data(), stats.opSeconds.size(), DataType::f64));
  result->p50Us = quantile(&pooled, 0.5) * 1e6;
  result->p99Us = quantile(&pooled, 0.99) * 1e6;
}

int64_t PerfRunner::checkOnce(const Row& row, bool inPlace) {
  prepare(row, inPlace);
  barrier();  // every rank's input is in place before any op may read it
  OpBuffers b = buffers(row, inPlace, 0);
  wait(desc_.run(comm_, b.send, b.recv, row));
  if (desc_.receives && !desc_.receives(row)) return 0;
  download(row);
  b = buffers(row, inPlace, 0, true);

  std::vector<double> cycle;
  if (desc_.periodicExpected) {
    cycle.resize(std::min(row.pattern->period(), row.counts.recv));
    for (size_t i = 0; i < cycle.size(); ++i) cycle[i] = desc_.expected(row, i);
  }
  auto expected = [&](size_t i) {
    return cycle.empty() ? desc_.expected(row, i) : cycle[i % cycle.size()];
  };
  return countWrong(b.recv, row.type, row.counts.recv, expected, row.pattern->tolerance());
}

CellResult PerfRunner::measure(const Row& row, bool inPlace) {
  // Time on the same data the check uses, as nccl-tests does.
  if (opts_.check > 0) prepare(row, inPlace);
  double cpuSeconds = 0;
  LoopStats stats;
  double seconds = aggregateTime(timeOps(row, inPlace, opts_.iters, &cpuSeconds, &stats));
  if (opts_.reportCpuTime) cpuSeconds = aggregateTime(cpuSeconds);
  CellResult result = cellOf(row, seconds, cpuSeconds);
  addStats(row, stats, &result);
  if (opts_.check > 0 && !(inPlace && desc_.inPlace == CollDesc::InPlace::kUnchecked))
    result.wrong = checkUntilWrong(row, inPlace);
  busBwSum_ += result.busBw;
  ++cells_;
  return result;
}

CellResult PerfRunner::cellOf(const Row& row, double seconds, double cpuSeconds) const {
  CellResult result;
  double bytes = static_cast<double>(std::max(row.counts.send, row.counts.recv) * sizeOf(row.type));
  result.timeUs = (opts_.reportCpuTime ? cpuSeconds : seconds) * 1e6;
  result.algBw = bytes > 0 ? bytes / 1e9 / seconds : 0;
  result.busBw = result.algBw * desc_.busBwFactor(row.nranks);
  return result;
}

// Up to -c checked runs, stopping at the first with wrong elements on any rank: their count.
int64_t PerfRunner::checkUntilWrong(const Row& row, bool inPlace) {
  int64_t local = 0;
  int64_t global = 0;
  for (int c = 0; c < opts_.check && global == 0; ++c) {
    local = checkOnce(row, inPlace);
    global = sumOverRanks(local);
  }
  if (local > 0) ++localErrors_;
  return global;
}

// "all_reduce" + "tree" -> "allreduce:tree", COLL_ALGO's grammar; "auto" -> no rule.
std::string PerfRunner::algoRule(const std::string& algo) const {
  if (algo == "auto") return "";
  std::string collective;
  for (char ch : desc_.name)
    if (ch != '_') collective += ch;
  return collective + ":" + algo;
}

// -Q: the algorithms side by side in this one job, so they share its process placement and
// its noise, which differ more from job to job on a busy machine than fast algorithms differ
// from each other. -j interleaved rounds, each starting one algorithm further on; in each,
// every algorithm runs one untimed op (it may connect other peers), then -n timed ones, out
// of place. A row per algorithm: the median over rounds, the check under that algorithm.
void PerfRunner::compareAlgorithms(const Row& row, RowLabel label) {
  const size_t n = opts_.algos.size();
  std::vector<std::vector<double>> seconds(n);
  double ignored = 0;
  for (int round = 0; round < opts_.algoRounds; ++round) {
    for (size_t k = 0; k < n; ++k) {
      const size_t a = (k + static_cast<size_t>(round)) % n;
      comm_.setAlgorithms(algoRule(opts_.algos[a]));
      if (opts_.check > 0) prepare(row, false);
      timeOps(row, false, 1, &ignored);
      seconds[a].push_back(aggregateTime(timeOps(row, false, opts_.iters, &ignored)));
    }
  }
  const double none = std::numeric_limits<double>::quiet_NaN();
  for (size_t a = 0; a < n; ++a) {
    comm_.setAlgorithms(algoRule(opts_.algos[a]));
    std::sort(seconds[a].begin(), seconds[a].end());
    const size_t m = seconds[a].size();
    CellResult result = cellOf(row, (seconds[a][(m - 1) / 2] + seconds[a][m / 2]) / 2, 0);
    if (opts_.check > 0) result.wrong = checkUntilWrong(row, false);
    busBwSum_ += result.busBw;
    ++cells_;
    label.algo = opts_.algos[a].c_str();
    reporter_.beginRow(label);
    reporter_.printCell(label, false, result);
    reporter_.printCell(label, true, CellResult{none, none, none, -1});
    reporter_.endRow(label);
  }
  comm_.setAlgorithms("");
}

Row PerfRunner::makeRow(size_t bytes, DataType type, ReduceOp op, int root,
                        const InputPattern& pattern) const {
  Row row;
  row.type = type;
  row.op = op;
  row.root = root;
  row.rank = comm_.rank();
  row.nranks = comm_.size();
  row.counts = desc_.counts(bytes / sizeOf(type), row.nranks);
  row.pattern = &pattern;
  return row;
}

void PerfRunner::runCombination(DataType type, ReduceOp op, int root) {
  InputPattern pattern(type, desc_.hasOp ? std::optional<ReduceOp>(op) : std::nullopt,
                       comm_.size());
  double ignored = 0;
  // Both placements are warmed: an in-place op sends from another buffer, whose first uses
  // may cost more (the shm transport makes reused send buffers huge-page backed).
  if (opts_.warmupIters > 0) {
    for (size_t bytes : {opts_.maxBytes, opts_.minBytes}) {
      for (bool inPlace : {false, true}) {
        if (inPlace && desc_.inPlace == CollDesc::InPlace::kNone) continue;
        timeOps(makeRow(bytes, type, op, root, pattern), inPlace, opts_.warmupIters, &ignored);
      }
    }
  }
  for (size_t bytes : sweepSizes(opts_)) {
    Row row = makeRow(bytes, type, op, root, pattern);
    RowLabel label;
    label.bytes = std::max(row.counts.send, row.counts.recv) * sizeOf(type);
    label.count = row.counts.param;
    label.type = ncclTypeName(type);
    label.redop = desc_.hasOp ? ncclOpName(op) : "none";
    label.root = root;
    if (!opts_.algos.empty()) {
      compareAlgorithms(row, label);
      continue;
    }
    reporter_.beginRow(label);
    for (bool inPlace : {false, true}) {
      if (inPlace && desc_.inPlace == CollDesc::InPlace::kNone) {
        double none = std::numeric_limits<double>::quiet_NaN();
        reporter_.printCell(label, inPlace, CellResult{none, none, none, -1});
        continue;
      }
      reporter_.printCell(label, inPlace, measure(row, inPlace));
    }
    reporter_.endRow(label);
  }
}

void PerfRunner::runAll() {
  std::vector<ReduceOp> ops = desc_.hasOp ? opts_.ops : std::vector<ReduceOp>{ReduceOp::sum};
  std::vector<int> roots = {-1};
  if (desc_.hasRoot) {
    roots = {opts_.root};
    if (opts_.root < 0) {
      roots.clear();
      for (int r = 0; r < comm_.size(); ++r) roots.push_back(r);
    }
  }
  for (DataType type : opts_.types) {
    for (ReduceOp op : ops) {
      for (int root : roots) runCombination(type, op, root);
    }
  }
}

// Rank 0 prints every rank's line, gathered to it in one 256-byte slot a rank: not an
// all-reduce of n slots (at 256 ranks that moved 64 KiB a rank, more shared memory than the
// job's own first op; docs/MEMORY.md), nor an all-gather, which on several hosts of many ranks
// is hierarchical and touches a ring with every local peer (1 MiB of shared memory a rank at
// 8 hosts x 32), which start-up's measurements would count as the job's.
std::vector<std::string> gatherRankLines(Communicator& comm, PerfRunner& runner) {
  constexpr size_t kSlot = 256;
  auto n = static_cast<size_t>(comm.size());
  std::vector<char> mine(kSlot, 0);
  std::vector<char> all(n * kSlot, 0);
  std::string line = rankLine(comm.rank(), comm.localRank()).substr(0, kSlot - 1);
  std::memcpy(mine.data(), line.data(), line.size());
  runner.wait(comm.gather(mine.data(), all.data(), kSlot, DataType::u8, 0));
  std::vector<std::string> lines;
  for (size_t r = 0; r < n; ++r) {
    const char* slot = all.data() + r * kSlot;
    lines.emplace_back(slot, strnlen(slot, kSlot));
  }
  return lines;
}

int runSweep(Communicator& comm, const CollDesc& desc, Reporter& reporter, PerfRunner& runner) {
  // Only rank 0 opens the file; everyone learns whether it could, so nobody runs alone.
  std::string error;
  bool opened = reporter.openJson(&error);
  if (!opened) std::fprintf(stderr, "%s_perf: %s\n", desc.name.c_str(), error.c_str());
  if (runner.sumOverRanks(opened ? 0 : 1) != 0) return 2;

  std::string device_line;
  if (reporter.options().deviceBuffers && comm.rank() == 0)
    device_line = describeDeviceCopy(std::min<size_t>(reporter.options().maxBytes, size_t{256} << 20), comm.localRank());
  reporter.printPreamble(comm.size(), gatherRankLines(comm, runner), device_line);
  reporter.printTableHeader();
  runner.runAll();
  int64_t errors = runner.globalErrors();
  reporter.printFooter(errors, runner.avgBusBw());
  return errors ? 1 : 0;
}

}  // namespace

int runPerf(int argc, char** argv, const CollDesc& desc) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string program = desc.name + "_perf";
  PerfOptions options;
  std::string error;
  switch (parsePerfOptions(argc, argv, &options, &error)) {
    case ParseResult::kHelp: std::fputs(perfUsage(program.c_str()).c_str(), stdout); return 0;
    case ParseResult::kError:
      std::fprintf(stderr, "%s: %s (-h lists the options)\n", program.c_str(), error.c_str());
      return 2;
    case ParseResult::kRun: break;
  }
  // Declared so that they are destroyed runner first: its buffers must outlive every op
  // still in flight, which on the error path means until abort() below has returned.
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Reporter> reporter;
  std::unique_ptr<PerfRunner> runner;
  try {
    comm = Communicator::fromEnvironment();
    if (desc.hasRoot && options.root >= comm->size()) {
      std::fprintf(stderr, "%s: invalid root %d: there are %d ranks\n", program.c_str(),
                   options.root, comm->size());
      return 2;
    }
    reporter = std::make_unique<Reporter>(comm->rank() == 0, desc.name, options);
    runner = std::make_unique<PerfRunner>(*comm, desc, options, *reporter);
    return runSweep(*comm, desc, *reporter, *runner);
  } catch (const TestTimeout& t) {
    char host[256] = "unknown";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    std::fprintf(stderr, "%s: Test timeout (%ds)\n", host, t.seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program.c_str(), comm ? comm->rank() : -1, e.what());
  }
  // Peers fail fast instead of waiting out their own deadlines.
  if (comm) comm->abort();
  return 1;
}

}  // namespace coll::bench
