// The p2p suite's failure cases (p2p_conformance.h): sizes that disagree, a receive nothing
// matched (other late ops: p2p_late_ops.cc), a peer that leaves, abort() and destruction with
// ops outstanding. Each error must name the op (its `what`: kind, number, size, peer, tag) and
// the cause, and come in bounded time; a size disagreement or a late receive fails only its
// op, abort() and destruction every op.
#include <thread>

#include "p2p/p2p_conformance.h"
#include "p2p/wire.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

double secondsSince(int64_t ns) { return static_cast<double>(nowNs() - ns) / 1e9; }

// Rank 0 sends `sent` bytes where rank 1 expects `expected`: the receive fails with Mismatch
// naming itself, the sender and both sizes; a large send is refused to its sender, naming the
// receiver's size. Then a matching exchange on another tag still works: the engine goes on.
void sizeMismatch(const TransportUnderTest& t, Endpoint& ep, size_t sent, size_t expected) {
  P2pRank p(t, ep);
  const bool rendezvous = sent > p2p::kEagerLimit;
  std::vector<uint8_t> out(sent, 1), in = recvBuffer(expected);
  if (ep.self.rank == 0) {
    std::optional<Error> e = p.wait(p.send(1, 1, out.data(), sent), "the send");
    if (rendezvous)
      expectError(e, ErrorCode::Mismatch,
                  {strprintf("send #1 of %zu bytes to peer 1 (tag 1)", sent), strprintf("expects %zu bytes", expected)},
                  "a send its receiver refused");
    else
      RANK_CHECK(!e, "an eager send failed: %s", e->what());
  } else {
    std::optional<Error> e = p.wait(p.recv(0, 1, in.data(), expected), "the receive");
    expectError(e, ErrorCode::Mismatch,
                {strprintf("recv #1 of %zu bytes from peer 0 (tag 1)", expected), strprintf("%zu bytes", sent)},
                "a receive of the wrong size");
  }
  const int peer = 1 - ep.self.rank;
  std::vector<uint8_t> good = recvBuffer(4097), mine(4097);
  fillPattern(mine.data(), mine.size(), p2pSeed(ep.self.rank, peer, 2, 0));
  p.expectDone({p.send(peer, 2, mine.data(), mine.size()), p.recv(peer, 2, good.data(), 4097)}, "after the mismatch");
  checkPattern(good.data(), 4097, p2pSeed(peer, ep.self.rank, 2, 0), "the message after the mismatch");
  ep.barrier("mismatch");
}

TEST_P(P2pConformance, EagerSizeMismatch) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) { sizeMismatch(t, ep, 100, 200); },
                             p2pCase()));
}

TEST_P(P2pConformance, RendezvousSizeMismatch) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) { sizeMismatch(t, ep, 1 << 20, 2 << 20); },
                             p2pCase()));
}

// A receive nothing matches fails with Timeout one op timeout after its posting, naming the op,
// its peer and what did arrive unmatched; it fails alone: the engine goes on, the message that
// was waiting is received and later ops with the same peer complete.
TEST_P(P2pConformance, ReceiveDeadlineNamesThePeer) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pOptions o;
    if (ep.self.rank == 1) o.op_timeout = 1s;
    P2pRank p(t, ep, o);
    if (ep.self.rank == 0) {
      std::vector<uint8_t> out(16, 3);
      p.expectDone({p.send(1, 4, out.data(), out.size())}, "the unmatched send");
      ep.barrier("sent");
      std::vector<uint8_t> in = recvBuffer(8);
      p.expectDone({p.recv(1, 1, in.data(), 8)}, "a receive after the peer's timeout");
      ep.barrier("timed out");
      return;
    }
    ep.barrier("sent");
    std::this_thread::sleep_for(100ms);  // the tag-4 message is here, unexpected
    std::vector<uint8_t> in = recvBuffer(8);
    const int64_t posted = nowNs();
    std::optional<Error> e = p.wait(p.recv(0, 9, in.data(), 8), "the receive");
    const double after = secondsSince(posted);
    expectError(e, ErrorCode::Timeout,
                {"recv #1 of 8 bytes from peer 0 (tag 9)", "did not complete within COLL_TIMEOUT",
                 "from peer 0 with tag 4 (16 bytes)"},
                "a receive nothing matched");
    RANK_CHECK(after >= 0.9 && after < 3.0, "the receive failed %.2f s after its posting (op timeout 1 s)", after);
    std::vector<uint8_t> waiting = recvBuffer(16);
    p.expectDone({p.recv(0, 4, waiting.data(), 16), p.send(0, 1, in.data(), 8)}, "ops after the timeout");
    for (int i = 0; i < 16; ++i) RANK_CHECK(waiting[i] == 3, "byte %d of the waiting message is %d", i, waiting[i]);
    ep.barrier("timed out");
  }, p2pCase()));
}

// A peer that sent and then closed its engine normally: what it sent is still received, and
// a receive from it after that fails with PeerLost naming it, without waiting for a deadline.
TEST_P(P2pConformance, PeerLeavesAfterSending) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const size_t sizes[] = {10, 3000};
    if (ep.self.rank == 0) {
      std::vector<std::vector<uint8_t>> out;
      std::vector<P2pWork> sent;
      for (int i = 0; i < 2; ++i) {
        out.emplace_back(sizes[i]);
        fillPattern(out.back().data(), sizes[i], p2pSeed(0, 1, i, 0));
      }
      for (int i = 0; i < 2; ++i) sent.push_back(p.send(1, i, out[i].data(), sizes[i]));
      p.expectDone(sent, "sends before leaving");
      ep.self.slot->progress = nowNs();
      p.close();
      ep.self.slot->phase = 1;
      return;
    }
    RANK_CHECK(awaitPhase(ep.self.slots[0], 1), "rank 0 did not leave");
    for (int i = 0; i < 2; ++i) {
      std::vector<uint8_t> in = recvBuffer(sizes[i]);
      p.expectDone({p.recv(0, i, in.data(), sizes[i])}, "a receive of a message sent before leaving");
      checkPattern(in.data(), sizes[i], p2pSeed(0, 1, i, 0), "a message sent before leaving");
    }
    std::vector<uint8_t> in = recvBuffer(8);
    std::optional<Error> e = p.wait(p.recv(0, 2, in.data(), 8), "a receive from a peer that left");
    expectError(e, ErrorCode::PeerLost, {"recv #3 of 8 bytes from peer 0 (tag 2)"}, "a receive from a peer that left");
    const double after = secondsSince(ep.self.slots[0].progress.load());
    RANK_CHECK(after < 5.0, "the receive failed %.2f s after the peer left", after);
  }, p2pCase()));
}

// abort() while a receive is outstanding: it fails with PeerLost and the reason within 1 s,
// later posts fail at once, and the peer's receive from this rank fails within 2 s.
TEST_P(P2pConformance, AbortFailsEverythingAndThePeerFast) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const int me = ep.self.rank, peer = 1 - me;
    std::vector<uint8_t> in = recvBuffer(64);
    P2pWork pending = p.recv(peer, 7, in.data(), 64);
    ep.self.slot->phase = 1;
    RANK_CHECK(awaitPhase(ep.self.slots[peer], 1), "rank %d never got ready", peer);
    if (me == 0) {
      std::this_thread::sleep_for(100ms);  // both engines connected and waiting
      ep.self.slot->progress = nowNs();
      p.engine().abort("test abort");
      std::optional<Error> e = p.wait(pending, "the pending receive");
      expectError(e, ErrorCode::PeerLost, {"recv #1 of 64 bytes from peer 1 (tag 7)", "test abort"},
                  "a receive pending at abort()");
      const double after = secondsSince(ep.self.slot->progress.load());
      RANK_CHECK(after < 1.0, "the pending receive failed %.2f s after abort()", after);
      std::optional<Error> later = p.wait(p.send(1, 8, in.data(), 8), "a send after abort()");
      expectError(later, ErrorCode::PeerLost, {"send #2 of 8 bytes to peer 1 (tag 8)", "test abort"},
                  "a send after abort()");
    } else {
      std::optional<Error> e = p.wait(pending, "the receive from the aborted rank");
      expectError(e, ErrorCode::PeerLost, {"recv #1 of 64 bytes from peer 0 (tag 7)"},
                  "a receive from an aborted peer");
      const double after = secondsSince(ep.self.slots[0].progress.load());
      RANK_CHECK(after < 2.0, "the peer's abort was noticed only after %.2f s", after);
    }
    ep.barrier("aborted");
  }, p2pCase()));
}

// Destroying the engine with ops outstanding fails them, saying so (PeerLost), at once.
TEST_P(P2pConformance, DestroyFailsWhatIsOutstanding) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    auto p = std::make_unique<P2pRank>(t, ep);
    if (ep.self.rank == 0) {
      std::vector<uint8_t> in = recvBuffer(64), out(1 << 20, 1);
      P2pWork recv = p->recv(1, 7, in.data(), 64), send = p->send(1, 8, out.data(), out.size());
      std::this_thread::sleep_for(100ms);
      p.reset();
      for (const P2pWork& w : {recv, send}) {
        std::unique_lock<std::mutex> lock(w->mu);
        RANK_CHECK(w->done, "an op outstanding at destruction is not done after it");
        RANK_CHECK(w->error && w->error->code() == ErrorCode::PeerLost &&
                       std::string(w->error->what()).find("destroyed") != std::string::npos,
                   "an op outstanding at destruction: %s", w->error ? w->error->what() : "succeeded");
      }
    }
    ep.barrier("destroyed");
  }, p2pCase()));
}

}  // namespace
}  // namespace coll::test
