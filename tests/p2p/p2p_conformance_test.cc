// The p2p engine's conformance suite (p2p_conformance.h) over every transport the engine can
// sit on: sockets, shared memory (CMA for large messages, and slots only), and, where the
// verbs transport is built, verbs over fake NICs (ranks as threads of one process). Each is
// made with the settings the communicator gives its engine (comm/p2p_config.h). UCX has a
// program of its own (p2p_ucx_conformance_test.cc), run once per UCX_TLS.
#include "p2p/p2p_conformance.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"
#if COLL_TEST_VERBS
#include "transport/verbs_on_fake_nics.h"
#endif

namespace coll::test {
namespace {

TransportUnderTest socketTransport() {
  auto create = [](const Config& c, const PeerDirectory& d, const std::vector<int>&, std::unique_ptr<Transport>* out) {
    return transport::socket::createTransport(c, d, out);
  };
  return {"socket", create};
}

TransportUnderTest shmWith(std::string name, std::function<void(Config*)> configure) {
  return {std::move(name), transport::shm::createTransport, std::move(configure), transport::shm::segmentNameFor};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Socket, P2pConformance, ::testing::Values(socketTransport()), transportParamName);

INSTANTIATE_TEST_SUITE_P(Shm, P2pConformance,
                         ::testing::Values(shmWith("cma", nullptr),
                                           shmWith("slots", [](Config* c) { c->shm_cma_threshold = 0; })),
                         transportParamName);

#if COLL_TEST_VERBS
INSTANTIATE_TEST_SUITE_P(VerbsFake, P2pConformance,
                         ::testing::Values(verbsOnFakeNics("fake_nics", defaultVerbsWindow()),
                                           verbsOnFakeNics("fake_nics_tiny_window", tinyVerbsWindow())),
                         transportParamName);
#endif

}  // namespace coll::test
