// The p2p engine's conformance suite (p2p_conformance.h) over the ucx transport, with whatever
// UCX transports UCX_TLS selects (tests/CMakeLists.txt runs it under tcp and under shared
// memory, as the connection suite's ucx_conformance_test).
#include "p2p/p2p_conformance.h"
#include "transport/ucx/transport.h"

namespace coll::test {

INSTANTIATE_TEST_SUITE_P(
    Ucx, P2pConformance,
    ::testing::Values(TransportUnderTest{
        "ucx", [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
          return transport::ucx::createTransport(c, d, out);
        }}),
    transportParamName);

}  // namespace coll::test
