// Fuzz target: the rendezvous store's request parsing (src/bootstrap/store_server.cc). One
// store server runs for the whole fuzz run; each input is sent, after an honest handshake, by
// an authenticated client that then hangs up (the store trusts authenticated clients with its
// contents, not with its life). Properties: the server survives every input and still serves
// a well-behaved client; sessions of clients that hung up are released (descriptor count
// stays flat, also for a client that hung up in a parked GET).
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "base/fd_io.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace coll;
using namespace coll::bootstrap;
constexpr const char* kSecret = "fuzz-secret";
constexpr auto kLimit = std::chrono::seconds(2);
constexpr int kFdCheckEvery = 64;
constexpr int kFdSlack = 4;  // sessions still closing, the probe's own connection

int openFds() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n - 1;
}

struct Fixture {
  std::unique_ptr<StoreServer> server;
  std::unique_ptr<StoreClient> probe;
  int baseline_fds = 0;
  int inputs = 0;
};

Fixture& fixture() {
  static Fixture* f = [] {
    auto* f = new Fixture;
    FUZZ_CHECK(StoreServer::start("127.0.0.1", 0, kSecret, &f->server).isOk(), "store server");
    std::string address = "127.0.0.1:" + std::to_string(f->server->port());
    FUZZ_CHECK(StoreClient::connect(address, kSecret, Clock::now() + kLimit, &f->probe).isOk(), "probe client");
    f->baseline_fds = openFds();
    return f;
  }();
  return *f;
}

// Connects and authenticates as an honest client would; the fuzz input comes after that.
UniqueFd authenticatedConnection(int port) {
  UniqueFd fd;
  Deadline deadline = Clock::now() + kLimit;
  FUZZ_CHECK(connectTcp("127.0.0.1", port, deadline, &fd).isOk(), "connect to the store");
  char hello[4 + sizeof(Nonce)];
  FUZZ_CHECK(readAll(fd.get(), hello, sizeof hello, deadline, "hello").isOk(), "store greeting");
  uint64_t mac = computeMac(kSecret, std::string(store_wire::kMacContext) + std::string(hello + 4, sizeof(Nonce)));
  uint32_t ack = 0;
  FUZZ_CHECK(writeAll(fd.get(), &mac, sizeof mac, deadline, "mac").isOk() &&
                 readAll(fd.get(), &ack, sizeof ack, deadline, "ack").isOk(),
             "store handshake");
  return fd;
}

// Reads whatever the server answers until it closes the session, at most 500 ms.
void drainUntilClosed(int fd) {
  Deadline end = Clock::now() + std::chrono::milliseconds(500);
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, millisUntil(end)) <= 0) return;
    if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
  }
}

void expectFdsReleased(Fixture& f) {
  Deadline end = Clock::now() + kLimit;
  while (openFds() > f.baseline_fds + kFdSlack && Clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  FUZZ_CHECK(openFds() <= f.baseline_fds + kFdSlack, "%d descriptors open, %d at the start", openFds(), f.baseline_fds);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = fixture();
  {
    UniqueFd fd = authenticatedConnection(f.server->port());
    Status sent = writeAll(fd.get(), data, size, Clock::now() + kLimit, "fuzz input");
    (void)sent;  // the server may refuse and close before reading everything
    ::shutdown(fd.get(), SHUT_WR);
    drainUntilClosed(fd.get());
  }
  std::string value;
  Deadline deadline = Clock::now() + kLimit;
  FUZZ_CHECK(f.probe->set("fuzz/probe", "alive", deadline).isOk() && f.probe->get("fuzz/probe", &value, deadline).isOk() &&
                 value == "alive",
             "the store stopped serving after an input");
  if (++f.inputs % kFdCheckEvery == 0) expectFdsReleased(f);
  return 0;
}
