// Connections made on demand (transport/socket/on_demand.h), as the engine uses them: a peer
// nobody sends to costs no socket, two ranks that dial each other at once end with one
// connection, and a send to a peer that has left fails at once. Socket only: the other
// transports connect at start.
#include <dirent.h>
#include <unistd.h>

#include <thread>

#include "p2p/p2p_conformance.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> patterned(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  fillPattern(v.data(), bytes, seed);
  return v;
}

// This process's open sockets (with the socket transport every rank is a process of its own).
int openSockets() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return -1;
  while (dirent* e = ::readdir(dir)) {
    char target[64] = {};
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(path.c_str(), target, sizeof target - 1) > 0 && std::string(target).rfind("socket:", 0) == 0) ++n;
  }
  ::closedir(dir);
  return n;
}

// Sockets gained since `before`, once settled: a dial that lost to the peer's is closed by the
// engine's thread, so this waits up to 3 s for `expected`; what it found last.
int socketsGained(int before, int expected) {
  int gained = openSockets() - before;
  for (auto end = std::chrono::steady_clock::now() + 3s; gained != expected && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(10ms);
    gained = openSockets() - before;
  }
  return gained;
}

bool connectsOnDemand(const TransportUnderTest& t) { return t.name == "socket"; }

TEST_P(P2pConformance, APeerNobodySendsToCostsNoSocket) {
  if (!connectsOnDemand(GetParam())) GTEST_SKIP() << GetParam().name << " connects every peer at start";
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const int me = ep.self.rank;
    ep.barrier("made");
    const int before = openSockets();
    ep.barrier("counted");
    if (me < 2) {  // ranks 0 and 1 send and receive at once: both dial
      std::vector<uint8_t> out = patterned(4096, p2pSeed(me, 1 - me, 5, 0));
      std::vector<uint8_t> in = recvBuffer(4096);
      p.expectDone({p.send(1 - me, 5, out.data(), 4096), p.recv(1 - me, 5, in.data(), 4096)}, "0 <-> 1");
      checkPattern(in.data(), 4096, p2pSeed(1 - me, me, 5, 0), "from the other of ranks 0 and 1");
    }
    ep.barrier("exchanged");
    const int expected = me < 2 ? 1 : 0;
    const int gained = socketsGained(before, expected);
    RANK_CHECK(gained == expected, "rank %d gained %d sockets (ranks 0 and 1 one each, ranks 2 and 3 none)", me,
               gained);
    ep.barrier("checked");
  }, p2pCase(4)));
}

// Every rank sends to and receives from every other at the same moment, in an order of its
// own: every pair dials both ways at once, and ends with one connection.
TEST_P(P2pConformance, EveryPairDialsBothWaysAtOnce) {
  if (!connectsOnDemand(GetParam())) GTEST_SKIP() << GetParam().name << " connects every peer at start";
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const int me = ep.self.rank, n = ep.self.size;
    ep.barrier("made");
    const int before = openSockets();
    ep.barrier("counted");
    std::vector<std::vector<uint8_t>> out(n), in(n);
    std::vector<P2pWork> works;
    for (int k = 1; k < n; ++k) {
      const int q = (me + (me % 2 ? n - k : k)) % n;  // odd ranks go round the other way
      const size_t bytes = 1 + 997 * static_cast<size_t>(me + q);
      out[q] = patterned(bytes, p2pSeed(me, q, 1, 0));
      in[q] = recvBuffer(bytes);
      works.push_back(p.send(q, 1, out[q].data(), bytes));
      works.push_back(p.recv(q, 1, in[q].data(), bytes));
    }
    p.expectDone(works, "every pair");
    for (int q = 0; q < n; ++q)
      if (q != me) checkPattern(in[q].data(), 1 + 997 * static_cast<size_t>(me + q), p2pSeed(q, me, 1, 0),
                                strprintf("from rank %d", q).c_str());
    ep.barrier("exchanged");
    const int gained = socketsGained(before, n - 1);
    RANK_CHECK(gained == n - 1, "rank %d gained %d sockets for %d peers", me, gained, n - 1);
    ep.barrier("checked");
  }, p2pCase(5)));
}

// A peer publishes its address only once it listens: a dial refused there means it left, and
// the send fails now with PeerLost, not at its deadline.
TEST_P(P2pConformance, ASendToAPeerThatLeftFailsAtOnce) {
  if (!connectsOnDemand(GetParam())) GTEST_SKIP() << GetParam().name << " connects every peer at start";
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    ep.barrier("made");
    if (ep.self.rank == 1) {
      p.close();
      ep.self.slot->phase = 1;
    } else {
      RANK_CHECK(awaitPhase(ep.self.slots[1], 1), "rank 1 did not leave");
      std::vector<uint8_t> out = patterned(64, 1);
      const auto start = std::chrono::steady_clock::now();
      std::optional<Error> e = p.wait(p.send(1, 0, out.data(), out.size()), "a send to a rank that left");
      expectError(e, ErrorCode::PeerLost, {"send #1 of 64 bytes to peer 1 (tag 0)", "no longer listens"},
                  "a send to a rank that left");
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RANK_CHECK(took < 2.0, "the send failed after %.2f s (its timeout is 10 s)", took);
    }
    ep.barrier("done");
  }, p2pCase(2)));
}

}  // namespace
}  // namespace coll::test
