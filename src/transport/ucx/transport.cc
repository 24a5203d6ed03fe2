#include "transport/ucx/transport.h"

#include <sched.h>

#include <atomic>
#include <map>
#include <mutex>

#include "bootstrap/store.h"
#include "base/idle_wait.h"
#include "base/log.h"
#include "transport/abort_signal.h"
#include "transport/ucx/connection.h"
#include "transport/ucx/peer_card.h"
#include "transport/ucx/tag.h"
#include "transport/ucx/worker.h"

namespace coll::transport::ucx {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Idle phases of progress(): spinning costs a core but answers in well under a µs; yielding
// hands the core to a descheduled peer (ranks may outnumber cores); sleeping on the event fd
// costs a wake-up (tens of µs) but nothing while waiting; the slice is also how fast an
// abort() is noticed.
constexpr IdlePolicy kIdle{microseconds(20), microseconds(200), milliseconds(20), 0};
constexpr auto kLivenessEvery = milliseconds(50);
constexpr auto kCloseLimit = milliseconds(1000);  // flushing goodbyes at destruction
constexpr auto kAbortFlush = milliseconds(50);    // pushing goodbyes out after abort()

class UcxTransport : public Transport {
 public:
  UcxTransport(const Config& config, const PeerDirectory& dir, std::vector<bool> serves)
      : config_(config), dir_(dir), serves_(std::move(serves)) {}
  ~UcxTransport() override;

  const char* name() const override { return "ucx"; }
  Status open();
  Status connect(int peer, Deadline deadline, Connection** out) override;
  Status open(int peer, Deadline deadline);
  Status progress(std::vector<Completion>* out, Deadline until) override;
  void abort(const std::string& reason) override;

 private:
  std::string key(int rank) const { return dir_.key_prefix + "ucx/" + std::to_string(rank); }
  bool pollAll();
  void checkPeers(Clock::time_point now);
  void onAbort();
  void closeAll();
  bool aborted() const { return abort_.raised(); }
  std::string abortReason() const { return abort_.reason(); }

  Config config_;
  PeerDirectory dir_;
  std::vector<bool> serves_;  // the peers this transport talks to (every one where empty)
  std::unique_ptr<Worker> worker_;
  PeerCard card_;
  std::map<int, std::unique_ptr<UcxConnection>> connections_;
  std::map<int, bool> ready_;
  std::vector<UcxConnection*> polled_;
  std::vector<Completion> completions_;
  Clock::time_point next_liveness_check_{};
  bool abort_handled_ = false;
  AbortSignal abort_;
};

Status UcxTransport::open() {
  if (dir_.size > kMaxRanks) return unsupportedError(format("ucx transport: at most %d ranks", kMaxRanks));
  COLL_RETURN_IF_ERROR(Worker::create(&worker_));
  card_ = PeerCard::local(worker_->address());
  COLL_INFO("NET", "ucx transport: worker address of %zu bytes, UCX %s", card_.address.size(), ucp_get_version_string());
  return dir_.store->set(key(dir_.rank), card_.encode(), Clock::now() + config_.timeout);
}

// The first call opens endpoints to every peer (see UcxConnection::wireUp); each call then
// waits until its peer's endpoint is ready both ways.
Status UcxTransport::connect(int peer, Deadline deadline, Connection** out) {
  if (connections_.empty()) {
    for (int p = 0; p < dir_.size; ++p)
      if (p != dir_.rank && (serves_.empty() || serves_[p])) COLL_RETURN_IF_ERROR(open(p, deadline));
  }
  auto it = connections_.find(peer);
  if (it == connections_.end()) return invalidArgument(format("ucx transport: no peer %d", peer));
  if (!ready_[peer]) {
    COLL_RETURN_IF_ERROR(it->second->awaitReady(deadline));
    ready_[peer] = true;
    COLL_INFO("NET", "connected to %s", it->second->describe().c_str());
  }
  *out = it->second.get();
  return Status::ok();
}

Status UcxTransport::open(int peer, Deadline deadline) {
  std::string text;
  Status st = dir_.store->get(key(peer), &text, deadline);
  if (!st) return Status(st.code(), format("peer %d did not publish its ucx address: %s", peer, st.message().c_str()), peer);
  PeerCard remote;
  COLL_RETURN_IF_ERROR(PeerCard::decode(text, &remote));
  ConnectionSetup setup{worker_->handle(), dir_.rank, peer, "remote host", std::nullopt, &completions_};
  if (!remote.machine.empty() && remote.machine == card_.machine) {
    setup.where = format("pid %d, same kernel", static_cast<int>(remote.pid));
    setup.watched_pid = remote.pid;
  }
  auto conn = std::make_unique<UcxConnection>(setup);
  COLL_RETURN_IF_ERROR(conn->open(remote.address, deadline));
  polled_.push_back(conn.get());
  connections_.emplace(peer, std::move(conn));
  return Status::ok();
}

Status UcxTransport::progress(std::vector<Completion>* out, Deadline until) {
  IdleWait idle(kIdle);
  while (!aborted()) {
    bool moved = worker_->progress();
    moved |= pollAll();
    if (!completions_.empty()) break;
    Clock::time_point now = Clock::now();
    if (now >= until) break;
    if (moved) {
      idle.reset(now);
      continue;
    }
    checkPeers(now);
    if (!completions_.empty()) break;
    idle.pause(now, until, [&](Clock::duration slice) { worker_->sleep(std::chrono::duration_cast<microseconds>(slice)); });
  }
  Status st = Status::ok();
  if (aborted()) {
    onAbort();
    st = peerLostError(abortReason());
  }
  out->insert(out->end(), std::make_move_iterator(completions_.begin()), std::make_move_iterator(completions_.end()));
  completions_.clear();
  return st;
}

bool UcxTransport::pollAll() {
  bool moved = false;
  for (UcxConnection* c : polled_) moved |= c->poll();
  return moved;
}

void UcxTransport::checkPeers(Clock::time_point now) {
  bool check_process = now >= next_liveness_check_;
  if (check_process) next_liveness_check_ = now + kLivenessEvery;
  for (UcxConnection* c : polled_) c->checkPeer(check_process);
}

void UcxTransport::onAbort() {
  if (abort_handled_) return;
  abort_handled_ = true;
  Status st = peerLostError(abortReason());
  for (UcxConnection* c : polled_) c->sayGoodbye("aborted: " + st.message());
  for (UcxConnection* c : polled_) c->fail(st);
  Clock::time_point end = Clock::now() + kAbortFlush;  // the goodbyes are small: a few progress calls
  while (Clock::now() < end) worker_->progress();
}

void UcxTransport::abort(const std::string& reason) { abort_.raise(reason); }

UcxTransport::~UcxTransport() {
  if (!worker_) return;
  closeAll();
  worker_.reset();       // no UCP callback can run after this
  connections_.clear();  // so the connections (and their pending records) go last
}

void UcxTransport::closeAll() {
  for (UcxConnection* c : polled_) c->sayGoodbye("closed its transport");
  Clock::time_point end = Clock::now() + kCloseLimit;
  auto busy = [&] {
    for (UcxConnection* c : polled_)
      if (c->busyWithOwnTraffic()) return true;
    return false;
  };
  while (busy() && Clock::now() < end) worker_->progress();
  std::vector<void*> closing;
  for (UcxConnection* c : polled_)
    if (void* r = c->close(aborted() || c->peerGoneOrFailed())) closing.push_back(r);  // nobody to flush to
  while (!closing.empty() && Clock::now() < end) {
    worker_->progress();
    for (size_t i = 0; i < closing.size();) {
      if (ucp_request_check_status(closing[i]) == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      ucp_request_free(closing[i]);
      closing[i] = closing.back();
      closing.pop_back();
    }
  }
  if (!closing.empty()) COLL_INFO("NET", "ucx: %zu endpoint(s) did not close within 1 s", closing.size());
  for (void* r : closing) ucp_request_free(r);
  for (UcxConnection* c : polled_) c->releaseRequests();
  worker_->drainUnexpected();
}

}  // namespace

Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out,
                       std::vector<bool> serves) {
  auto t = std::make_unique<UcxTransport>(config, directory, std::move(serves));
  COLL_RETURN_IF_ERROR(t->open());
  *out = std::move(t);
  return Status::ok();
}

}  // namespace coll::transport::ucx
