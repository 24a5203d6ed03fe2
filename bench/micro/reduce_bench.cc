// Micro-benchmarks of the host reduction kernels (coll::reduce::reduceInto) for every
// DataType x ReduceOp, at one cache-resident size (256 KiB) and one memory-bound size
// (64 MiB), with memcpy of the same sizes as the reference point.
//
// Bytes/s counts the bytes of dst per iteration (count * sizeOf(type)), the same figure a
// memcpy of that size reports, so "reduceInto f32 sum at X GB/s vs memcpy at Y GB/s" compares
// directly. Both touch about three times that in memory: the kernel reads dst and src and
// writes dst; memcpy reads src and writes dst, and the write also reads dst first
// (write-allocate) unless it uses non-temporal stores. So at 64 MiB, where both are
// memory-bound, reduceInto near memcpy's figure means the kernel is not compute-bound.
//
// Each benchmark runs for at least 0.05 s (kMinTimeS) unless --benchmark_min_time is given,
// which then applies to all of them.
//
// Run: build/bin/reduce_bench [--benchmark_filter='f32|memcpy'] [--benchmark_min_time=0.05]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/types.h"
#include "reduce/reduce.h"

namespace {

using coll::DataType;
using coll::ReduceOp;

constexpr int64_t kCacheBytes = 256 << 10;
constexpr int64_t kMemoryBytes = 64 << 20;
constexpr double kMinTimeS = 0.05;  // keeps the whole default run well under a minute

// Fills buf with the value one of the type, so that no op ever produces inf, NaN or a
// denormal however many iterations run (sum saturates in precision, prod stays 1).
void fillOnes(std::vector<unsigned char>& buf, DataType type) {
  const size_t esize = coll::sizeOf(type);
  unsigned char one[8] = {};
  switch (type) {
    case DataType::f32: { float v = 1.0f; std::memcpy(one, &v, 4); break; }
    case DataType::f64: { double v = 1.0; std::memcpy(one, &v, 8); break; }
    case DataType::f16: { uint16_t v = 0x3C00; std::memcpy(one, &v, 2); break; }
    case DataType::bf16: { uint16_t v = 0x3F80; std::memcpy(one, &v, 2); break; }
    default: one[0] = 1; break;  // little-endian integers
  }
  for (size_t i = 0; i + esize <= buf.size(); i += esize) std::memcpy(&buf[i], one, esize);
}

void BM_reduceInto(benchmark::State& state, DataType type, ReduceOp op) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / coll::sizeOf(type);
  std::vector<unsigned char> dst(bytes), src(bytes);
  fillOnes(dst, type);
  fillOnes(src, type);
  for (auto _ : state) {
    coll::reduce::reduceInto(dst.data(), src.data(), count, type, op);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));  // bytes of dst
}

// min/max on distinct random values (no ties, no NaN): the common case, where the special-value
// rule costs only its per-block check (src/reduce/reduce.cc); all-ones data ties everywhere
// and measures the rule's slow path instead. Out of place (out = op(a, b)): reducing into a
// again and again would make half its elements equal to b's, all ties.
void BM_minMaxRandom(benchmark::State& state, DataType type, ReduceOp op) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / coll::sizeOf(type);
  std::vector<float> f(count * 3);
  std::vector<double> d(count * 3);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < count * 2; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    d[i] = static_cast<double>(x >> 11) * 0x1.0p-53 - 0.5;
    f[i] = static_cast<float>(d[i]);
  }
  const bool f32 = type == DataType::f32;
  const void* a = f32 ? static_cast<void*>(f.data()) : static_cast<void*>(d.data());
  const void* b = f32 ? static_cast<void*>(f.data() + count) : static_cast<void*>(d.data() + count);
  void* out = f32 ? static_cast<void*>(f.data() + 2 * count) : static_cast<void*>(d.data() + 2 * count);
  for (auto _ : state) {
    coll::reduce::reduce(out, a, b, count, type, op);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<unsigned char> dst(bytes, 1), src(bytes, 2);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

}  // namespace

int main(int argc, char** argv) {
  // A per-benchmark MinTime overrides --benchmark_min_time, so set it only when the flag is absent.
  double min_time = kMinTimeS;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--benchmark_min_time", 0) == 0) min_time = 0;
  auto configure = [min_time](benchmark::internal::Benchmark* b) {
    b->Arg(kCacheBytes)->Arg(kMemoryBytes);
    if (min_time > 0) b->MinTime(min_time);
  };
  configure(benchmark::RegisterBenchmark("memcpy", BM_memcpy));
  for (int t = 0; t < coll::kNumDataTypes; ++t) {
    for (int o = 0; o < coll::kNumReduceOps; ++o) {
      const auto type = static_cast<DataType>(t);
      const auto op = static_cast<ReduceOp>(o);
      const std::string name = std::string("reduceInto/") + coll::toString(type) + "/" + coll::toString(op);
      configure(benchmark::RegisterBenchmark(name.c_str(), BM_reduceInto, type, op));
    }
  }
  for (DataType type : {DataType::f32, DataType::f64})
    for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
      const std::string name = std::string("reduceIntoRandom/") + coll::toString(type) + "/" + coll::toString(op);
      configure(benchmark::RegisterBenchmark(name.c_str(), BM_minMaxRandom, type, op));
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
