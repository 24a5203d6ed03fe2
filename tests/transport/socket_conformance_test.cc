// The conformance suite (connection_conformance.h) over the socket transport.
#include "transport/connection_conformance.h"
#include "transport/socket/transport.h"

namespace coll::test {

INSTANTIATE_TEST_SUITE_P(
    Socket, ConnectionConformance,
    ::testing::Values(TransportUnderTest{
        "socket", [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
          return transport::socket::createTransport(c, d, out);
        }, nullptr, nullptr, /*peeks=*/true}),
    transportParamName);

// The same suite with an odd, small receive low-water mark (Config::socket_wake_bytes), so the
// mark changes within and between messages of every size the suite sends: no receive may wait
// for bytes its message does not owe, nor miss a peer's close while it waits.
INSTANTIATE_TEST_SUITE_P(
    SocketOddWakeMark, ConnectionConformance,
    ::testing::Values(TransportUnderTest{
        "socket_wake", [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
          Config odd = c;
          odd.socket_wake_bytes = (96 << 10) + 3;
          return transport::socket::createTransport(odd, d, out);
        }, nullptr, nullptr, /*peeks=*/true}),
    transportParamName);

}  // namespace coll::test

namespace coll::test {
namespace {

TransportUnderTest socketWithThreeStreams() {
  return {"socket3", [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
            Config three = c;
            three.socket_nstreams = 3;
            three.socket_nstreams_auto = true;
            return transport::socket::createTransport(three, d, out);
          }, nullptr, nullptr, /*peeks=*/true};
}

// Sends `sizes` to `peer` (seeds from `seed`) and waits for the sends.
void sendAll(Endpoint& ep, int peer, const std::vector<size_t>& sizes, uint64_t seed,
             std::vector<std::vector<uint8_t>>* keep) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    keep->emplace_back(sizes[i]);
    fillPattern(keep->back().data(), sizes[i], seed + i);
    ep.conns[peer]->postSend(keep->back().data(), sizes[i], seed + i, seed + i);
  }
  for (const auto& [cookie, st] : ep.wait(sizes.size()))
    RANK_CHECK(st.isOk(), "send %llu: %s", static_cast<unsigned long long>(cookie), st.message().c_str());
}

// Receives `sizes` from `peer` and checks each message's tag and bytes.
void receiveAll(Endpoint& ep, int peer, const std::vector<size_t>& sizes, uint64_t seed) {
  std::vector<std::vector<uint8_t>> in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    in.push_back(recvBuffer(sizes[i]));
    ep.conns[peer]->postRecv(in.back().data(), sizes[i], seed + i, seed + i);
  }
  for (const auto& [cookie, st] : ep.wait(sizes.size()))
    RANK_CHECK(st.isOk(), "receive %llu: %s", static_cast<unsigned long long>(cookie), st.message().c_str());
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string what = strprintf("message %llu from rank %d", static_cast<unsigned long long>(seed + i), peer);
    checkPattern(in[i].data(), sizes[i], seed + i, what.c_str());
  }
}

}  // namespace

// A link slow enough for one stream (Transport::adviseLinkRate) narrows a three-stream
// connection's stripe to one, on each rank at its own moment and with messages striped over
// all three behind it: rank 0 changes and sends at once, rank 1 changes only after rank 0's
// messages are on the wire. Every message must land whole with its own tag, in both directions.
TEST(SocketStripe, SlowLinkAdviceNarrowsBothEndsAtTheSameMessage) {
  expectAllSucceeded(runCase(socketWithThreeStreams(), [](Endpoint& ep) {
    const int me = ep.self.rank, peer = 1 - me;
    const std::vector<size_t> sizes = {1, 4097, (64 << 10) + 3, 7, 0, 1000};
    std::vector<std::vector<uint8_t>> keep;
    if (me == 0) {  // striped over three streams first
      sendAll(ep, peer, sizes, 100, &keep);
      receiveAll(ep, peer, sizes, 300);
      ep.transport->adviseLinkRate(0.125e9);
      sendAll(ep, peer, sizes, 500, &keep);
      ep.barrier("sent");
    } else {
      receiveAll(ep, peer, sizes, 100);
      sendAll(ep, peer, sizes, 300, &keep);
      ep.barrier("sent");
      ep.transport->adviseLinkRate(0.125e9);
      receiveAll(ep, peer, sizes, 500);
    }
    RANK_CHECK(ep.conns[peer]->describe().find("3 streams, 1 in use") != std::string::npos, "describe: %s",
               ep.conns[peer]->describe().c_str());
    if (me == 1) sendAll(ep, peer, sizes, 700, &keep);
    else receiveAll(ep, peer, sizes, 700);
  }));
}

}  // namespace coll::test
