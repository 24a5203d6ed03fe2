// coll_chaos: one rank of the chaos soak (bench/soak/chaos.py drives it). Runs mixed, checked
// collectives and point-to-point until its time is up while the driver kills or stops ranks;
// after each fault it reports what its op failed with and calls shrink() with no list: the
// survivors find the dead and agree on who is alive themselves (Communicator::shrink). Only
// then does it read the driver's record of the fault, to check the survivors got it right. At
// the end, `--recoveries K` shrinks K more times with everyone alive (revoke, agree, a new
// communicator: a recovery's every step but the fault), so that a leak per recovery shows.
// Then it prints one summary line.
//
// Growing back (the driver's --grow-back): the driver starts a replacement with `--join ID
// --join-index K` (outside collrun, with the job's secret); it says so in joining.<K> and calls
// Communicator::join. The members look for joining.<K> (K: the joiners admitted so far) each
// time they agree on stopping, in the same allreduce, so they all call grow() at the same op;
// then rank 0 of the grown communicator tells the joiner where the job stands (epoch, faults
// handled, joiners admitted) and everyone runs on.
//
//   collrun -n 6 --kill-after 0 -- build/bin/coll_chaos --dir DIR [--seconds 600] [--seed 1]
//                                                       [--recoveries 0]
//   build/bin/coll_chaos --dir DIR --seconds S --seed 1 --join ID --join-index K
//
// Each process has an id: its rank at start, or the ID it joined with. The driver's files in
// DIR: faults (one line per fault, written before the signal: "<index> <id> <kill|stop>
// <CLOCK_MONOTONIC ns>"). This process's: store (rank 0's COLL_STORE_ADDR, for joiners),
// pid.<id>, epoch.<e>.<id> (it runs on the communicator of epoch e: a new one after every fault
// and every grow; the driver acts only once every member is there), members.<e>.<id> (the ids
// of that communicator in rank order, as this process sees it) and report.<fault>.<id>
// ("<code> <seconds to the error> named|unnamed <seconds to the new communicator> <ids it
// found failed>").
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
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
  int recoveries = 0;
  int join_id = -1;     // joins a running job with this id (--join)
  int join_index = -1;  // the how-manieth joiner it is (--join-index), for its joining.<K> file
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
  uint64_t ops = 0, wrong = 0, unexplained = 0, recoveries = 0;
  uint64_t revoked_ops = 0;  // fault-free recoveries: an op a faster rank's shrink revoked
  uint64_t leak_checks = 0, leaks = 0;  // after every recovery (ChaosRank::checkLeaks)
  std::string first_wrong, first_leak;
};

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s.empty() ? "-" : s;
}

class ChaosRank {
 public:
  explicit ChaosRank(Options o) : o_(std::move(o)) {}

  int run() {
    start_ = sampleProcessResources();  // before any communicator: what must be left at the end
    if (o_.join_id >= 0) {
      joinRunningJob();
    } else {
      comm_ = Communicator::fromEnvironment();
      original_ = comm_->rank();
      for (int r = 0; r < comm_->size(); ++r) original_of_.push_back(r);
      if (original_ == 0) writeFile(o_.dir + "/store", std::getenv("COLL_STORE_ADDR") ? std::getenv("COLL_STORE_ADDR") : "");
    }
    if (comm_->size() > kMaxRanks) throw Error(ErrorCode::InvalidArgument, "coll_chaos runs at most 16 ranks");
    writeFile(o_.dir + "/pid." + std::to_string(original_), std::to_string(::getpid()));
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.seconds));
    markEpoch();
    // A joiner runs on with the members' op stream at once (a warm-up of its own would put it
    // out of step with them).
    if (o_.join_id < 0) runOps(kWarmupOps, end);
    before_ = sampleProcessResources();
    while (!done_ && comm_ && comm_->size() >= 2) runOps(UINT64_MAX, end);
    // Nobody revokes (shrinks) before every rank has seen the decision to stop: a rank whose
    // last allreduce a faster rank's first shrink revoked would take it for a fault.
    if (done_) {
      comm_->agree(1);
      recoverWithoutFaults();
    }
    comm_.reset();  // the last communicator too: what it held must come back
    after_ = sampleProcessResources();
    printSummary();
    return t_.wrong == 0 && t_.unexplained == 0 && t_.leaks == 0 ? 0 : 1;
  }

 private:
  // Runs checked ops until `count` are done, every rank's time is up, or an op fails (then
  // recovers). The ranks stop together: one leaving early would look like a fault to the rest.
  void runOps(uint64_t count, std::chrono::steady_clock::time_point end) {
    MixedOpStream stream(o_.seed + 1000 * epoch_, kMaxCount, comm_->size());
    for (uint64_t i = 0; i < count; ++i) {
      try {
        if (i % kStopCheckEvery == 0) {
          const Agreed agreed = agreeOnStoppingAndGrowing(end);
          if (agreed.stop) {
            done_ = true;
            return;
          }
          if (agreed.grow) return growBack();
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

  struct Agreed {
    bool stop = false;  // some rank's time is up
    bool grow = false;  // some rank saw the next joiner ask to come in
  };
  Agreed agreeOnStoppingAndGrowing(std::chrono::steady_clock::time_point end) {
    int32_t flags[2] = {std::chrono::steady_clock::now() >= end ? 1 : 0,
                        ::access((o_.dir + "/joining." + std::to_string(joined_)).c_str(), F_OK) == 0 ? 1 : 0};
    comm_->allreduce(flags, flags, 2, DataType::i32, ReduceOp::max).wait();
    return {flags[0] == 1, flags[1] == 1};
  }

  // The members admit whoever waits (a grow with nobody in the lobby yet, the joiner having
  // said so a moment before asking, leaves the members as they were: they look again later).
  void growBack() {
    std::unique_ptr<Communicator> next = comm_->grow();
    const int admitted = next->size() - comm_->size();
    comm_ = std::move(next);
    if (admitted == 0) return;
    int64_t state[3] = {epoch_ + 1, static_cast<int64_t>(handled_), joined_ + admitted};
    comm_->broadcast(state, state, 3, DataType::i64, 0).wait();
    enterGrown(state);
    std::printf("chaos: rank %d: grew back to %d ranks (%s)\n", original_, comm_->size(), joined(original_of_).c_str());
  }

  // The joiner's side: admitted by the members' grow(), then told where the job stands.
  void joinRunningJob() {
    original_ = o_.join_id;
    std::string address;
    std::ifstream(o_.dir + "/store") >> address;
    CommOptions options;
    options.store_address = address;
    options.name = "world";  // the job's first communicator's, which every later one descends from
    writeFile(o_.dir + "/joining." + std::to_string(o_.join_index), std::to_string(o_.join_id));
    comm_ = Communicator::join(options);
    int64_t state[3] = {0, 0, 0};
    comm_->broadcast(state, state, 3, DataType::i64, 0).wait();
    enterGrown(state);
  }

  // Every process of a grown communicator, members and joiners alike.
  void enterGrown(const int64_t state[3]) {
    epoch_ = static_cast<int>(state[0]);
    handled_ = static_cast<size_t>(state[1]);
    joined_ = static_cast<int>(state[2]);
    original_of_ = originalRanksOf(*comm_);
    writeFile(o_.dir + "/members." + std::to_string(epoch_) + "." + std::to_string(original_), joined(original_of_));
    markEpoch();
  }

  // An op failed: the survivors find who failed and shrink without them (no one tells them);
  // then the driver's record says whether they got it right.
  void recover(const Error& e) {
    const int64_t failed_ns = monotonicNs();
    std::unique_ptr<Communicator> next;
    std::vector<int> members;
    try {
      next = comm_->shrink();
      members = originalRanksOf(*next);
    } catch (const Error& e2) {
      ++t_.unexplained;
      std::printf("chaos: rank %d: shrink failed: %s\n", original_, e2.what());
      comm_.reset();
      return;
    }
    const int64_t recovered_ns = monotonicNs();
    std::vector<int> gone;
    for (int r : original_of_)
      if (std::find(members.begin(), members.end(), r) == members.end()) gone.push_back(r);
    std::vector<Fault> faults = newFaults(o_.dir, handled_);
    judge(e, faults, gone, failed_ns, recovered_ns);
    original_of_ = members;
    comm_ = std::move(next);
    ++epoch_;
    writeFile(o_.dir + "/members." + std::to_string(epoch_) + "." + std::to_string(original_), joined(members));
    // A smaller communicator holds no more than the first did after its warm-up.
    checkLeaks("the recovery from fault " + std::to_string(handled_), before_);
    markEpoch();
  }

  // After every recovery: nothing of the communicators before it is left, neither descriptors
  // nor threads beyond `bound`, nor a shared-memory segment still named in /dev/shm (the new
  // communicator's were unlinked once every rank had mapped them; an old one's must be gone).
  void checkLeaks(const std::string& after, const ProcessResources& bound) {
    ProcessResources now = sampleProcessResources();
    ++t_.leak_checks;
    if (now.linked_segments == 0 && now.open_fds <= bound.open_fds && now.ownThreads() <= bound.ownThreads()) return;
    std::string leak = "after " + after + ": " + now.describe() + " against " + bound.describe();
    if (t_.leaks++ == 0) t_.first_leak = leak;
    std::printf("chaos: rank %d: a leak %s\n", original_, leak.c_str());
  }

  // Every rank's original rank, in the new communicator's order: what this rank thinks it is.
  std::vector<int> originalRanksOf(Communicator& comm) {
    std::vector<int32_t> all(static_cast<size_t>(comm.size()));
    int32_t mine = original_;
    comm.allgather(&mine, all.data(), 1, DataType::i32).wait();
    return {all.begin(), all.end()};
  }

  void judge(const Error& e, const std::vector<Fault>& faults, const std::vector<int>& gone, int64_t failed_ns,
             int64_t recovered_ns) {
    std::vector<int> victims;
    for (const Fault& f : faults) victims.push_back(f.original_rank);
    std::sort(victims.begin(), victims.end());
    if (faults.empty() || victims != gone) {
      ++t_.unexplained;
      std::printf("chaos: rank %d: the survivors left out ranks %s where the driver's faults hit %s: %s\n", original_,
                  joined(gone).c_str(), joined(victims).c_str(), e.what());
    }
    for (const Fault& f : faults) {
      bool named = false;
      for (size_t r = 0; r < original_of_.size(); ++r)
        if (original_of_[r] == f.original_rank) named = namesRank(e.what(), static_cast<int>(r));
      // For the driver, which counts the reports of ranks it kills later too.
      writeFile(o_.dir + "/report." + std::to_string(f.index) + "." + std::to_string(original_),
                std::string(toString(e.code())) + " " + std::to_string((failed_ns - f.injected_ns) / 1e9) + " " +
                    (named ? "named" : "unnamed") + " " + std::to_string((recovered_ns - f.injected_ns) / 1e9) + " " +
                    joined(gone));
    }
    handled_ += faults.size();
    if (!faults.empty())
      std::printf("chaos: rank %d: fault %d: reported after %.2f s, shrunk without %s after %.2f s: %s\n", original_,
                  faults.back().index, (failed_ns - faults.back().injected_ns) / 1e9, joined(gone).c_str(),
                  (recovered_ns - faults.back().injected_ns) / 1e9, e.what());
  }

  // Shrinks with everyone alive, `recoveries` times, checking an op on each new communicator.
  void recoverWithoutFaults() {
    MixedOpStream stream(o_.seed + 77, kMaxCount, comm_->size());
    for (int i = 0; i < o_.recoveries && comm_; ++i) {
      try {
        std::unique_ptr<Communicator> next = comm_->shrink();
        if (next->size() != comm_->size()) {
          ++t_.unexplained;
          std::printf("chaos: rank %d: a fault-free shrink left %d of %d ranks\n", original_, next->size(), comm_->size());
        }
        comm_ = std::move(next);
        ++t_.recoveries;
        std::string wrong = runAndCheck(*comm_, stream.next(), buffers_);
        ++t_.ops;
        if (!wrong.empty() && t_.wrong++ == 0) t_.first_wrong = wrong;
        touchEveryPeer();
        // Everyone's op done before anyone revokes it to shrink again.
        comm_->barrier().wait();
        // The same size every time: each holds what the first held.
        if (!fault_free_baseline_) fault_free_baseline_ = sampleProcessResources();
        checkLeaks("fault-free recovery " + std::to_string(i), *fault_free_baseline_);
      } catch (const Error& e) {
        // A rank done with the op may revoke it (its next shrink) before this one saw it end,
        // as in any recovery: this rank then shrinks too, in the next round.
        if (std::strstr(e.what(), "communicator revoked by rank") != nullptr) {
          ++t_.revoked_ops;
          continue;
        }
        ++t_.unexplained;
        std::printf("chaos: rank %d: fault-free recovery %d failed: %s\n", original_, i, e.what());
        comm_.reset();
      }
    }
  }

  // A message to and from every peer, point to point and by an all-to-all, so that every
  // communicator of the same size holds the same connections (sockets connect on first use:
  // how many a communicator has would otherwise depend on which ops its one checked op used).
  void touchEveryPeer() {
    const int n = comm_->size(), me = comm_->rank();
    std::vector<int32_t> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), me);
    comm_->alltoall(out.data(), in.data(), 1, DataType::i32).wait();
    std::vector<Work> works;
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      works.push_back(comm_->recv(&in[static_cast<size_t>(q)], 1, DataType::i32, q, 7));
      works.push_back(comm_->send(&out[static_cast<size_t>(q)], 1, DataType::i32, q, 7));
    }
    for (Work& w : works) w.wait();
    for (int q = 0; q < n; ++q)
      if (q != me && in[static_cast<size_t>(q)] != q && t_.wrong++ == 0)
        t_.first_wrong = "a message from rank " + std::to_string(q) + " carried " + std::to_string(in[static_cast<size_t>(q)]);
  }

  // coll's process-wide threads (the launcher watcher under collrun, the huge-page collapser
  // once large messages ran): one per process for its life, by design, not a leftover.
  int lifelineThreads() const { return after_.process_wide_threads - start_.process_wide_threads; }

  void markEpoch() { writeFile(o_.dir + "/epoch." + std::to_string(epoch_) + "." + std::to_string(original_), "ready"); }

  void printSummary() const {
    std::printf("chaos-summary rank=%d ops=%llu wrong=%llu unexplained=%llu recoveries=%llu revoked_ops=%llu rss_before=%lld rss_after=%lld "
                "fds_start=%d fds_before=%d fds_after=%d threads_start=%d threads_before=%d threads_after=%d "
                "lifeline=%d leak_checks=%llu leaks=%llu first_wrong=\"%s\" first_leak=\"%s\"\n",
                original_, (unsigned long long)t_.ops, (unsigned long long)t_.wrong,
                (unsigned long long)t_.unexplained, (unsigned long long)t_.recoveries,
                (unsigned long long)t_.revoked_ops, (long long)before_.rss_bytes, (long long)after_.rss_bytes,
                start_.open_fds, before_.open_fds, after_.open_fds, start_.threads, before_.threads, after_.threads,
                lifelineThreads(), (unsigned long long)t_.leak_checks, (unsigned long long)t_.leaks,
                t_.first_wrong.c_str(), t_.first_leak.c_str());
    std::fflush(stdout);
  }

  Options o_;
  std::unique_ptr<Communicator> comm_;
  int original_ = -1;
  std::vector<int> original_of_;  // by current rank
  int epoch_ = 0;
  int joined_ = 0;  // joiners admitted so far (agreed): the next one says so in joining.<joined_>
  bool done_ = false;
  size_t handled_ = 0;  // faults of the driver's record already judged
  SoakBuffers buffers_{kMaxCount, kMaxRanks};
  Tally t_;
  ProcessResources start_, before_, after_;  // no communicator yet; after the warm-up; all destroyed
  std::optional<ProcessResources> fault_free_baseline_;  // after the first fault-free recovery
};

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir")) o->dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seconds")) o->seconds = std::strtod(argv[i + 1], nullptr);
    else if (!std::strcmp(argv[i], "--seed")) o->seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--recoveries")) o->recoveries = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--join")) o->join_id = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--join-index")) o->join_index = std::atoi(argv[i + 1]);
    else return false;
  }
  return argc % 2 == 1 && !o->dir.empty() && o->seconds > 0 && (o->join_id < 0) == (o->join_index < 0);
}

}  // namespace
}  // namespace coll::soak

int main(int argc, char** argv) {
  coll::soak::Options options;
  if (!coll::soak::parseOptions(argc, argv, &options)) {
    std::fprintf(stderr, "usage: coll_chaos --dir DIR [--seconds S] [--seed N] [--recoveries K] [--join ID --join-index K]\n");
    return 2;
  }
  try {
    return coll::soak::ChaosRank(options).run();
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "chaos: error outside an op: %s\n", e.what());
    return 1;
  }
}
