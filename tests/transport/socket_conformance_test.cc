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
