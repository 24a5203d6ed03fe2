// The p2p suite's data cases (p2p_conformance.h): sizes around the eager limit, matching by
// tag and source, MPI's non-overtaking order, receives posted before and after their message
// arrived, and many ops outstanding at once. Payloads depend on (sender, receiver, tag,
// index), so a message delivered to the wrong receive fails its check.
#include <algorithm>
#include <random>
#include <thread>

#include "p2p/p2p_conformance.h"
#include "p2p/wire.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

// Around the eager limit (p2p/wire.h) and odd: eager, rendezvous, and no payload at all.
constexpr size_t kSizes[] = {0, 1, 7, 4097, p2p::kEagerLimit, p2p::kEagerLimit + 1, (1 << 20) + 3};

std::vector<uint8_t> patterned(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  fillPattern(v.data(), bytes, seed);
  return v;
}

// Every size in kSizes both ways, one tag each, as one group per rank: rank 0 posts its
// receives first, rank 1 its sends first.
TEST_P(P2pConformance, OddSizesBothWays) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const int me = ep.self.rank, peer = 1 - me;
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<P2pRank::Post> sends, recvs;
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      out.push_back(patterned(kSizes[i], p2pSeed(me, peer, static_cast<int>(i), 0)));
      in.push_back(recvBuffer(kSizes[i]));
    }
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      sends.push_back({true, peer, static_cast<int>(i), out[i].data(), kSizes[i]});
      recvs.push_back({false, peer, static_cast<int>(i), in[i].data(), kSizes[i]});
    }
    const std::vector<P2pRank::Post>& first = me == 0 ? recvs : sends;
    const std::vector<P2pRank::Post>& second = me == 0 ? sends : recvs;
    std::vector<P2pRank::Post> group = first;
    group.insert(group.end(), second.begin(), second.end());
    std::vector<P2pWork> works = p.postGroup(group);
    p.expectDone(works, "odd sizes");
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      checkPattern(in[i].data(), kSizes[i], p2pSeed(peer, me, static_cast<int>(i), 0),
                   strprintf("%zu bytes from rank %d", kSizes[i], peer).c_str());
    }
    for (size_t i = 0; i < group.size(); ++i)
      RANK_CHECK(group[i].send || works[i]->source == peer, "a receive's source is %d, expected %d", works[i]->source,
                 peer);
    ep.barrier("sizes");
  }, p2pCase()));
}

// Receives posted before their message was sent, and after it arrived (an unexpected message,
// held by the engine until its receive comes): eager and rendezvous sizes both ways.
TEST_P(P2pConformance, ReceivePostedBeforeAndAfterTheMessage) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const size_t sizes[] = {1, 4097, p2p::kEagerLimit + 1, (1 << 20) + 3};
    const int n = static_cast<int>(std::size(sizes));
    if (ep.self.rank == 1) {  // tags 0..n-1: posted early; n..2n-1: posted late
      std::vector<std::vector<uint8_t>> in;
      for (int i = 0; i < 2 * n; ++i) in.push_back(recvBuffer(sizes[i % n]));
      std::vector<P2pWork> early, late;
      for (int i = 0; i < n; ++i) early.push_back(p.recv(0, i, in[i].data(), sizes[i]));
      ep.barrier("early posted");
      ep.barrier("late sent");
      std::this_thread::sleep_for(200ms);  // the eager ones are here by now, unexpected
      for (int i = n; i < 2 * n; ++i) late.push_back(p.recv(0, i, in[i].data(), sizes[i % n]));
      p.expectDone(early, "receives posted early");
      p.expectDone(late, "receives posted late");
      for (int i = 0; i < 2 * n; ++i)
        checkPattern(in[i].data(), sizes[i % n], p2pSeed(0, 1, i, 0), strprintf("tag %d", i).c_str());
      return;
    }
    std::vector<std::vector<uint8_t>> out;
    for (int i = 0; i < 2 * n; ++i) out.push_back(patterned(sizes[i % n], p2pSeed(0, 1, i, 0)));
    ep.barrier("early posted");
    std::vector<P2pWork> sent;
    for (int i = 0; i < 2 * n; ++i) sent.push_back(p.send(1, i, out[i].data(), sizes[i % n]));
    ep.barrier("late sent");
    p.expectDone(sent, "sends");
  }, p2pCase()));
}

// Ten tags sent in order, received in a shuffled order: each receive gets its tag's message.
TEST_P(P2pConformance, TagsMatchOutOfOrder) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    auto size = [](int tag) { return tag % 3 == 0 ? p2p::kEagerLimit + 1 + tag : size_t(100 + tag); };
    constexpr int kTags = 10;
    if (ep.self.rank == 0) {
      std::vector<std::vector<uint8_t>> out;
      std::vector<P2pWork> sent;
      for (int tag = 0; tag < kTags; ++tag) out.push_back(patterned(size(tag), p2pSeed(0, 1, tag, 0)));
      for (int tag = 0; tag < kTags; ++tag) sent.push_back(p.send(1, tag, out[tag].data(), size(tag)));
      p.expectDone(sent, "sends");
    } else {
      std::vector<int> order(kTags);
      for (int tag = 0; tag < kTags; ++tag) order[tag] = tag;
      std::shuffle(order.begin(), order.end(), std::mt19937(7));
      std::vector<std::vector<uint8_t>> in(kTags);
      std::vector<P2pWork> got;
      for (int tag : order) {
        in[tag] = recvBuffer(size(tag));
        got.push_back(p.recv(0, tag, in[tag].data(), size(tag)));
      }
      p.expectDone(got, "receives in shuffled order");
      for (int tag = 0; tag < kTags; ++tag)
        checkPattern(in[tag].data(), size(tag), p2pSeed(0, 1, tag, 0), strprintf("tag %d", tag).c_str());
    }
    ep.barrier("tags");
  }, p2pCase()));
}

// MPI's non-overtaking rule: within one (peer, tag), the n-th receive gets the n-th message,
// eager ones and rendezvous ones interleaved (a later eager message must not pass an earlier
// large one). Sizes differ, so a message overtaking another fails as a size mismatch too.
TEST_P(P2pConformance, OrderedPerPeerAndTag) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    constexpr int kCount = 40, kTag = 3;
    auto size = [](int i) { return i % 7 == 3 ? (200 << 10) + size_t(i) : size_t(i * 13); };
    const int me = ep.self.rank, peer = 1 - me;
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<P2pWork> works;
    for (int i = 0; i < kCount; ++i) {
      out.push_back(patterned(size(i), p2pSeed(me, peer, kTag, i)));
      in.push_back(recvBuffer(size(i)));
    }
    for (int i = 0; i < kCount; ++i) {
      works.push_back(p.send(peer, kTag, out[i].data(), size(i)));
      works.push_back(p.recv(peer, kTag, in[i].data(), size(i)));
    }
    p.expectDone(works, "ordered messages");
    for (int i = 0; i < kCount; ++i)
      checkPattern(in[i].data(), size(i), p2pSeed(peer, me, kTag, i), strprintf("message %d", i).c_str());
    ep.barrier("ordered");
  }, p2pCase()));
}

// Receives from any source (three ranks: 1 and 2 send to 0): each names its sender in
// WorkState::source, gets that sender's bytes, and each sender's messages arrive in order.
// Two rounds, eager then rendezvous, each of one size: any message fits any receive.
TEST_P(P2pConformance, AnySourceNamesTheSender) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    constexpr int kPerSender = 6, kTag = 5;
    const size_t round_bytes[] = {1000, p2p::kEagerLimit + 17};
    int next[3] = {0, 0, 0};  // rank 0: per sender, the index its next message must have
    for (int round = 0; round < 2; ++round) {
      const size_t bytes = round_bytes[round];
      if (ep.self.rank != 0) {
        std::vector<std::vector<uint8_t>> out;
        std::vector<P2pWork> sent;
        for (int i = 0; i < kPerSender; ++i)
          out.push_back(patterned(bytes, p2pSeed(ep.self.rank, 0, kTag, round * kPerSender + i)));
        for (int i = 0; i < kPerSender; ++i) sent.push_back(p.send(0, kTag, out[i].data(), bytes));
        p.expectDone(sent, "sends");
        ep.barrier(strprintf("round %d", round));
        continue;
      }
      std::vector<std::vector<uint8_t>> in;
      std::vector<P2pWork> got;
      for (int i = 0; i < 2 * kPerSender; ++i) in.push_back(recvBuffer(bytes));
      for (int i = 0; i < 2 * kPerSender; ++i) got.push_back(p.recv(p2p::kAnySource, kTag, in[i].data(), bytes));
      p.expectDone(got, "receives from any source");
      for (int i = 0; i < 2 * kPerSender; ++i) {
        const int from = got[i]->source;
        RANK_CHECK(from == 1 || from == 2, "receive %d: source %d", i, from);
        checkPattern(in[i].data(), bytes, p2pSeed(from, 0, kTag, next[from]++),
                     strprintf("receive %d (from rank %d)", i, from).c_str());
      }
      ep.barrier(strprintf("round %d", round));
    }
    if (ep.self.rank == 0)
      RANK_CHECK(next[1] == 2 * kPerSender && next[2] == 2 * kPerSender, "%d from rank 1 and %d from rank 2", next[1],
                 next[2]);
  }, p2pCase(3)));
}

// A thousand small messages each way outstanding at once over eight tags, waited on in a
// random order.
TEST_P(P2pConformance, ThousandOutstanding) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    constexpr int kCount = 1000;
    const int me = ep.self.rank, peer = 1 - me;
    auto size = [](int i) { return size_t((i * 37) % 300); };
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<P2pWork> works;
    for (int i = 0; i < kCount; ++i) {
      out.push_back(patterned(size(i), p2pSeed(me, peer, i % 8, i)));
      in.push_back(recvBuffer(size(i)));
    }
    for (int i = 0; i < kCount; ++i) {
      works.push_back(p.recv(peer, i % 8, in[i].data(), size(i)));
      works.push_back(p.send(peer, i % 8, out[i].data(), size(i)));
    }
    std::vector<P2pWork> shuffled = works;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(11 + me));
    p.expectDone(shuffled, "a thousand outstanding");
    for (int i = 0; i < kCount; ++i)
      checkPattern(in[i].data(), size(i), p2pSeed(peer, me, i % 8, i), strprintf("message %d", i).c_str());
    ep.barrier("thousand");
  }, p2pCase()));
}

// Four ranks, everyone to everyone with three tags, sizes on both sides of the eager limit,
// each rank posting in its own shuffled order.
TEST_P(P2pConformance, FourRanksAllPairs) {
  expectAllSucceeded(runCase(GetParam(), [t = GetParam()](Endpoint& ep) {
    P2pRank p(t, ep);
    const int me = ep.self.rank, n = ep.self.size;
    auto size = [](int from, int to, int tag) {
      const size_t s[] = {0, 1, 4097, p2p::kEagerLimit, p2p::kEagerLimit + 1, 300001};
      return s[(from * 3 + to * 5 + tag) % 6];
    };
    struct Op {
      bool send;
      int peer, tag;
      std::vector<uint8_t> buf;
    };
    std::vector<Op> ops;
    for (int q = 0; q < n; ++q) {
      for (int tag = 0; tag < 3 && q != me; ++tag) {
        ops.push_back({true, q, tag, patterned(size(me, q, tag), p2pSeed(me, q, tag, 0))});
        ops.push_back({false, q, tag, recvBuffer(size(q, me, tag))});
      }
    }
    std::shuffle(ops.begin(), ops.end(), std::mt19937(100 + me));
    std::vector<P2pWork> works;
    for (Op& o : ops)
      works.push_back(o.send ? p.send(o.peer, o.tag, o.buf.data(), size(me, o.peer, o.tag))
                             : p.recv(o.peer, o.tag, o.buf.data(), size(o.peer, me, o.tag)));
    p.expectDone(works, "all pairs");
    for (const Op& o : ops)
      if (!o.send)
        checkPattern(o.buf.data(), size(o.peer, me, o.tag), p2pSeed(o.peer, me, o.tag, 0),
                     strprintf("tag %d from rank %d", o.tag, o.peer).c_str());
    ep.barrier("all pairs");
  }, p2pCase(4)));
}

}  // namespace
}  // namespace coll::test
