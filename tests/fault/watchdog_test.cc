// Work::wait() does not trust the thread that runs the ops: when that thread is wedged (here,
// inside a completion callback that does not return), a waiter fails with Timeout once no op
// has started or finished for longer than COLL_TIMEOUT and its margin, instead of hanging;
// the same for point-to-point ops, which the p2p engine's thread completes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

// Every op runs on the progress thread (COLL_INLINE=0), so the waiter cannot run them itself.
const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "2", 1);
  ::setenv("COLL_INLINE", "0", 1);
  return true;
}();

// COLL_TIMEOUT 2 s + the margin (5 s at least): the wait must give up after about 7 s.
constexpr double kLimitSeconds = 7.0;
constexpr auto kWedgedFor = std::chrono::seconds(11);

// A wait that gave up abandoned its op: once the wedged thread returns, the op must not run
// into the buffer its caller may since have freed (it did, and freeing it corrupted the heap).
// Waits until the wedged callback has returned, then checks the buffer.
void expectAbandoned(const std::vector<float>& buffer, float before) {
  std::this_thread::sleep_for(kWedgedFor - std::chrono::seconds(static_cast<int>(kLimitSeconds)) +
                              std::chrono::milliseconds(1500));  // the callback has returned
  for (float x : buffer)
    RANK_CHECK(x == before, "the abandoned op wrote %g into its buffer (held %g) after its wait gave up", x, before);
}

TEST(Watchdog, WaitGivesUpOnAWedgedProgressThread) {
  RunOptions options;
  options.deadline = std::chrono::seconds(40);  // under ctest's 60: a hang names its rank, not a ctest timeout
  auto outcomes = runRanks(2, [](Communicator& comm, Rank& self) {
    std::vector<float> a(1000, 1.0f), b(1000, self.rank == 0 ? 3.0f : 1.0f);
    if (self.rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0's callback is set first
    Work first = comm.allreduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::sum);
    if (self.rank == 0) first.onComplete([] { std::this_thread::sleep_for(kWedgedFor); });
    Work second = comm.allreduce(b.data(), b.data(), b.size(), DataType::f32, ReduceOp::sum);
    const int64_t start = nowNs();
    try {
      second.wait();
      RANK_CHECK(self.rank == 1, "rank 0's wait returned although its progress thread was wedged");
    } catch (const Error& e) {
      recordError(e);
      const double seconds = (nowNs() - start) / 1e9;
      if (self.rank == 1) return;  // its peer never came: a timeout of its own, whatever the text
      RANK_CHECK(e.code() == ErrorCode::Timeout, "failed with %s: %s", codeName(e.code()), e.what());
      RANK_CHECK(std::string(e.what()).find("wedged") != std::string::npos, "the error does not say why: %s", e.what());
      RANK_CHECK(seconds > kLimitSeconds - 1 && seconds < kLimitSeconds + 2.5, "gave up after %.2f s", seconds);
      expectAbandoned(b, 3.0f);
      try {
        comm.allreduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::sum).wait();
        RANK_CHECK(false, "an all-reduce after the wait gave up succeeded: the communicator should have failed");
      } catch (const Error& later) {
        RANK_CHECK(std::string(later.what()).find("wedged") != std::string::npos, "a later op failed with: %s",
                   later.what());
      }
    }
  }, options);
  expectAllSucceeded(outcomes);
  EXPECT_EQ(outcomes[0].error_code, static_cast<int>(ErrorCode::Timeout)) << outcomes[0].message;
}

// The same for point-to-point, whose ops complete on the p2p engine's thread: a receive's
// callback that does not return holds that thread, and a wait on the next receive gives up.
TEST(Watchdog, WaitOnAReceiveGivesUpOnAWedgedPointToPointEngine) {
  RunOptions options;
  options.deadline = std::chrono::seconds(40);
  auto outcomes = runRanks(2, [](Communicator& comm, Rank& self) {
    std::vector<float> a(4, 1.0f), b(4, self.rank == 1 ? 2.0f : -1.0f);
    if (self.rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0's callback is set first
      comm.send(a.data(), a.size(), DataType::f32, 0, 1).wait();
      comm.send(b.data(), b.size(), DataType::f32, 0, 2).wait();
      return;
    }
    Work first = comm.recv(a.data(), a.size(), DataType::f32, 1, 1);
    first.onComplete([] { std::this_thread::sleep_for(kWedgedFor); });
    Work second = comm.recv(b.data(), b.size(), DataType::f32, 1, 2);
    const int64_t start = nowNs();
    try {
      second.wait();
      RANK_CHECK(false, "the wait returned although the engine's thread was wedged");
    } catch (const Error& e) {
      recordError(e);
      const double seconds = (nowNs() - start) / 1e9;
      RANK_CHECK(e.code() == ErrorCode::Timeout, "failed with %s: %s", codeName(e.code()), e.what());
      RANK_CHECK(std::string(e.what()).find("wedged") != std::string::npos, "the error does not say why: %s", e.what());
      RANK_CHECK(std::string(e.what()).find("recv #") != std::string::npos, "the error does not name the op: %s",
                 e.what());
      RANK_CHECK(seconds > kLimitSeconds - 1 && seconds < kLimitSeconds + 2.5, "gave up after %.2f s", seconds);
      expectAbandoned(b, -1.0f);
    }
  }, options);
  expectAllSucceeded(outcomes);
  EXPECT_EQ(outcomes[0].error_code, static_cast<int>(ErrorCode::Timeout)) << outcomes[0].message;
}

}  // namespace
}  // namespace coll::test
