#include "transport/verbs/transport.h"

#include <sched.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/store.h"
#include "base/idle_wait.h"
#include "base/log.h"
#include "transport/abort_signal.h"
#include "transport/verbs/connection.h"
#include "transport/verbs/device.h"
#include "transport/verbs/ibv_device_ops.h"

namespace coll::transport::verbs {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Idle phases of progress(): spin (a completion is seen within ns), yield (ranks may outnumber
// cores), then short sleeps. There is no completion channel to block on yet: the sleep slice
// bounds both the wake-up latency after idling and how fast abort() is noticed.
constexpr IdlePolicy kIdle{microseconds(20), microseconds(200), microseconds(100), 0};
constexpr auto kCloseLimit = milliseconds(200);  // pushing goodbyes out at destruction
constexpr int kPollBatch = 32;

class VerbsTransport : public Transport {
 public:
  VerbsTransport(const Config& config, const PeerDirectory& dir, std::unique_ptr<VerbsDevice> device,
                 const VerbsOptions& options);
  ~VerbsTransport() override;

  const char* name() const override { return "verbs"; }
  Status open();
  Status connect(int peer, Deadline deadline, Connection** out) override;
  Status progress(std::vector<Completion>* out, Deadline until) override;
  void abort(const std::string& reason) override;

 private:
  std::string cardKey(int from, int to) const { return format("%sverbs/card/%d/%d", dir_.key_prefix.c_str(), from, to); }
  std::string readyKey(int from, int to) const { return format("%sverbs/ready/%d/%d", dir_.key_prefix.c_str(), from, to); }
  Status wireAll(Deadline deadline);
  Status wire(int peer, Deadline deadline);
  bool pollCq();
  bool pumpAll();
  void failAll(const Status& st);
  void onAbort();
  bool aborted() const { return abort_.raised(); }
  std::string abortReason() const { return abort_.reason(); }

  Config config_;
  PeerDirectory dir_;
  VerbsOptions options_;
  // Declared in the order they must outlive each other: connections release into the cache,
  // and both call into the device.
  std::unique_ptr<VerbsDevice> device_;
  std::unique_ptr<RegistrationCache> cache_;
  std::map<int, std::unique_ptr<VerbsConnection>> connections_;
  std::map<uint32_t, VerbsConnection*> by_qpn_;
  std::map<int, bool> ready_;
  Status wired_ = internalError("not wired yet");
  bool wiring_tried_ = false;
  std::vector<Completion> completions_;
  bool abort_handled_ = false;
  AbortSignal abort_;
};

VerbsTransport::VerbsTransport(const Config& config, const PeerDirectory& dir, std::unique_ptr<VerbsDevice> device,
                               const VerbsOptions& options)
    : config_(config), dir_(dir), options_(options), device_(std::move(device)) {
  VerbsDevice* dev = device_.get();
  cache_ = std::make_unique<RegistrationCache>(
      options_.registration_cache_bytes, 4096,
      [dev](uintptr_t begin, size_t bytes, Registration* out) {
        MemoryRegion mr;
        COLL_RETURN_IF_ERROR(dev->registerMemory(reinterpret_cast<void*>(begin), bytes, false, &mr));
        out->lkey = mr.lkey;
        out->rkey = mr.rkey;
        out->handle = mr.handle;
        return Status::ok();
      },
      [dev](const Registration& r) { dev->deregisterMemory(MemoryRegion{r.handle, r.lkey, r.rkey}); });
}

Status VerbsTransport::open() {
  for (int p = 0; p < dir_.size; ++p) {
    if (p == dir_.rank) continue;
    ConnectionSetup setup{device_.get(), cache_.get(), dir_.rank, p, options_.credits, options_.chunk_bytes,
                          &completions_};
    auto conn = std::make_unique<VerbsConnection>(setup);
    PeerCard card;
    Status st = conn->open(&card);
    if (!st) return Status(st.code(), format("verbs: setting up the queue pair for peer %d: %s", p, st.message().c_str()));
    COLL_RETURN_IF_ERROR(dir_.store->set(cardKey(dir_.rank, p), card.encode(), Clock::now() + config_.timeout));
    by_qpn_[conn->qpn()] = conn.get();
    connections_.emplace(p, std::move(conn));
  }
  COLL_INFO("NET", "verbs transport on %s: %u slots of %s per peer", device_->describe().c_str(), options_.credits,
            formatBytes(options_.chunk_bytes).c_str());
  return Status::ok();
}

Status VerbsTransport::connect(int peer, Deadline deadline, Connection** out) {
  if (aborted()) return peerLostError("verbs transport aborted: " + abortReason());
  auto it = connections_.find(peer);
  if (it == connections_.end()) return invalidArgument(format("verbs transport: no peer %d", peer));
  if (!wiring_tried_) {
    wiring_tried_ = true;
    wired_ = wireAll(deadline);
  }
  COLL_RETURN_IF_ERROR(wired_);
  if (!ready_[peer]) {
    std::string ignored;
    Status st = dir_.store->get(readyKey(peer, dir_.rank), &ignored, deadline);
    if (!st)
      return Status(st.code(), format("verbs: peer %d did not bring its queue pair to this rank up: %s", peer,
                                      st.message().c_str()), peer);
    ready_[peer] = true;
    COLL_INFO("NET", "connected to %s", it->second->describe().c_str());
  }
  *out = it->second.get();
  return Status::ok();
}

// Every queue pair to RTS, then "ready" for each: see transport.h.
Status VerbsTransport::wireAll(Deadline deadline) {
  for (auto& [peer, conn] : connections_) COLL_RETURN_IF_ERROR(wire(peer, deadline));
  for (auto& [peer, conn] : connections_) COLL_RETURN_IF_ERROR(dir_.store->set(readyKey(dir_.rank, peer), "1", deadline));
  return Status::ok();
}

Status VerbsTransport::wire(int peer, Deadline deadline) {
  std::string text;
  Status st = dir_.store->get(cardKey(peer, dir_.rank), &text, deadline);
  if (!st)
    return Status(st.code(), format("verbs: peer %d did not publish its queue pair card: %s", peer, st.message().c_str()),
                  peer);
  PeerCard theirs;
  COLL_RETURN_IF_ERROR(PeerCard::decode(text, peer, &theirs));
  st = connections_[peer]->connectTo(theirs);
  if (!st)
    return Status(st.code(), format("verbs: connecting the queue pair to peer %d: %s", peer, st.message().c_str()),
                  peer);
  return Status::ok();
}

Status VerbsTransport::progress(std::vector<Completion>* out, Deadline until) {
  IdleWait idle(kIdle);
  while (!aborted()) {
    bool moved = pollCq();
    moved |= pumpAll();
    if (!completions_.empty()) break;
    Clock::time_point now = Clock::now();
    if (now >= until) break;
    if (moved) {
      idle.reset(now);
      continue;
    }
    idle.pause(now, until, [&](Clock::duration slice) { std::this_thread::sleep_for(slice); });
  }
  Status st = Status::ok();
  if (aborted()) {
    onAbort();
    st = peerLostError("verbs transport aborted: " + abortReason());
  }
  out->insert(out->end(), std::make_move_iterator(completions_.begin()), std::make_move_iterator(completions_.end()));
  completions_.clear();
  return st;
}

bool VerbsTransport::pollCq() {
  WorkCompletion wcs[kPollBatch];
  Status error;
  int n = device_->pollCq(wcs, kPollBatch, &error);
  if (n < 0) {
    failAll(transportError(format("verbs: polling the completion queue of %s failed: %s", device_->describe().c_str(),
                                  error.message().c_str())));
    return true;
  }
  for (int i = 0; i < n; ++i) {
    auto it = by_qpn_.find(wcs[i].qpn);
    if (it != by_qpn_.end()) it->second->onCompletion(wcs[i]);
  }
  return n > 0;
}

bool VerbsTransport::pumpAll() {
  bool moved = false;
  for (auto& [peer, conn] : connections_) moved |= conn->pump();
  return moved;
}

void VerbsTransport::failAll(const Status& st) {
  for (auto& [peer, conn] : connections_) conn->fail(st);
}

void VerbsTransport::onAbort() {
  if (abort_handled_) return;
  abort_handled_ = true;
  Status st = peerLostError("verbs transport aborted: " + abortReason());
  for (auto& [peer, conn] : connections_) conn->sayGoodbye(GoodbyeReason::aborted);
  failAll(st);
}

void VerbsTransport::abort(const std::string& reason) { abort_.raise(reason); }

// Goodbyes go out while the NIC still runs them; the queue pairs are destroyed after.
VerbsTransport::~VerbsTransport() {
  for (auto& [peer, conn] : connections_) conn->sayGoodbye(GoodbyeReason::closed);
  Clock::time_point end = Clock::now() + kCloseLimit;
  auto busy = [&] {
    for (auto& [peer, conn] : connections_)
      if (conn->sendsInFlight()) return true;
    return false;
  };
  while (busy() && Clock::now() < end) pollCq();
  completions_.clear();
}

}  // namespace

Status createTransportOver(const Config& config, const PeerDirectory& directory, std::unique_ptr<VerbsDevice> device,
                           const VerbsOptions& options, std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<VerbsTransport>(config, directory, std::move(device), options);
  COLL_RETURN_IF_ERROR(t->open());
  *out = std::move(t);
  return Status::ok();
}

Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out) {
  DeviceChoice choice;
  COLL_RETURN_IF_ERROR(findDevice(&choice));
  VerbsOptions options;
  // Every queue pair's send and receive completions share one CQ.
  int cq_depth = (directory.size - 1) * 2 * (2 * static_cast<int>(options.credits) + 2) + 16;
  std::unique_ptr<VerbsDevice> device;
  COLL_RETURN_IF_ERROR(openIbvDevice(choice, cq_depth, &device));
  return createTransportOver(config, directory, std::move(device), options, out);
}

}  // namespace coll::transport::verbs
