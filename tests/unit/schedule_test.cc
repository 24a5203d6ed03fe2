// Schedules as data, checked without any transport: ring arithmetic, the static rules the
// executor relies on (schedule.h), and every catalogue algorithm run by the in-memory
// interpreter (schedule_interpreter.h) against each collective's reference semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/ring_collectives.h"
#include "algorithms/chain_broadcast.h"
#include "algorithms/direct_collectives.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/schedule.h"
#include "algorithms/slice_size.h"
#include "unit/schedule_interpreter.h"

namespace coll::algo {
namespace {

using namespace sim;

// ---------------------------------------------------------------------------------------
// Ring arithmetic

TEST(RingArithmetic, NeighboursAndMod) {
  EXPECT_EQ(ring::mod(-1, 5), 4);
  EXPECT_EQ(ring::mod(-6, 5), 4);
  EXPECT_EQ(ring::mod(7, 5), 2);
  for (int n = 1; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ring::left(ring::right(r, n), n), r);
      EXPECT_EQ(ring::right(r, n), (r + 1) % n);
      EXPECT_EQ(ring::left(r, n), (r + n - 1) % n);
    }
}

TEST(RingArithmetic, ChunksPartitionTheBufferExactly) {
  for (int n = 1; n <= 17; ++n) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{7}, size_t{8}, size_t{16},
                         size_t{100}, size_t{1009}, size_t{65536}, size_t{1000003}}) {
      size_t next = 0, smallest = SIZE_MAX, largest = 0;
      for (int c = 0; c < n; ++c) {
        ring::Chunk ch = ring::chunk(count, n, c);
        EXPECT_EQ(ch.first, next) << "n " << n << " count " << count << " chunk " << c << " leaves a gap or overlaps";
        next = ch.first + ch.count;
        smallest = std::min(smallest, ch.count);
        largest = std::max(largest, ch.count);
      }
      EXPECT_EQ(next, count) << "n " << n << " count " << count << ": chunks do not cover [0, count)";
      EXPECT_LE(largest - smallest, 1u) << "n " << n << " count " << count;
      if (count < static_cast<size_t>(n)) {
        EXPECT_EQ(ring::chunk(count, n, n - 1).count, 0u);
      }
    }
  }
}

// Large ops between hosts take larger slices, never beyond 4 MiB, nor beyond 2 ms of the link,
// nor below the configured one; inside a host, or with COLL_SLICE_BYTES set (rate 0), the
// configured slice stands.
TEST(SliceSize, GrowsWithTheOpWhereTheLinkIsFast) {
  const size_t base = 512 << 10;
  const double unshaped = 2.9e9, ten_gbit = 1.25e9, one_gbit = 0.119e9;
  EXPECT_EQ(algo::sliceBytesFor(64 << 20, base, 0), base);
  EXPECT_EQ(algo::sliceBytesFor(8, base, unshaped), base);
  EXPECT_EQ(algo::sliceBytesFor(4 << 20, base, unshaped), base);
  EXPECT_EQ(algo::sliceBytesFor(16 << 20, base, unshaped), size_t{2} << 20);
  EXPECT_EQ(algo::sliceBytesFor(24 << 20, base, unshaped), size_t{3} << 20);
  EXPECT_EQ(algo::sliceBytesFor(256 << 20, base, unshaped), size_t{4} << 20);
  EXPECT_EQ(algo::sliceBytesFor(256 << 20, base, ten_gbit), size_t{2432} << 10);  // 2 ms, in 64 KiB units
  EXPECT_EQ(algo::sliceBytesFor(256 << 20, base, one_gbit), base);                // 2 ms is 238 KB
  EXPECT_EQ(algo::sliceBytesFor(256 << 20, size_t{8} << 20, unshaped), size_t{8} << 20);  // never below the base
}

TEST(RingArithmetic, NumSlices) {
  EXPECT_EQ(ring::numSlices(0, 4), 0u);
  EXPECT_EQ(ring::numSlices(1, 4), 1u);
  EXPECT_EQ(ring::numSlices(4, 4), 1u);
  EXPECT_EQ(ring::numSlices(5, 4), 2u);
  EXPECT_EQ(ring::numSlices(1000003, 1), 1000003u);
}

TEST(RingArithmetic, ReduceScatterAndAllGatherChunksLineUp) {
  for (int n = 2; n <= 9; ++n) {
    for (int r = 0; r < n; ++r) {
      const int left = ring::left(r, n);
      std::vector<int> gathered(n, 0);
      for (int s = 0; s < n - 1; ++s) {
        // What I receive at step s is what my left neighbour sends at step s.
        EXPECT_EQ(ring::reduceScatterRecvChunk(r, n, s), ring::reduceScatterSendChunk(left, n, s));
        EXPECT_EQ(ring::allGatherRecvChunk(r, n, s), ring::allGatherSendChunk(left, n, s));
        // I forward at step s+1 what I reduced at step s.
        if (s + 1 < n - 1) {
          EXPECT_EQ(ring::reduceScatterSendChunk(r, n, s + 1), ring::reduceScatterRecvChunk(r, n, s));
        }
        if (s + 1 < n - 1) {
          EXPECT_EQ(ring::allGatherSendChunk(r, n, s + 1), ring::allGatherRecvChunk(r, n, s));
        }
        gathered[ring::allGatherRecvChunk(r, n, s)]++;
      }
      // After n-1 reduce-scatter steps I own the chunk I received last; I send it first in the
      // all-gather, and receive every other chunk exactly once.
      EXPECT_EQ(ring::ownedChunk(r, n), ring::reduceScatterRecvChunk(r, n, n - 2));
      EXPECT_EQ(ring::allGatherSendChunk(r, n, 0), ring::ownedChunk(r, n));
      for (int c = 0; c < n; ++c) EXPECT_EQ(gathered[c], c == ring::ownedChunk(r, n) ? 0 : 1) << "n " << n << " r " << r;
    }
  }
}

// The interpreter has teeth: schedules broken in the ways a builder could get wrong fail.
std::string runMutated(SimConfig c, const Mutation& mutate, int seeds) {
  for (int k = 0; k < seeds; ++k) {
    c.seed = 100 + k;
    std::string r = runSimulation(c, mutate);
    if (!r.empty()) return r;
  }
  return "";
}

void dropDeps(Schedule& s, StepKind kind, BufferId source = BufferId::output, bool any_source = true) {
  for (Step& st : s.steps)
    if (st.kind == kind && (any_source || st.source == source)) st.deps.clear();
}

TEST(Interpreter, NoticesBrokenSchedules) {
  SimConfig c;
  c.n = 4, c.count = 997, c.elem_size = 4, c.slice_bytes = 64, c.depth = 2, c.in_place = true;
  ASSERT_EQ(runMutated(c, {}, 5), "") << "the unbroken schedule must pass";

  // Scratch slots reused while still in use.
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::recvReduce); }, 20), "");
  // Forwarding a slice before its reduction finished.
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  // Dividing (avg) before the reduction is complete.
  SimConfig avg = c;
  avg.average = true;
  EXPECT_NE(runMutated(avg, [](int, Schedule& s) { dropDeps(s, StepKind::divide); }, 20), "");
  // One rank sends a slice of the wrong size.
  std::string r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 1)
      for (Step& st : s.steps)
        if (st.kind == StepKind::send) { st.bytes -= 4; break; }
  }, 1);
  EXPECT_NE(r.find("size mismatch"), std::string::npos) << r;
  // One rank skips a receive: a message is left over (eager) or its sender waits forever.
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank != 2) return;
    for (size_t i = s.steps.size(); i-- > 0;)
      if (s.steps[i].kind == StepKind::recv) {
        s.steps.erase(s.steps.begin() + static_cast<long>(i));
        break;
      }
  }, 1);
  EXPECT_NE(r.find("never received"), std::string::npos) << r;
  c.mode = Mode::rendezvous;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 2) s.steps.pop_back();
  }, 1);
  EXPECT_NE(r.find("deadlock"), std::string::npos) << r;
  // A dependency on a later step.
  r = runMutated(c, [](int, Schedule& s) { s.steps[0].deps.push_back(1); }, 1);
  EXPECT_NE(r.find("later step"), std::string::npos) << r;
}

// Past four ranks the ring reduce-scatter keeps its partial sums in two chunk-sized areas of
// scratch in turn (ring_phases.h): the output holds only the rank's own chunk, and a sum that
// overwrites the one before it was sent on is caught.
TEST(Interpreter, RingReduceScatterPartialSumsTakeTwoChunksOfScratchInTurn) {
  SimConfig c;
  c.collective = Collective::reducescatter;
  c.n = 7, c.count = 7 * 131, c.elem_size = 4, c.slice_bytes = 64, c.depth = 1, c.in_place = false;
  for (Mode mode : {Mode::eager, Mode::rendezvous}) {
    c.mode = mode;
    ASSERT_EQ(runMutated(c, {}, 5), "") << "the unbroken schedule must pass";
  }
  BuildParams p;
  p.nranks = c.n, p.rank = 3, p.count = c.count, p.elem_size = c.elem_size, p.slice_bytes = c.slice_bytes;
  p.pipeline_depth = c.depth, p.in_place = false;
  const Schedule s = buildRingReduceScatter(p);
  const ring::Chunk own = ring::chunk(c.count, c.n, p.rank);
  size_t partial_sums = 0;
  for (const Step& st : s.steps) {
    if (st.kind != StepKind::recvReduce) continue;
    if (st.partial()) ++partial_sums;
    else EXPECT_TRUE(st.offset >= own.first * 4 && st.offset + st.bytes <= (own.first + own.count) * 4) << st.offset;
  }
  EXPECT_GT(partial_sums, 0u);
  EXPECT_LE(s.scratch_bytes, c.slice_bytes + 2 * ring::chunk(c.count, c.n, 0).count * c.elem_size);
  c.mode = Mode::rendezvous;
  EXPECT_NE(runMutated(c, [](int, Schedule& m) {
    for (Step& st : m.steps)
      if (st.kind == StepKind::recvReduce && st.partial())
        std::erase_if(st.deps, [&m](uint32_t d) { return m.steps[d].kind == StepKind::send; });
  }, 20), "");
}

// The reference semantics of the other collectives have teeth too.
TEST(Interpreter, NoticesBrokenSchedulesOfOtherCollectives) {
  SimConfig c;
  c.n = 4, c.count = 4 * 131, c.elem_size = 4, c.slice_bytes = 64, c.depth = 1, c.in_place = false;
  for (Collective collective : {Collective::reduce, Collective::allgather, Collective::reducescatter,
                                Collective::alltoall, Collective::gather, Collective::scatter}) {
    c.collective = collective;
    ASSERT_EQ(runMutated(c, {}, 3), "") << toString(collective) << ": the unbroken schedule must pass";
  }
  // Forwarding a partial reduction before it is complete.
  c.collective = Collective::reducescatter;
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  // Sending the root a chunk before its average is taken.
  c.collective = Collective::reduce, c.average = true, c.root = 2;
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  c.average = false;
  // All-gather forwarding other ranks' chunks from the input, where only its own chunk lies.
  c.collective = Collective::allgather;
  std::string r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 1)
      for (Step& st : s.steps)
        if (st.kind == StepKind::send) st.source = BufferId::input;
  }, 1);
  EXPECT_NE(r.find("reads input outside the user's send buffer"), std::string::npos) << r;
  // A gather non-root reading its (empty) output.
  c.collective = Collective::gather, c.root = 0;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 2) s.steps[0].source = BufferId::output;
  }, 1);
  EXPECT_NE(r.find("touches output outside the user's receive buffer"), std::string::npos) << r;
  // The scatter root forgetting its own chunk.
  c.collective = Collective::scatter, c.root = 3;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 3) std::erase_if(s.steps, [](const Step& st) { return st.kind == StepKind::copy; });
  }, 1);
  EXPECT_NE(r.find("rank 3 element"), std::string::npos) << r;
  // All-to-all delivering chunks to the wrong place.
  c.collective = Collective::alltoall;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank != 1) return;
    for (Step& st : s.steps)
      if (st.kind == StepKind::send) st.offset = (st.offset + 131 * 4) % (4 * 131 * 4);
  }, 1);
  EXPECT_NE(r, "");
}

constexpr int kWorldSizes[] = {1, 2, 3, 4, 5, 6, 7, 8};

class Schedules : public ::testing::TestWithParam<int> {};

// Counts: 0, 1, fewer than ranks, a prime, and one that spans many slices of every size used.
// Chunked collectives (all-gather, reduce-scatter, all-to-all, gather, scatter): n times
// per-rank counts 0, 1, a prime and one that spans many slices.
std::vector<size_t> countsFor(int n, Collective collective = Collective::allreduce) {
  if (chunked(collective)) {
    std::vector<size_t> counts;
    for (size_t per : {0, 1, 131, 523}) counts.push_back(per * static_cast<size_t>(n));
    return counts;
  }
  std::vector<size_t> counts = {0, 1, 1009, 4099};
  if (n > 2) counts.push_back(static_cast<size_t>(n - 1));
  return counts;
}

TEST_P(Schedules, RingAllreduceComputesTheSum) {
  const int n = GetParam();
  uint64_t seed = 1;
  for (size_t count : countsFor(n))
    for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{1024}, size_t{512} << 10})
        for (int depth : {1, 2, 8})
          for (bool in_place : {false, true})
            for (bool average : {false, true}) {
              // Keep the cross product cheap: the small slices only with small elements or counts.
              if (slice == 64 && count > 1009 && es > 2) continue;
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c;
                c.collective = Collective::allreduce;
                c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.depth = depth;
                c.in_place = in_place, c.average = average, c.mode = mode, c.seed = seed++;
                simulate(c);
                if (HasFatalFailure()) return;
              }
            }
}

TEST_P(Schedules, ChainBroadcastCopiesTheRootsData) {
  const int n = GetParam();
  uint64_t seed = 1000;
  for (size_t count : countsFor(n))
    for (size_t es : {size_t{1}, size_t{4}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{1024}, size_t{512} << 10})
        for (int root = 0; root < n; ++root)
          for (bool in_place : {false, true})
            for (Mode mode : {Mode::eager, Mode::rendezvous}) {
              SimConfig c;
              c.collective = Collective::broadcast;
              c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.root = root;
              c.in_place = in_place, c.mode = mode, c.seed = seed++;
              simulate(c);
              if (HasFatalFailure()) return;
            }
}

// Many seeds on one mid-sized case: different interleavings, same answer.
TEST_P(Schedules, RingAllreduceUnderManyInterleavings) {
  const int n = GetParam();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SimConfig c;
    c.n = n, c.count = 997, c.elem_size = 4, c.slice_bytes = 64, c.depth = 2;
    c.in_place = seed % 2, c.average = seed % 3 == 0, c.seed = seed;
    c.mode = seed % 4 < 2 ? Mode::eager : Mode::rendezvous;
    simulate(c);
    if (HasFatalFailure()) return;
  }
}

TEST_P(Schedules, StaticShape) {
  const int n = GetParam();
  for (size_t count : {size_t{0}, size_t{1}, size_t{1009}})
    for (int r = 0; r < n; ++r) {
      SimConfig c;
      c.n = n, c.count = count, c.slice_bytes = 1024, c.in_place = false;
      Schedule s = buildRingAllreduce(c.params(r));
      EXPECT_EQ(s.algorithm, "ring");
      if (count == 0) {
        EXPECT_TRUE(s.steps.empty()) << "count 0 moves nothing";
      }
      if (n == 1 && count > 0) {
        ASSERT_EQ(s.steps.size(), 1u) << "one rank out-of-place: just the copy";
        EXPECT_EQ(s.steps[0].kind, StepKind::copy);
      }
      if (n > 1) {
        EXPECT_EQ(s.num_phases, static_cast<uint32_t>(2 * (n - 1)));
      }
      // Every element is sent 2(n-1)/n times on average: total bytes sent = 2(n-1) chunks.
      size_t sent = 0;
      for (const Step& st : s.steps)
        if (st.kind == StepKind::send) sent += st.bytes;
      size_t expect = 0;
      for (int k = 0; k < n - 1; ++k) {
        expect += ring::chunk(count, n, ring::reduceScatterSendChunk(r, n, k)).count * c.elem_size;
        expect += ring::chunk(count, n, ring::allGatherSendChunk(r, n, k)).count * c.elem_size;
      }
      EXPECT_EQ(sent, expect) << "n " << n << " rank " << r << " count " << count;
      c.collective = Collective::broadcast;
      Schedule b = buildChainBroadcast(c.params(r));
      EXPECT_EQ(b.algorithm, "chain");
      size_t recv_bytes = 0;
      for (const Step& st : b.steps)
        if (st.kind == StepKind::recv) recv_bytes += st.bytes;
      EXPECT_EQ(recv_bytes, r == c.root ? 0 : count * c.elem_size) << "each non-root receives the buffer once";
    }
}

// Two ranks (ring and direct alike): the sends alternate between the peer's slices and our
// results, each result right after the recvReduce that produced it and marked as its forward;
// with avg the division comes between them, so nothing is forwarded.
TEST(PairAllreduce, SendsAlternateAndEachResultForwardsItsReduction) {
  for (bool average : {false, true}) {
    SimConfig c;
    c.n = 2, c.count = 5 * 256 + 3, c.slice_bytes = 1024, c.in_place = false, c.average = average;
    for (int r = 0; r < 2; ++r) {
      Schedule s = buildRingAllreduce(c.params(r));
      std::vector<const Step*> sends;
      size_t forwards = 0;
      for (size_t i = 0; i < s.steps.size(); ++i) {
        const Step& st = s.steps[i];
        if (st.kind == StepKind::send) sends.push_back(&st);
        if (st.forwards < 0) continue;
        ++forwards;
        const Step& from = s.steps[st.forwards];
        EXPECT_EQ(from.kind, StepKind::recvReduce);
        EXPECT_EQ(from.offset, st.offset);
        EXPECT_EQ(from.bytes, st.bytes);
        EXPECT_NE(std::find(st.deps.begin(), st.deps.end(), static_cast<uint32_t>(st.forwards)), st.deps.end());
      }
      EXPECT_EQ(forwards, average ? 0u : 3u) << "rank " << r << ": its 3 slices";
      ASSERT_EQ(sends.size(), 6u);
      for (size_t k = 0; k < sends.size(); ++k)
        EXPECT_EQ(sends[k]->source == BufferId::output, k % 2 == 1) << "rank " << r << " send " << k;
    }
  }
}

// Out of place, an all-gather's own chunk goes into the output as the first phase sends it
// from the input (Step::copy_to_output), not by a copy step beforehand; dropping that copy
// loses the chunk, which the interpreter notices.
TEST(RingAllgather, OwnChunkIsCopiedByItsFirstSends) {
  for (int n : {2, 3, 5}) {
    SimConfig c;
    c.n = n, c.collective = Collective::allgather, c.count = 523 * static_cast<size_t>(n), c.slice_bytes = 256,
    c.in_place = false;
    for (int r = 0; r < n; ++r) {
      Schedule s = buildRingAllgather(c.params(r));
      size_t copied = 0;
      for (const Step& st : s.steps) {
        EXPECT_NE(st.kind, StepKind::copy) << "n " << n << " rank " << r;
        if (!st.copy_to_output) continue;
        EXPECT_EQ(st.kind, StepKind::send);
        EXPECT_EQ(st.source, BufferId::input);
        EXPECT_EQ(st.phase, 0u);
        copied += st.bytes;
      }
      EXPECT_EQ(copied, 523 * c.elem_size) << "n " << n << " rank " << r << ": its whole chunk, once";
    }
    ASSERT_EQ(runMutated(c, {}, 3), "") << "n " << n;
    std::string broken = runMutated(c, [](int rank, Schedule& s) {
      if (rank == 1)
        for (Step& st : s.steps) st.copy_to_output = false;
    }, 1);
    EXPECT_NE(broken.find("rank 1 element"), std::string::npos) << broken;
    c.in_place = true;
    for (int r = 0; r < n; ++r)
      for (const Step& st : buildRingAllgather(c.params(r)).steps) EXPECT_FALSE(st.copy_to_output);
  }
}

// Every algorithm in the catalogue, under both completion modes and several shapes.
TEST_P(Schedules, EveryCatalogAlgorithm) {
  const int n = GetParam();
  uint64_t seed = 5000;
  for (const AlgorithmInfo& a : catalog())
    for (size_t count : a.isSchedule() ? countsFor(n, a.collective) : std::vector<size_t>{})
      for (size_t slice : {size_t{64}, size_t{512} << 10})
        for (bool in_place : {false, true})
          for (int root : {0, n - 1})
            for (Mode mode : {Mode::eager, Mode::rendezvous}) {
              SimConfig c;
              c.collective = a.collective;
              c.algorithm = a.name;
              c.n = n, c.count = count, c.elem_size = 4, c.slice_bytes = slice, c.depth = 2;
              c.in_place = in_place, c.average = seed % 3 == 0, c.root = root, c.mode = mode, c.seed = seed++;
              SCOPED_TRACE(std::string(toString(a.collective)) + ":" + a.name);
              simulate(c);
              if (HasFatalFailure()) return;
            }
}

// The collectives beyond all-reduce and broadcast, every root, under shapes that stress
// slicing (64-byte slices: dozens per chunk), scratch reuse (one or two slots) and ordering.
TEST_P(Schedules, OtherCollectivesUnderManyShapes) {
  const int n = GetParam();
  uint64_t seed = 9000;
  for (Collective collective : {Collective::reduce, Collective::allgather, Collective::reducescatter,
                                Collective::alltoall, Collective::gather, Collective::scatter}) {
    const bool rooted = collective == Collective::reduce || collective == Collective::gather ||
                        collective == Collective::scatter;
    for (int root = 0; root < (rooted ? n : 1); ++root)
      for (size_t count : countsFor(n, collective))
        for (size_t es : {size_t{1}, size_t{8}})
          for (size_t slice : {size_t{64}, size_t{1024}})
            for (bool in_place : {false, true})
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c;
                c.collective = collective;
                c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.depth = slice == 64 ? 1 : 2;
                c.in_place = in_place, c.root = root, c.mode = mode, c.seed = seed++;
                c.average = reduces(collective) && seed % 2 == 0;
                simulate(c);
                if (HasFatalFailure()) return;
              }
  }
}

// Point-to-point: the sender's slices and the receiver's pair up one to one, tile the
// message exactly, and an empty message moves nothing (both sides still count the op).
TEST(PointToPoint, SendAndRecvSlicesPairUp) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1009}, size_t{4096}})
    for (size_t es : {size_t{1}, size_t{2}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{4096}, size_t{512} << 10}) {
        BuildParams p;
        p.nranks = 3, p.count = count, p.elem_size = es, p.slice_bytes = slice;
        p.rank = 0, p.root = 2;
        Schedule send = buildSend(p);
        p.rank = 2, p.root = 0;
        Schedule recv = buildRecv(p);
        SCOPED_TRACE("count " + std::to_string(count) + " elem " + std::to_string(es) + " slice " +
                     std::to_string(slice));
        ASSERT_EQ(send.steps.size(), recv.steps.size());
        size_t next = 0;
        for (size_t k = 0; k < send.steps.size(); ++k) {
          const Step &a = send.steps[k], &b = recv.steps[k];
          EXPECT_EQ(a.kind, StepKind::send);
          EXPECT_EQ(a.source, BufferId::input);
          EXPECT_EQ(a.peer, 2);
          EXPECT_EQ(b.kind, StepKind::recv);
          EXPECT_EQ(b.peer, 0);
          EXPECT_EQ(a.offset, next);
          EXPECT_EQ(b.offset, next);
          EXPECT_EQ(a.bytes, b.bytes);
          EXPECT_GT(a.bytes, 0u);
          EXPECT_LE(a.bytes, std::max(slice, es));
          EXPECT_EQ(a.bytes % es, 0u);
          EXPECT_LT(a.phase, send.num_phases);
          next += a.bytes;
        }
        EXPECT_EQ(next, count * es);
      }
}

INSTANTIATE_TEST_SUITE_P(WorldSize, Schedules, ::testing::ValuesIn(kWorldSizes),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::algo
