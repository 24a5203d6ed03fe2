// Host sends and receives go to the p2p engine (exec/p2p_engine.h), on transports of their
// own, instead of the op queue that collectives run through in issue order: there, a posted
// receive blocked every later op, so two ranks that both received first waited for ever.
#include "base/log.h"
#include "comm/communicator_impl.h"
#include "comm/p2p_config.h"

namespace coll {
namespace {

std::string describeP2p(const OpRequest& op, uint64_t sequence) {
  const char* what = op.kind == OpKind::send ? "send" : "recv";
  std::string peer = op.root == kAnySource ? std::string("any source") : format("peer %d", op.root);
  return format("%s #%llu of %zu bytes %s %s (tag %d)", what, static_cast<unsigned long long>(sequence), op.bytes(),
                op.kind == OpKind::send ? "to" : "from", peer.c_str(), op.tag);
}

}  // namespace

Status CommunicatorImpl::startP2p(const CommOptions& options, const transport::PeerDirectory& collectives) {
  auto deadline = transport::Clock::now() + config_.timeout;
  COLL_RETURN_IF_ERROR(storeConnector(options)(deadline, &p2p_store_));
  transport::PeerDirectory dir = collectives;
  dir.key_prefix += "p2p/";
  dir.store = p2p_store_.get();  // the engine's thread uses it from now on (socket dials)
  transport::TransportSet set;
  COLL_RETURN_IF_ERROR(transport::createTransports(p2pConfig(config_), dir, hosts_, &set));
  p2p::EngineOptions engine;
  engine.rank = rank_;
  engine.size = size_;
  engine.timeout = config_.timeout;
  engine.connect_deadline = deadline;
  engine.on_failure = [this](const Error& e) { fail(Error(e.code(), format("rank %d: %s", rank_, e.what()))); };
  p2p_ = std::make_unique<p2p::Engine>(std::move(engine), std::move(set.owned), std::move(set.for_peer));
  ledger_.setPointToPoint([engine = p2p_.get()] { return engine->describeOutstanding(); });
  return Status::ok();
}

void CommunicatorImpl::postP2p(std::vector<OpRequest> ops) {
  std::vector<p2p::Message> messages;
  messages.reserve(ops.size());
  for (OpRequest& op : ops) {
    p2p::Message m;
    m.send = op.kind == OpKind::send;
    m.peer = op.root;
    m.tag = op.tag;
    m.data = m.send ? const_cast<void*>(op.input) : op.output;  // the engine only reads a send's buffer
    m.bytes = op.bytes();
    m.what = describeP2p(op, op.work->sequence);
    m.work = std::move(op.work);
    if (!m.send && m.peer != kAnySource) m.work->source = m.peer;
    messages.push_back(std::move(m));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_) {
      for (p2p::Message& m : messages)
        m.work->complete(Error(first_error_->code(), m.what + ": communicator already failed: " + first_error_->what()));
      return;
    }
  }
  p2p_->post(std::move(messages));
}

}  // namespace coll
