// The p2p suite's late ops that fail alone (p2p_conformance.h): an op past its deadline that
// the transport holds none of fails by itself with Timeout, and the engine, the peer's later
// ops and the communicator go on. A large send nobody matched is withdrawn (a receive that
// matches it later is told so); a matched large receive whose data did not come is given up
// (the data is dropped when it comes). Afterwards the same peer and tag exchange normally,
// which shows the two sides' streams stayed in step.
#include <thread>

#include "p2p/p2p_conformance.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kLarge = 1 << 20;  // rendezvous

double secondsSince(int64_t ns) { return static_cast<double>(nowNs() - ns) / 1e9; }

std::vector<uint8_t> patterned(int from, int to, int tag, size_t index) {
  std::vector<uint8_t> data(kLarge);
  fillPattern(data.data(), data.size(), p2pSeed(from, to, tag, index));
  return data;
}

// Rank 0's large send times out (op timeout 1 s) before rank 1 posts its receive: the send
// fails alone naming the peer; rank 1's receive, posted later, matches the withdrawn message
// and fails at once saying so; the next send and receive on the same tag carry their data.
TEST_P(P2pConformance, LateLargeSendIsWithdrawnAlone) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pOptions o;
    if (ep.self.rank == 0) o.op_timeout = 1s;
    P2pRank p(t, ep, o);
    if (ep.self.rank == 0) {
      std::vector<uint8_t> first = patterned(0, 1, 3, 0), second = patterned(0, 1, 3, 1);
      const int64_t posted = nowNs();
      std::optional<Error> e = p.wait(p.send(1, 3, first.data(), kLarge), "the unmatched send");
      const double after = secondsSince(posted);
      expectError(e, ErrorCode::Timeout,
                  {"send #1 of 1048576 bytes to peer 1 (tag 3)", "peer 1 has not matched it", "withdrawn"},
                  "an unmatched large send");
      RANK_CHECK(after >= 0.9 && after < 3.0, "the send failed %.2f s after its posting (op timeout 1 s)", after);
      ep.barrier("withdrawn");
      p.expectDone({p.send(1, 3, second.data(), kLarge)}, "the send after the withdrawn one");
      ep.barrier("done");
      return;
    }
    ep.barrier("withdrawn");
    std::vector<uint8_t> in = recvBuffer(kLarge);
    const int64_t posted = nowNs();
    std::optional<Error> e = p.wait(p.recv(0, 3, in.data(), kLarge), "the receive of the withdrawn send");
    expectError(e, ErrorCode::Timeout, {"recv #1 of 1048576 bytes from peer 0 (tag 3)", "peer 0 gave up its send",
                                        "nothing was received"},
                "a receive that matched a withdrawn send");
    RANK_CHECK(secondsSince(posted) < 2.0, "the receive was told only after %.2f s", secondsSince(posted));
    std::vector<uint8_t> next = recvBuffer(kLarge);
    p.expectDone({p.recv(0, 3, next.data(), kLarge)}, "the receive after the withdrawn one");
    checkPattern(next.data(), kLarge, p2pSeed(0, 1, 3, 1), "the message after the withdrawn one");
    ep.barrier("done");
  }, p2pCase()));
}

// Rank 1 matches rank 0's large send, but rank 0's engine thread is held (a completion
// callback that sleeps 2.5 s) before it can answer with the data: rank 1's receive (op
// timeout 1 s) fails alone; the data, arriving later, is dropped; a second large message on
// the same tag arrives intact.
TEST_P(P2pConformance, LateMatchedReceiveIsGivenUpAlone) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pOptions o;
    if (ep.self.rank == 1) o.op_timeout = 1s;
    P2pRank p(t, ep, o);
    std::vector<uint8_t> small = recvBuffer(8);
    if (ep.self.rank == 0) {
      std::vector<uint8_t> first = patterned(0, 1, 3, 0), second = patterned(0, 1, 3, 1);
      P2pWork large = p.send(1, 3, first.data(), kLarge);  // its RTS goes now
      P2pWork holder = p.recv(1, 1, small.data(), small.size());
      {
        std::lock_guard<std::mutex> lock(holder->mu);
        holder->chainOnCompleteLocked([] { std::this_thread::sleep_for(2500ms); });
      }
      ep.barrier("posted");
      p.expectDone({holder, large}, "the holding receive and the large send");
      ep.barrier("resumed");
      p.expectDone({p.send(1, 3, second.data(), kLarge)}, "the second large send");
      ep.barrier("done");
      return;
    }
    ep.barrier("posted");
    p.expectDone({p.send(0, 1, small.data(), small.size())}, "the send that holds rank 0's engine");
    std::this_thread::sleep_for(100ms);  // rank 0's engine is in the callback
    std::vector<uint8_t> in = recvBuffer(kLarge);
    const int64_t posted = nowNs();
    std::optional<Error> e = p.wait(p.recv(0, 3, in.data(), kLarge), "the receive whose data is held");
    const double after = secondsSince(posted);
    expectError(e, ErrorCode::Timeout, {"recv #2 of 1048576 bytes from peer 0 (tag 3)", "whose data has not come",
                                        "given up"},
                "a matched receive whose data did not come");
    RANK_CHECK(after >= 0.9 && after < 2.2, "the receive failed %.2f s after its posting (op timeout 1 s)", after);
    ep.barrier("resumed");  // rank 0's engine is back (its receives time out in 1 s)
    std::vector<uint8_t> next = recvBuffer(kLarge);
    p.expectDone({p.recv(0, 3, next.data(), kLarge)}, "the receive after the given-up one");
    checkPattern(next.data(), kLarge, p2pSeed(0, 1, 3, 1), "the message after the given-up one");
    ep.barrier("done");
  }, p2pCase()));
}

}  // namespace
}  // namespace coll::test
