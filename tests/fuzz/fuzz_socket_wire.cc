// Fuzz target: what the socket transport reads from a peer (src/transport/socket/). The first
// byte picks the stage the hostile peer attacks; the rest is what it sends, then it hangs up.
//   even: the data handshake (acceptStream), before any authentication;
//   odd:  the message stream after the handshake (SocketConnection: headers, then payloads),
//         with three receives posted (16, 0 and 64 bytes, tags 7, 8, 9).
// Properties: the handshake refuses within its deadline; on the stream every posted receive
// completes (none hangs), and each failure names peer 1 and is PeerLost, Mismatch or
// Transport, never a crash or an out-of-bounds write into the posted buffers.
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/loopback_pair.h"
#include "transport/socket/connection.h"
#include "transport/socket/handshake.h"

namespace {

using namespace coll;
constexpr int kPeer = 1;
constexpr auto kLimit = std::chrono::seconds(2);

void sendAndHangUp(int fd, const uint8_t* data, size_t size) {
  Status st = writeAll(fd, data, size, Clock::now() + kLimit, "fuzz input");
  (void)st;  // the code under test may have closed its end already
  ::shutdown(fd, SHUT_WR);
}

void attackHandshake(const uint8_t* data, size_t size) {
  fuzz::LoopbackPair pair = fuzz::makeLoopbackPair();
  sendAndHangUp(pair.theirs.get(), data, size);
  transport::socket::StreamIdentity who;
  auto start = Clock::now();
  Status st = transport::socket::acceptStream(pair.ours.get(), "fuzz-secret", "fuzz/", 0, 4, 2,
                                              start + std::chrono::milliseconds(500), &who);
  FUZZ_CHECK(!st, "an unauthenticated peer was accepted as rank %d", who.rank);
  FUZZ_CHECK(Clock::now() - start < kLimit, "the handshake overran its deadline");
}

void attackStream(const uint8_t* data, size_t size) {
  fuzz::LoopbackPair pair = fuzz::makeLoopbackPair();
  asio::io_context io;
  std::vector<transport::Completion> completions;
  std::vector<UniqueFd> fds;
  fds.push_back(std::move(pair.ours));
  transport::socket::SocketConnection conn(io, kPeer, "fuzz-peer", std::move(fds), &completions, size_t{1} << 20,
                                           /*relay=*/true);
  // Guard bytes around each buffer catch a write past the posted length.
  std::vector<uint8_t> buffers[3] = {std::vector<uint8_t>(16 + 8, 0xA5), std::vector<uint8_t>(8, 0xA5),
                                     std::vector<uint8_t>(64 + 8, 0xA5)};
  const size_t sizes[3] = {16, 0, 64};
  for (int i = 0; i < 3; ++i) conn.postRecv(buffers[i].data(), sizes[i], 7 + i, i);
  sendAndHangUp(pair.theirs.get(), data, size);
  auto end = Clock::now() + kLimit;
  while (completions.size() < 3 && Clock::now() < end) io.run_one_for(std::chrono::milliseconds(50));
  FUZZ_CHECK(completions.size() == 3, "%zu of 3 receives completed within 2 s", completions.size());
  for (const auto& c : completions) {
    if (c.status.isOk()) continue;
    ErrorCode code = c.status.code();
    FUZZ_CHECK(code == ErrorCode::PeerLost || code == ErrorCode::Mismatch || code == ErrorCode::Transport, "code %d",
               static_cast<int>(code));
    FUZZ_CHECK(c.status.message().find("peer 1") != std::string::npos, "%s", c.status.message().c_str());
  }
  for (int i = 0; i < 3; ++i)
    for (size_t b = sizes[i]; b < buffers[i].size(); ++b) FUZZ_CHECK(buffers[i][b] == 0xA5, "wrote past receive %d", i);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) attackHandshake(data + 1, size - 1);
  else attackStream(data + 1, size - 1);
  return 0;
}
