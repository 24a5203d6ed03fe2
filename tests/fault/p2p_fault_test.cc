// Point-to-point with a peer that dies or stops, on forked ranks: only the sends and receives
// that involve that peer fail, each naming it; the other ranks' sends and receives go on,
// checked byte for byte, at an eager size and a rendezvous size (src/p2p/engine.h).
//   rank 2 streams messages to rank 1 until the parent kills (SIGKILL) or stops (SIGSTOP) it;
//   rank 1 receives them until one fails, rank 0 sends rank 2 one message that cannot be
//   taken; then ranks 0 and 1 exchange messages of both sizes.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kRanks = 3;
constexpr int kVictim = 2;
constexpr int kTagVictim = 2, kTagPair = 1;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<int32_t> patterned(size_t count, int from, int round) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>(from * 1'000'003 + round * 7919 + i);
  return v;
}

bool names(const Error& e, const std::string& words) { return std::string(e.what()).find(words) != std::string::npos; }

// Ranks 0 and 1 swap a message of each size `rounds` times; every byte checked.
void exchangeWithPeer(Communicator& comm, int peer, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (size_t count : {size_t{255}, size_t{(1 << 18) + 3}}) {  // 1 KiB: eager; 1 MiB: rendezvous
      std::vector<int32_t> out = patterned(count, comm.rank(), round), in(count, -1);
      Work r = comm.recv(in.data(), count, DataType::i32, peer, kTagPair);
      Work s = comm.send(out.data(), count, DataType::i32, peer, kTagPair);
      s.wait();
      r.wait();
      std::vector<int32_t> want = patterned(count, peer, round);
      RANK_CHECK(in == want, "round %d, %zu elements from rank %d: wrong data", round, count, peer);
    }
  }
}

// Rank 2: sends to rank 1 until it is killed or stopped. Rank 1: receives until one fails,
// which must name rank 2; returns that error.
void streamFromVictim(Communicator& comm, Rank& self, size_t count) {
  std::vector<int32_t> buf(count, 7);
  for (int64_t i = 0;; ++i) {
    if (self.rank == kVictim) {
      comm.send(buf.data(), count, DataType::i32, 1, kTagVictim).wait();
    } else {
      try {
        comm.recv(buf.data(), count, DataType::i32, kVictim, kTagVictim).wait();
      } catch (const Error& e) {
        recordError(e);
        RANK_CHECK(names(e, "peer 2"), "the failed receive does not name rank 2: %s", e.what());
        std::printf("rank 1: receive %lld from rank 2 failed: %s\n", static_cast<long long>(i), e.what());
        return;
      }
    }
    self.slot->progress.store(i + 1);
  }
}

// Rank 0: one rendezvous send to the victim, which cannot take it; it must fail naming it.
void sendToVictim(Communicator& comm, ErrorCode expected) {
  std::vector<int32_t> buf((1 << 18) + 3, 5);
  auto start = std::chrono::steady_clock::now();
  try {
    comm.send(buf.data(), buf.size(), DataType::i32, kVictim, kTagVictim).wait();
    RANK_CHECK(false, "a send to rank 2, killed or stopped, succeeded");
  } catch (const Error& e) {
    RANK_CHECK(e.code() == expected, "the send to rank 2 failed with %s: %s", codeName(e.code()), e.what());
    RANK_CHECK(names(e, "to peer 2"), "the failed send does not name rank 2: %s", e.what());
    std::printf("rank 0: the send to rank 2 failed after %.2f s: %s\n", secondsSince(start), e.what());
  }
}

void runCase(int signal, size_t count, ErrorCode expected) {
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  options.comm_timeout = std::chrono::seconds(2);
  options.parent_action = [signal](const std::vector<pid_t>& pids, RankSlot* slots) {
    auto start = std::chrono::steady_clock::now();
    while (slots[kVictim].progress.load() < 20 && secondsSince(start) < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(pids[kVictim], signal);
    if (signal != SIGSTOP) return;
    while (slots[0].phase.load() < 1 || slots[1].phase.load() < 1) {  // the others are done
      if (secondsSince(start) > 40) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pids[kVictim], SIGKILL);
  };
  auto outcomes = runRanks(kRanks, [count, expected](Communicator& comm, Rank& self) {
    if (self.rank == 0) {
      while (self.slots[kVictim].progress.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      sendToVictim(comm, expected);
    } else {
      streamFromVictim(comm, self, count);  // the victim never returns from it
      RANK_CHECK(self.slot->error_code == static_cast<int>(expected), "rank 1's receive failed with code %d: %s",
                 self.slot->error_code, self.slot->message);
    }
    exchangeWithPeer(comm, 1 - self.rank, 5);
    self.slot->phase.store(1);
  }, options);
  EXPECT_EQ(outcomes[kVictim].signal, SIGKILL);
  for (int r : {0, 1}) {
    SCOPED_TRACE(outcomes[r].describe());
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].exit_code == 0);
  }
}

TEST(P2pFaults, KilledPeerMidEagerStreamFailsOnlyItsOps) { runCase(SIGKILL, 255, ErrorCode::PeerLost); }
TEST(P2pFaults, KilledPeerMidRendezvousStreamFailsOnlyItsOps) { runCase(SIGKILL, (1 << 18) + 3, ErrorCode::PeerLost); }
TEST(P2pFaults, StoppedPeerMidEagerStreamFailsOnlyItsOps) { runCase(SIGSTOP, 255, ErrorCode::Timeout); }
TEST(P2pFaults, StoppedPeerMidRendezvousStreamFailsOnlyItsOps) { runCase(SIGSTOP, (1 << 18) + 3, ErrorCode::Timeout); }

}  // namespace
}  // namespace coll::test
