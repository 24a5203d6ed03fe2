// All-reduce correctness on forked ranks over sockets, one communicator per world size:
// every dtype x op x count {0, 1, prime, many slices} x in-place/out-of-place. Inputs depend on
// rank and index, so a misplaced chunk or slice fails; expected values come from a closed
// formula over exactly representable values. A second pass all-reduces random floats (whose
// sums round) and proves the results bit-identical on every rank.
//
// COLL_SLICE_BYTES is 4096 here (rank_main.cc): 20011 elements span several slices per chunk
// for every type, and more than COLL_PIPELINE_DEPTH slices per step at small world sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "multirank/rank_runner.h"
#include "multirank/reduction_values.h"
#include "multirank/special_values.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// 13 and 1009 are prime. On one host, all-reduces up to 4 KiB go by the board (1024 x f32 is
// its limit exactly; 1025 x f32 and 1009 x 8-byte types take the message path).
constexpr size_t kCounts[] = {0, 1, 13, 1009, 1024, 1025, 20011};

struct Case {
  DataType type;
  ReduceOp op;
  size_t count;
  bool in_place;
  std::vector<char> send, recv, expected;
  Work work;
};

void fillCase(Case& c, int rank, int n) {
  size_t es = sizeOf(c.type);
  c.send = buffer(c.type, c.count, 0);
  c.recv = buffer(c.type, c.count, 0xCD);  // garbage where the result goes
  c.expected = buffer(c.type, c.count, 0);
  for (size_t i = 0; i < c.count; ++i) {
    store(c.type, c.send.data(), i, inputValue(c.type, c.op, rank, i));
    store(c.type, c.expected.data(), i, expectedValue(c.type, c.op, n, i));
  }
  if (c.in_place) std::memcpy(c.recv.data(), c.send.data(), c.count * es);
}

void checkCase(const Case& c, int rank, int n, const std::vector<char>& original_send) {
  size_t es = sizeOf(c.type);
  const char* out = c.recv.data();
  for (size_t i = 0; i < c.count; ++i) {
    RANK_CHECK(std::memcmp(out + i * es, c.expected.data() + i * es, es) == 0,
               "allreduce %s %s count %zu %s on %d ranks: element %zu is %.17g, expected %.17g", toString(c.type),
               toString(c.op), c.count, c.in_place ? "in-place" : "out-of-place", n, i, load(c.type, out, i),
               load(c.type, c.expected.data(), i));
  }
  if (!c.in_place) {
    RANK_CHECK(std::memcmp(c.send.data(), original_send.data(), c.count * es) == 0,
               "allreduce %s %s count %zu out-of-place modified the send buffer", toString(c.type), toString(c.op),
               c.count);
    RANK_CHECK(static_cast<unsigned char>(c.recv[c.count * es]) == 0xCD, "wrote past the receive buffer");
  }
}

// Every dtype x op x count x placement; the ops of one dtype are issued back to back and
// waited together, so many ops are queued at once.
void exactCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (DataType t : kAllTypes) {
    std::vector<Case> cases;
    for (ReduceOp op : kAllOps)
      for (size_t count : kCounts)
        for (bool in_place : {false, true}) cases.push_back(Case{t, op, count, in_place, {}, {}, {}, {}});
    std::vector<std::vector<char>> originals;
    for (Case& c : cases) {
      fillCase(c, rank, n);
      originals.push_back(c.send);
    }
    for (Case& c : cases) {
      bool null_buffers = c.count == 0 && c.in_place;  // count 0 needs no buffers at all
      const void* send = null_buffers ? nullptr : c.in_place ? c.recv.data() : c.send.data();
      void* recv = null_buffers ? nullptr : c.recv.data();
      c.work = comm.allreduce(send, recv, c.count, c.type, c.op);
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      cases[k].work.wait();
      checkCase(cases[k], rank, n, originals[k]);
      self.slot->progress++;
    }
  }
}

// Random floats: sums round, so only a fixed reduction order gives every rank the same bits.
void bitIdenticalCases(Communicator& comm) {
  const int n = comm.size(), rank = comm.rank();
  const size_t count = 20011;
  for (DataType t : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::prod}) {
      auto value = [&](int r, size_t i) {
        uint64_t h = mix(static_cast<uint64_t>(r) + 1000, i, static_cast<uint64_t>(t), static_cast<uint64_t>(op));
        double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
        return op == ReduceOp::prod ? 0.5 + 1.5 * u : (2 * u - 1) * (1 + r);
      };
      std::vector<char> buf = buffer(t, count, 0);
      for (size_t i = 0; i < count; ++i) store(t, buf.data(), i, value(rank, i));
      comm.allreduce(buf.data(), buf.data(), count, t, op).wait();

      // Close to the exact result (a sanity bound; exactness is the other pass's job).
      double tol = t == DataType::f64 ? 1e-12 : t == DataType::f32 ? 1e-5 : t == DataType::f16 ? 4e-3 : 3e-2;
      for (size_t i = 0; i < count; ++i) {
        double exact = op == ReduceOp::prod ? 1 : 0, magnitude = 0;
        for (int r = 0; r < n; ++r) {
          double v = roundTo(t, value(r, i));  // what rank r actually contributed
          if (op == ReduceOp::prod) exact *= v;
          else exact += v;
          magnitude += std::fabs(v);
        }
        if (op == ReduceOp::avg) exact /= n, magnitude /= n;
        if (op == ReduceOp::prod) magnitude = std::fabs(exact);
        double got = load(t, buf.data(), i);
        RANK_CHECK(std::fabs(got - exact) <= tol * n * magnitude + 1e-300,
                   "random %s %s: element %zu is %.9g, exact %.9g", toString(t), toString(op), i, got, exact);
      }

      uint64_t mine = hashBytes(buf.data(), count * sizeOf(t)), lo = mine, hi = mine;
      comm.allreduce(&lo, &lo, 1, DataType::u64, ReduceOp::min).wait();
      comm.allreduce(&hi, &hi, 1, DataType::u64, ReduceOp::max).wait();
      RANK_CHECK(lo == mine && hi == mine,
                 "random %s %s: results differ between ranks (hash %016llx here, min %016llx, max %016llx)",
                 toString(t), toString(op), static_cast<unsigned long long>(mine), static_cast<unsigned long long>(lo),
                 static_cast<unsigned long long>(hi));
    }
  }
}

// NaN, ±Inf and ±0 on random ranks and positions, every float dtype and op (avg is sum divided:
// its special values follow sum's), at a board-sized and a multi-slice count: every rank must
// hold exactly the bits of the scalar reference (special_values.h), whatever the algorithm.
void specialValueCases(Communicator& comm) {
  const int n = comm.size(), rank = comm.rank();
  for (DataType t : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
    const size_t es = sizeOf(t);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
      for (size_t count : {size_t(61), size_t(9001)}) {
        auto kindAt = [&](int r, size_t i) {
          uint64_t h = mix(static_cast<uint64_t>(r) + 77, i, static_cast<uint64_t>(t) * 8 + static_cast<uint64_t>(op), count);
          // Half the elements hold a NaN, an infinity or a zero; the rest are finite.
          return static_cast<special::Kind>(h % 2 ? h / 2 % special::kKinds : special::kOne + h / 2 % 3);
        };
        std::vector<char> buf(count * es), want(count * es);
        std::vector<special::Kind> column(static_cast<size_t>(n));
        for (size_t i = 0; i < count; ++i) {
          uint64_t mine = special::bitsOf(t, kindAt(rank, i));
          std::memcpy(buf.data() + i * es, &mine, es);
          for (int r = 0; r < n; ++r) column[static_cast<size_t>(r)] = kindAt(r, i);
          uint64_t expected = special::expectedBits(t, op, column.data(), n);
          std::memcpy(want.data() + i * es, &expected, es);
        }
        comm.allreduce(buf.data(), buf.data(), count, t, op).wait();
        for (size_t i = 0; i < count; ++i) {
          uint64_t got = 0, expected = 0;
          std::memcpy(&got, buf.data() + i * es, es);
          std::memcpy(&expected, want.data() + i * es, es);
          if (got == expected) continue;
          std::string operands;
          for (int r = 0; r < n; ++r) operands += " " + std::to_string(static_cast<int>(kindAt(r, i)));
          RANK_CHECK(false, "special values %s %s count %zu on %d ranks: element %zu is 0x%llx, expected 0x%llx "
                     "(operand kinds by rank:%s)", toString(t), toString(op), count, n, i,
                     static_cast<unsigned long long>(got), static_cast<unsigned long long>(expected), operands.c_str());
        }
      }
    }
  }
}

class Allreduce : public ::testing::TestWithParam<int> {};

TEST_P(Allreduce, SpecialValuesFollowOneRuleOnEveryRank) {
  auto outcomes = runRanks(GetParam(), [](Communicator& comm, Rank&) { specialValueCases(comm); });
  expectAllSucceeded(outcomes);
}

TEST_P(Allreduce, EveryTypeOpCountAndPlacement) {
  auto outcomes = runRanks(GetParam(), [](Communicator& comm, Rank& self) {
    RANK_CHECK(comm.size() == self.size && comm.rank() == self.rank, "communicator says rank %d of %d", comm.rank(),
               comm.size());
    exactCases(comm, self);
  });
  expectAllSucceeded(outcomes);
}

TEST_P(Allreduce, RandomFloatsAreBitIdenticalAcrossRanks) {
  auto outcomes = runRanks(GetParam(), [](Communicator& comm, Rank&) { bitIdenticalCases(comm); });
  expectAllSucceeded(outcomes);
}

INSTANTIATE_TEST_SUITE_P(WorldSize, Allreduce, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
