#include "comm/paths/p2p_path.h"

#include "base/log.h"
#include "comm/p2p_config.h"
#include "transport/registry.h"

namespace coll {
namespace {

using p2p::kAnySource;

std::string describeP2p(const OpRequest& op, uint64_t sequence) {
  const char* what = op.kind == OpKind::send ? "send" : "recv";
  std::string peer = op.root == kAnySource ? std::string("any source") : format("peer %d", op.root);
  return format("%s #%llu of %zu bytes %s %s (tag %d)", what, static_cast<unsigned long long>(sequence), op.bytes(),
                op.kind == OpKind::send ? "to" : "from", peer.c_str(), op.tag);
}

}  // namespace

Status P2pPath::start(const Config& config, const transport::PeerDirectory& collectives,
                      const bootstrap::HostGrouping& hosts, std::shared_ptr<transport::shm::SegmentFiles> shm_files,
                      const StoreConnect& connect,
                      std::function<void(const Error&)> on_failure, std::unique_ptr<P2pPath>* out) {
  std::unique_ptr<P2pPath> path(new P2pPath());
  auto deadline = transport::Clock::now() + config.timeout;
  COLL_RETURN_IF_ERROR(connect(deadline, &path->store_));
  transport::PeerDirectory dir = collectives;
  dir.key_prefix += "p2p/";
  dir.store = path->store_.get();  // the engine's thread uses it from now on (socket dials)
  transport::TransportSet set;
  transport::ShmPlanes planes;
  planes.serve_second = std::move(shm_files);
  COLL_RETURN_IF_ERROR(transport::createTransports(p2pConfig(config), dir, hosts, &set, planes));
  path->start_traffic_ = path->store_->traffic();  // before the engine's thread may use the client
  p2p::EngineOptions engine;
  engine.rank = collectives.rank;
  engine.size = collectives.size;
  engine.timeout = config.timeout;
  engine.eager_budget = config.p2p_eager_budget;
  engine.connect_deadline = deadline;
  engine.on_failure = std::move(on_failure);
  path->engine_ = std::make_unique<p2p::Engine>(std::move(engine), std::move(set.owned), std::move(set.for_peer));
  path->watchdog_ = path->engine_->watchdog();
  *out = std::move(path);
  return Status::ok();
}

P2pPath::~P2pPath() { engine_.reset(); }

Issued P2pPath::issue(OpRequest& op, const IssueState& state, Status*) {
  std::vector<OpRequest> one{op};  // a copy: op keeps its Work state (execution_path.h)
  post(std::move(one), state.failed);
  return Issued::taken;
}

Status P2pPath::run(const OpRequest& op, RunReport*) {
  return internalError(format("%s reached the op queue; the p2p engine takes host sends and receives at issue",
                              toString(op.kind)));
}

void P2pPath::post(std::vector<OpRequest> ops, const Error* failed) {
  std::vector<p2p::Message> messages;
  messages.reserve(ops.size());
  const int64_t now = detail::DriverLink::nowNs();
  for (OpRequest& op : ops) {
    p2p::Message m;
    m.send = op.kind == OpKind::send;
    m.peer = op.root;
    m.tag = op.tag;
    m.data = m.send ? const_cast<void*>(op.input) : op.output;  // the engine only reads a send's buffer
    m.bytes = op.bytes();
    m.what = describeP2p(op, op.work->sequence);
    m.work = std::move(op.work);
    m.work->queued_ns = now;  // the watchdog counts from the posting at the earliest
    if (!m.send && m.peer != kAnySource) m.work->source = m.peer;
    messages.push_back(std::move(m));
  }
  if (failed) {
    for (p2p::Message& m : messages)
      m.work->complete(Error(failed->code(), m.what + ": communicator already failed: " + failed->what()));
    return;
  }
  engine_->post(std::move(messages));
}

}  // namespace coll
