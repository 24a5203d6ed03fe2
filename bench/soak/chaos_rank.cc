// coll_chaos: one rank of the chaos soak (bench/soak/chaos.py drives it). Runs mixed, checked
// collectives until its time is up while the driver kills or stops ranks; after each fault it
// reports what its op failed with, learns from the driver whom to exclude (as an elastic
// agent would tell it), shrinks, and goes on. At the end it prints one summary line.
//
//   collrun -n 6 --kill-after 0 -- build/bin/coll_chaos --dir DIR [--seconds 600] [--seed 1]
//
// The driver's files in DIR: faults (one line per fault, written before the signal: "<index>
// <original rank> <kill|stop> <CLOCK_MONOTONIC ns>"). This rank's: pid.<original rank> (its
// pid, at start) and epoch.<e>.<original rank> (it runs on the communicator of epoch e, made
// after fault e; the driver injects the next fault only once every survivor is there).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coll/communicator.h"
#include "soak/mixed_ops.h"
#include "soak/process_resources.h"

namespace coll::soak {
namespace {

constexpr size_t kMaxCount = 64 << 10;
constexpr int kMaxRanks = 16;  // buffers for the gathers of up to this many ranks
constexpr uint64_t kWarmupOps = 200;
constexpr auto kFaultFileWait = std::chrono::seconds(30);
constexpr uint64_t kStopCheckEvery = 64;  // ops between the ranks' agreement on stopping

struct Options {
  std::string dir;
  double seconds = 600;
  uint64_t seed = 1;
};

struct Fault {
  int index = 0;
  int original_rank = -1;
  int64_t injected_ns = 0;
};

int64_t monotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());  // readers never see half a file
}

std::vector<Fault> readFaults(const std::string& dir) {
  std::vector<Fault> faults;
  std::ifstream in(dir + "/faults");
  std::string kind;
  for (Fault f; in >> f.index >> f.original_rank >> kind >> f.injected_ns;) faults.push_back(f);
  return faults;
}

// The faults this rank has not handled yet, waiting (bounded) for the driver to have written
// one: an op failed, so a fault must be on record, or the failure is unexplained.
std::vector<Fault> newFaults(const std::string& dir, size_t handled) {
  const auto end = std::chrono::steady_clock::now() + kFaultFileWait;
  for (;;) {
    std::vector<Fault> all = readFaults(dir);
    if (all.size() > handled) return std::vector<Fault>(all.begin() + static_cast<long>(handled), all.end());
    if (std::chrono::steady_clock::now() > end) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Whether `message` names rank r as a peer or a rank ("peer 2 (", "rank 2 did not answer").
bool namesRank(const std::string& message, int r) {
  for (const char* word : {"peer ", "rank ", "ranks "}) {
    const std::string key = word + std::to_string(r);
    for (size_t at = message.find(key); at != std::string::npos; at = message.find(key, at + 1)) {
      const size_t end = at + key.size();
      if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
    }
  }
  return false;
}

// What the summary line carries; each fault's report goes to its own file (recover()).
struct Tally {
  uint64_t ops = 0, wrong = 0, unexplained = 0;
  std::string first_wrong;
};

class ChaosRank {
 public:
  explicit ChaosRank(Options o) : o_(std::move(o)) {}

  int run() {
    start_ = sampleProcessResources();  // before any communicator: what must be left at the end
    comm_ = Communicator::fromEnvironment();
    original_ = comm_->rank();
    if (comm_->size() > kMaxRanks) throw Error(ErrorCode::InvalidArgument, "coll_chaos runs at most 16 ranks");
    for (int r = 0; r < comm_->size(); ++r) original_of_.push_back(r);
    writeFile(o_.dir + "/pid." + std::to_string(original_), std::to_string(::getpid()));
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.seconds));
    markEpoch();
    runOps(kWarmupOps, end);
    before_ = sampleProcessResources();
    while (!done_ && comm_ && comm_->size() >= 2) runOps(UINT64_MAX, end);
    comm_.reset();  // the last communicator too: what it held must come back
    after_ = sampleProcessResources();
    printSummary();
    return t_.wrong == 0 && t_.unexplained == 0 ? 0 : 1;
  }

 private:
  // Runs checked ops until `count` are done, every rank's time is up, or an op fails (then
  // recovers). The ranks stop together: one leaving early would look like a fault to the rest.
  void runOps(uint64_t count, std::chrono::steady_clock::time_point end) {
    MixedOpStream stream(o_.seed + 1000 * epoch_, kMaxCount, comm_->size());
    for (uint64_t i = 0; i < count; ++i) {
      try {
        if (i % kStopCheckEvery == 0 && timeIsUpEverywhere(end)) {
          done_ = true;
          return;
        }
        std::string wrong = runAndCheck(*comm_, stream.next(), buffers_);
        ++t_.ops;
        if (!wrong.empty() && t_.wrong++ == 0) t_.first_wrong = wrong;
      } catch (const Error& e) {
        recover(e);
        return;
      }
    }
  }

  bool timeIsUpEverywhere(std::chrono::steady_clock::time_point end) {
    int32_t up = std::chrono::steady_clock::now() >= end ? 1 : 0;
    comm_->allreduce(&up, &up, 1, DataType::i32, ReduceOp::max).wait();
    return up == 1;
  }

  // An op failed: judge the report, learn the victims, shrink to the survivors.
  void recover(const Error& e) {
    const int64_t failed_ns = monotonicNs();
    std::vector<Fault> faults = newFaults(o_.dir, handled_);
    if (faults.empty()) {
      ++t_.unexplained;
      std::printf("chaos: rank %d: an op failed with no fault injected: %s\n", original_, e.what());
      comm_.reset();
      return;
    }
    std::vector<int> excluded;
    for (const Fault& f : faults) {
      const double seconds = (failed_ns - f.injected_ns) / 1e9;
      bool named = false;
      for (size_t r = 0; r < original_of_.size(); ++r)
        if (original_of_[r] == f.original_rank) {
          excluded.push_back(static_cast<int>(r));
          named = namesRank(e.what(), static_cast<int>(r));
        }
      // For the driver, which counts the reports of ranks it kills later too.
      writeFile(o_.dir + "/report." + std::to_string(f.index) + "." + std::to_string(original_),
                std::string(toString(e.code())) + " " + std::to_string(seconds) + " " + (named ? "named" : "unnamed"));
    }
    handled_ += faults.size();
    std::printf("chaos: rank %d: fault %d reported after %.2f s: %s\n", original_, faults.back().index,
                (failed_ns - faults.back().injected_ns) / 1e9, e.what());
    shrinkWithout(excluded);
  }

  void shrinkWithout(const std::vector<int>& excluded) {
    try {
      std::unique_ptr<Communicator> next = comm_->shrink(excluded);
      std::vector<int> kept;
      for (size_t r = 0; r < original_of_.size(); ++r)
        if (std::find(excluded.begin(), excluded.end(), static_cast<int>(r)) == excluded.end())
          kept.push_back(original_of_[r]);
      original_of_ = kept;
      comm_ = std::move(next);
      ++epoch_;
      markEpoch();
    } catch (const Error& e) {
      ++t_.unexplained;
      std::printf("chaos: rank %d: shrink failed: %s\n", original_, e.what());
      comm_.reset();
    }
  }

  // Under collrun the first communicator starts the launcher watcher (comm/launcher_lifeline.h):
  // one thread per process for its life, by design, not a communicator's leftover.
  static int lifelineThreads() { return std::getenv("COLL_LAUNCHER_FD") ? 1 : 0; }

  void markEpoch() { writeFile(o_.dir + "/epoch." + std::to_string(epoch_) + "." + std::to_string(original_), "ready"); }

  void printSummary() const {
    std::printf("chaos-summary rank=%d ops=%llu wrong=%llu unexplained=%llu rss_before=%lld rss_after=%lld "
                "fds_start=%d fds_before=%d fds_after=%d threads_start=%d threads_before=%d threads_after=%d "
                "lifeline=%d first_wrong=\"%s\"\n",
                original_, (unsigned long long)t_.ops, (unsigned long long)t_.wrong,
                (unsigned long long)t_.unexplained, (long long)before_.rss_bytes, (long long)after_.rss_bytes,
                start_.open_fds, before_.open_fds, after_.open_fds, start_.threads, before_.threads, after_.threads,
                lifelineThreads(), t_.first_wrong.c_str());
    std::fflush(stdout);
  }

  Options o_;
  std::unique_ptr<Communicator> comm_;
  int original_ = -1;
  std::vector<int> original_of_;  // by current rank
  int epoch_ = 0;
  bool done_ = false;
  size_t handled_ = 0;
  SoakBuffers buffers_{kMaxCount, kMaxRanks};
  Tally t_;
  ProcessResources start_, before_, after_;  // no communicator yet; after the warm-up; all destroyed
};

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir")) o->dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seconds")) o->seconds = std::strtod(argv[i + 1], nullptr);
    else if (!std::strcmp(argv[i], "--seed")) o->seed = std::strtoull(argv[i + 1], nullptr, 10);
    else return false;
  }
  return argc % 2 == 1 && !o->dir.empty() && o->seconds > 0;
}

}  // namespace
}  // namespace coll::soak

int main(int argc, char** argv) {
  coll::soak::Options options;
  if (!coll::soak::parseOptions(argc, argv, &options)) {
    std::fprintf(stderr, "usage: coll_chaos --dir DIR [--seconds S] [--seed N]\n");
    return 2;
  }
  try {
    return coll::soak::ChaosRank(options).run();
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "chaos: error outside an op: %s\n", e.what());
    return 1;
  }
}
