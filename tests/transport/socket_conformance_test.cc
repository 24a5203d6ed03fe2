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

}  // namespace coll::test
