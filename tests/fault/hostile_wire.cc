#include "fault/hostile_wire.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "transport/socket/wire.h"

namespace coll::test {
namespace {

// Port of the remote end, or -1 if fd is not a connected TCP socket.
int remotePort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return -1;
}

}  // namespace

std::vector<int> dataSockets(int store_port) {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd == ::dirfd(dir)) continue;
    int port = remotePort(fd);
    if (port > 0 && port != store_port) fds.push_back(fd);
  }
  ::closedir(dir);
  return fds;
}

std::string garbageHeader() { return std::string(24, '\xEE'); }

std::string oversizedHeader() {
  transport::socket::MessageHeader h{transport::socket::kDataMagic, 0, 0xBADBADull, uint64_t(1) << 62};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

int writeToAll(const std::vector<int>& fds, const std::string& bytes) {
  int ok = 0;
  for (int fd : fds) ok += ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  return ok;
}

void shutDownAll(const std::vector<int>& fds) {
  for (int fd : fds) ::shutdown(fd, SHUT_RDWR);
}

}  // namespace coll::test
