#include "multirank/store_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "bootstrap/store.h"
#include "base/log.h"

namespace coll::test {
namespace {

constexpr int kStartTimeoutMs = 10'000;

// The child: serve, report what the parent needs (length, then bytes), then wait for the parent
// to close the keep-alive pipe (or die: the read end sees end-of-file either way).
[[noreturn]] void runChild(const std::function<std::string()>& serve, int reply_out, int keep_alive) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::string reply = serve();
  auto len = static_cast<uint32_t>(reply.size());
  bool sent = ::write(reply_out, &len, sizeof len) == sizeof len &&
              ::write(reply_out, reply.data(), reply.size()) == static_cast<ssize_t>(reply.size());
  if (!sent || reply.empty()) ::_exit(1);
  char byte;
  while (::read(keep_alive, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);  // no destructors: the server's threads are simply dropped with the process
}

Status readAll(int fd, void* data, size_t bytes) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    pollfd pfd{fd, POLLIN, 0};
    int r;
    do r = ::poll(&pfd, 1, kStartTimeoutMs);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return timeoutError("the test's server process did not start within 10 s");
    ssize_t n = ::read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return transportError("the test's server process failed to start");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status readReply(int fd, std::string* reply) {
  uint32_t len = 0;
  COLL_RETURN_IF_ERROR(readAll(fd, &len, sizeof len));
  if (len == 0) return transportError("the test's server process failed to start");
  reply->resize(len);
  return readAll(fd, reply->data(), len);
}

}  // namespace

Status StoreProcess::start(const std::string& secret, StoreProcess* out) {
  std::string reply;
  COLL_RETURN_IF_ERROR(startWith(
      [&secret]() -> std::string {
        static std::unique_ptr<bootstrap::StoreServer> server;  // serves until the child _exits
        if (!bootstrap::StoreServer::start("127.0.0.1", 0, secret, &server)) return "";
        int port = server->port();
        return std::string(reinterpret_cast<const char*>(&port), sizeof port);
      },
      out, &reply));
  if (reply.size() != sizeof out->port_) return transportError("the test's store process sent no port");
  std::memcpy(&out->port_, reply.data(), sizeof out->port_);
  return Status::ok();
}

Status StoreProcess::startWith(const std::function<std::string()>& serve, StoreProcess* out, std::string* reply) {
  int reply_pipe[2], alive_pipe[2];
  if (::pipe2(reply_pipe, O_CLOEXEC) != 0) return transportError(std::strerror(errno));
  if (::pipe2(alive_pipe, O_CLOEXEC) != 0) {
    ::close(reply_pipe[0]);
    ::close(reply_pipe[1]);
    return transportError(std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(reply_pipe[0]);
    ::close(alive_pipe[1]);
    runChild(serve, reply_pipe[1], alive_pipe[0]);
  }
  ::close(reply_pipe[1]);
  ::close(alive_pipe[0]);
  out->pid_ = pid;
  out->keep_alive_ = alive_pipe[1];
  Status st = pid < 0 ? transportError(format("fork: %s", std::strerror(errno))) : readReply(reply_pipe[0], reply);
  ::close(reply_pipe[0]);
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
