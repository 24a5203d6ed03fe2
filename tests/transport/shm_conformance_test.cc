// The conformance suite (connection_conformance.h) over the shm transport: as configured by
// default (CMA for large messages), with CMA off (everything through the slots), and with the
// smallest rings (2 slots of 4 KiB: every message wraps the ring many times).
#include "transport/connection_conformance.h"
#include "transport/shm/transport.h"

namespace coll::test {

TransportUnderTest shmWith(std::string name, std::function<void(Config*)> configure) {
  return {std::move(name), transport::shm::createTransport, std::move(configure), transport::shm::segmentNameFor,
          /*peeks=*/true};
}

INSTANTIATE_TEST_SUITE_P(
    Shm, ConnectionConformance,
    ::testing::Values(shmWith("cma", nullptr), shmWith("slots", [](Config* c) { c->shm_cma_threshold = 0; }),
                      shmWith("tiny_ring", [](Config* c) { c->shm_slot_bytes = 4096; c->shm_nslots = 2; })),
    transportParamName);

}  // namespace coll::test
