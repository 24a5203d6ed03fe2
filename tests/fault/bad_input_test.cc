// Bad input from the application, on forked ranks: every bad call is refused with
// InvalidArgument naming the op and the rank before anything is sent, and the communicator
// stays usable; calls after abort fail at once; a forked child cannot use (or tear down) its
// parent's communicator, and the parent carries on.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "5", 1);
  return true;
}();

// Runs `call`, which must throw InvalidArgument mentioning `op` and every text in `says`.
void expectRefused(Rank& self, const char* what, const std::function<void()>& call, const char* op,
                   std::initializer_list<const char*> says) {
  try {
    call();
  } catch (const Error& e) {
    RANK_CHECK(e.code() == ErrorCode::InvalidArgument, "%s: %s: %s", what, codeName(e.code()), e.what());
    RANK_CHECK(std::strstr(e.what(), op) != nullptr, "%s: the error does not name %s: %s", what, op, e.what());
    RANK_CHECK(std::strstr(e.what(), strprintf("rank %d", self.rank).c_str()) != nullptr,
               "%s: the error does not name the rank: %s", what, e.what());
    for (const char* s : says) RANK_CHECK(std::strstr(e.what(), s) != nullptr, "%s: no '%s' in: %s", what, s, e.what());
    return;
  }
  RANK_CHECK(false, "%s was accepted", what);
}

void expectAllreduceWorks(Communicator& comm, Rank& self) {
  std::vector<float> x(1000, 1.0f);
  comm.allreduce(x.data(), x.data(), x.size(), DataType::f32, ReduceOp::sum).wait();
  RANK_CHECK(x[999] == static_cast<float>(self.size), "all-reduce after refusals gave %f", x[999]);
}

TEST(BadInput, RefusedBeforeAnythingIsSentAndTheCommunicatorStaysUsable) {
  auto outcomes = runRanks(2, [](Communicator& c, Rank& self) {
    std::vector<float> b(64, 1.0f);
    float* p = b.data();
    const int n = self.size;
    auto bad_type = static_cast<DataType>(99);
    auto bad_op = static_cast<ReduceOp>(42);
    expectRefused(self, "null send", [&] { c.allreduce(nullptr, p, 4, DataType::f32, ReduceOp::sum); }, "allreduce", {"null send buffer"});
    expectRefused(self, "null recv", [&] { c.allgather(p, nullptr, 4, DataType::f32); }, "allgather", {"null receive buffer"});
    expectRefused(self, "null scatter recv", [&] { c.scatter(p, nullptr, 4, DataType::f32, 0); }, "scatter", {"null"});
    expectRefused(self, "negative count", [&] { c.allreduce(p, p, static_cast<size_t>(-8), DataType::f32, ReduceOp::sum); }, "allreduce", {"too large"});
    expectRefused(self, "huge count", [&] { c.alltoall(p, p + 32, size_t{1} << 61, DataType::f64); }, "alltoall", {"too large"});
    expectRefused(self, "unknown dtype", [&] { c.broadcast(p, p, 4, bad_type, 0); }, "broadcast", {"unknown data type 99"});
    expectRefused(self, "unknown op", [&] { c.reduceScatter(p, p + 32, 4, DataType::f32, bad_op); }, "reducescatter", {"unknown reduction op 42"});
    expectRefused(self, "root = size", [&] { c.reduce(p, p, 4, DataType::f32, ReduceOp::sum, n); }, "reduce", {"root 2 is out of range"});
    expectRefused(self, "root -1", [&] { c.gather(p, p + 8, 4, DataType::f32, -1); }, "gather", {"root -1"});
    expectRefused(self, "peer out of range", [&] { c.send(p, 4, DataType::f32, 7); }, "send", {"peer 7"});
    expectRefused(self, "send to self", [&] { c.recv(p, 4, DataType::f32, self.rank); }, "recv", {"oneself"});
    expectRefused(self, "partial overlap", [&] { c.allreduce(p, p + 2, 8, DataType::f32, ReduceOp::sum); }, "allreduce", {"overlap"});
    expectRefused(self, "allgather overlap off its slot", [&] { c.allgather(p + 1, p, 4, DataType::f32); }, "allgather", {"overlap"});
    expectRefused(self, "in-place alltoall", [&] { c.alltoall(p, p, 4, DataType::f32); }, "alltoall", {"in-place"});
    c.groupStart();
    expectRefused(self, "collective in a group", [&] { c.barrier(); }, "barrier", {"groupStart"});
    c.groupEnd();
    expectRefused(self, "groupEnd alone", [&] { c.groupEnd(); }, "groupEnd", {"without groupStart"});
    try {
      Work().wait();
      RANK_CHECK(false, "waiting on an empty Work succeeded");
    } catch (const Error& e) {
      RANK_CHECK(e.code() == ErrorCode::InvalidArgument, "empty Work: %s", e.what());
    }
    RANK_CHECK(!c.asyncError().has_value(), "a refused call broke the communicator");
    expectAllreduceWorks(c, self);  // nothing was sent, no sequence number was taken
  });
  expectAllSucceeded(outcomes);
}

TEST(BadInput, CallsAfterAbortFailAtOnce) {
  auto outcomes = runRanks(2, [](Communicator& c, Rank&) {
    c.barrier().wait();
    c.abort();
    std::vector<float> x(16, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    try {
      c.allreduce(x.data(), x.data(), x.size(), DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(false, "an op after abort() succeeded");
    } catch (const Error& e) {
      RANK_CHECK(std::strstr(e.what(), "already failed") && std::strstr(e.what(), "aborted by the application"),
                 "unexpected error after abort(): %s", e.what());
    }
    RANK_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500), "took too long to refuse");
  });
  expectAllSucceeded(outcomes);
}

// Rank 0 forks; the child tries the communicator (refused, naming both pids), aborts it
// (ignored: it would break the parent's connections) and exits without destroying it. The
// parent then runs collectives with rank 1 as if nothing happened.
TEST(BadInput, ForkedChildIsRefusedAndTheParentCarriesOn) {
  auto outcomes = runRanks(2, [](Communicator& c, Rank& self) {
    std::vector<float> x(256, 1.0f);
    c.allreduce(x.data(), x.data(), x.size(), DataType::f32, ReduceOp::sum).wait();
    if (self.rank == 0) {
      pid_t child = ::fork();
      if (child == 0) {
        int code = 3;
        try {
          c.allreduce(x.data(), x.data(), x.size(), DataType::f32, ReduceOp::sum);
        } catch (const Error& e) {
          code = e.code() == ErrorCode::InvalidArgument && std::strstr(e.what(), "forked child") ? 0 : 4;
          if (code) std::fprintf(stderr, "child: %s\n", e.what());
        }
        c.abort();
        ::_exit(code);
      }
      int status = 0;
      RANK_CHECK(::waitpid(child, &status, 0) == child, "waitpid failed");
      RANK_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child was not refused (status %d)", status);
    }
    for (int i = 0; i < 3; ++i) {
      std::fill(x.begin(), x.end(), 1.0f);
      c.allreduce(x.data(), x.data(), x.size(), DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(x[0] == 2.0f, "all-reduce after the fork gave %f", x[0]);
    }
  });
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
