#include "transport/shm/wake_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace coll::transport::shm {
namespace {

socklen_t abstractAddress(const char* name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  size_t n = std::min(std::strlen(name), sizeof addr->sun_path - 1);
  std::memcpy(addr->sun_path + 1, name, n);  // sun_path[0] == 0: the abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

std::string wakeSocketName(const std::string& segment_name) { return "coll-wake" + segment_name; }

Status WakeSocket::bind(const std::string& segment_name, WakeSocket* out) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return transportError(format("shared memory: wake socket: %s", std::strerror(errno)));
  sockaddr_un addr;
  std::string name = wakeSocketName(segment_name);
  socklen_t len = abstractAddress(name.c_str(), &addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return transportError(format("shared memory: binding wake socket @%s: %s", name.c_str(), std::strerror(errno)));
  out->fd_ = std::move(fd);
  return Status::ok();
}

void WakeSocket::drain() const {
  char buf[64];
  while (::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

bool sendWake(int sender, const char* name) {
  sockaddr_un addr;
  socklen_t len = abstractAddress(name, &addr);
  char byte = 1;
  if (::sendto(sender, &byte, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&addr), len) == 1) return true;
  return errno == EAGAIN || errno == EWOULDBLOCK;
}

NetNamespace currentNetNamespace() {
  struct stat st;
  if (::stat("/proc/self/ns/net", &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

}  // namespace coll::transport::shm
