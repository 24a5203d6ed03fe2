// COLL_DETERMINISTIC=1 on forked ranks: every all-reduce, reduce and reduce-scatter gives,
// bit for bit, the left fold in rank order ((x0 op x1) op x2) ... computed here by plain
// scalar code. ctest runs this program over shared memory, over sockets, with 4 KiB slices
// and with a COLL_ALGO rule asking for ring: the same reference every time, so the results
// are identical across transports, chunk sizes and algorithm requests. The data spans many
// binades, so a different order gives different bits (checked: the reverse fold differs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "multirank/rank_runner.h"
#include "reduce/half.h"

namespace coll::test {
namespace {

const bool kEnvSet = [] {
  ::setenv("COLL_DETERMINISTIC", "1", 1);
  return true;
}();

constexpr DataType kTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::avg, ReduceOp::max};
constexpr size_t kCounts[] = {5, 1000, 30001};  // the board's sizes, then the message path's

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank r's element i: a random sign and mantissa over 2^-e..2^e (e kept small for products
// and for f16's range), so sums of these depend on the order they are added in.
double operand(int r, size_t i, DataType t, ReduceOp op) {
  const uint64_t h = splitmix((static_cast<uint64_t>(r) << 40) ^ i ^ (static_cast<uint64_t>(t) << 56));
  const int span = op == ReduceOp::prod ? 2 : (t == DataType::f16 ? 6 : 14);
  const int e = static_cast<int>(h % static_cast<uint64_t>(2 * span + 1)) - span;
  const uint64_t bits = splitmix(h);  // 52 more: f64's sums round too
  const double mantissa = 1.0 + std::ldexp(static_cast<double>(bits >> 12), -52);
  return std::ldexp(bits & 1 ? -mantissa : mantissa, e);
}

// Elements stored in type t (double -> t rounds to nearest even, as the library does).
void put(DataType t, std::vector<char>& buf, size_t i, double v) {
  switch (t) {
    case DataType::f32: { float f = static_cast<float>(v); std::memcpy(&buf[i * 4], &f, 4); break; }
    case DataType::f64: std::memcpy(&buf[i * 8], &v, 8); break;
    case DataType::f16: { uint16_t h = reduce::floatToHalf(static_cast<float>(v)); std::memcpy(&buf[i * 2], &h, 2); break; }
    default: { uint16_t h = reduce::floatToBf16(static_cast<float>(v)); std::memcpy(&buf[i * 2], &h, 2); break; }
  }
}
double get(DataType t, const std::vector<char>& buf, size_t i) {
  switch (t) {
    case DataType::f32: { float f; std::memcpy(&f, &buf[i * 4], 4); return f; }
    case DataType::f64: { double d; std::memcpy(&d, &buf[i * 8], 8); return d; }
    case DataType::f16: { uint16_t h; std::memcpy(&h, &buf[i * 2], 2); return reduce::halfToFloat(h); }
    default: { uint16_t h; std::memcpy(&h, &buf[i * 2], 2); return reduce::bf16ToFloat(h); }
  }
}

// One step of the fold in the type's own arithmetic: f64 in double, the rest in float (f16
// and bf16 widened, rounded back by put()).
double apply(DataType t, ReduceOp op, double a, double b) {
  if (t == DataType::f64) {
    if (op == ReduceOp::prod) return a * b;
    if (op == ReduceOp::max) return a > b ? a : b;
    return a + b;
  }
  const float x = static_cast<float>(a), y = static_cast<float>(b);
  if (op == ReduceOp::prod) return x * y;
  if (op == ReduceOp::max) return x > y ? x : y;
  return x + y;
}

std::vector<char> inputOf(int r, DataType t, ReduceOp op, size_t count, size_t first = 0) {
  std::vector<char> buf(count * sizeOf(t));
  for (size_t i = 0; i < count; ++i) put(t, buf, i, operand(r, first + i, t, op));
  return buf;
}

// The fold over ranks in `order`, element by element, each step rounded to the type.
std::vector<char> fold(DataType t, ReduceOp op, int n, size_t count, const std::vector<int>& order) {
  std::vector<char> acc = inputOf(order[0], t, op, count);
  for (size_t k = 1; k < order.size(); ++k) {
    std::vector<char> x = inputOf(order[k], t, op, count);
    for (size_t i = 0; i < count; ++i) put(t, acc, i, apply(t, op, get(t, acc, i), get(t, x, i)));
  }
  if (op == ReduceOp::avg)
    for (size_t i = 0; i < count; ++i)
      put(t, acc, i, t == DataType::f64 ? get(t, acc, i) / n : static_cast<float>(get(t, acc, i)) / static_cast<float>(n));
  return acc;
}

std::vector<int> rankOrder(int n, bool reverse) {
  std::vector<int> order;
  for (int k = 0; k < n; ++k) order.push_back(reverse ? n - 1 - k : k);
  return order;
}

std::string what(const char* call, DataType t, ReduceOp op, size_t count) {
  return strprintf("%s of %zu x %s %s", call, count, toString(t), toString(op));
}

// First differing byte, or -1.
long firstDifference(const std::vector<char>& a, const char* b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

void checkAllreduce(Communicator& comm, Rank& self, DataType t, ReduceOp op, size_t count,
                    const std::vector<char>& want) {
  std::vector<char> in = inputOf(self.rank, t, op, count), out(in.size(), 0x5a);
  comm.allreduce(in.data(), out.data(), count, t, op).wait();
  long at = firstDifference(want, out.data());
  RANK_CHECK(at < 0, "%s out of place differs from the rank-order fold at byte %ld", what("allreduce", t, op, count).c_str(), at);
  comm.allreduce(in.data(), in.data(), count, t, op).wait();
  at = firstDifference(want, in.data());
  RANK_CHECK(at < 0, "%s in place differs from the rank-order fold at byte %ld", what("allreduce", t, op, count).c_str(), at);
}

void checkReduce(Communicator& comm, Rank& self, DataType t, ReduceOp op, size_t count, const std::vector<char>& want) {
  const int root = self.size - 1;
  std::vector<char> in = inputOf(self.rank, t, op, count), out(in.size(), 0x5a);
  comm.reduce(in.data(), out.data(), count, t, op, root).wait();
  if (self.rank != root) return;
  long at = firstDifference(want, out.data());
  RANK_CHECK(at < 0, "%s differs from the rank-order fold at byte %ld", what("reduce", t, op, count).c_str(), at);
}

// Each rank's input is n chunks of `count`; chunk r of the fold is rank r's result.
void checkReduceScatter(Communicator& comm, Rank& self, DataType t, ReduceOp op, size_t count,
                        const std::vector<char>& want_all) {
  const size_t n = static_cast<size_t>(self.size), es = sizeOf(t);
  std::vector<char> in = inputOf(self.rank, t, op, n * count), out(count * es, 0x5a);
  comm.reduceScatter(in.data(), out.data(), count, t, op).wait();
  std::vector<char> want(want_all.begin() + static_cast<long>(self.rank * count * es),
                         want_all.begin() + static_cast<long>((self.rank + 1) * count * es));
  long at = firstDifference(want, out.data());
  RANK_CHECK(at < 0, "%s differs from the rank-order fold at byte %ld", what("reducescatter", t, op, count).c_str(), at);
}

void runAll(int n) {
  auto outcomes = runRanks(n, [](Communicator& comm, Rank& self) {
    for (DataType t : kTypes)
      for (ReduceOp op : kOps)
        for (size_t count : kCounts) {
          const std::vector<int> order = rankOrder(self.size, false);
          checkAllreduce(comm, self, t, op, count, fold(t, op, self.size, count, order));
          checkReduce(comm, self, t, op, count, fold(t, op, self.size, count, order));
          const size_t all = count * static_cast<size_t>(self.size);
          checkReduceScatter(comm, self, t, op, count, fold(t, op, self.size, all, order));
        }
  });
  expectAllSucceeded(outcomes);
}

TEST(Deterministic, TwoRanks) { runAll(2); }
TEST(Deterministic, ThreeRanks) { runAll(3); }
TEST(Deterministic, FiveRanks) { runAll(5); }

// The test can fail: with this data, adding in another order changes the bits.
TEST(Deterministic, TheOrderIsVisibleInTheData) {
  for (DataType t : kTypes)
    for (int n : {3, 5}) {
      std::vector<char> forward = fold(t, ReduceOp::sum, n, 30001, rankOrder(n, false));
      std::vector<char> reverse = fold(t, ReduceOp::sum, n, 30001, rankOrder(n, true));
      EXPECT_GE(firstDifference(forward, reverse.data()), 0) << toString(t) << " at " << n << " ranks";
    }
}

}  // namespace
}  // namespace coll::test
