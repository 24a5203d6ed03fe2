// Point-to-point that progresses on its own (include/coll/communicator.h, p2p/engine.h):
// the exchanges that deadlocked when sends and receives ran one at a time in issue order
// (issue 23), on forked ranks, with the default transports (shared memory on this host) and
// again over sockets only (tests/CMakeLists.txt):
//   - both ranks receive before they send, at 8 B, 1 MiB and 64 MiB (eager and rendezvous);
//   - all-pairs exchanges where every rank sends to everyone with several tags, in a shuffled
//     order, receiving in another shuffled order, sizes around the eager limit;
//   - a thousand small messages outstanding at once, waited on in random order;
//   - collectives issued between a receive and the send it waits for, in opposite orders;
//   - receives from any source (Work::source() names the sender);
//   - sizes that disagree: Mismatch naming both sizes, on the receiver (and the sender, for a
//     large message), and the communicator goes on.
// Payloads depend on (sender, receiver, tag, index), so a message delivered to the wrong
// receive, a stale buffer or bytes past the end fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

uint8_t payload(int from, int to, int tag, size_t i) {
  uint64_t x = (static_cast<uint64_t>(from) * 1000003u + static_cast<uint64_t>(to) * 10007u + static_cast<uint64_t>(tag)) *
                   0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  return static_cast<uint8_t>(x >> 56);
}

std::vector<uint8_t> message(int from, int to, int tag, size_t bytes) {
  std::vector<uint8_t> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = payload(from, to, tag, i);
  return m;
}

// The receive buffer with one guard byte past the end.
std::vector<uint8_t> receiveBuffer(size_t bytes) { return std::vector<uint8_t>(bytes + 1, 0xA5); }

void expectMessage(const std::vector<uint8_t>& got, int from, int to, int tag, size_t bytes, const char* what) {
  for (size_t i = 0; i < bytes; ++i)
    RANK_CHECK(got[i] == payload(from, to, tag, i), "%s: %zu-byte message from %d tag %d: byte %zu is %#x, expected %#x",
               what, bytes, from, tag, i, got[i], payload(from, to, tag, i));
  RANK_CHECK(got[bytes] == 0xA5, "%s: wrote past the %zu-byte receive buffer", what, bytes);
}

// Every rank pairs with rank ^ 1 (an odd last rank sits out) and receives before it sends.
void receiveFirst(Communicator& comm, size_t bytes) {
  const int rank = comm.rank(), peer = rank ^ 1;
  if (peer >= comm.size()) return;
  std::vector<uint8_t> in = receiveBuffer(bytes), out = message(rank, peer, 0, bytes);
  Work r = comm.recv(in.data(), bytes, DataType::u8, peer);
  Work s = comm.send(out.data(), bytes, DataType::u8, peer);
  s.wait();
  r.wait();
  expectMessage(in, peer, rank, 0, bytes, "receive first");
  RANK_CHECK(r.source() == peer, "source() is %d, expected %d", r.source(), peer);
}

size_t pairBytes(int from, int to, int tag) {
  static constexpr size_t kSizes[] = {0, 1, 7, 4096, 65536, 65537, 300001};
  return kSizes[(from * 3 + to * 5 + tag) % 7];
}

// Everyone sends to everyone with tags 0..3 (sizes on both sides of the eager limit), sends
// and receives posted in one shuffled order per rank.
void allPairs(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  constexpr int kTags = 4;
  struct Post {
    bool send;
    int peer, tag;
  };
  std::vector<Post> posts;
  for (int p = 0; p < n; ++p)
    for (int t = 0; t < kTags; ++t)
      if (p != rank) posts.push_back({true, p, t}), posts.push_back({false, p, t});
  std::mt19937 rng(1234 + rank);
  std::shuffle(posts.begin(), posts.end(), rng);
  std::vector<std::vector<uint8_t>> buffers(posts.size());
  std::vector<Work> works;
  for (size_t k = 0; k < posts.size(); ++k) {
    const Post& p = posts[k];
    if (p.send) {
      buffers[k] = message(rank, p.peer, p.tag, pairBytes(rank, p.peer, p.tag));
      works.push_back(comm.send(buffers[k].data(), buffers[k].size(), DataType::u8, p.peer, p.tag));
    } else {
      buffers[k] = receiveBuffer(pairBytes(p.peer, rank, p.tag));
      works.push_back(comm.recv(buffers[k].data(), buffers[k].size() - 1, DataType::u8, p.peer, p.tag));
    }
  }
  std::vector<size_t> order(works.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t k : order) works[k].wait();
  for (size_t k = 0; k < posts.size(); ++k)
    if (!posts[k].send)
      expectMessage(buffers[k], posts[k].peer, rank, posts[k].tag, buffers[k].size() - 1, "all pairs");
  self.slot->progress++;
}

// Ranks 0 and 1 post a thousand receives each, then a thousand sends, of 1-64 bytes with
// tags 0..9; within one tag messages match in order.
void thousandOutstanding(Communicator& comm, Rank&) {
  const int rank = comm.rank(), peer = rank ^ 1;
  if (peer >= comm.size()) return;
  constexpr int kMessages = 1000;
  auto tagOf = [](int k) { return k % 10; };
  auto bytesOf = [](int k) { return size_t(1 + k % 64); };
  std::vector<std::vector<uint8_t>> in(kMessages), out(kMessages);
  std::vector<Work> works;
  for (int k = 0; k < kMessages; ++k) {
    in[k] = receiveBuffer(bytesOf(k));
    works.push_back(comm.recv(in[k].data(), bytesOf(k), DataType::u8, peer, tagOf(k)));
  }
  for (int k = 0; k < kMessages; ++k) {
    out[k] = message(rank, peer, k, bytesOf(k));
    works.push_back(comm.send(out[k].data(), bytesOf(k), DataType::u8, peer, tagOf(k)));
  }
  std::mt19937 rng(99 + rank);
  std::shuffle(works.begin(), works.end(), rng);
  for (Work& w : works) w.wait();
  for (int k = 0; k < kMessages; ++k) expectMessage(in[k], peer, rank, k, bytesOf(k), "thousand outstanding");
}

// A receive, then collectives, then the send the peer's receive waits for; odd ranks issue
// the collectives' part in the opposite order to even ones (they must still agree on the
// collectives' order, which is the same).
void collectivesBetween(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank(), peer = rank ^ 1;
  const bool paired = peer < n;
  const size_t bytes = 1 << 20;
  std::vector<uint8_t> in = receiveBuffer(bytes), out = message(rank, peer, 5, bytes);
  Work r, s;
  if (paired) r = comm.recv(in.data(), bytes, DataType::u8, peer, 5);
  int64_t x = rank, sum = 0;
  Work a = comm.allreduce(&x, &sum, 1, DataType::i64, ReduceOp::sum);
  std::vector<float> big(100003, 1.0f);
  Work b = comm.allreduce(big.data(), big.data(), big.size(), DataType::f32, ReduceOp::sum);
  if (paired) s = comm.send(out.data(), bytes, DataType::u8, peer, 5);
  a.wait();
  b.wait();
  if (paired) {
    s.wait();
    r.wait();
    expectMessage(in, peer, rank, 5, bytes, "collectives between");
  }
  RANK_CHECK(sum == int64_t{n} * (n - 1) / 2, "allreduce gave %lld", static_cast<long long>(sum));
  RANK_CHECK(big[0] == static_cast<float>(n) && big.back() == static_cast<float>(n), "large allreduce gave %g",
             big[0]);
}

// Rank 0 receives one message from each other rank, from any source: each arrives once, and
// Work::source() says whose it is.
void anySource(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  constexpr size_t kBytes = 100;
  if (rank != 0) {
    std::vector<uint8_t> out = message(rank, 0, 3, kBytes);
    comm.send(out.data(), kBytes, DataType::u8, 0, 3).wait();
    return;
  }
  std::vector<std::vector<uint8_t>> in(n);
  std::vector<Work> works;
  for (int k = 1; k < n; ++k) {
    in[k] = receiveBuffer(kBytes);
    works.push_back(comm.recv(in[k].data(), kBytes, DataType::u8, kAnySource, 3));
  }
  std::vector<int> seen(n, 0);
  for (int k = 1; k < n; ++k) {
    works[k - 1].wait();
    const int from = works[k - 1].source();
    RANK_CHECK(from >= 1 && from < n, "receive %d from any source: source() is %d", k, from);
    ++seen[from];
    expectMessage(in[k], from, 0, 3, kBytes, "any source");
  }
  for (int r = 1; r < n; ++r) RANK_CHECK(seen[r] == 1, "rank %d's message was received %d times", r, seen[r]);
}

// Sizes that disagree fail with Mismatch naming both, and the pair goes on: an eager message
// (the receive fails), a large one (both fail), then a good exchange.
void sizesDisagree(Communicator& comm, Rank&) {
  const int rank = comm.rank();
  if (rank > 1) return;
  auto expectMismatch = [&](Work w, const char* what, const char* words) {
    try {
      w.wait();
      RANK_CHECK(false, "%s succeeded", what);
    } catch (const Error& e) {
      RANK_CHECK(e.code() == ErrorCode::Mismatch, "%s: %s, expected Mismatch: %s", what, toString(e.code()), e.what());
      RANK_CHECK(std::strstr(e.what(), words) != nullptr, "%s: '%s' does not say '%s'", what, e.what(), words);
    }
  };
  std::vector<uint8_t> small(16, 1), large(2 << 20, 2), in = receiveBuffer(4 << 20);
  if (rank == 1) {
    comm.send(small.data(), 16, DataType::u8, 0, 7).wait();  // eager: gone before it is refused
    expectMismatch(comm.send(large.data(), 1 << 20, DataType::u8, 0, 8), "large send", "expects 2097152 bytes");
  } else {
    expectMismatch(comm.recv(in.data(), 8, DataType::u8, 1, 7), "small receive", "has 16 bytes");
    expectMismatch(comm.recv(in.data(), 2 << 20, DataType::u8, 1, 8), "large receive", "has 1048576 bytes");
  }
  const int peer = rank ^ 1;
  std::vector<uint8_t> out = message(rank, peer, 9, 1000), back = receiveBuffer(1000);
  Work r = comm.recv(back.data(), 1000, DataType::u8, peer, 9);
  comm.send(out.data(), 1000, DataType::u8, peer, 9).wait();
  r.wait();
  expectMessage(back, peer, rank, 9, 1000, "after the mismatches");
}

}  // namespace

class P2p : public ::testing::TestWithParam<int> {};

TEST_P(P2p, BothRanksReceiveFirstAt8Bytes) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) { receiveFirst(comm, 8); }));
}
TEST_P(P2p, BothRanksReceiveFirstAt1MiB) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) { receiveFirst(comm, 1 << 20); }));
}
TEST_P(P2p, BothRanksReceiveFirstAt64MiB) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) { receiveFirst(comm, 64 << 20); }));
}
TEST_P(P2p, AllPairsWithShuffledTags) { expectAllSucceeded(runRanks(GetParam(), allPairs)); }
TEST_P(P2p, AThousandOutstandingSmallMessages) { expectAllSucceeded(runRanks(GetParam(), thousandOutstanding)); }
TEST_P(P2p, CollectivesBetweenAReceiveAndItsSend) { expectAllSucceeded(runRanks(GetParam(), collectivesBetween)); }
TEST_P(P2p, ReceiveFromAnySource) { expectAllSucceeded(runRanks(GetParam(), anySource)); }
TEST_P(P2p, SizesThatDisagreeFailWithMismatchAndThePairGoesOn) {
  expectAllSucceeded(runRanks(GetParam(), sizesDisagree));
}

INSTANTIATE_TEST_SUITE_P(WorldSize, P2p, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param); });

}  // namespace coll::test
