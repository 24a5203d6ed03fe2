// The second plane of a rank's segments (layout.h): a transport of its own over channels the
// first plane's set-up already mapped, probed and said hello to.
#include "transport/shm/shm_transport.h"
#include "transport/shm/transport.h"

#include "transport/shm/cma.h"

namespace coll::transport::shm {

Status ShmTransport::adoptSecondPlane(std::shared_ptr<SegmentFiles> files) {
  if (!files || !files->second || files->second_taken || files->peers.size() != local_peers_.size())
    return internalError(format("shm transport: rank %d has no second plane to serve (%s)", dir_.rank,
                                !files || !files->second ? "its segments were made without one"
                                : files->second_taken   ? "it is served already"
                                                        : "its local peers differ"));
  files->second_taken = true;
  files_ = std::move(files);
  parks_ = true;  // the engine keeps a receive posted on every channel
  if (!files_->own) return Status::ok();  // no local peer: nothing to serve
  own_base_ = files_->own.base() + files_->own.header()->second_plane;
  self_ = ownHeader();
  geometry_ = Geometry{self_->slot_bytes, self_->nslots, self_->nchannels};
  wake_ = std::move(files_->second_wake);
  peers_.resize(files_->peers.size());
  for (size_t i = 0; i < peers_.size(); ++i) {
    const SegmentFiles::PeerFile& f = files_->peers[i];
    Peer& p = peers_[i];
    p.rank = f.rank;
    p.base = f.mapping.base() + f.mapping.header()->second_plane;
    COLL_RETURN_IF_ERROR(findChannel(p));
  }
  fd_wait_ok_ = wake_ && self_->wake_unreachable.load(std::memory_order_acquire) == 0;
  decideOversubscribed();
  buildConnections();
  return Status::ok();
}

Status createSecondPlane(const Config& config, const PeerDirectory& directory, const std::vector<int>& local_peers,
                         std::shared_ptr<SegmentFiles> files, std::unique_ptr<Transport>* out) {
  Config plane = withCmaPolicy(config, local_peers.size() + 1);
  plane.shm_board_bytes = 0;  // the board is the first plane's
  auto t = std::make_unique<ShmTransport>(plane, directory, local_peers);
  COLL_RETURN_IF_ERROR(t->adoptSecondPlane(std::move(files)));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace coll::transport::shm
