#include "collrun_spawn.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace coll::collrun {
namespace {

// The soft RLIMIT_NOFILE collrun started with; children get it back because some programs
// (select()-based ones) misbehave with descriptors above 1024.
rlimit gOriginalFdLimit{};
bool gFdLimitRaised = false;
// Descriptors above 2 that collrun inherited, ascending; see recordInheritedFds().
std::vector<int> gInheritedFds;

Status sysError(const std::string& what) {
  return Status(ErrorCode::Transport, what + ": " + std::strerror(errno));
}

// strerror may allocate for translations; strerrordesc_np only reads a static table, which is
// what a child forked from a multi-threaded process is allowed to do.
const char* errnoText(int err) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  const char* text = strerrordesc_np(err);
  return text != nullptr ? text : "unknown error";
#else
  return std::strerror(err);
#endif
}

void writeRaw(const char* text) {
  ssize_t unused = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)unused;
}

// Closes [low, high]; async-signal-safe. Without close_range (Linux < 5.9) it closes one by
// one up to fd_limit, the soft RLIMIT_NOFILE no descriptor can reach.
void closeRange(unsigned low, unsigned high, unsigned fd_limit) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, low, high, 0) == 0) return;
#endif
  for (unsigned fd = low; fd <= high && fd < fd_limit; ++fd) ::close(fd);
}

// Runs in the child: closes every descriptor above 2 except keep (ascending): those collrun
// inherited, and the lifeline.
void closeCollrunFds(unsigned fd_limit, const std::vector<int>& keep) {
  unsigned low = 3;
  for (int fd : keep) {
    unsigned kept = static_cast<unsigned>(fd);
    if (kept < low) continue;
    if (kept > low) closeRange(low, kept - 1, fd_limit);
    low = kept + 1;
  }
  closeRange(low, ~0U, fd_limit);
}

// Descriptors the child puts on 0, 1 and 2; -1 keeps collrun's.
struct ChildFds {
  int in = -1;
  int out = -1;
  int err = -1;
  unsigned limit = 0;  // for closeCollrunFds
  const cpu_set_t* cpus = nullptr;  // pin to these
  const std::vector<int>* keep = nullptr;  // descriptors to keep open, ascending
  int lifeline = -1;                       // one of them, to keep open across exec
  pid_t collrun = -1;
};

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void execChild(const ChildFds& fds, char* const* argv, char* const* envp,
                            const sigset_t& parent_mask) {
  ::setpgid(0, 0);
  // Dies with collrun. If collrun died before this line, nobody will send the signal.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != fds.collrun) ::_exit(128 + SIGKILL);
  if (fds.in >= 0) ::dup2(fds.in, STDIN_FILENO);
  if (fds.out >= 0) ::dup2(fds.out, STDOUT_FILENO);
  if (fds.err >= 0) ::dup2(fds.err, STDERR_FILENO);
  closeCollrunFds(fds.limit, *fds.keep);
  if (fds.lifeline >= 0) ::fcntl(fds.lifeline, F_SETFD, 0);  // survives exec
  if (fds.cpus) ::sched_setaffinity(0, sizeof(cpu_set_t), fds.cpus);
  // collrun's handlers would write into collrun's signal pipe, and its SIG_IGN for SIGPIPE
  // would survive exec; the rank must start with the defaults.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  if (gFdLimitRaised) ::setrlimit(RLIMIT_NOFILE, &gOriginalFdLimit);
  ::pthread_sigmask(SIG_SETMASK, &parent_mask, nullptr);

  ::execvpe(argv[0], argv, envp);
  int err = errno;
  writeRaw("collrun: cannot execute '");
  writeRaw(argv[0]);
  writeRaw("': ");
  writeRaw(errnoText(err));
  writeRaw("\n");
  ::_exit(127);
}

std::vector<char*> toCStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Closes the descriptors it owns on every path out of spawnRank.
struct FdCloser {
  std::vector<int> fds;
  ~FdCloser() {
    for (int fd : fds) if (fd >= 0) ::close(fd);
  }
};

Status makePipe(int* read_end, int* write_end, FdCloser* closer) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sysError("pipe2");
  closer->fds.push_back(fds[1]);
  // Only collrun's end is non-blocking: the rank's writes should block, not fail, when
  // collrun falls behind.
  if (::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    ::close(fds[0]);
    return sysError("fcntl(O_NONBLOCK)");
  }
  *read_end = fds[0];
  *write_end = fds[1];
  return Status::ok();
}

}  // namespace

void ensureStandardFdsOpen() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int opened = ::open("/dev/null", O_RDWR);  // lowest free descriptor: this one
    if (opened >= 0 && opened != fd) ::close(opened);
  }
}

void recordInheritedFds() {
  gInheritedFds.clear();
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;  // then ranks inherit nothing beyond 0-2
  int own = ::dirfd(dir);
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (*end == '\0' && end != entry->d_name && fd > 2 && fd != own) {
      gInheritedFds.push_back(static_cast<int>(fd));
    }
  }
  ::closedir(dir);
  std::sort(gInheritedFds.begin(), gInheritedFds.end());
}

void raiseFdLimit(int needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(needed);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= wanted) return;
  rlimit raised = limit;
  raised.rlim_cur = (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= wanted)
                        ? wanted : limit.rlim_max;
  if (raised.rlim_cur <= limit.rlim_cur) return;
  if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
    gOriginalFdLimit = limit;
    gFdLimitRaised = true;
  }
}

Status spawnRank(const SpawnSpec& spec, RankProcess* out) {
  FdCloser child_ends;
  ChildFds fds;
  int out_read = -1, err_read = -1;
  if (spec.capture_output) {
    COLL_RETURN_IF_ERROR(makePipe(&out_read, &fds.out, &child_ends));
    Status st = makePipe(&err_read, &fds.err, &child_ends);
    if (!st) {
      ::close(out_read);
      return st;
    }
  }
  if (!spec.inherit_stdin) {
    fds.in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    child_ends.fds.push_back(fds.in);
  }
  rlimit limit{};
  fds.limit = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (1u << 20)
                  ? static_cast<unsigned>(limit.rlim_cur) : (1u << 20);
  cpu_set_t pinned;
  if (spec.cpu >= 0 && spec.cpu < CPU_SETSIZE) {
    CPU_ZERO(&pinned);
    CPU_SET(spec.cpu, &pinned);
    fds.cpus = &pinned;
  }
  std::vector<char*> argv = toCStrings(spec.argv);
  std::vector<char*> envp = toCStrings(spec.env);
  std::vector<int> keep = gInheritedFds;
  if (spec.lifeline_fd >= 0) keep.push_back(spec.lifeline_fd);
  std::sort(keep.begin(), keep.end());
  fds.keep = &keep;
  fds.lifeline = spec.lifeline_fd;
  fds.collrun = ::getpid();

  // With every signal blocked across fork, no collrun handler can run in the child before
  // execChild has reset the dispositions.
  sigset_t all, parent_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &parent_mask);
  pid_t pid = ::fork();
  if (pid == 0) execChild(fds, argv.data(), envp.data(), parent_mask);
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &parent_mask, nullptr);
  if (pid < 0) {
    if (out_read >= 0) ::close(out_read);
    if (err_read >= 0) ::close(err_read);
    errno = fork_errno;
    return sysError("fork");
  }
  // Also set here, so the group exists before collrun first signals it; fails harmlessly
  // once the child has exec'd.
  ::setpgid(pid, pid);
  out->rank = spec.rank;
  out->pid = pid;
  out->running = true;
  out->out_fd = out_read;
  out->err_fd = err_read;
  return Status::ok();
}

std::string describeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

int exitCodeOf(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace coll::collrun
