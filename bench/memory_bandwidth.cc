// The physical limit for single-host collectives: memcpy bandwidth with 1 and 2 threads.
// Prints GB/s of bytes copied (each copied byte is read once and written once).
// usage: memory_bandwidth [BYTES=256M] [REPEATS=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

double copySeconds(char* dst, const char* src, size_t bytes, int threads) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  size_t part = bytes / threads;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([=] { std::memcpy(dst + t * part, src + t * part, part); });
  for (auto& w : workers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

size_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1 << 10; break;
    case 'M': case 'm': v *= 1 << 20; break;
    case 'G': case 'g': v *= 1 << 30; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = argc > 1 ? parseBytes(argv[1]) : size_t{256} << 20;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // touched: no page faults in the timing
  std::printf("# memcpy bandwidth, %zu MiB buffers, best of %d (GB/s of bytes copied)\n", bytes >> 20, repeats);
  for (int threads : {1, 2}) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) best = std::min(best, copySeconds(dst.data(), src.data(), bytes, threads));
    std::printf("threads %d  %7.2f GB/s\n", threads, bytes / best / 1e9);
  }
}
