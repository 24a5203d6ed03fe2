// A sender far ahead of its receiver (p2p/engine.h, the eager budget): rank 0 posts thousands
// of eager-sized sends before rank 1 has posted one receive, as a pipeline stage that runs
// ahead of the next does. The receiver must not hold them all: past the budget the messages
// wait for their receives (rendezvous), so rank 1's memory grows by about the budget, not by
// the data; then every message arrives, in order, intact. COLL_TEST_FLOOD_COUNT sets the
// count (the figures in docs/FAULT_TOLERANCE.md use 200000), COLL_TEST_FLOOD_BUDGET the budget
// (a huge one shows the engine without it: the check then fails, printing what was held).
#include <cstdlib>
#include <fstream>
#include <thread>

#include "p2p/p2p_conformance.h"
#include "p2p/wire.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

size_t residentBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  size_t kib = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> kib;
      return kib << 10;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

int floodCount() {
  const char* v = std::getenv("COLL_TEST_FLOOD_COUNT");
  return v ? std::atoi(v) : 4000;
}

constexpr size_t kBytes = p2p::kEagerLimit;  // the largest eager message
constexpr int kBuffers = 8;
const uint64_t kBudget = std::getenv("COLL_TEST_FLOOD_BUDGET") ? std::strtoull(std::getenv("COLL_TEST_FLOOD_BUDGET"), nullptr, 10)
                                                                : uint64_t{4} << 20;

TEST_P(P2pConformance, ASenderFarAheadWaitsInsteadOfFillingItsReceiver) {
  const int count = floodCount();
  P2pOptions options;
  options.eager_budget = kBudget;
  options.op_timeout = 120s;
  CaseOptions c = p2pCase();
  c.run.deadline = 170s;
  expectAllSucceeded(runCase(GetParam(), [t = GetParam(), options, count](Endpoint& ep) {
    P2pRank p(t, ep, options);
    std::vector<std::vector<uint8_t>> buffers;
    for (int b = 0; b < kBuffers; ++b) {
      buffers.emplace_back(kBytes);
      fillPattern(buffers.back().data(), kBytes, p2pSeed(0, 1, 0, b));
    }
    if (ep.self.rank == 0) {
      std::vector<P2pWork> sends;
      for (int i = 0; i < count; ++i) sends.push_back(p.send(1, 0, buffers[i % kBuffers].data(), kBytes));
      std::this_thread::sleep_for(1500ms);  // time for every eager message to have gone
      ep.barrier("posted");
      p.expectDone(sends, "the sends");
      ep.barrier("done");
      return;
    }
    const size_t before = residentBytes();
    ep.barrier("posted");
    const size_t held = residentBytes() - std::min(before, residentBytes());
    std::printf("rank 1: %d sends of %zu bytes posted, none received yet: resident memory grew by %.1f MiB "
                "(budget %.1f MiB, the data %.1f MiB)\n", count, kBytes, held / 1048576.0, kBudget / 1048576.0,
                double(count) * kBytes / 1048576.0);
    // What may grow: the budget's data, and a few hundred bytes of bookkeeping per message
    // waiting for its receive (its envelope, whatever its size).
    RANK_CHECK(held < kBudget + (32u << 20) + size_t(count) * 512, "the receiver holds %zu bytes before receiving", held);
    std::vector<std::vector<uint8_t>> in;
    for (int b = 0; b < kBuffers; ++b) in.push_back(recvBuffer(kBytes));
    for (int i = 0; i < count; i += kBuffers) {
      std::vector<P2pWork> recvs;
      const int n = std::min(kBuffers, count - i);
      for (int k = 0; k < n; ++k) recvs.push_back(p.recv(0, 0, in[k].data(), kBytes));
      p.expectDone(recvs, "the receives");
      for (int k = 0; k < n; ++k)
        checkPattern(in[k].data(), kBytes, p2pSeed(0, 1, 0, (i + k) % kBuffers), strprintf("message %d", i + k).c_str());
    }
    ep.barrier("done");
  }, c));
}

}  // namespace
}  // namespace coll::test
