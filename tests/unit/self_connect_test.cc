// A connect to a port of this host where nothing listens yet can be given that very port as its
// source port, and TCP's simultaneous open then connects the socket to itself (src/base/fd_io.cc).
// Launchers hand out such ports: torchrun's c10d rendezvous finds MASTER_PORT by bind(0). The
// race is rare on a real host, so each test runs on a thread in a network namespace of its own
// whose only ephemeral ports are the store's port and the one above it: there every early
// connect picks the store's port first. Needs root (CAP_SYS_ADMIN); skips, saying so, without.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <thread>

#include "base/fd_io.h"
#include "bootstrap/auth.h"
#include "bootstrap/store.h"

namespace coll::bootstrap {
namespace {

using namespace std::chrono_literals;

constexpr int kStorePort = 40000;  // even: Linux's connect tries even source ports first

Deadline in(std::chrono::milliseconds d) { return Clock::now() + d; }

std::string bringLoopbackUp() {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (!s || ::ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return std::string("SIOCGIFFLAGS lo: ") + std::strerror(errno);
  ifr.ifr_flags |= IFF_UP;
  if (::ioctl(s.get(), SIOCSIFFLAGS, &ifr) != 0) return std::string("SIOCSIFFLAGS lo: ") + std::strerror(errno);
  return "";
}

// Runs `body` on a thread (and the threads it starts) in a fresh network namespace whose
// ephemeral ports are [kStorePort, kStorePort + 1]. Returns why it could not, or "".
std::string inPrivateNamespace(const std::function<void()>& body) {
  std::string why;
  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      why = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno) + " (needs root)";
      return;
    }
    why = bringLoopbackUp();
    if (!why.empty()) return;
    // Opened by this thread, so it is this namespace's setting, not the machine's.
    std::ofstream range("/proc/sys/net/ipv4/ip_local_port_range");
    range << kStorePort << " " << kStorePort + 1 << std::flush;
    if (!range) {
      why = "cannot narrow this namespace's ip_local_port_range";
      return;
    }
    body();
  });
  t.join();
  return why;
}

TEST(SelfConnect, ConnectWhereNothingListensDoesNotReachItself) {
  std::string why = inPrivateNamespace([] {
    UniqueFd fd;
    Status st = connectTcp("127.0.0.1", kStorePort, in(300ms), &fd);
    EXPECT_FALSE(st) << "nothing listens on " << kStorePort << ": this socket is connected to itself";
    EXPECT_EQ(st.code(), ErrorCode::Timeout) << st.message();
  });
  if (!why.empty()) GTEST_SKIP() << why;
}

TEST(SelfConnect, ClientStartedBeforeTheStoreMeetsTheStore) {
  std::string why = inPrivateNamespace([] {
    std::string secret = generateSecret();
    std::unique_ptr<StoreServer> server;
    std::thread late([&] {
      std::this_thread::sleep_for(200ms);
      // A client's socket that reached itself holds the port for the microseconds before it is
      // closed; retry the bind over that window rather than fail the test on it.
      Status st;
      for (Deadline d = in(2s); Clock::now() < d; std::this_thread::sleep_for(10ms))
        if ((st = StoreServer::start("127.0.0.1", kStorePort, secret, &server))) break;
      EXPECT_TRUE(st) << st.message();
    });
    std::unique_ptr<StoreClient> client;
    std::string address = "127.0.0.1:" + std::to_string(kStorePort);
    Status st = StoreClient::connect(address, secret, in(5s), &client);
    late.join();
    ASSERT_TRUE(st) << st.message();
    ASSERT_TRUE(client->set("k", "from the client", in(5s)));
    std::string value;
    st = client->get("k", &value, in(5s));
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(value, "from the client");
  });
  if (!why.empty()) GTEST_SKIP() << why;
}

}  // namespace
}  // namespace coll::bootstrap
