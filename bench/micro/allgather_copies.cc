// The copies an all-gather on one host cannot avoid, with no library in the way: N processes,
// each with its chunk of the inputs in memory all of them can read, each copies every chunk
// (its own and the others') into its private output, as a receiver that reads its peers'
// memory does (CMA, or a shared mapping). That is one copy per chunk and receiver, the fewest
// there are; bench/compare.py prints it beside the systems' all-gather on one host, measured in
// the same run because the machine is shared.
//
//   allgather_copies [ranks, default 2] [bytes of the all-gather's output, default 64M] [rounds, default 20]
//                    [in-place: the own chunk is in the output already, only the others' are copied]
//
// Each process is pinned to core (rank mod cores) and copies in 512 KiB pieces, its own
// chunk's piece then the others' (read in ring order from the next rank on), so that the ranks
// read each input at about the same time; non-temporal stores (the library's copyStreaming), as
// a copy into a buffer far larger than the caches is best made. Prints the mean time per op over the rounds after two
// untimed ones, and the busbw an all-gather of that time has (nccl-tests' formula); fails if a
// byte of any output is wrong.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "perf_options.h"
#include "reduce/stream_copy.h"

namespace {

constexpr size_t kPiece = 512 << 10;
constexpr int kUntimed = 2;
constexpr size_t kCounterBytes = 8192;  // the per-round barrier counters; the ranks' times follow

uint8_t patternByte(int rank, size_t i) { return static_cast<uint8_t>(rank * 31 + i * 7 + (i >> 12)); }

// The whole all-gather of one process: every chunk into its place in out.
void allGatherCopies(int rank, int ranks, const uint8_t* inputs, uint8_t* out, size_t chunk, bool in_place) {
  for (size_t off = 0; off < chunk; off += kPiece) {
    const size_t n = std::min(kPiece, chunk - off);
    for (int k = in_place ? 1 : 0; k < ranks; ++k) {
      const size_t from = static_cast<size_t>((rank + k) % ranks) * chunk;
      coll::reduce::copyStreaming(out + from + off, inputs + from + off, n);
    }
  }
}

// Every process waits here for the others before each round (a counter per round).
void barrier(std::atomic<int>* counters, int round, int ranks) {
  counters[round].fetch_add(1);
  while (counters[round].load() < ranks) {
  }
}

int runRank(int rank, int ranks, size_t chunk, int rounds, bool in_place, uint8_t* inputs,
            std::atomic<int>* counters, double* seconds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(rank % std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)), &set);
  sched_setaffinity(0, sizeof set, &set);
  const size_t total = chunk * static_cast<size_t>(ranks);
  std::vector<uint8_t> out(total, 0);
  for (size_t i = 0; i < chunk; ++i) inputs[static_cast<size_t>(rank) * chunk + i] = patternByte(rank, i);
  if (in_place) std::memcpy(out.data() + static_cast<size_t>(rank) * chunk, inputs + static_cast<size_t>(rank) * chunk, chunk);
  double timed = 0;
  for (int r = 0; r < rounds + kUntimed; ++r) {
    barrier(counters, r, ranks);
    const auto start = std::chrono::steady_clock::now();
    allGatherCopies(rank, ranks, inputs, out.data(), chunk, in_place);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r >= kUntimed) timed += s;
  }
  seconds[rank] = timed / rounds;
  for (size_t i = 0; i < total; ++i) {
    if (out[i] != patternByte(static_cast<int>(i / chunk), i % chunk)) {
      std::fprintf(stderr, "allgather_copies: rank %d: byte %zu is wrong\n", rank, i);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  size_t total = 64 << 20;
  if (argc > 2 && !coll::bench::parseSize(argv[2], &total)) {
    std::fprintf(stderr, "allgather_copies: bad size %s\n", argv[2]);
    return 2;
  }
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 20;
  const bool in_place = argc > 4 && std::strcmp(argv[4], "in-place") == 0;
  if ((argc > 4 && !in_place) || ranks < 1 || ranks > 64 || rounds < 1 || total < static_cast<size_t>(ranks)) {
    std::fprintf(stderr, "usage: allgather_copies [ranks 1-64] [bytes >= ranks] [rounds >= 1] [in-place]\n");
    return 2;
  }
  if (static_cast<size_t>(rounds + kUntimed) * sizeof(std::atomic<int>) > kCounterBytes) {
    std::fprintf(stderr, "allgather_copies: at most %zu rounds\n", kCounterBytes / sizeof(std::atomic<int>) - kUntimed);
    return 2;
  }
  const size_t chunk = total / static_cast<size_t>(ranks);
  void* mem = mmap(nullptr, chunk * static_cast<size_t>(ranks), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* ctl = mmap(nullptr, kCounterBytes + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED || ctl == MAP_FAILED) {
    std::perror("allgather_copies: mmap");
    return 1;
  }
  auto* inputs = static_cast<uint8_t*>(mem);
  auto* counters = new (ctl) std::atomic<int>[static_cast<size_t>(rounds + kUntimed)]();
  auto* seconds = reinterpret_cast<double*>(static_cast<uint8_t*>(ctl) + kCounterBytes);
  std::vector<pid_t> children;
  for (int r = 1; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(runRank(r, ranks, chunk, rounds, in_place, inputs, counters, seconds));
    children.push_back(pid);
  }
  int failed = runRank(0, ranks, chunk, rounds, in_place, inputs, counters, seconds);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) return 1;
  double mean = 0;
  for (int r = 0; r < ranks; ++r) mean += seconds[r] / ranks;
  const double busbw = static_cast<double>(chunk) * ranks / mean / 1e9 * (ranks - 1) / ranks;
  std::printf("allgather_copies: %d processes, %zu bytes%s: %.1f us per op, busbw %.3f GB/s\n", ranks,
              chunk * static_cast<size_t>(ranks), in_place ? " in place" : "", mean * 1e6, busbw);
  return 0;
}
