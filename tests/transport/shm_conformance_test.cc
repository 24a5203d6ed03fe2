// The conformance suite (connection_conformance.h) over the shm transport: as configured by
// default (CMA for large messages), with CMA off (everything through the slots), and with the
// smallest rings (2 slots of 4 KiB: every message wraps the ring many times), and over the second
// plane of the segments (the point-to-point engine's), with default and with the smallest rings.
#include "transport/connection_conformance.h"
#include "transport/shm/transport.h"

namespace coll::test {

TransportUnderTest shmWith(std::string name, std::function<void(Config*)> configure) {
  return {std::move(name), transport::shm::createTransport, std::move(configure), transport::shm::segmentNameFor,
          /*peeks=*/true};
}

// The transport over the second plane of each rank's segments (layout.h), as the point-to-point
// engine gets it, with the first plane's transport alive beside it (each rank is a process of its
// own: kept to its exit). Both planes take the case's configuration.
Status createSecondPlaneOnly(const Config& config, const transport::PeerDirectory& dir, const std::vector<int>& peers,
                             std::unique_ptr<transport::Transport>* out) {
  static std::vector<std::unique_ptr<transport::Transport>> first_planes;
  std::unique_ptr<transport::Transport> first;
  std::shared_ptr<transport::shm::SegmentFiles> files;
  COLL_RETURN_IF_ERROR(transport::shm::createTransportWithSecondPlane(config, dir, peers, config, &first, &files));
  first_planes.push_back(std::move(first));
  return transport::shm::createSecondPlane(config, dir, peers, std::move(files), out);
}

TransportUnderTest secondPlaneWith(std::string name, std::function<void(Config*)> configure) {
  return {std::move(name), createSecondPlaneOnly, std::move(configure), transport::shm::segmentNameFor,
          /*peeks=*/true};
}

INSTANTIATE_TEST_SUITE_P(
    Shm, ConnectionConformance,
    ::testing::Values(shmWith("cma", nullptr), shmWith("slots", [](Config* c) { c->shm_cma_threshold = 0; }),
                      shmWith("tiny_ring", [](Config* c) { c->shm_slot_bytes = 4096; c->shm_nslots = 2; }),
                      secondPlaneWith("second_plane", nullptr),
                      secondPlaneWith("second_plane_tiny_ring", [](Config* c) { c->shm_slot_bytes = 4096; c->shm_nslots = 2; })),
    transportParamName);

}  // namespace coll::test
