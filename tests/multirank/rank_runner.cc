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

Rank* g_self = nullptr;  // the child's own rank, for failRank / recordError

void copyMessage(RankSlot* slot, const std::string& text) {
  std::snprintf(slot->message, sizeof slot->message, "%s", text.c_str());
}

[[noreturn]] void childExit(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

[[noreturn]] void runChild(int rank, int n, const std::string& address, const std::string& secret,
                           RankSlot* slots, const ProcessBody& body, pid_t parent, std::chrono::milliseconds deadline) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed by ctest's TIMEOUT takes its ranks along
  if (::getppid() != parent) ::_exit(kOtherException);
  // A session of its own: when the shell that started the test in the background exits, the
  // kernel sends SIGHUP and SIGCONT to every process of a newly orphaned process group that has
  // a stopped member, so a rank a fault test froze with SIGSTOP ran on (StopRank failed, the
  // survivors still doing all-reduces 30 s after the stop, under `nohup ctest ... &`). This
  // group is orphaned from the start, never newly, and has no terminal to be stopped by.
  ::setsid();
  ::alarm(static_cast<unsigned>(deadline.count() / 1000 + 15));  // a last resort if the parent hangs
  Rank self{rank, n, &slots[rank], slots};
  g_self = &self;
  try {
    body(self, address, secret);
  } catch (const Error& e) {
    copyMessage(self.slot, strprintf("unexpected coll::Error (%s): %s", codeName(e.code()), e.what()));
    std::fprintf(stderr, "[rank %d] %s\n", rank, self.slot->message);
    childExit(kBodyError);
  } catch (const std::exception& e) {
    copyMessage(self.slot, strprintf("unexpected exception: %s", e.what()));
    std::fprintf(stderr, "[rank %d] %s\n", rank, self.slot->message);
    childExit(kOtherException);
  }
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
  comm.reset();  // waits for queued ops, disconnects
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

std::string RankOutcome::describe() const {
  std::string s = strprintf("rank %d (pid %d): ", rank, static_cast<int>(pid));
  if (killed_on_deadline) s += "still running at the deadline, killed";
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

std::vector<RankOutcome> runProcesses(int n, const ProcessBody& body, const RunOptions& options) {
  std::vector<RankOutcome> outcomes(n);
  std::string secret = bootstrap::generateSecret();
  StoreProcess store;
  Status st = StoreProcess::start(secret, &store);
  if (!st) {
    ADD_FAILURE() << "cannot start the rendezvous store: " << st.message();
    return outcomes;
  }
  std::string address = "127.0.0.1:" + std::to_string(store.port());

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
  for (int r = 0; r < n; ++r) {
    std::string s = options.secret_for ? options.secret_for(r) : "";
    if (s.empty()) s = secret;
    pid_t pid = ::fork();
    if (pid == 0) runChild(r, n, address, s, slots, body, parent, options.deadline);
    if (pid < 0) {
      ADD_FAILURE() << "fork failed: " << std::strerror(errno);
      break;
    }
    outcomes[r].rank = r;
    outcomes[r].pid = pid;
    pids.push_back(pid);
  }
  if (options.parent_action && static_cast<int>(pids.size()) == n) options.parent_action(pids, slots);

  size_t alive = pids.size();
  while (alive > 0) {
    for (RankOutcome& o : outcomes) {
      if (o.pid <= 0 || o.exited || o.signal) continue;
      int status = 0;
      if (::waitpid(o.pid, &status, WNOHANG) == o.pid) {
        reap(&o, status);
        --alive;
      }
    }
    if (alive == 0) break;
    if (std::chrono::steady_clock::now() - start > options.deadline) {
      for (RankOutcome& o : outcomes) {
        if (o.pid <= 0 || o.exited || o.signal) continue;
        ::kill(o.pid, SIGKILL);
        int status = 0;
        ::waitpid(o.pid, &status, 0);
        reap(&o, status);
        o.killed_on_deadline = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  for (RankOutcome& o : outcomes) {
    if (o.rank < 0) continue;
    o.message = slots[o.rank].message;
    o.error_code = slots[o.rank].error_code;
    o.error_time_ns = slots[o.rank].error_time_ns;
    o.flags = slots[o.rank].flags;
  }
  for (int r = 0; r < n; ++r) slots[r].~RankSlot();
  ::munmap(mem, bytes);
  return outcomes;
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
