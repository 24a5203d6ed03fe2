// The ledger's question after a failure (comm/ledger_exchange.h) against a real store in this
// process: 64 ranks' responders (threads with store connections of their own), one rank
// silent, and every survivor asking about the same failed collective, as happens when one
// rank dies. Each survivor must learn every live rank's state, and the whole exchange must
// cost O(n) store calls: the first asker polls one counter and reads each answer once; the
// others read its published answers.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "comm/ledger.h"
#include "comm/ledger_exchange.h"

namespace coll {
namespace {

using bootstrap::StoreClient;
using bootstrap::StoreServer;

constexpr char kSecret[] = "ledger-question-test";
constexpr char kPrefix[] = "coll/test/";
constexpr auto kWindow = std::chrono::milliseconds(250);

struct Job {
  std::unique_ptr<StoreServer> server;
  std::string address;
  std::vector<std::unique_ptr<Ledger>> ledgers;
  std::vector<std::unique_ptr<LedgerResponder>> responders;

  Status connect(bootstrap::Deadline deadline, std::unique_ptr<StoreClient>* out) const {
    return StoreClient::connect(address, kSecret, deadline, out);
  }
};

// n ranks, all in collective 7 except `silent`, which has no responder (stopped or dead).
void startJob(int n, int silent, Job* job) {
  ASSERT_TRUE(StoreServer::start("127.0.0.1", 0, kSecret, &job->server).isOk());
  job->address = "127.0.0.1:" + std::to_string(job->server->port());
  for (int r = 0; r < n; ++r) {
    job->ledgers.push_back(std::make_unique<Ledger>(r));
    OpFingerprint f;
    f.kind = static_cast<uint8_t>(OpKind::allreduce);
    job->ledgers.back()->started({7, 7, f});
    if (r == silent) continue;
    std::unique_ptr<LedgerResponder> responder;
    auto connect = [job](bootstrap::Deadline d, std::unique_ptr<StoreClient>* out) { return job->connect(d, out); };
    ASSERT_TRUE(LedgerResponder::start(connect, kPrefix, job->ledgers.back().get(), nullptr,
                                       bootstrap::Clock::now() + std::chrono::seconds(10), &responder)
                    .isOk());
    job->responders.push_back(std::move(responder));
  }
}

TEST(LedgerQuestion, EverySurvivorLearnsEveryLiveRankInLinearStoreCalls) {
  const int n = 64, silent = 5;
  Job job;
  ASSERT_NO_FATAL_FAILURE(startJob(n, silent, &job));
  int calls = 0, reused = 0;
  for (int r = 0; r < n; ++r) {
    if (r == silent) continue;
    std::unique_ptr<StoreClient> store;
    ASSERT_TRUE(job.connect(bootstrap::Clock::now() + std::chrono::seconds(10), &store).isOk());
    LedgerAnswers a = askLedgers(*store, kPrefix, r, n, job.ledgers[r]->snapshot(), 7, bootstrap::Clock::now() + kWindow);
    ASSERT_TRUE(a.store_problem.empty()) << a.store_problem;
    for (int other = 0; other < n; ++other)
      EXPECT_EQ(a.of_rank[other].has_value(), other != silent) << "rank " << r << " about rank " << other;
    calls += a.store_calls;
    reused += a.reused;
  }
  const int responder_calls = 2 * (n - 1);  // each live responder: its answer and the count
  std::cout << n - 1 << " askers at " << n << " ranks: " << calls << " store calls by the askers (" << reused
            << " read another's question), " << responder_calls << " by the responders\n";
  EXPECT_EQ(reused, n - 2) << "every asker after the first reads the first one's answers";
  // The first asker: a window of counter polls (50 at 5 ms) and one read per rank; the others:
  // one question lookup and one read each. Quadratic polling would be thousands per asker.
  EXPECT_LT(calls + responder_calls, 60 + 3 * n + 4 * (n - 2) + responder_calls);
}

// A rank closing the communicator (postClosing) stops every responder, which then answers no
// more; a later question finds nobody but the asker.
TEST(LedgerQuestion, AClosingRankStopsEveryResponder) {
  const int n = 4;
  Job job;
  ASSERT_NO_FATAL_FAILURE(startJob(n, -1, &job));
  std::unique_ptr<StoreClient> store;
  ASSERT_TRUE(job.connect(bootstrap::Clock::now() + std::chrono::seconds(10), &store).isOk());
  ASSERT_TRUE(postClosing(*store, kPrefix, 2, bootstrap::Clock::now() + std::chrono::seconds(5)).isOk());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const auto& responder : job.responders)
    while (!responder->peerClosed() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int r = 0; r < n; ++r) EXPECT_TRUE(job.responders[r]->peerClosed()) << "responder of rank " << r;
  LedgerAnswers a = askLedgers(*store, kPrefix, 0, n, job.ledgers[0]->snapshot(), 7, bootstrap::Clock::now() + kWindow);
  for (int r = 1; r < n; ++r) EXPECT_FALSE(a.of_rank[r].has_value()) << "rank " << r << " answered after closing";
}

}  // namespace
}  // namespace coll
