// The conformance cases (see connection_conformance.h). Cookies: a case's own numbering;
// tags: distinct per message so that a message delivered to the wrong receive fails.
#include "transport/connection_conformance.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "base/op_kind.h"
#include "base/wire_tag.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kSizes[] = {0, 1, 7, 4096, (64 << 10) + 1, 1 << 20, 16 << 20};

double secondsSince(int64_t ns) { return static_cast<double>(nowNs() - ns) / 1e9; }

void expectOk(const std::map<uint64_t, Status>& done, const char* what) {
  for (const auto& [cookie, st] : done)
    RANK_CHECK(st.isOk(), "%s: request %llu failed: %s", what, static_cast<unsigned long long>(cookie), st.message().c_str());
}

// A list of messages both ranks post at once in both directions: sends first, then receives.
void exchangeMessages(Endpoint& ep, const std::vector<size_t>& sizes) {
  int peer = 1 - ep.self.rank;
  std::vector<std::vector<uint8_t>> out(sizes.size()), in(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    out[i].resize(sizes[i]);
    fillPattern(out[i].data(), sizes[i], ep.self.rank * 1000 + i);
    in[i] = recvBuffer(sizes[i]);
  }
  for (size_t i = 0; i < sizes.size(); ++i) ep.conns[peer]->postSend(out[i].data(), sizes[i], 100 + i, i);
  for (size_t i = 0; i < sizes.size(); ++i) ep.conns[peer]->postRecv(in[i].data(), sizes[i], 100 + i, 1'000'000 + i);
  expectOk(ep.wait(2 * sizes.size()), "exchange");
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string what = strprintf("message %zu from rank %d", i, peer);
    checkPattern(in[i].data(), sizes[i], peer * 1000 + i, what.c_str());
  }
}

// Posts a receive that will never match (and with_send, a large send that will never be
// received), marks the rank as waiting, and waits for them to fail with PeerLost.
void waitForLostPeer(Endpoint& ep, int peer, bool with_send) {
  std::vector<uint8_t> in = recvBuffer(1 << 20), out(16 << 20, 1);
  ep.conns[peer]->postRecv(in.data(), 1 << 20, 1, 1);
  if (with_send) ep.conns[peer]->postSend(out.data(), out.size(), 2, 2);
  ep.self.slot->phase = 1;
  size_t n = with_send ? 2 : 1;
  std::map<uint64_t, Status> done;
  std::vector<transport::Completion> batch;
  while (done.size() < n && transport::Clock::now() < ep.deadline) {
    batch.clear();
    (void)ep.transport->progress(&batch, ep.deadline);
    for (auto& c : batch) done[c.cookie] = c.status;
  }
  RANK_CHECK(done.size() == n, "the requests to the lost peer did not fail before the deadline");
  for (const auto& [cookie, st] : done)
    RANK_CHECK(st.code() == ErrorCode::PeerLost && !st.isOk(), "request %llu: expected PeerLost, got %s: %s",
               static_cast<unsigned long long>(cookie), st.isOk() ? "success" : codeName(st.code()), st.message().c_str());
}

TEST_P(ConnectionConformance, EverySizeBothWays) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    for (int sender = 0; sender < 2; ++sender) {
      for (size_t i = 0; i < std::size(kSizes); ++i) {
        size_t n = kSizes[i];
        uint64_t seed = sender * 100 + i;
        if (ep.self.rank == sender) {
          std::vector<uint8_t> out(n);
          fillPattern(out.data(), n, seed);
          ep.conns[1 - sender]->postSend(out.data(), n, seed, 1);
          expectOk(ep.wait(1), "send");
        } else {
          std::vector<uint8_t> in = recvBuffer(n);
          ep.conns[sender]->postRecv(in.data(), n, seed, 2);
          expectOk(ep.wait(1), "recv");
          checkPattern(in.data(), n, seed, "message");
        }
      }
    }
  }));
}

TEST_P(ConnectionConformance, BothDirectionsAtOnce) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    exchangeMessages(ep, {16 << 20, 1, (64 << 10) + 1, 1 << 20, 0, 4096, 300 << 10, 7});
  }));
}

TEST_P(ConnectionConformance, ThousandSmallMessagesInFlight) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    std::vector<size_t> sizes(1000);
    for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = (i * 37) % 200;
    exchangeMessages(ep, sizes);
  }));
}

// Four ranks (more than this machine's cores), every pair at once in both directions: each
// segment holds several channels and waiting ranks must yield to the ones they wait for.
TEST_P(ConnectionConformance, FourRanksAllPairs) {
  CaseOptions o;
  o.ranks = 4;
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const size_t sizes[] = {1, (64 << 10) + 1, 1 << 20, 0, 4 << 20};
    int n = ep.self.size, me = ep.self.rank;
    std::vector<std::vector<uint8_t>> out, in;
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < std::size(sizes) && p != me; ++i) {
        out.emplace_back(sizes[i]);
        fillPattern(out.back().data(), sizes[i], (me * 16 + p) * 16 + i);
        ep.conns[p]->postSend(out.back().data(), sizes[i], i, out.size());
        in.push_back(recvBuffer(sizes[i]));
        ep.conns[p]->postRecv(in.back().data(), sizes[i], i, 1000 + in.size());
      }
    }
    expectOk(ep.wait(out.size() + in.size()), "all pairs");
    size_t k = 0;
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < std::size(sizes) && p != me; ++i, ++k) {
        std::string what = strprintf("message %zu from rank %d", i, p);
        checkPattern(in[k].data(), sizes[i], (p * 16 + me) * 16 + i, what.c_str());
      }
    }
  }, o));
}

// The receiver expects another tag: Mismatch naming both, and it sticks.
// postRecvReduce: the receiver gets operand + message, in place or not, whatever the size
// (one slot, many, a CMA read); a connection that cannot combine posts nothing and says so,
// and a plain receive then gets the message.
TEST_P(ConnectionConformance, RecvReduceCombinesAsItArrives) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const size_t counts[] = {0, 1, 1027, (1 << 18) + 3, 3 << 20};
    uint64_t tag = 500;
    for (size_t count : counts) {
      for (bool in_place : {false, true}) {
        ++tag;
        if (ep.self.rank == 0) {
          std::vector<float> msg(count);
          for (size_t i = 0; i < count; ++i) msg[i] = static_cast<float>(i % 1000);
          ep.conns[1]->postSend(msg.data(), count * sizeof(float), tag, 1);
          expectOk(ep.wait(1), "send");
          continue;
        }
        std::vector<float> operand(count), out(count, -1.0f);
        for (size_t i = 0; i < count; ++i) operand[i] = static_cast<float>(3 * (i % 7));
        float* data = in_place ? operand.data() : out.data();
        bool fused = tryRecvReduce(ep.conns[0], data, operand.data(), count * sizeof(float), tag, 2, DataType::f32,
                                                 ReduceOp::sum);
        std::vector<float> plain(count);
        if (!fused) ep.conns[0]->postRecv(plain.data(), count * sizeof(float), tag, 2);
        expectOk(ep.wait(1), "recvReduce");
        for (size_t i = 0; i < count; ++i) {
          float want = static_cast<float>(3 * (i % 7) + i % 1000);
          float got = fused ? data[i] : operand[i] + plain[i];
          RANK_CHECK(got == want, "count %zu (%s, %s) element %zu: %g, expected %g", count,
                     in_place ? "in place" : "out of place", fused ? "combined" : "plain", i, got, want);
        }
      }
    }
  }));
}

// Connection::setStreamingReceives is a hint: plain and combining receives land the same bytes
// with it (unaligned destinations, odd lengths, the guard bytes after them untouched).
TEST_P(ConnectionConformance, StreamingReceivesLandTheSameBytes) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const size_t sizes[] = {1, 61, 4099, (1 << 17) + 13, (3 << 20) + 7};
    const size_t shifts[] = {0, 1, 9};
    uint64_t tag = 900;
    for (size_t bytes : sizes) {
      for (size_t shift : shifts) {
        ++tag;
        if (ep.self.rank == 0) {
          std::vector<uint8_t> msg(bytes);
          fillPattern(msg.data(), bytes, tag);
          ep.conns[1]->postSend(msg.data(), bytes, tag, 1);
          expectOk(ep.wait(1), "send");
          continue;
        }
        ep.conns[0]->setStreamingReceives(true);
        std::vector<uint8_t> in = recvBuffer(bytes + shift);
        std::fill_n(in.begin(), shift, uint8_t{0x5a});
        ep.conns[0]->postRecv(in.data() + shift, bytes, tag, 2);
        expectOk(ep.wait(1), "streaming receive");
        ep.conns[0]->setStreamingReceives(false);
        RANK_CHECK(std::count(in.begin(), in.begin() + shift, uint8_t{0x5a}) == static_cast<long>(shift),
                   "%zu bytes at +%zu: the bytes before the buffer changed", bytes, shift);
        std::string what = strprintf("%zu bytes at +%zu", bytes, shift);
        checkPattern(in.data() + shift, bytes, tag, what.c_str());
      }
    }
    for (size_t count : {size_t{1}, size_t{1027}, (size_t{1} << 18) + 3}) {  // combining, out of place
      ++tag;
      if (ep.self.rank == 0) {
        std::vector<double> msg(count);
        for (size_t i = 0; i < count; ++i) msg[i] = static_cast<double>(i % 1000) + 0.5;
        ep.conns[1]->postSend(msg.data(), count * sizeof(double), tag, 1);
        expectOk(ep.wait(1), "send");
        continue;
      }
      std::vector<double> operand(count), out(count + 1, -1.0);
      for (size_t i = 0; i < count; ++i) operand[i] = static_cast<double>(3 * (i % 7));
      ep.conns[0]->setStreamingReceives(true);
      bool fused = tryRecvReduce(ep.conns[0], out.data(), operand.data(), count * sizeof(double), tag, 2,
                                               DataType::f64, ReduceOp::max);
      std::vector<double> plain(count);
      if (!fused) ep.conns[0]->postRecv(plain.data(), count * sizeof(double), tag, 2);
      expectOk(ep.wait(1), "streaming recvReduce");
      ep.conns[0]->setStreamingReceives(false);
      for (size_t i = 0; i < count; ++i) {
        double want = std::max(3.0 * (i % 7), static_cast<double>(i % 1000) + 0.5);
        double got = fused ? out[i] : std::max(operand[i], plain[i]);
        RANK_CHECK(got == want, "count %zu element %zu: %g, expected %g", count, i, got, want);
      }
      RANK_CHECK(out[count] == -1.0, "count %zu: the element after the output changed", count);
    }
  }));
}

// A connection declares its optional calls once (transport.h, ConnectionCaps): the same after
// traffic as before it, consistent, and the peek the suite's parameter says the transport has.
TEST_P(ConnectionConformance, CapsAreDeclaredOnce) {
  const bool peeks = GetParam().peeks;
  expectAllSucceeded(runCase(GetParam(), [peeks](Endpoint& ep) {
    Connection* conn = ep.conns[1 - ep.self.rank];
    const transport::ConnectionCaps before = conn->caps();
    RANK_CHECK(before.peeks == peeks, "caps().peeks is %d where the suite expects %d", before.peeks, peeks);
    RANK_CHECK(before.forward_below == 0 || before.recv_reduce, "forwards a combined receive but cannot combine one");
    std::vector<uint8_t> out(4096, 1), in = recvBuffer(4096);
    conn->postSend(out.data(), out.size(), 5, 1);
    conn->postRecv(in.data(), out.size(), 5, 2);
    expectOk(ep.wait(2), "traffic");
    const transport::ConnectionCaps after = conn->caps();
    RANK_CHECK(after.recv_reduce == before.recv_reduce && after.forward_below == before.forward_below &&
                   after.send_copying == before.send_copying && after.relay_from == before.relay_from &&
                   after.peeks == before.peeks,
               "caps() changed after traffic");
  }));
}

// postSendCopying as an all-gather's first step uses it: both ranks send their part and copy it
// to their own output at once, from one element to several CMA pieces, streaming or not. A
// connection that cannot copy says so, and the rank copies and sends.
TEST_P(ConnectionConformance, SendCopyingFillsTheCopyAndThePeer) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const int me = ep.self.rank, peer = 1 - me;
    Connection* conn = ep.conns[peer];
    uint64_t tag = 1500;
    for (size_t bytes : {size_t{1}, size_t{4099}, (size_t{1} << 20) + 7, (size_t{9} << 20) + 3}) {
      for (bool stream : {false, true}) {
        ++tag;
        std::vector<uint8_t> mine(bytes), copy = recvBuffer(bytes), theirs = recvBuffer(bytes);
        fillPattern(mine.data(), bytes, tag * 2 + me);
        conn->setStreamingReceives(stream);
        conn->opBegins(tag, 0);
        if (!trySendCopying(conn, mine.data(), copy.data(), bytes, tag, 1)) {
          conn->postSend(mine.data(), bytes, tag, 1);
          std::memcpy(copy.data(), mine.data(), bytes);
        }
        conn->postRecv(theirs.data(), bytes, tag, 2);
        expectOk(ep.wait(2), "send copying");
        conn->opEnds(tag);
        std::string what = strprintf("%zu bytes%s: the copy", bytes, stream ? ", streaming" : "");
        checkPattern(copy.data(), bytes, tag * 2 + me, what.c_str());
        what = strprintf("%zu bytes%s: the peer's", bytes, stream ? ", streaming" : "");
        checkPattern(theirs.data(), bytes, tag * 2 + peer, what.c_str());
      }
    }
    conn->setStreamingReceives(false);
  }));
}

// postRecvReduceForward as the two-rank all-reduce uses it: each rank sends the peer its part
// of the peer's half, combines the peer's part of its own half and sends that result back,
// three slices posted at once. Sizes from one element to more than a ring holds (a shm
// forward then finds no free slot and sends that part from the output later), streaming or
// not, in place or not. A connection that cannot forward says so, and the rank then receives,
// combines and sends the result itself.
TEST_P(ConnectionConformance, RecvReduceForwardSendsTheResultBack) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const int me = ep.self.rank, peer = 1 - me;
    Connection* conn = ep.conns[peer];
    auto part = [](int rank, int half, size_t slice, size_t i) {
      return static_cast<float>((rank + 1) * 1000 + half * 100 + slice * 10 + i % 997);
    };
    uint64_t tag = 700;
    for (size_t count : {size_t{1}, size_t{1027}, (size_t{1} << 18) + 3, size_t{3} << 20}) {
      for (bool in_place : {false, true}) {
        for (bool stream : {false, true}) {
          ++tag;
          const size_t slices = 3, bytes = count * sizeof(float);
          std::vector<std::vector<float>> theirs(slices), mine(slices), out(slices), back(slices);
          for (size_t j = 0; j < slices; ++j) {
            for (size_t i = 0; i < count; ++i) theirs[j].push_back(part(me, peer, j, i)), mine[j].push_back(part(me, me, j, i));
            out[j].assign(count, -1.0f);
            back[j].assign(count, -1.0f);
          }
          conn->setStreamingReceives(stream);
          uint64_t cookie = 0;
          size_t outstanding = 0;
          for (size_t j = 0; j < slices; ++j) {
            float* result = in_place ? mine[j].data() : out[j].data();
            conn->postSend(theirs[j].data(), bytes, tag, cookie++);
            ++outstanding;
            if (tryRecvReduceForward(conn, result, mine[j].data(), bytes, tag, cookie, cookie + 1, DataType::f32,
                                            ReduceOp::sum)) {
              outstanding += 2;
            } else {
              std::vector<float> received(count);
              conn->postRecv(received.data(), bytes, tag, cookie);
              expectOk(ep.wait(outstanding + 1), "receive to combine");
              for (size_t i = 0; i < count; ++i) result[i] = mine[j][i] + received[i];
              conn->postSend(result, bytes, tag, cookie + 1);
              outstanding = 1;
            }
            cookie += 2;
            conn->postRecv(back[j].data(), bytes, tag, cookie++);
            ++outstanding;
          }
          expectOk(ep.wait(outstanding), "forwarding exchange");
          conn->setStreamingReceives(false);
          for (size_t j = 0; j < slices; ++j) {
            const float* result = in_place ? mine[j].data() : out[j].data();
            for (size_t i = 0; i < count; ++i) {
              float want = part(me, me, j, i) + part(peer, me, j, i), want_back = part(peer, peer, j, i) + part(me, peer, j, i);
              RANK_CHECK(result[i] == want && back[j][i] == want_back,
                         "count %zu (%s, %s) slice %zu element %zu: result %g (expected %g), the peer's %g (expected %g)",
                         count, in_place ? "in place" : "out of place", stream ? "streaming" : "cached", j, i, result[i],
                         want, back[j][i], want_back);
              if (result[i] != want || back[j][i] != want_back) return;
            }
          }
        }
      }
    }
  }));
}

// The tags are collectives' (base/wire_tag.h): the error names both calls.
TEST_P(ConnectionConformance, TagMismatch) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    std::vector<uint8_t> buf = recvBuffer(64);
    const uint64_t sent = wireTag(5, static_cast<uint8_t>(OpKind::gather));
    const uint64_t expected = wireTag(5, static_cast<uint8_t>(OpKind::scatter));
    if (ep.self.rank == 0) {
      ep.conns[1]->postSend(buf.data(), 64, sent, 1);
      ep.wait(1);  // may fail once the receiver closed: only completion matters
    } else {
      ep.conns[0]->postRecv(buf.data(), 64, expected, 1);
      Status st = ep.wait(1)[1];
      RANK_CHECK(st.code() == ErrorCode::Mismatch && !st.isOk(), "expected Mismatch, got: %s", st.message().c_str());
      RANK_CHECK(st.message().find("gather call 5") != std::string::npos &&
                     st.message().find("scatter call 5") != std::string::npos,
                 "the message does not name both calls: %s", st.message().c_str());
      ep.conns[0]->postRecv(buf.data(), 64, 0x7, 2);
      Status again = ep.wait(1)[2];
      RANK_CHECK(again.message() == st.message(), "the failure did not stick: %s", again.message().c_str());
    }
    ep.barrier("tag");
  }));
}

// A message no receive has claimed can be peeked at (the executor's check for a peer in
// another call), and peeking leaves it for the receive that comes later.
TEST_P(ConnectionConformance, UnreadMessageIsPeekedNotTaken) {
  if (!GetParam().peeks) GTEST_SKIP() << GetParam().name << " cannot see unclaimed messages";
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const uint64_t tag = wireTag(9, static_cast<uint8_t>(OpKind::broadcast));
    if (ep.self.rank == 0) {
      std::vector<uint8_t> out(3000);
      fillPattern(out.data(), out.size(), 42);
      ep.conns[1]->postSend(out.data(), out.size(), tag, 1);
      expectOk(ep.wait(1), "send");
    } else {
      uint64_t seen = 0, bytes = 0;
      const auto end = std::chrono::steady_clock::now() + 10s;
      std::vector<transport::Completion> none;
      while (!ep.conns[0]->unreadMessage(&seen, &bytes)) {
        RANK_CHECK(std::chrono::steady_clock::now() < end, "the message never showed as unread");
        Status st = ep.transport->progress(&none, transport::Clock::now() + 1ms);
        RANK_CHECK(st.isOk(), "progress: %s", st.message().c_str());
      }
      RANK_CHECK(seen == tag && bytes == 3000, "peeked tag %#llx of %llu bytes", static_cast<unsigned long long>(seen),
                 static_cast<unsigned long long>(bytes));
      std::vector<uint8_t> in = recvBuffer(3000);
      ep.conns[0]->postRecv(in.data(), 3000, tag, 1);
      RANK_CHECK(!ep.conns[0]->unreadMessage(&seen, &bytes), "a message shows as unread with a receive posted");
      expectOk(ep.wait(1), "receive after the peek");
      checkPattern(in.data(), 3000, 42, "the peeked message");
    }
    ep.barrier("peek");
  }));
}

// Rank 0 sends `sent` bytes where rank 1 expects `expected`: Mismatch naming both lengths at
// the receiver; the sender's request completes (either way) in bounded time.
void lengthMismatch(Endpoint& ep, size_t sent, size_t expected) {
  std::vector<uint8_t> buf = recvBuffer(std::max(sent, expected));
  if (ep.self.rank == 0) {
    ep.conns[1]->postSend(buf.data(), sent, 5, 1);
    ep.wait(1);
  } else {
    ep.conns[0]->postRecv(buf.data(), expected, 5, 1);
    Status st = ep.wait(1)[1];
    RANK_CHECK(st.code() == ErrorCode::Mismatch && !st.isOk(), "expected Mismatch, got: %s", st.message().c_str());
    std::string a = std::to_string(sent) + " bytes", b = std::to_string(expected) + " bytes";
    RANK_CHECK(st.message().find(a) != std::string::npos && st.message().find(b) != std::string::npos,
               "the message does not name both lengths: %s", st.message().c_str());
  }
  ep.barrier("length");
}

TEST_P(ConnectionConformance, LengthMismatch) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) { lengthMismatch(ep, 100, 200); }));
}

// Large enough for the single-copy path where a transport has one.
TEST_P(ConnectionConformance, LargeLengthMismatch) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) { lengthMismatch(ep, 2 << 20, 1 << 20); }));
}

// A peer that sent messages and then closed its transport normally: they are still
// delivered, and only the receive after them fails (PeerLost), as with a closed socket. (Two
// small messages: they fit in any ring, so the sends complete without the receiver.)
TEST_P(ConnectionConformance, PeerClosesAfterSending) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    constexpr size_t kSent[] = {10, 3000};
    if (ep.self.rank == 0) {
      std::vector<std::vector<uint8_t>> out;
      for (size_t i = 0; i < std::size(kSent); ++i) {
        out.emplace_back(kSent[i]);
        fillPattern(out.back().data(), kSent[i], i);
        ep.conns[1]->postSend(out.back().data(), kSent[i], i, i);
      }
      expectOk(ep.wait(std::size(kSent)), "send");
      ep.owned.reset();  // a normal close
      ep.self.slot->phase = 1;
      return;
    }
    RANK_CHECK(awaitPhase(ep.self.slots[0], 1), "rank 0 did not close");
    for (size_t i = 0; i < std::size(kSent); ++i) {
      std::vector<uint8_t> in = recvBuffer(kSent[i]);
      ep.conns[0]->postRecv(in.data(), kSent[i], i, i);
      expectOk(ep.wait(1), "recv");
      checkPattern(in.data(), kSent[i], i, "message sent before closing");
    }
    std::vector<uint8_t> in = recvBuffer(8);
    ep.conns[0]->postRecv(in.data(), 8, 99, 99);
    Status st = ep.wait(1)[99];
    RANK_CHECK(st.code() == ErrorCode::PeerLost && !st.isOk(), "a receive after the peer closed: %s",
               st.isOk() ? "succeeded" : st.message().c_str());
  }));
}

// A peer SIGKILLed while we wait for it (no goodbye of any kind): PeerLost within 2 s.
TEST_P(ConnectionConformance, PeerKilled) {
  if (GetParam().threads) GTEST_SKIP() << kNoRankKills;
  CaseOptions o;
  o.run.parent_action = [](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!awaitPhase(slots[0], 1) || !awaitPhase(slots[1], 1)) return;
    slots[0].progress = nowNs();  // the time of death, for rank 1
    ::kill(pids[0], SIGKILL);
  };
  auto outcomes = runCase(GetParam(), [](Endpoint& ep) {
    if (ep.self.rank == 0) {
      ep.self.slot->phase = 1;
      std::this_thread::sleep_for(30s);  // killed long before
      RANK_CHECK(false, "rank 0 was not killed");
    }
    waitForLostPeer(ep, 0, true);
    double after = secondsSince(ep.self.slots[0].progress.load());
    RANK_CHECK(after < 2.0, "the death was noticed only after %.2f s", after);
  }, o);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].signal, SIGKILL) << outcomes[0].describe();
  EXPECT_TRUE(outcomes[1].exited && outcomes[1].exit_code == 0) << outcomes[1].describe();
}

// abort() from another thread while the progress thread waits: the waiting progress() returns
// failed within 1 s, and the peer (which stays alive) fails with PeerLost within 1 s too.
TEST_P(ConnectionConformance, AbortFromAnotherThread) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    if (ep.self.rank == 1) {
      waitForLostPeer(ep, 0, false);
      double after = secondsSince(ep.self.slots[0].progress.load());
      RANK_CHECK(after < 1.0, "the peer's abort was noticed only after %.2f s", after);
      ep.self.slot->phase = 2;
      return;
    }
    std::vector<uint8_t> in = recvBuffer(64);
    ep.conns[1]->postRecv(in.data(), 64, 9, 1);
    RANK_CHECK(awaitPhase(ep.self.slots[1], 1), "rank 1 never got ready");
    std::thread aborter([&] {
      std::this_thread::sleep_for(100ms);
      ep.self.slot->progress = nowNs();
      ep.transport->abort("test abort from another thread");
    });
    std::vector<transport::Completion> batch;
    Status st;
    while (batch.empty() && st.isOk() && transport::Clock::now() < ep.deadline) st = ep.transport->progress(&batch, ep.deadline);
    aborter.join();
    double after = secondsSince(ep.self.slot->progress.load());
    RANK_CHECK(!st.isOk() && st.code() == ErrorCode::PeerLost, "progress() after abort: %s", st.message().c_str());
    RANK_CHECK(after < 1.0, "progress() returned %.2f s after abort()", after);
    RANK_CHECK(batch.size() == 1 && batch[0].status.code() == ErrorCode::PeerLost && !batch[0].status.isOk(),
               "the pending receive did not fail with PeerLost");
    ep.conns[1]->postSend(in.data(), 8, 10, 2);  // after abort: fails at once
    batch.clear();
    (void)ep.transport->progress(&batch, transport::Clock::now());
    RANK_CHECK(batch.size() == 1 && !batch[0].status.isOk(), "a send after abort() did not fail");
    RANK_CHECK(awaitPhase(ep.self.slots[1], 2), "rank 1 did not finish");  // stay alive meanwhile
  }));
}

}  // namespace
}  // namespace coll::test
