#include "transport/shm/transport.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <new>

#include "bootstrap/store.h"
#include "transport/shm/cma.h"
#include "transport/shm/shm_transport.h"
#include "transport/shm/stale_segments.h"

namespace coll::transport::shm {
Geometry ShmTransport::geometryFor(const Config& config, size_t local_peers) {
  Geometry g;
  g.slot_bytes = std::max<uint64_t>((config.shm_slot_bytes + 63) / 64 * 64, 4096);
  g.nslots = static_cast<uint32_t>(std::max(config.shm_nslots, 2));
  g.nchannels = static_cast<uint32_t>(local_peers);
  return g;
}

ShmTransport::~ShmTransport() {
  for (ShmConnection* c : all_) c->close();  // before the mappings go
}

// --- set-up --------------------------------------------------------------------------------

// Two store barriers of every rank, whatever the number of local peers: segment names are
// computed, not exchanged (reading each local peer's name was L² requests a host: 65,536 at
// 256 ranks). Only a rank that failed publishes why, and only a failed open looks it up.
Status ShmTransport::setUp(Deadline deadline) {
  Status st = validatePeers();
  if (st && !local_peers_.empty()) {
    allowAttach();
    // One rank a host looks for what an earlier job's killed start-up left (stale_segments.h).
    if (*std::min_element(local_peers_.begin(), local_peers_.end()) > dir_.rank) reclaimStaleSegments();
    st = createOwn();
    if (!st) (void)dir_.store->set(key(dir_.rank), "error:" + st.message(), deadline);
  }
  Status all_made = dir_.store->barrier(dir_.key_prefix + "shm/made", dir_.size, deadline);
  if (st && !all_made) st = Status(all_made.code(), "shared memory set-up: " + all_made.message());
  if (st && !local_peers_.empty()) {
    peers_.resize(local_peers_.size());
    files_->peers.resize(local_peers_.size());
    for (size_t i = 0; i < peers_.size() && st; ++i) {
      st = mapPeer(i, deadline);
      if (st) probePeer(i);
    }
  }
  // Everyone joins the second barrier even after a failure, so no peer waits out its deadline.
  Status all_here = all_made ? dir_.store->barrier(dir_.key_prefix + "shm/ready", dir_.size, deadline) : all_made;
  removeNames();
  COLL_RETURN_IF_ERROR(st);
  if (!all_here) return Status(all_here.code(), "shared memory set-up: " + all_here.message());
  fd_wait_ok_ = wake_ && self_->wake_unreachable.load(std::memory_order_acquire) == 0;
  if (wake_ && !fd_wait_ok_)
    COLL_INFO("SHM", "a local peer cannot reach this rank's wake socket (another network namespace?): waits on "
              "shared memory and sockets at once go in slices");
  decideOversubscribed();
  buildConnections();
  buildBoard();
  return Status::ok();
}

Status ShmTransport::validatePeers() const {
  std::vector<int> sorted = local_peers_;
  std::sort(sorted.begin(), sorted.end());
  bool ok = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  for (int p : sorted) ok = ok && p >= 0 && p < dir_.size && p != dir_.rank;
  if (!ok) return invalidArgument(format("shm transport: bad list of local peers for rank %d", dir_.rank));
  if (sorted.size() > kMaxChannels)
    return invalidArgument(format("shm transport: rank %d has %zu ranks on its host, more than the %u shared memory "
                                  "serves; set COLL_TRANSPORT=socket", dir_.rank, sorted.size() + 1, kMaxChannels + 1));
  return Status::ok();
}

Status ShmTransport::createOwn() {
  geometry_ = geometryFor(config_, local_peers_.size());
  geometry_.board = usesBoard();
  const std::string segment = segmentNameFor(dir_, dir_.rank);
  Mapping& own = files_->own;
  COLL_RETURN_IF_ERROR(createSegment(segment, geometry_, static_cast<int>(local_peers_.size()) + 1, &own,
                                     files_->second ? &second_geometry_ : nullptr));
  if (files_->second) {
    // The second plane first: a peer reads it only once the first's magic is there.
    writeHeader(reinterpret_cast<SegmentHeader*>(own.base() + geometry_.secondPlaneOffset()), second_geometry_,
                files_->second_wake, segment + "/2");
  }
  writeHeader(own.header(), geometry_, wake_, segment);
  if (files_->second) own.header()->second_plane = geometry_.secondPlaneOffset();
  own_base_ = own.base();
  self_ = ownHeader();
  COLL_INFO("SHM", "segment %s: %u peer(s) x %u slots x %s = %s, each ring reserved by its sender's first message%s",
            segment.c_str(), geometry_.nchannels, geometry_.nslots, formatBytes(geometry_.slot_bytes).c_str(),
            formatBytes(own.bytes()).c_str(),
            files_->second ? format(" (with the point-to-point engine's plane: %u slots x %s a peer)",
                                    second_geometry_.nslots, formatBytes(second_geometry_.slot_bytes).c_str()).c_str() : "");
  return Status::ok();
}

// A plane's header, the magic last (with the owner's PID before it: a later job's reclaimer,
// stale_segments.h, reads those from a segment of an older layout). Binds `wake` for it.
void ShmTransport::writeHeader(SegmentHeader* at, const Geometry& g, WakeSocket& wake, const std::string& wake_for) const {
  auto* h = new (at) SegmentHeader();
  h->version = kLayoutVersion;
  h->nchannels = g.nchannels;
  h->owner_rank = dir_.rank;
  h->owner_pid = static_cast<int32_t>(::getpid());
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kSegmentMagic;
  h->slot_bytes = g.slot_bytes;
  h->nslots = g.nslots;
  h->channel_stride = g.ringStride();
  cpu_set_t cpus;
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0)
    for (int c = 0; c < std::min<int>(CPU_SETSIZE, 1024); ++c)
      if (CPU_ISSET(c, &cpus)) h->cpus[c / 64] |= uint64_t{1} << (c % 64);
  ProbeTarget probe = probeTarget();
  h->probe_address = probe.address;
  h->probe_value = probe.value;
  h->host_ranks = hostRanks();
  // The board and the controls are zeroes in a new file, their starting state: untouched here,
  // so a control takes memory only once its pair talks.
  Status bound = WakeSocket::bind(wake_for, &wake);
  if (bound) std::snprintf(h->wake_name, sizeof h->wake_name, "%s", wakeSocketName(wake_for).c_str());
  else COLL_INFO("SHM", "%s", bound.message().c_str());
  const NetNamespace net = currentNetNamespace();
  h->net_namespace_dev = net.dev;
  h->net_namespace_ino = net.ino;
}

// Maps local peer `index`'s segment, checks its planes and finds our channel in it.
Status ShmTransport::mapPeer(size_t index, Deadline deadline) {
  Peer& p = peers_[index];
  SegmentFiles::PeerFile& f = files_->peers[index];
  p.rank = f.rank = local_peers_[index];
  const std::string name = segmentNameFor(dir_, p.rank);
  if (Status opened = openSegment(name, &f.mapping); !opened) {
    bool told = false;  // a peer that failed said why; check() never waits
    std::string why;
    if (dir_.store->check(key(p.rank), &told, deadline) && told && dir_.store->get(key(p.rank), &why, deadline) &&
        why.rfind("error:", 0) == 0)
      return transportError(format("peer %d could not set up shared memory: %s", p.rank, why.c_str() + 6), p.rank);
    return Status(opened.code(), format("peer %d (same host): %s", p.rank, opened.message().c_str()), p.rank);
  }
  const SegmentHeader* h = f.mapping.header();
  const bool second_ok = !files_->second || (h->second_plane >= kHeaderBytes && h->second_plane % kPageBytes == 0 &&
                                             h->second_plane + kHeaderBytes <= f.mapping.bytes());
  if (!checkPlane(h, 0, f) || !second_ok ||
      (files_->second && !checkPlane(reinterpret_cast<const SegmentHeader*>(f.mapping.base() + h->second_plane),
                                     h->second_plane, f)))
    return transportError(format("shared memory segment %s of peer %d is not a coll segment of this version%s",
                                 name.c_str(), p.rank, files_->second ? " with two planes" : ""), p.rank);
  f.process = std::make_shared<const PeerProcess>(h->owner_pid);
  p.base = f.mapping.base();
  return findChannel(p);
}

// Whether the plane at `offset` of a peer's file is one of this layout, owned by that peer.
Status ShmTransport::checkPlane(const SegmentHeader* h, size_t offset, const SegmentFiles::PeerFile& f) const {
  const Geometry g{h->slot_bytes, h->nslots, h->nchannels};
  if (h->magic != kSegmentMagic || h->version != kLayoutVersion || h->owner_rank != f.rank ||
      h->channel_stride != g.ringStride() || h->slot_bytes < 4096 || h->nslots < 2 ||
      offset + g.segmentBytes() > f.mapping.bytes())
    return transportError("not a coll segment of this version");
  return Status::ok();
}

// Our channel in the peer's segment: our place among its local peers, the host's ranks in rank
// order without it. Computed, so set-up reads nothing of the peer's but its header.
Status ShmTransport::findChannel(Peer& p) const {
  const SegmentHeader* h = p.header();
  if (h->host_ranks == hostRanks() && h->nchannels == local_peers_.size()) {
    const auto below = std::lower_bound(local_peers_.begin(), local_peers_.end(), dir_.rank) - local_peers_.begin();
    p.channel = static_cast<uint32_t>(below - (p.rank < dir_.rank ? 1 : 0));
    return Status::ok();
  }
  return transportError(format("peer %d counts other ranks on its host than rank %d does (%u local peers there, %zu "
                               "here): the ranks disagree on host grouping", p.rank, dir_.rank, h->nchannels,
                               local_peers_.size()), p.rank);
}

// Decides, before the barrier, whether our inbound channel from `p` may carry CMA descriptors;
// the peer reads the verdict after the barrier.
// Also says hello to its wake sockets (helloWake), so both planes' verdicts are in before the
// barrier.
void ShmTransport::probePeer(size_t index) {
  SegmentFiles::PeerFile& f = files_->peers[index];
  SegmentHeader* h = f.mapping.header();
  helloWake(ownHeader(), h, wake_);
  if (files_->second)
    helloWake(ownSecondHeader(), reinterpret_cast<SegmentHeader*>(f.mapping.base() + h->second_plane),
              files_->second_wake);
  if (config_.shm_cma_threshold == 0) return;
  Status st = probe(h->owner_pid, ProbeTarget{h->probe_address, h->probe_value});
  f.readable = st.isOk();
  if (f.readable) ownHeader()->cma_readable.set(static_cast<uint32_t>(index));
  if (f.readable && files_->second) ownSecondHeader()->cma_readable.set(static_cast<uint32_t>(index));
  if (!f.readable && !logged_no_cma_) {
    logged_no_cma_ = true;
    COLL_INFO("SHM", "cannot read the memory of peer %d (pid %d): %s; large messages from it come through the slots "
              "(two copies)", f.rank, h->owner_pid, st.message().c_str());
  }
}

uint64_t ShmTransport::hostRanks() const {
  std::vector<int> ranks = local_peers_;
  ranks.insert(std::upper_bound(ranks.begin(), ranks.end(), dir_.rank), dir_.rank);
  return hostRanksFingerprint(ranks.data(), ranks.size());
}

// A peer we cannot wake in poll() must not wait there: it learns so from its header. Where
// both network namespaces are known, comparing them tells (wake_socket.h); a datagram, a
// system call a pair (L² a host), only where one is not.
void ShmTransport::helloWake(SegmentHeader* mine, SegmentHeader* h, const WakeSocket& from) const {
  if (!h->wake_name[0]) return;
  const bool both_known = mine->net_namespace_ino != 0 && h->net_namespace_ino != 0;
  const bool reachable =
      from && (both_known ? mine->net_namespace_ino == h->net_namespace_ino && mine->net_namespace_dev == h->net_namespace_dev
                          : sendWake(from.fd(), h->wake_name));
  if (!reachable) h->wake_unreachable.store(1, std::memory_order_release);
}

// Each rank removes its own name and its successor's among the host's ranks (in rank order,
// the highest's successor the lowest), in case that one crashed before it could: 2L unlinks a
// host where every rank removing every name made L². Names two crashed neighbours leave are
// reclaimed by the next job's set-up (stale_segments.h).
void ShmTransport::removeNames() const {
  if (local_peers_.empty()) return;
  unlinkSegment(segmentNameFor(dir_, dir_.rank));
  const auto above = std::upper_bound(local_peers_.begin(), local_peers_.end(), dir_.rank);
  unlinkSegment(segmentNameFor(dir_, above != local_peers_.end() ? *above : local_peers_.front()));
}

void ShmTransport::buildConnections() {
  for (Peer& p : peers_) {
    SegmentHeader* ph = p.header();
    uint32_t index = static_cast<uint32_t>(&p - peers_.data());
    Endpoints e;
    e.peer = p.rank;
    e.inbound = Ring{channelAt(ownBase(), index), ringAt(ownBase(), geometry_.nchannels, geometry_.ringStride(), index),
                     geometry_.slot_bytes, geometry_.nslots};
    e.outbound = Ring{channelAt(p.base, p.channel), ringAt(p.base, ph->nchannels, ph->channel_stride, p.channel),
                      ph->slot_bytes, ph->nslots};
    e.peer_header = ph;
    e.own_header = ownHeader();
    e.inbound_channel = index;
    e.outbound_channel = p.channel;
    e.read_peer = files_->peers[index].readable;
    e.cma_threshold = config_.shm_cma_threshold;
    e.cma_huge_only = config_.shm_cma_huge_only;
    e.wake_sender = wake_.fd();
    e.parks = parks_;
    auto conn = std::make_unique<ShmConnection>(e, files_->peers[index].process, &completions_);
    COLL_INFO("SHM", "connected to %s", conn->describe().c_str());
    conn->setActiveList(&active_);
    all_.push_back(conn.get());
    connections_.emplace(p.rank, std::move(conn));
  }
}

// --- running -------------------------------------------------------------------------------

Status ShmTransport::connect(int peer, Deadline, Connection** out) {
  auto it = connections_.find(peer);
  if (it == connections_.end())
    return invalidArgument(format("shm transport: peer %d is not on the same host as rank %d", peer, dir_.rank));
  *out = it->second.get();
  return Status::ok();
}

Status ShmTransport::progress(std::vector<Completion>* out, Deadline until) {
  IdleWait idle(idlePolicy(config_));
  while (!aborted()) {
    bool moved = pollAll();
    if (!completions_.empty()) break;
    Clock::time_point now = Clock::now();
    if (now >= until) break;
    if (moved) {
      idle.reset(now);
      continue;
    }
    checkPeers(now);
    if (!completions_.empty()) break;
    pause(idle, now, until, [this] { return quiet(); });
  }
  Status st = Status::ok();
  if (aborted()) {
    st = peerLostError(abortReason());
    for (ShmConnection* c : all_) c->fail(st);
  }
  out->insert(out->end(), std::make_move_iterator(completions_.begin()), std::make_move_iterator(completions_.end()));
  completions_.clear();
  return st;
}

// Only the connections with requests outstanding (ShmConnection::setActiveList); one a poll
// leaves idle drops out until its next post. With 254 idle local peers, ranks 0 and 1's 8 B
// ping-pong took 3.9-4.0 us one-way polling every connection, against 0.5-0.8 us beside one
// (bench/transport_pingpong --bystanders).
// Where receives park (the second plane), a connection that only waits for a message leaves too,
// and comes back when its peer marks news: beside 254 idle local peers, each with the engine's
// receive posted, every round otherwise polled them all.
bool ShmTransport::pollAll() {
  if (parks_) takeNews();
  bool moved = false;
  for (size_t i = 0; i < active_.size();) {
    ShmConnection* c = active_[i];
    const bool c_moved = c->poll();
    moved |= c_moved;
    if (c->idle()) {
      c->delist();
    } else if (!c->park(c_moved)) {
      ++i;
      continue;
    }
    active_[i] = active_.back();
    active_.pop_back();
  }
  return moved;
}

// Resumes the parked connections whose peers marked news since the last look.
void ShmTransport::takeNews() {
  ChannelBits& news = ownHeader()->news;
  for (size_t w = 0; w * 64 < all_.size(); ++w)
    for (uint64_t bits = news.take(w); bits != 0; bits &= bits - 1) {
      const size_t i = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      if (i < all_.size()) all_[i]->resume();
    }
}

// Flags (aborted, closed) on every idle round: a few loads. Process death every sleep slice,
// for kDeathChecksPerSweep of the connections with requests outstanding.
// Parked connections every sleep slice: a peer that aborted or closed marked news, but a dead one
// could not.
void ShmTransport::checkPeers(Clock::time_point now) {
  const bool due = processCheckDue(now);
  (void)sweepPeers(active_, active_checks_, due, [](const ShmConnection& c) { return c.watched(); },
                   [](ShmConnection& c, bool check_process) {
                     c.checkPeer(check_process);
                     return Status::ok();
                   });
  if (!parks_ || !due) return;
  (void)sweepPeers(all_, parked_checks_, true, [](const ShmConnection& c) { return c.parked(); },
                   [](ShmConnection& c, bool check_process) {
                     if (c.peerStatus(check_process).isOk()) return Status::ok();
                     c.resume();
                     c.checkPeer(check_process);
                     return Status::ok();
                   });
}

bool ShmTransport::processCheckDue(Clock::time_point now) {
  if (now < next_liveness_check_) return false;
  next_liveness_check_ = now + kSleepSlice;
  return true;
}


// The cores this host's ranks may run on together (the union of their affinity masks: ranks
// bound one per core each see one core); 0 where unknown.
int ShmTransport::sharedCores() const {
  int cores = 0;
  for (int w = 0; w < 16; ++w) {
    uint64_t word = ownHeader()->cpus[w];
    for (const Peer& p : peers_) word |= p.header()->cpus[w];
    cores += __builtin_popcountll(word);
  }
  return cores;
}

// Where this host's ranks outnumber their cores, a waiting rank yields at once instead of
// spinning: the peer it waits for is likely descheduled behind it. 4 ranks on 2 cores, 8-byte
// all-reduce on the board: 4.5-8.7 us with 2 us of spinning, 2.6-4.7 without.
//
// And the senders keep the slots even from huge pages: a CMA send is done only once the
// receiver has run and read it, so each hop of a ring or chain waits for a descheduled reader.
// 4 ranks on 2 cores, all-gather of 16 MiB: 3.1-3.2 ms through the slots, 13.7-14.7 by CMA.
void ShmTransport::decideOversubscribed() {
  if (!ownBase()) return;
  const int cores = sharedCores();
  const size_t ranks = local_peers_.size() + 1;
  if (cores == 0 || ranks <= static_cast<size_t>(cores)) return;
  if (config_.shm_spin_auto) {
    config_.shm_spin_us = 0;
    COLL_INFO("SHM", "%zu ranks on this host, %d cores for them all: waiting ranks yield without spinning "
              "(COLL_SHM_SPIN sets a spin)", ranks, cores);
  }
  if (config_.shm_cma_huge_only && config_.shm_cma_threshold > 0) {
    config_.shm_cma_threshold = 0;
    COLL_INFO("SHM", "%zu ranks on this host, %d cores for them all: large messages go through the slots", ranks,
              cores);
  }
}


bool ShmTransport::pollFds(std::vector<pollfd>* fds) {
  if (!fd_wait_ok_) return false;
  fds->push_back(pollfd{wake_.fd(), POLLIN, 0});
  return true;
}

// The doorbell protocol (doorbell.h) around a poll(): announce, drain stale wake-ups, look once
// more; a peer that publishes after our look sees fd_sleepers and sends a datagram.
bool ShmTransport::armForPoll() {
  self_->doorbell.fd_sleepers.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_.drain();
  bool moved = pollAll();
  checkPeers(Clock::now());
  return !moved && completions_.empty() && !aborted();
}

void ShmTransport::disarmAfterPoll() { self_->doorbell.fd_sleepers.fetch_sub(1, std::memory_order_relaxed); }

void ShmTransport::abort(const std::string& reason) {
  if (abort_.raise(reason) && ownBase()) {
    std::snprintf(ownHeader()->abort_reason, kReasonBytes, "%s", reason.c_str());
    ownHeader()->aborted.store(1, std::memory_order_release);
  }
  if (parks_) std::atomic_thread_fence(std::memory_order_seq_cst);  // after our aborted flag
  for (Peer& p : peers_) {
    if (!p.base) continue;
    if (parks_ && p.header()->parked.test(p.channel)) p.header()->news.set(p.channel);
    ring(p.header(), wake_.fd());
  }
  ring(self_, wake_.fd());  // ourselves, if we wait
}

uint64_t segmentBytes(const Config& config, size_t local_peers) {
  return local_peers == 0 ? 0 : ShmTransport::geometryFor(config, local_peers).segmentBytes();
}

std::string segmentNameFor(const PeerDirectory& directory, int rank) {
  return segmentName(directory.secret, directory.key_prefix, rank);
}

namespace {

Status create(const Config& config, const PeerDirectory& directory, const std::vector<int>& local_peers,
              const Config* second, std::unique_ptr<Transport>* out, std::shared_ptr<SegmentFiles>* files) {
  auto t = std::make_unique<ShmTransport>(withCmaPolicy(config, local_peers.size() + 1), directory, local_peers, second);
  COLL_RETURN_IF_ERROR(t->setUp(Clock::now() + config.timeout));
  if (files) *files = t->files();
  *out = std::move(t);
  return Status::ok();
}

}  // namespace

Status createTransport(const Config& config, const PeerDirectory& directory, const std::vector<int>& local_peers,
                       std::unique_ptr<Transport>* out) {
  return create(config, directory, local_peers, nullptr, out, nullptr);
}

Status createTransportWithSecondPlane(const Config& config, const PeerDirectory& directory,
                                      const std::vector<int>& local_peers, const Config& second,
                                      std::unique_ptr<Transport>* out, std::shared_ptr<SegmentFiles>* files) {
  return create(config, directory, local_peers, &second, out, files);
}

}  // namespace coll::transport::shm
