// Runs a function on n ranks as real forked processes over the socket transport.
//
// The parent (the gtest process) starts the rendezvous store on 127.0.0.1:0 with a fresh job
// secret, in a process of its own (store_process.h), and forks one child per rank, each in a
// session of its own (rank_runner.cc says why). Each child builds its coll::Communicator, runs the
// body, and _exits: 0 on success, non-zero after printing what failed. gtest assertions do
// not cross fork(), so bodies use RANK_CHECK, which prints, records the message in a slot of
// shared memory the parent reads, and _exits(1). The parent waits with a hard deadline,
// SIGKILLs (by PID) whatever is still running then, and reports every rank's outcome.
//
// Config::global() is read once per process, on first use (the parent's store already reads
// it), so COLL_* variables must be set before the first test runs: rank_main.cc sets the
// defaults these tests rely on (COLL_TIMEOUT, COLL_SLICE_BYTES) unless the caller set them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coll/communicator.h"

namespace coll::test {

// One rank's report, in memory shared between parent and children (MAP_SHARED). Written by
// that rank's child only; the parent reads it after the child exited (or while it runs, via
// the atomics).
// Where a rank process is, as far as the runner knows (a rank killed at the deadline says it).
enum RankStage : int { kInBody = 0, kClosingCommunicator = 1, kExiting = 2 };

struct RankSlot {
  std::atomic<int64_t> progress{0};  // bodies bump this (e.g. ops done) so the parent can watch
  std::atomic<int> phase{0};         // free for the body's use
  std::atomic<int> stage{0};         // the runner's: RankStage, for a rank killed at the deadline
  int error_code = 0;                // a coll::ErrorCode the body recorded (0: none)
  int64_t error_time_ns = 0;         // steady_clock (CLOCK_MONOTONIC) time of that error
  int flags = 0;                     // free for the body's use
  char message[4096] = {};           // failure text, or an error message the body recorded
};

struct Rank {
  int rank = -1;
  int size = 0;
  RankSlot* slot = nullptr;  // this rank's slot
  RankSlot* slots = nullptr; // everybody's (read-only for others' slots)
};

using RankBody = std::function<void(Communicator& comm, Rank& self)>;
// A body that makes its own communicator (e.g. through the C API); `address` and `secret` are
// the parent's store's.
using ProcessBody = std::function<void(Rank& self, const std::string& address, const std::string& secret)>;

struct RunOptions {
  std::chrono::milliseconds deadline{90'000};  // whole run; children still alive are SIGKILLed
  // The secret each rank uses; unset or returning "": the store's.
  std::function<std::string(int rank)> secret_for;
  // runRanks only: each rank's CommOptions::timeout (every op's deadline); zero: COLL_TIMEOUT.
  // A test that must tell detection from a deadline sets it well above the bound it asserts.
  std::chrono::milliseconds comm_timeout{0};
  // Runs in the parent while the children run (after all forks), e.g. to kill one of them.
  // It must return in bounded time: the deadline is enforced only after it returns.
  std::function<void(const std::vector<pid_t>& pids, RankSlot* slots)> parent_action;
};

struct RankOutcome {
  int rank = -1;
  pid_t pid = -1;
  bool exited = false;       // normal exit (then exit_code is valid)
  int exit_code = -1;
  int signal = 0;            // the signal that ended it, if any
  bool killed_on_deadline = false;
  int stage = kInBody;       // RankStage: where a rank killed at the deadline was
  bool init_failed = false;  // Communicator::create threw (error in slot)
  std::string message;       // the rank's recorded message
  int error_code = 0;
  int64_t error_time_ns = 0;
  int flags = 0;
  std::string describe() const;
};

// Forks n ranks running body; returns when all are gone (or killed at the deadline).
std::vector<RankOutcome> runRanks(int n, const RankBody& body, const RunOptions& options = {});
// The same without the communicator: body runs in each forked rank (exit codes as above).
std::vector<RankOutcome> runProcesses(int n, const ProcessBody& body, const RunOptions& options = {});
// The same with every rank a thread of one forked process, for ranks that must share memory
// (the verbs transport's fake NICs are one in-process fabric). A rank that fails ends the
// process, so every rank reports that exit; the failing one's message says why. No rank can
// be killed alone, so parent_action is refused (ADD_FAILURE).
std::vector<RankOutcome> runThreads(int n, const ProcessBody& body, const RunOptions& options = {});

// gtest-side: ADD_FAILURE for every rank that did not exit 0. Returns true if all did.
bool expectAllSucceeded(const std::vector<RankOutcome>& outcomes);

// Child-side failure: prints "[rank r] file:line: check failed: cond: message", records it
// in the calling rank's slot and _exits(1) (under runThreads: the whole process). Never returns.
[[noreturn]] void failRank(const char* file, int line, const char* cond, const std::string& message);

// Child-side: records an error (code, message, time now) in the calling rank's slot.
void recordError(const Error& e);

// Child-side, for fault tests: all-reduces `floats` elements in place, counting each success
// in the slot's progress, until an op fails; records that error and returns. Fails the rank
// if nothing failed within 60 s.
void allreduceUntilFailure(Communicator& comm, size_t floats, ReduceOp op);

// Parent-side, for fault tests: waits (at most `limit`) until each of the n ranks counted at
// least `ops` successes in its slot. False if one did not.
bool awaitProgress(const RankSlot* slots, int n, int ops, std::chrono::milliseconds limit);

int64_t nowNs();  // steady_clock, comparable across processes on Linux

// Whether ranks on this host may read each other's memory (process_vm_readv, and so map their
// collMemAlloc regions): no seccomp filter refuses it, and Yama allows the ranks' own grant
// (ptrace_scope 0 or 1; transport/shm/cma.h).
bool peersMayReadMemory();

// The code's name ("PeerLost"): coll::toString(ErrorCode).
const char* codeName(ErrorCode code);

std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace coll::test

// RANK_CHECK(cond) or RANK_CHECK(cond, "printf format", args...): in a rank's body only.
#define RANK_CHECK(cond, ...)                                                                  \
  do {                                                                                         \
    if (!(cond))                                                                               \
      ::coll::test::failRank(__FILE__, __LINE__, #cond, ::coll::test::strprintf("" __VA_ARGS__)); \
  } while (0)
