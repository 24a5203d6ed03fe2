// A listening TCP socket on 127.0.0.1 at a port the kernel picks: the "peer" that dial tests
// drive by hand (on_demand_dial_test.cc, dial_stream_test.cc).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/fd_io.h"

namespace coll {

// `flags`: extra socket() type flags, e.g. SOCK_NONBLOCK for a listener polled in a loop.
inline UniqueFd listenOnLoopback(int* port, int flags = 0) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
  EXPECT_EQ(::listen(fd.get(), 16), 0);
  EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

}  // namespace coll
