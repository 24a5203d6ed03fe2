// The survivors' agreement (src/comm/agreement.h) over a real store in this process, each rank
// a thread with its own client: the same value and failed set for everyone who returns, a dead
// rank found through the store at once, a silent one at the probe's end or the deadline, a
// latecomer told it was left out, and agreement over a caller's store (no presence list).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "comm/agreement.h"

namespace coll {
namespace {

using namespace std::chrono_literals;
using bootstrap::Clock;

class AgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(bootstrap::StoreServer::start("127.0.0.1", 0, secret_, &server_));
  }
  std::unique_ptr<bootstrap::StoreClient> client() {
    std::unique_ptr<bootstrap::StoreClient> c;
    EXPECT_TRUE(bootstrap::StoreClient::connect("127.0.0.1:" + std::to_string(server_->port()), secret_, Clock::now() + 5s, &c));
    return c;
  }
  AgreementCall call(int rank, int size, std::chrono::milliseconds wait, const std::string& key = "agree/1/") {
    AgreementCall c;
    c.key = key;
    c.gone_key = "gone";
    c.rank = rank;
    c.size = size;
    c.value = ~uint64_t{0} ^ (uint64_t{1} << rank);
    c.deadline = Clock::now() + wait;
    return c;
  }
  // Runs `ranks` each on a thread; returns each one's status and result.
  void agreeOn(const std::vector<AgreementCall>& calls, std::vector<Status>* sts, std::vector<AgreementResult>* results) {
    sts->assign(calls.size(), Status::ok());
    results->assign(calls.size(), {});
    std::vector<std::thread> threads;
    for (size_t i = 0; i < calls.size(); ++i)
      threads.emplace_back([&, i, c = client()] { (*sts)[i] = agree(*c, calls[i], &(*results)[i]); });
    for (auto& t : threads) t.join();
  }

  std::string secret_ = bootstrap::generateSecret();
  std::unique_ptr<bootstrap::StoreServer> server_;
};

TEST_F(AgreementTest, EveryRankGetsTheAndOfTheValuesAndNoFailures) {
  std::vector<AgreementCall> calls;
  for (int r = 0; r < 5; ++r) calls.push_back(call(r, 5, 10s));
  std::vector<Status> sts;
  std::vector<AgreementResult> results;
  agreeOn(calls, &sts, &results);
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(sts[r]) << sts[r].message();
    EXPECT_EQ(results[r].value, ~uint64_t{0} ^ 0x1F);
    EXPECT_TRUE(results[r].failed.empty());
  }
}

TEST_F(AgreementTest, ARankWhosePresenceEndedIsFailedAtOnceNotAtTheDeadline) {
  {
    auto dead = client();
    ASSERT_TRUE(dead->appendWhenClosed("gone", "3", Clock::now() + 5s));
  }  // rank 3's process "dies"
  std::vector<AgreementCall> calls;
  for (int r = 0; r < 3; ++r) calls.push_back(call(r, 4, 30s));
  auto start = Clock::now();
  std::vector<Status> sts;
  std::vector<AgreementResult> results;
  agreeOn(calls, &sts, &results);
  EXPECT_LT(Clock::now() - start, 5s);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(sts[r]) << sts[r].message();
    EXPECT_EQ(results[r].failed, std::vector<int>{3});
    EXPECT_EQ(results[r].value, ~uint64_t{0} ^ 0x7) << "rank 3's value is not in it";
  }
}

TEST_F(AgreementTest, ASilentRankNobodyReportsIsWaitedForUntilTheDeadline) {
  std::vector<AgreementCall> calls;
  for (int r = 0; r < 2; ++r) calls.push_back(call(r, 3, 400ms));
  auto start = Clock::now();
  std::vector<Status> sts;
  std::vector<AgreementResult> results;
  agreeOn(calls, &sts, &results);
  EXPECT_GE(Clock::now() - start, 350ms);
  EXPECT_LT(Clock::now() - start, 5s);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(sts[r]) << sts[r].message();
    EXPECT_EQ(results[r].failed, std::vector<int>{2});
  }
}

TEST_F(AgreementTest, AReportedOrUnprobedRankIsNotWaitedFor) {
  std::vector<AgreementCall> calls;
  for (int r = 0; r < 3; ++r) calls.push_back(call(r, 5, 30s));
  calls[1].suspected = {4};  // its ledger question went unanswered
  // Rank 3 did not answer the revoke's probe, which has ended.
  auto probe = client();
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(probe->append("answered", std::to_string(r), Clock::now() + 5s));
  for (auto& c : calls) {
    c.answered_key = "answered";
    c.probe_end = Clock::now() + 100ms;
  }
  auto start = Clock::now();
  std::vector<Status> sts;
  std::vector<AgreementResult> results;
  agreeOn(calls, &sts, &results);
  EXPECT_LT(Clock::now() - start, 5s);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(sts[r]) << sts[r].message();
    EXPECT_EQ(results[r].failed, (std::vector<int>{3, 4}));
  }
}

TEST_F(AgreementTest, ALatecomerIsToldTheOthersWentOnWithoutIt) {
  std::vector<AgreementCall> calls;
  for (int r = 0; r < 2; ++r) calls.push_back(call(r, 3, 300ms));
  std::vector<Status> sts;
  std::vector<AgreementResult> results;
  agreeOn(calls, &sts, &results);
  ASSERT_TRUE(sts[0] && sts[1]);
  AgreementResult late;
  Status st = agree(*client(), call(2, 3, 10s), &late);
  EXPECT_EQ(st.code(), ErrorCode::PeerLost);
  EXPECT_NE(st.message().find("went on without rank 2"), std::string::npos) << st.message();
}

// Rank 3 comes at random moments around the others' decision: whoever returns has one answer,
// and rank 3 is either in it or told it is not.
TEST_F(AgreementTest, RacingLatecomersNeverSplitTheDecision) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const std::string key = "race/" + std::to_string(trial) + "/";
    std::vector<AgreementCall> calls;
    for (int r = 0; r < 4; ++r) calls.push_back(call(r, 4, std::chrono::milliseconds(30), key));
    const auto delay = std::chrono::milliseconds(rng() % 60);
    std::vector<Status> sts(4, Status::ok());
    std::vector<AgreementResult> results(4);
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r, c = client()] {
        if (r == 3) {
          std::this_thread::sleep_for(delay);
          calls[3].deadline = Clock::now() + 30ms;
        }
        sts[r] = agree(*c, calls[r], &results[r]);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(sts[r]) << sts[r].message();
      EXPECT_EQ(results[r].failed, results[0].failed);
      EXPECT_EQ(results[r].value, results[0].value);
    }
    const bool three_in = results[0].failed.empty();
    if (three_in) EXPECT_TRUE(sts[3] && results[3].failed.empty()) << sts[3].message();
    else EXPECT_EQ(sts[3].code(), ErrorCode::PeerLost) << "trial " << trial << ": " << sts[3].message();
  }
}

}  // namespace
}  // namespace coll
