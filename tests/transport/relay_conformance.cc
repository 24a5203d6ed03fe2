// Connection::postRecvRelay in the conformance suite (connection_conformance.h): a message
// received and passed on unchanged, as a chain's middle does. A transport that cannot relay
// posts nothing and says so; the cases then receive and send separately, so every transport
// runs them.
#include <signal.h>

#include <thread>

#include "fault/process_counts.h"
#include "transport/connection_conformance.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

// Sizes below and above the socket transport's smallest relay (256 KiB), and odd ones.
constexpr size_t kRelaySizes[] = {1, (256 << 10) - 1, 256 << 10, (1 << 20) + 3, 16 << 20, 4096, (5 << 20) + 7};

void expectAllOk(const std::map<uint64_t, Status>& done, const char* what) {
  for (const auto& [cookie, st] : done)
    RANK_CHECK(st.isOk(), "%s: request %llu failed: %s", what, static_cast<unsigned long long>(cookie), st.message().c_str());
}

// The middle rank: relays every message from `from` to `to`, each followed on `to` by a
// message of its own, so the relayed sends keep their place among plain ones. Relays are all
// posted at once (several in flight on every stream); without relays, one at a time.
void relayAll(Endpoint& ep, int from, int to, std::vector<std::vector<uint8_t>>& in,
              std::vector<std::vector<uint8_t>>& own) {
  size_t outstanding = 0;
  for (size_t i = 0; i < std::size(kRelaySizes); ++i) {
    const size_t bytes = kRelaySizes[i];
    const uint64_t tag = 10 + i, recv_cookie = 100 + i, send_cookie = 200 + i;
    if (tryRecvRelay(ep.conns[from], in[i].data(), bytes, tag, recv_cookie, *ep.conns[to], send_cookie)) {
      outstanding += 2;
    } else {
      ep.conns[from]->postRecv(in[i].data(), bytes, tag, recv_cookie);
      expectAllOk(ep.wait(outstanding + 1), "receive to pass on");
      ep.conns[to]->postSend(in[i].data(), bytes, tag, send_cookie);
      outstanding = 1;
    }
    ep.conns[to]->postSend(own[i].data(), own[i].size(), 50 + i, 300 + i);
    ++outstanding;
  }
  expectAllOk(ep.wait(outstanding), "relay");
}

// The last rank: each relayed message, then the middle's own, in that order. `also`: requests
// of this rank's still outstanding, waited for too.
void receiveRelayed(Endpoint& ep, int middle, uint64_t own_seed, size_t also = 0) {
  const size_t n = std::size(kRelaySizes);
  std::vector<std::vector<uint8_t>> relayed(n), own(n);
  for (size_t i = 0; i < n; ++i) {
    relayed[i] = recvBuffer(kRelaySizes[i]);
    own[i] = recvBuffer(i + 1);
    ep.conns[middle]->postRecv(relayed[i].data(), kRelaySizes[i], 10 + i, 700 + i);
    ep.conns[middle]->postRecv(own[i].data(), i + 1, 50 + i, 800 + i);
  }
  expectAllOk(ep.wait(2 * n + also), "receive what was relayed");
  for (size_t i = 0; i < n; ++i) {
    checkPattern(relayed[i].data(), kRelaySizes[i], i, strprintf("relayed message %zu", i).c_str());
    checkPattern(own[i].data(), i + 1, own_seed + i, strprintf("the middle's own message %zu", i).c_str());
  }
}

std::vector<std::vector<uint8_t>> patterned(size_t count, size_t (*size_of)(size_t), uint64_t seed0) {
  std::vector<std::vector<uint8_t>> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i].resize(size_of(i));
    fillPattern(out[i].data(), out[i].size(), seed0 + i);
  }
  return out;
}

size_t relaySize(size_t i) { return kRelaySizes[i]; }
size_t ownSize(size_t i) { return i + 1; }

}  // namespace

// 0 -> 1 -> 2: rank 1 passes each message on and keeps its own copy, byte for byte.
TEST_P(ConnectionConformance, RelayPassesMessagesOn) {
  CaseOptions o;
  o.ranks = 3;
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const size_t n = std::size(kRelaySizes);
    if (ep.self.rank == 0) {
      auto out = patterned(n, relaySize, 0);
      for (size_t i = 0; i < n; ++i) ep.conns[1]->postSend(out[i].data(), out[i].size(), 10 + i, i);
      expectAllOk(ep.wait(n), "send");
    } else if (ep.self.rank == 1) {
      std::vector<std::vector<uint8_t>> in(n);
      for (size_t i = 0; i < n; ++i) in[i] = recvBuffer(kRelaySizes[i]);
      auto own = patterned(n, ownSize, 1000);
      relayAll(ep, 0, 2, in, own);
      for (size_t i = 0; i < n; ++i) checkPattern(in[i].data(), kRelaySizes[i], i, strprintf("message %zu", i).c_str());
    } else {
      receiveRelayed(ep, 1, 1000);
    }
  }, o));
}

// 0 -> 1 -> 0: the message goes back the way it came, over the same connection.
TEST_P(ConnectionConformance, RelayBackToTheSender) {
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    const size_t n = std::size(kRelaySizes);
    if (ep.self.rank == 0) {
      auto out = patterned(n, relaySize, 0);
      for (size_t i = 0; i < n; ++i) ep.conns[1]->postSend(out[i].data(), out[i].size(), 10 + i, 500 + i);
      receiveRelayed(ep, 1, 1000, /*also=*/n);
    } else {
      std::vector<std::vector<uint8_t>> in(n);
      for (size_t i = 0; i < n; ++i) in[i] = recvBuffer(kRelaySizes[i]);
      auto own = patterned(n, ownSize, 1000);
      relayAll(ep, 0, 0, in, own);
    }
  }));
}

// A large op posts a relay per slice at once. Each holds pipes only while it passes bytes on,
// so 64 of them in flight stay within a few pipes, not 256 descriptors (and the user's
// pipe-memory quota, past which the kernel hands out pipes of 8 KiB).
TEST_P(ConnectionConformance, ManyRelaysInFlightHoldPipesOnlyWhilePiping) {
  CaseOptions o;
  o.ranks = 3;
  expectAllSucceeded(runCase(GetParam(), [](Endpoint& ep) {
    constexpr size_t kCount = 64, kBytes = 256 << 10;
    if (ep.self.rank == 0) {
      auto out = patterned(kCount, [](size_t) { return kBytes; }, 0);
      for (size_t i = 0; i < kCount; ++i) ep.conns[1]->postSend(out[i].data(), kBytes, 10 + i, i);
      expectAllOk(ep.wait(kCount), "send");
    } else if (ep.self.rank == 1) {
      std::vector<std::vector<uint8_t>> in(kCount);
      const int before = countOpenFds();
      size_t relayed = 0;
      for (size_t i = 0; i < kCount; ++i) {
        in[i] = recvBuffer(kBytes);
        if (tryRecvRelay(ep.conns[0], in[i].data(), kBytes, 10 + i, 100 + i, *ep.conns[2], 200 + i)) ++relayed;
      }
      RANK_CHECK(relayed == 0 || relayed == kCount, "%zu of %zu relays were taken", relayed, kCount);
      if (relayed == 0) {  // a transport without relays: receive, then pass on
        for (size_t i = 0; i < kCount; ++i) ep.conns[0]->postRecv(in[i].data(), kBytes, 10 + i, 100 + i);
        expectAllOk(ep.wait(kCount), "receive to pass on");
        for (size_t i = 0; i < kCount; ++i) ep.conns[2]->postSend(in[i].data(), kBytes, 10 + i, 200 + i);
        expectAllOk(ep.wait(kCount), "send on");
        return;
      }
      int most = countOpenFds();
      auto done = ep.wait(2 * kCount, [&most] { most = std::max(most, countOpenFds()); });
      RANK_CHECK(done.size() == 2 * kCount, "%zu of %zu relay requests done", done.size(), 2 * kCount);
      expectAllOk(done, "relay");
      RANK_CHECK(most - before <= 24, "%d descriptors open at most with %zu relays in flight, %d before", most, kCount,
                 before);
      for (size_t i = 0; i < kCount; ++i) checkPattern(in[i].data(), kBytes, i, strprintf("message %zu", i).c_str());
    } else {
      std::vector<std::vector<uint8_t>> got(kCount);
      for (size_t i = 0; i < kCount; ++i) {
        got[i] = recvBuffer(kBytes);
        ep.conns[1]->postRecv(got[i].data(), kBytes, 10 + i, 700 + i);
      }
      expectAllOk(ep.wait(kCount), "receive what was relayed");
      for (size_t i = 0; i < kCount; ++i) checkPattern(got[i].data(), kBytes, i, strprintf("relayed %zu", i).c_str());
    }
  }, o));
}

// The source dies while the middle is passing a message on that the last rank does not yet
// read: the middle's receive and send both fail, and so does the last rank's receive; nobody
// waits for the deadline.
TEST_P(ConnectionConformance, RelayFailsOnBothSidesWhenTheSourceDies) {
  if (GetParam().threads) GTEST_SKIP() << kNoRankKills;
  CaseOptions o;
  o.ranks = 3;
  o.run.parent_action = [](const std::vector<pid_t>& pids, RankSlot* slots) {
    for (int r = 0; r < 3; ++r)
      if (!awaitPhase(slots[r], 1)) return;
    std::this_thread::sleep_for(300ms);  // the middle has part of the message by now
    slots[0].progress = nowNs();
    ::kill(pids[0], SIGKILL);
  };
  constexpr size_t kBytes = 64 << 20;
  auto outcomes = runCase(GetParam(), [](Endpoint& ep) {
    if (ep.self.rank == 0) {
      std::vector<uint8_t> out(kBytes, 7);
      ep.conns[1]->postSend(out.data(), kBytes, 1, 1);
      ep.self.slot->phase = 1;
      std::this_thread::sleep_for(30s);  // killed long before
      RANK_CHECK(false, "rank 0 was not killed");
    }
    if (ep.self.rank == 1) {
      std::vector<uint8_t> in = recvBuffer(kBytes);
      bool relayed = tryRecvRelay(ep.conns[0], in.data(), kBytes, 1, 1, *ep.conns[2], 2);
      if (!relayed) ep.conns[0]->postRecv(in.data(), kBytes, 1, 1);
      ep.self.slot->phase = 1;
      std::map<uint64_t, Status> done;
      std::vector<transport::Completion> batch;
      const size_t expected = relayed ? 2 : 1;
      while (done.size() < expected && transport::Clock::now() < ep.deadline) {
        batch.clear();
        (void)ep.transport->progress(&batch, ep.deadline);
        for (auto& c : batch) done[c.cookie] = c.status;
      }
      RANK_CHECK(done.size() == expected, "the relay did not fail before the deadline");
      // Without a relay the whole message may have come before the death (shared memory
      // reads 64 MiB at once); nothing was passed on either way: close, as a failed rank would.
      if (!relayed) return ep.owned.reset();
      for (const auto& [cookie, st] : done)
        RANK_CHECK(!st.isOk(), "request %llu succeeded although its source died", static_cast<unsigned long long>(cookie));
      return;
    }
    std::this_thread::sleep_for(100ms);
    ep.self.slot->phase = 1;
    RANK_CHECK(awaitPhase(ep.self.slots[0], 1) && awaitPhase(ep.self.slots[1], 1), "ranks 0 and 1 did not start");
    std::this_thread::sleep_for(600ms);  // reads only after rank 0 died
    std::vector<uint8_t> in = recvBuffer(kBytes);
    ep.conns[1]->postRecv(in.data(), kBytes, 1, 1);
    std::vector<transport::Completion> batch;
    while (batch.empty() && transport::Clock::now() < ep.deadline) (void)ep.transport->progress(&batch, ep.deadline);
    RANK_CHECK(batch.size() == 1 && !batch[0].status.isOk(), "the last rank's receive did not fail");
    double after = static_cast<double>(nowNs() - ep.self.slots[0].progress.load()) / 1e9;
    RANK_CHECK(after < 5.0, "the last rank noticed only %.2f s after the source died", after);
  }, o);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].signal, SIGKILL) << outcomes[0].describe();
  for (int r = 1; r < 3; ++r) EXPECT_TRUE(outcomes[r].exited && outcomes[r].exit_code == 0) << outcomes[r].describe();
}

}  // namespace coll::test
