#include "comm/launcher_lifeline.h"

#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <thread>

#include "base/log.h"

namespace coll {
namespace {

// The pipe carries no data: any readiness is the hang-up (or, if someone wrote, a read that
// drains it; EOF means every write end is closed).
bool launcherGone(int fd) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, -1);  // sleeps in the kernel: no CPU until the launcher goes
  if (n < 0) return false;    // EINTR: look again
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
  char buf[64];
  return ::read(fd, buf, sizeof buf) == 0;
}

void watch(int fd) {
  ::pthread_setname_np(::pthread_self(), "coll-lifeline");  // process-wide: soaks tell it from a leak
  for (;;) {
    if (launcherGone(fd)) break;
  }
  char line[160];
  int len = std::snprintf(line, sizeof line,
                          "coll: the launcher (collrun) is gone; rank process %d ends with it (COLL_LAUNCHER_FD)\n",
                          static_cast<int>(::getpid()));
  ssize_t unused = ::write(STDERR_FILENO, line, static_cast<size_t>(len));
  (void)unused;
  ::kill(::getpid(), SIGKILL);
}

}  // namespace

void watchLauncher(int fd) {
  if (fd < 0) return;
  static std::once_flag once;
  std::call_once(once, [fd] {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
      COLL_WARN("INIT", "COLL_LAUNCHER_FD=%d is not a pipe here; the launcher's death will not end this rank", fd);
      return;
    }
    std::thread(watch, fd).detach();
  });
}

}  // namespace coll
