// The conformance suite (connection_conformance.h) over the ucx transport, with whatever UCX
// transports UCX_TLS selects (tests/CMakeLists.txt runs it under tcp and under shared memory).
#include "transport/connection_conformance.h"
#include "transport/ucx/transport.h"

namespace coll::test {

INSTANTIATE_TEST_SUITE_P(
    Ucx, ConnectionConformance,
    ::testing::Values(TransportUnderTest{
        "ucx", [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
          return transport::ucx::createTransport(c, d, out);
        }}),
    transportParamName);

}  // namespace coll::test
