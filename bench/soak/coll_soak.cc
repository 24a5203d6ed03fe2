// coll_soak: many mixed, checked collectives on one communicator; fails on a wrong result,
// on any error, or when the process grew (memory, descriptors, threads) after its warm-up.
//
//   collrun -n 4 build/bin/coll_soak [--ops 10000] [--warmup 500] [--max-count 262144]
//                                    [--max-growth-pct 1] [--seed 1] [--leak-per-op 0]
//
// The resources are sampled after the warm-up (the first --warmup ops: connections made,
// scratch buffers and pools at their working size), half-way through the rest and after the
// last op. A leak grows the resident set in both halves; pages first touched late (a socket
// buffer, a malloc arena for a rare large op) grow it once, in one. So the run fails if the
// resident set grew by more than half of --max-growth-pct in each half (what a steady leak
// crossing the limit over the whole run does), or by more than three times the limit in all;
// or if any descriptor or thread was added. --leak-per-op B keeps B more bytes (touched) after
// each op past the warm-up: a leak on purpose, so that a test can see the check fail.
// Each rank judges itself; rank 0 prints the worst rank's figures. Exit 0: all ranks passed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "soak/mixed_ops.h"
#include "soak/process_resources.h"

namespace coll::soak {
namespace {

struct Options {
  uint64_t ops = 10'000;
  uint64_t warmup = 500;
  size_t max_count = 256 << 10;
  double max_growth_pct = 1.0;
  uint64_t seed = 1;
  size_t leak_per_op = 0;
};

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* flag = argv[i];
    const char* value = argv[i + 1];
    if (!std::strcmp(flag, "--ops")) o->ops = std::strtoull(value, nullptr, 10);
    else if (!std::strcmp(flag, "--warmup")) o->warmup = std::strtoull(value, nullptr, 10);
    else if (!std::strcmp(flag, "--max-count")) o->max_count = std::strtoull(value, nullptr, 10);
    else if (!std::strcmp(flag, "--max-growth-pct")) o->max_growth_pct = std::strtod(value, nullptr);
    else if (!std::strcmp(flag, "--seed")) o->seed = std::strtoull(value, nullptr, 10);
    else if (!std::strcmp(flag, "--leak-per-op")) o->leak_per_op = std::strtoull(value, nullptr, 10);
    else return false;
  }
  return argc % 2 == 1 && o->max_count >= 2 && o->warmup < o->ops;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --leak-per-op: bytes kept, and reachable (so a leak checker stays quiet), until exit.
void leakOnPurpose(size_t bytes) {
  static std::vector<std::unique_ptr<char[]>> kept;
  if (bytes == 0) return;
  kept.emplace_back(new char[bytes]);
  std::memset(kept.back().get(), 1, bytes);
}

// Runs ops [from, to) of the stream; returns "" or the first wrong result.
std::string runOps(Communicator& comm, MixedOpStream& stream, SoakBuffers& buffers, uint64_t from, uint64_t to,
                   std::chrono::steady_clock::time_point start, size_t leak_per_op = 0) {
  for (uint64_t i = from; i < to; ++i) {
    std::string wrong = runAndCheck(comm, stream.next(), buffers);
    if (!wrong.empty()) return wrong;
    leakOnPurpose(leak_per_op);
    if (comm.rank() == 0 && (i + 1) % 1000 == 0)
      std::printf("soak: %llu ops, %.1f s\n", (unsigned long long)(i + 1), secondsSince(start));
  }
  return {};
}

double growthPct(const ProcessResources& from, const ProcessResources& to) {
  return 100.0 * double(to.rss_bytes - from.rss_bytes) / double(from.rss_bytes);
}

// This rank's verdict on its own growth over the two halves after the warm-up; "" if it passed.
std::string judgeGrowth(const ProcessResources& before, const ProcessResources& middle, const ProcessResources& after,
                        double max_growth_pct) {
  const double first = growthPct(before, middle), second = growthPct(middle, after), all = growthPct(before, after);
  char text[200] = "";
  if (first > max_growth_pct / 2 && second > max_growth_pct / 2)
    std::snprintf(text, sizeof text, "resident set grew in both halves, %.2f%% and %.2f%% (%.2f%% in all; limit %.2f%%)",
                  first, second, all, max_growth_pct);
  else if (all > 3 * max_growth_pct)
    std::snprintf(text, sizeof text, "resident set grew %.2f%% (limit for a one-time growth %.2f%%)", all,
                  3 * max_growth_pct);
  else if (after.open_fds > before.open_fds)
    std::snprintf(text, sizeof text, "open descriptors grew from %d to %d", before.open_fds, after.open_fds);
  else if (after.threads > before.threads)
    std::snprintf(text, sizeof text, "threads grew from %d to %d", before.threads, after.threads);
  return text;
}

// Every rank's growth in parts per million of its resident set; rank 0 prints the worst.
void reportWorstRank(Communicator& comm, const ProcessResources& before, const ProcessResources& after) {
  int64_t mine[3] = {(after.rss_bytes - before.rss_bytes) * 1'000'000 / before.rss_bytes,
                     after.open_fds - before.open_fds, after.threads - before.threads};
  int64_t worst[3];
  comm.allreduce(mine, worst, 3, DataType::i64, ReduceOp::max).wait();
  if (comm.rank() == 0)
    std::printf("soak: worst rank: rss growth %.3f%%, fds %+lld, threads %+lld\n", worst[0] / 10'000.0,
                (long long)worst[1], (long long)worst[2]);
}

int soak(const Options& o) {
  auto comm = Communicator::fromEnvironment();
  SoakBuffers buffers(o.max_count, comm->size());
  MixedOpStream stream(o.seed, o.max_count, comm->size());
  auto start = std::chrono::steady_clock::now();
  std::string wrong = runOps(*comm, stream, buffers, 0, o.warmup, start);
  ProcessResources before = sampleProcessResources();
  const uint64_t half = o.warmup + (o.ops - o.warmup) / 2;
  if (wrong.empty()) wrong = runOps(*comm, stream, buffers, o.warmup, half, start, o.leak_per_op);
  ProcessResources middle = sampleProcessResources();
  if (wrong.empty()) wrong = runOps(*comm, stream, buffers, half, o.ops, start, o.leak_per_op);
  ProcessResources after = sampleProcessResources();
  if (!wrong.empty()) {
    std::printf("soak: rank %d: wrong result: %s\n", comm->rank(), wrong.c_str());
    return 1;
  }
  double seconds = secondsSince(start);
  std::string grew = judgeGrowth(before, middle, after, o.max_growth_pct);
  std::printf("soak: rank %d: %llu ops in %.1f s; after warm-up %s; half-way rss %+.2f%%; at the end %s%s%s\n",
              comm->rank(), (unsigned long long)o.ops, seconds, before.describe().c_str(), growthPct(before, middle),
              after.describe().c_str(), grew.empty() ? "" : "; FAILED: ", grew.c_str());
  reportWorstRank(*comm, before, after);
  return grew.empty() ? 0 : 1;
}

}  // namespace
}  // namespace coll::soak

int main(int argc, char** argv) {
  coll::soak::Options options;
  if (!coll::soak::parseOptions(argc, argv, &options)) {
    std::fprintf(stderr, "usage: coll_soak [--ops N] [--warmup N<ops] [--max-count N>=2] [--max-growth-pct P] [--seed S] [--leak-per-op B]\n");
    return 2;
  }
  try {
    return coll::soak::soak(options);
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "soak: error: %s\n", e.what());
    return 1;
  }
}
