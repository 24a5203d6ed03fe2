#include "fuzz/loopback_pair.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "fuzz/fuzz_check.h"

namespace coll::fuzz {

LoopbackPair makeLoopbackPair() {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  FUZZ_CHECK(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0 && ::listen(listener.get(), 1) == 0 &&
                 ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0,
             "cannot listen on loopback");
  LoopbackPair pair;
  pair.theirs = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  FUZZ_CHECK(::connect(pair.theirs.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0, "cannot connect on loopback");
  pair.ours = UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  FUZZ_CHECK(pair.ours.get() >= 0, "cannot accept on loopback");
  int one = 1;
  ::setsockopt(pair.ours.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return pair;
}

}  // namespace coll::fuzz
