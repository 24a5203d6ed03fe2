#include "multirank/store_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "bootstrap/store.h"
#include "core/log.h"

namespace coll::test {
namespace {

constexpr int kStartTimeoutMs = 10'000;

// The child: serve, report the port, then wait for the parent to close the keep-alive pipe (or
// die: the read end sees end-of-file either way).
[[noreturn]] void serve(const std::string& secret, int port_out, int keep_alive) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::unique_ptr<bootstrap::StoreServer> server;
  Status st = bootstrap::StoreServer::start("127.0.0.1", 0, secret, &server);
  int port = st ? server->port() : -1;
  if (::write(port_out, &port, sizeof port) != sizeof port || !st) ::_exit(1);
  char byte;
  while (::read(keep_alive, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);  // no destructors: the server thread is simply dropped with the process
}

Status readPort(int fd, int* port) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do r = ::poll(&p, 1, kStartTimeoutMs);
  while (r < 0 && errno == EINTR);
  if (r <= 0) return timeoutError("the test's store process did not start within 10 s");
  if (::read(fd, port, sizeof *port) != sizeof *port || *port <= 0)
    return transportError("the test's store process could not listen");
  return Status::ok();
}

}  // namespace

Status StoreProcess::start(const std::string& secret, StoreProcess* out) {
  int port_pipe[2], alive_pipe[2];
  if (::pipe2(port_pipe, O_CLOEXEC) != 0) return transportError(std::strerror(errno));
  if (::pipe2(alive_pipe, O_CLOEXEC) != 0) {
    ::close(port_pipe[0]);
    ::close(port_pipe[1]);
    return transportError(std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(port_pipe[0]);
    ::close(alive_pipe[1]);
    serve(secret, port_pipe[1], alive_pipe[0]);
  }
  ::close(port_pipe[1]);
  ::close(alive_pipe[0]);
  out->pid_ = pid;
  out->keep_alive_ = alive_pipe[1];
  Status st = pid < 0 ? transportError(format("fork: %s", std::strerror(errno)))
                      : readPort(port_pipe[0], &out->port_);
  ::close(port_pipe[0]);
  return st;
}

StoreProcess::~StoreProcess() {
  if (keep_alive_ >= 0) ::close(keep_alive_);
  if (pid_ <= 0) return;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace coll::test
