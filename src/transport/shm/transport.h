// The shared-memory transport: ranks on the same host exchange messages through per-pair rings
// in POSIX shared memory (layout.h), and large messages with one copy by cross-memory attach
// (cma.h).
//
// Set-up is collective: every rank of the communicator calls createTransport, also ranks with
// no local peer, because all of them meet in one store barrier. Each rank with local peers
// creates one segment in /dev/shm holding its inbound channels (its header reserved at once, so
// a too-small /dev/shm fails here naming the size needed; a channel's memory when first used), publishes its name under
// key_prefix + "shm/<rank>", maps each local peer's segment, probes whether it may read the
// peer's memory, and waits in the barrier. After it every rank removes the names (its own and
// its peers'): from then on nothing is left in /dev/shm whatever happens, and the memory is
// freed when the last process mapping it exits. A rank that fails during set-up still joins
// the barrier (publishing "error:<why>" instead of a name), so nobody waits for it in vain.
//
// Waiting (progress): poll every channel with requests outstanding (one with none has nothing
// to move, so a local peer nobody talks to costs nothing here); with nothing done, spin COLL_SHM_SPIN µs, then
// sched_yield a few times, then sleep on this rank's futex doorbell, which peers ring after
// writing to us, freeing our slots or reading our CMA sends; sleeps last at most 50 ms, after
// which the transport checks whether the peers it waits for are still alive. So 4 ranks on
// 2 cores do not burn a core waiting for a descheduled peer.
//
// Failure: a peer that dies (no EOF here: found through its pidfd), aborts (a flag in its
// segment, its abort() rings us) or closes its end fails that connection's requests with
// PeerLost "peer 2 (pid 1234, same host) died". abort() may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "transport/transport.h"

namespace coll::transport::shm {

class SegmentFiles;  // the mapped segments of a rank and its local peers (shm_transport.h)

// local_peers: the other ranks on this host (not this rank). connect() serves only those.
Status createTransport(const Config& config, const PeerDirectory& directory, const std::vector<int>& local_peers,
                       std::unique_ptr<Transport>* out);

// As createTransport, and each segment also holds a second plane of channels with `second`'s
// slots (layout.h), which *files then lets createSecondPlane serve.
Status createTransportWithSecondPlane(const Config& config, const PeerDirectory& directory,
                                      const std::vector<int>& local_peers, const Config& second,
                                      std::unique_ptr<Transport>* out, std::shared_ptr<SegmentFiles>* files);

// A transport over the second plane of the segments createTransport mapped (`files`), for
// another thread (the point-to-point engine's): its own channels, doorbell, wake socket and
// abort flag, but no mapping, pidfd, probe or store traffic of its own, and so no set-up to
// join: ranks that create the first plane with a second create this one each on their own.
// Once per `files`. local_peers: as given to createTransport.
Status createSecondPlane(const Config& config, const PeerDirectory& directory, const std::vector<int>& local_peers,
                         std::shared_ptr<SegmentFiles> files, std::unique_ptr<Transport>* out);

// The length of the segment createTransport makes for a rank with `local_peers` peers on its
// host (0 with none: no segment), every ring included, though each takes memory only once used.
// coll-doctor checks /dev/shm against it.
uint64_t segmentBytes(const Config& config, size_t local_peers);

// The /dev/shm name (e.g. "/coll-0123456789abcdef") a rank's segment has during set-up; tests
// use it to check that nothing is left behind.
std::string segmentNameFor(const PeerDirectory& directory, int rank);

}  // namespace coll::transport::shm
