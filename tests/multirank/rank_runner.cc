#include "multirank/rank_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "multirank/store_process.h"

namespace coll::test {
namespace {

enum ExitCode { kOk = 0, kCheckFailed = 1, kBodyError = 2, kInitFailed = 3, kOtherException = 4 };

// The calling rank, for failRank / recordError: per thread, since runThreads runs every rank
// of a run as a thread of one process.
thread_local Rank* g_self = nullptr;

void copyMessage(RankSlot* slot, const std::string& text) {
  std::snprintf(slot->message, sizeof slot->message, "%s", text.c_str());
}

[[noreturn]] void childExit(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

// Makes the calling (just forked) process a rank process: dies with the parent, in a session of
// its own, with an alarm as the last resort.
void becomeRankProcess(pid_t parent, std::chrono::milliseconds deadline) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed by ctest's TIMEOUT takes its ranks along
  if (::getppid() != parent) ::_exit(kOtherException);
  // A session of its own: when the shell that started the test in the background exits, the
  // kernel sends SIGHUP and SIGCONT to every process of a newly orphaned process group that has
  // a stopped member, so a rank a fault test froze with SIGSTOP ran on (StopRank failed, the
  // survivors still doing all-reduces 30 s after the stop, under `nohup ctest ... &`). This
  // group is orphaned from the start, never newly, and has no terminal to be stopped by.
  ::setsid();
  ::alarm(static_cast<unsigned>(deadline.count() / 1000 + 15));  // a last resort if the parent hangs
}

// Runs one rank's body in the calling thread; an exception ends the process, saying so.
void runBody(Rank& self, const std::string& address, const std::string& secret, const ProcessBody& body) {
  g_self = &self;
  try {
    body(self, address, secret);
  } catch (const Error& e) {
    copyMessage(self.slot, strprintf("unexpected coll::Error (%s): %s", codeName(e.code()), e.what()));
    std::fprintf(stderr, "[rank %d] %s\n", self.rank, self.slot->message);
    childExit(kBodyError);
  } catch (const std::exception& e) {
    copyMessage(self.slot, strprintf("unexpected exception: %s", e.what()));
    std::fprintf(stderr, "[rank %d] %s\n", self.rank, self.slot->message);
    childExit(kOtherException);
  }
}

[[noreturn]] void runChild(int rank, int n, const std::string& address, const std::string& secret,
                           RankSlot* slots, const ProcessBody& body, pid_t parent, std::chrono::milliseconds deadline) {
  becomeRankProcess(parent, deadline);
  Rank self{rank, n, &slots[rank], slots};
  runBody(self, address, secret, body);
  childExit(kOk);
}

// runThreads' one process: every rank on a thread of its own; exits 0 once all returned.
[[noreturn]] void runThreadedChild(int n, const std::string& address, const std::vector<std::string>& secrets,
                                   RankSlot* slots, const ProcessBody& body, pid_t parent,
                                   std::chrono::milliseconds deadline) {
  becomeRankProcess(parent, deadline);
  std::vector<Rank> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(Rank{r, n, &slots[r], slots});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { runBody(ranks[r], address, secrets[r], body); });
  for (std::thread& t : threads) t.join();
  childExit(kOk);
}

// The communicator-making body runRanks gives runProcesses.
void withCommunicator(const RankBody& body, Rank& self, const std::string& address, const std::string& secret,
                      std::chrono::milliseconds timeout) {
  std::unique_ptr<Communicator> comm;
  try {
    CommOptions o;
    o.rank = self.rank;
    o.size = self.size;
    o.store_address = address;
    o.secret = secret;
    o.timeout = timeout;
    comm = Communicator::create(o);
  } catch (const Error& e) {
    recordError(e);
    std::fprintf(stderr, "[rank %d] init failed (%s): %s\n", self.rank, codeName(e.code()), e.what());
    childExit(kInitFailed);
  }
  body(*comm, self);
  self.slot->stage = kClosingCommunicator;
  comm.reset();  // waits for queued ops, disconnects
  self.slot->stage = kExiting;
}

void reap(RankOutcome* o, int status) {
  o->exited = WIFEXITED(status);
  o->exit_code = o->exited ? WEXITSTATUS(status) : -1;
  o->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o->init_failed = o->exited && o->exit_code == kInitFailed;
}

}  // namespace

const char* codeName(ErrorCode code) { return coll::toString(code); }

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int len = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(len > 0 ? static_cast<size_t>(len) : 0, '\0');
  std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

void failRank(const char* file, int line, const char* cond, const std::string& message) {
  std::string text = strprintf("%s:%d: check failed: %s%s%s", file, line, cond, message.empty() ? "" : ": ",
                               message.c_str());
  int rank = g_self ? g_self->rank : -1;
  std::fprintf(stderr, "[rank %d] %s\n", rank, text.c_str());
  if (g_self) copyMessage(g_self->slot, text);
  childExit(kCheckFailed);
}

void recordError(const Error& e) {
  if (!g_self) return;
  g_self->slot->error_code = static_cast<int>(e.code());
  g_self->slot->error_time_ns = nowNs();
  copyMessage(g_self->slot, e.what());
}

bool awaitProgress(const RankSlot* slots, int n, int ops, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  auto progressed = [&] {
    for (int r = 0; r < n; ++r)
      if (slots[r].progress.load() < ops) return false;
    return true;
  };
  while (!progressed()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void allreduceUntilFailure(Communicator& comm, size_t floats, ReduceOp op) {
  std::vector<float> buf(floats, 1.0f);
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    try {
      comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, op).wait();
      if (g_self) g_self->slot->progress++;
    } catch (const Error& e) {
      recordError(e);
      return;
    }
    RANK_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60), "no op failed within 60 s");
  }
}

namespace {
const char* stageName(int stage) {
  switch (stage) {
    case kInBody: return "in the test's body";
    case kClosingCommunicator: return "closing its communicator";
    default: return "exiting";
  }
}
}  // namespace

std::string RankOutcome::describe() const {
  std::string s = strprintf("rank %d (pid %d): ", rank, static_cast<int>(pid));
  if (killed_on_deadline) s += strprintf("still running at the deadline (%s), killed", stageName(stage));
  else if (exited) s += strprintf("exit code %d%s", exit_code, init_failed ? " (init failed)" : "");
  else s += strprintf("killed by signal %d (%s)", signal, strsignal(signal));
  if (!message.empty()) s += ": " + message;
  return s;
}

std::vector<RankOutcome> runRanks(int n, const RankBody& body, const RunOptions& options) {
  return runProcesses(
      n, [&](Rank& self, const std::string& address, const std::string& secret) {
        withCommunicator(body, self, address, secret, options.comm_timeout);
      }, options);
}

namespace {

// A rank still running at the deadline: its threads' stacks go to stderr before the kill, where
// gdb is installed (an optional diagnostic: a hang seen once under load says where it was).
void dumpStacks(pid_t pid) {
  if (::access("/usr/bin/gdb", X_OK) != 0) return;
  std::fflush(stderr);
  std::string command = strprintf("timeout -s KILL 15 /usr/bin/gdb -p %d -batch -nx -q -ex 'thread apply all bt' "
                                  "</dev/null 1>&2 2>/dev/null", static_cast<int>(pid));
  std::fprintf(stderr, "===== stacks of pid %d, still running at the deadline =====\n", static_cast<int>(pid));
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "(gdb could not attach)\n");
}

// Waits for every child until the run's deadline, SIGKILLs (by PID) those still running then,
// and fills in the outcomes of the ranks each child ran.
void reapChildren(const std::vector<pid_t>& pids, std::chrono::steady_clock::time_point start,
                  std::chrono::milliseconds deadline, std::vector<RankOutcome>* outcomes) {
  auto settle = [&](pid_t pid, int status, bool killed) {
    for (RankOutcome& o : *outcomes) {
      if (o.pid != pid) continue;
      reap(&o, status);
      o.killed_on_deadline = killed;
    }
  };
  std::vector<bool> gone(pids.size(), false);
  size_t alive = pids.size();
  while (alive > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (gone[i] || ::waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      settle(pids[i], status, false);
      gone[i] = true;
      --alive;
    }
    if (alive == 0) break;
    if (std::chrono::steady_clock::now() - start > deadline) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (gone[i]) continue;
        dumpStacks(pids[i]);
        ::kill(pids[i], SIGKILL);
        int status = 0;
        ::waitpid(pids[i], &status, 0);
        settle(pids[i], status, true);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// runProcesses and runThreads: the store, the slots, the fork(s), the reaping.
std::vector<RankOutcome> runForked(int n, const ProcessBody& body, const RunOptions& options, bool threads) {
  std::vector<RankOutcome> outcomes(n);
  if (threads && options.parent_action) {
    ADD_FAILURE() << "parent_action acts on rank processes; runThreads' ranks are threads of one process";
    return outcomes;
  }
  std::string secret = bootstrap::generateSecret();
  StoreProcess store;
  Status st = StoreProcess::start(secret, &store);
  if (!st) {
    ADD_FAILURE() << "cannot start the rendezvous store: " << st.message();
    return outcomes;
  }
  std::string address = "127.0.0.1:" + std::to_string(store.port());
  std::vector<std::string> secrets(n);
  for (int r = 0; r < n; ++r) {
    secrets[r] = options.secret_for ? options.secret_for(r) : "";
    if (secrets[r].empty()) secrets[r] = secret;
  }

  size_t bytes = sizeof(RankSlot) * static_cast<size_t>(n);
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    ADD_FAILURE() << "mmap of the rank slots failed: " << std::strerror(errno);
    return outcomes;
  }
  auto* slots = static_cast<RankSlot*>(mem);
  for (int r = 0; r < n; ++r) new (&slots[r]) RankSlot();

  auto start = std::chrono::steady_clock::now();
  pid_t parent = ::getpid();
  std::vector<pid_t> pids;
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < (threads ? 1 : n); ++r) {
    pid_t pid = ::fork();
    if (pid == 0 && threads) runThreadedChild(n, address, secrets, slots, body, parent, options.deadline);
    if (pid == 0) runChild(r, n, address, secrets[r], slots, body, parent, options.deadline);
    if (pid < 0) {
      ADD_FAILURE() << "fork failed: " << std::strerror(errno);
      break;
    }
    for (int k = threads ? 0 : r; k < (threads ? n : r + 1); ++k) {
      outcomes[k].rank = k;
      outcomes[k].pid = pid;
    }
    pids.push_back(pid);
  }
  if (options.parent_action && static_cast<int>(pids.size()) == n) options.parent_action(pids, slots);
  reapChildren(pids, start, options.deadline, &outcomes);

  for (RankOutcome& o : outcomes) {
    if (o.rank < 0) continue;
    o.message = slots[o.rank].message;
    o.error_code = slots[o.rank].error_code;
    o.error_time_ns = slots[o.rank].error_time_ns;
    o.stage = slots[o.rank].stage.load();
    o.flags = slots[o.rank].flags;
    if (threads && o.message.empty() && !(o.exited && o.exit_code == 0))
      o.message = "ended with the process that every rank is a thread of (see the rank that says why)";
  }
  for (int r = 0; r < n; ++r) slots[r].~RankSlot();
  ::munmap(mem, bytes);
  return outcomes;
}

}  // namespace

std::vector<RankOutcome> runProcesses(int n, const ProcessBody& body, const RunOptions& options) {
  return runForked(n, body, options, false);
}

std::vector<RankOutcome> runThreads(int n, const ProcessBody& body, const RunOptions& options) {
  return runForked(n, body, options, true);
}

bool expectAllSucceeded(const std::vector<RankOutcome>& outcomes) {
  bool ok = true;
  for (const RankOutcome& o : outcomes) {
    if (o.exited && o.exit_code == 0) continue;
    ADD_FAILURE() << o.describe();
    ok = false;
  }
  return ok;
}

bool peersMayReadMemory() {
  int word = 7, seen = 0;
  iovec local{&seen, sizeof seen}, remote{&word, sizeof word};
  if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof seen)) return false;
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  return !(yama >> scope) || scope < 2;
}

}  // namespace coll::test
