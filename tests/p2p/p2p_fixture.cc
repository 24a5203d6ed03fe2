// The p2p suite's fixture (p2p_conformance.h): an engine per rank over the transport under test.
#include <mutex>

#include "comm/p2p_config.h"
#include "p2p/p2p_conformance.h"

namespace coll::test {

CaseOptions p2pCase(int ranks) {
  CaseOptions o;
  o.ranks = ranks;
  o.create_transport = false;
  return o;
}

// As P2pPath::start does: the engine's own store client and transport set, the collectives'
// settings made the engine's (p2pConfig), every other rank reached through the one transport.
P2pRank::P2pRank(const TransportUnderTest& t, Endpoint& endpoint, const P2pOptions& options) : ep(endpoint) {
  Status st = bootstrap::StoreClient::connect(ep.store_address, ep.directory.secret, ep.deadline, &store_);
  RANK_CHECK(st.isOk(), "the engine's store client: %s", st.message().c_str());
  PeerDirectory dir = ep.directory;
  dir.store = store_.get();
  std::vector<int> peers;
  for (int r = 0; r < ep.self.size; ++r)
    if (r != ep.self.rank) peers.push_back(r);
  std::vector<std::unique_ptr<Transport>> owned(1);
  st = t.create(p2pConfig(caseConfig(t, {})), dir, peers, &owned[0]);
  RANK_CHECK(st.isOk(), "creating the %s transport: %s", t.name.c_str(), st.message().c_str());
  std::vector<Transport*> for_peer(ep.self.size, owned[0].get());
  for_peer[ep.self.rank] = nullptr;
  p2p::EngineOptions o;
  o.rank = ep.self.rank;
  o.size = ep.self.size;
  o.timeout = options.op_timeout;
  o.eager_budget = options.eager_budget;
  o.connect_deadline = ep.deadline;
  engine_ = std::make_unique<p2p::Engine>(std::move(o), std::move(owned), std::move(for_peer));
}

P2pRank::~P2pRank() { engine_.reset(); }  // before store_: the engine's thread uses it

p2p::Message P2pRank::message(bool send, int peer, int tag, void* data, size_t bytes) {
  p2p::Message m;
  m.send = send;
  m.peer = peer;
  m.tag = tag;
  m.data = data;
  m.bytes = bytes;
  std::string who = peer == p2p::kAnySource ? std::string("any source") : strprintf("peer %d", peer);
  m.what = strprintf("%s #%llu of %zu bytes %s %s (tag %d)", send ? "send" : "recv",
                     static_cast<unsigned long long>(next_sequence_++), bytes, send ? "to" : "from", who.c_str(), tag);
  m.work = std::make_shared<detail::WorkState>();
  if (!send && peer != p2p::kAnySource) m.work->source = peer;
  return m;
}

P2pWork P2pRank::send(int peer, int tag, const void* data, size_t bytes) {
  return postGroup({{true, peer, tag, const_cast<void*>(data), bytes}})[0];
}

P2pWork P2pRank::recv(int peer, int tag, void* data, size_t bytes) {
  return postGroup({{false, peer, tag, data, bytes}})[0];
}

std::vector<P2pWork> P2pRank::postGroup(const std::vector<Post>& posts) {
  std::vector<p2p::Message> messages;
  std::vector<P2pWork> works;
  for (const Post& p : posts) {
    messages.push_back(message(p.send, p.peer, p.tag, p.data, p.bytes));
    works.push_back(messages.back().work);
  }
  engine_->post(std::move(messages));
  return works;
}

std::optional<Error> P2pRank::wait(const P2pWork& work, const char* what) {
  std::unique_lock<std::mutex> lock(work->mu);
  bool done = work->cv.wait_until(lock, ep.deadline, [&] { return work->done; });
  RANK_CHECK(done, "%s did not complete before the case's deadline", what);
  return work->error;
}

void P2pRank::expectDone(const std::vector<P2pWork>& works, const char* what) {
  for (size_t i = 0; i < works.size(); ++i) {
    std::optional<Error> e = wait(works[i], what);
    RANK_CHECK(!e, "%s: op %zu of %zu failed: %s", what, i, works.size(), e->what());
  }
}

void expectError(const std::optional<Error>& error, ErrorCode code, const std::vector<std::string>& parts,
                 const char* what) {
  RANK_CHECK(error.has_value(), "%s succeeded; expected %s", what, codeName(code));
  RANK_CHECK(error->code() == code, "%s: %s instead of %s: %s", what, codeName(error->code()), codeName(code),
             error->what());
  for (const std::string& part : parts)
    RANK_CHECK(std::string(error->what()).find(part) != std::string::npos, "%s: the error does not say \"%s\": %s",
               what, part.c_str(), error->what());
}

}  // namespace coll::test
