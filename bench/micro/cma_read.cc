// How fast a process reads another's memory with process_vm_readv (CMA), from 4 KiB pages and
// from 2 MiB pages: the figures behind src/transport/shm/huge_pages.h.
//
//   cma_read [MiB per process, default 32] [bytes per call, default 512K] [rounds, default 6]
//
// Two processes, one per core where there are two, each read the other's buffer at the same
// time, as the two ranks of an all-gather do, in calls of the given size. The sources are
// first 4 KiB pages (malloc's, under THP "madvise"), then collapsed into 2 MiB pages
// (madvise(MADV_COLLAPSE), Linux 6.1). Prints each process's read rate, best and median of the
// rounds, and memcpy of the same size on one core beside it.
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kHugePage = 2 << 20;
constexpr int kMadvCollapse = 25;  // MADV_COLLAPSE, absent from older headers

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Both processes wait here for the other before each round (a counter in shared memory).
void meet(std::atomic<int>* counter, int target) {
  counter->fetch_add(1);
  while (counter->load() < target) {
  }
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: one core is fine
}

// Reads the peer's copy of `src` into `dst`, `chunk` bytes a call. GB/s.
double readPeer(pid_t peer, const char* src, char* dst, size_t bytes, size_t chunk) {
  const double start = seconds();
  for (size_t at = 0; at < bytes; at += chunk) {
    size_t n = std::min(chunk, bytes - at);
    iovec local{dst + at, n}, remote{const_cast<char*>(src) + at, n};
    if (process_vm_readv(peer, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n)) {
      std::perror("process_vm_readv");
      std::exit(1);
    }
  }
  return static_cast<double>(bytes) / (seconds() - start) / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = (argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 32) << 20;
  const size_t chunk = argc > 2 ? std::strtoul(argv[2], nullptr, 0) : 512 << 10;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 6;
  auto* counter = static_cast<std::atomic<int>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (counter) std::atomic<int>(0);
  // The same addresses in both processes: each reads the other's copy of src.
  char* src = static_cast<char*>(std::aligned_alloc(kHugePage, bytes));
  char* dst = static_cast<char*>(std::aligned_alloc(kHugePage, bytes));
  const pid_t parent = getpid();
  const pid_t child = fork();
  const bool is_child = child == 0;
  const pid_t peer = is_child ? parent : child;
  pin(is_child ? 1 : 0);
  std::memset(src, is_child ? 2 : 1, bytes);
  std::memset(dst, 0, bytes);
  int target = 0;
  for (int huge = 0; huge < 2; ++huge) {
    if (huge && madvise(src, bytes, kMadvCollapse) != 0 && !is_child)
      std::perror("madvise(MADV_COLLAPSE) (the second line reads 4 KiB pages too)");
    std::vector<double> rates;
    for (int r = 0; r < rounds; ++r) {
      meet(counter, target += 2);
      rates.push_back(readPeer(peer, src, dst, bytes, chunk));
    }
    if (!is_child)
      std::printf("%s pages: %.2f GB/s best, %.2f median (%d rounds, %zu MiB, %zu KiB a call, both reading)\n",
                  huge ? "2 MiB" : "4 KiB", *std::max_element(rates.begin(), rates.end()), median(rates), rounds,
                  bytes >> 20, chunk >> 10);
  }
  if (is_child) return 0;
  int status = 0;
  waitpid(child, &status, 0);
  const double start = seconds();
  std::memcpy(dst, src, bytes);
  std::printf("memcpy on one core, alone: %.2f GB/s\n", static_cast<double>(bytes) / (seconds() - start) / 1e9);
  return 0;
}
