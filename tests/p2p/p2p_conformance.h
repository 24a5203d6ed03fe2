// The p2p engine's conformance suite: what the point-to-point engine (src/p2p/engine.h)
// promises, whichever transport it sits on, written once and instantiated per transport
// (p2p_conformance_test.cc, p2p_ucx_conformance_test.cc) with the transports of the
// connection suite (tests/transport/connection_conformance.h), whose fixture it reuses: forked ranks (threads
// of one process for the verbs transport's fake NICs), a rendezvous store in the parent,
// patterned payloads checked byte for byte with guard bytes after every receive buffer.
//
// Each rank makes the transport under test as the communicator does for its engine
// (comm/p2p_config.h's settings, a store client of the engine's own) and hands it to an
// Engine, which connects on its thread (every peer at start, sockets on first use); the body posts Messages and waits on
// their WorkStates with the case's deadline.
//
// Not covered, because the engine does not offer it: a send to oneself (the engine has no
// connection to its own rank; the communicator refuses such ops before they reach it:
// exec/op.cc, "send/recv to oneself").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/work_state.h"
#include "p2p/engine.h"
#include "transport/connection_conformance.h"

namespace coll::test {

class P2pConformance : public ::testing::TestWithParam<TransportUnderTest> {};

using P2pWork = std::shared_ptr<detail::WorkState>;

struct P2pOptions {
  std::chrono::milliseconds op_timeout{10'000};  // EngineOptions::timeout (COLL_TIMEOUT)
  uint64_t eager_budget = 4 << 20;                // EngineOptions::eager_budget
};

// One rank's engine over the transport under test.
class P2pRank {
 public:
  // Makes the transport and the engine; RANK_CHECKs that both could be made.
  P2pRank(const TransportUnderTest& t, Endpoint& ep, const P2pOptions& options = {});
  // Destroys the engine (and its transports): outstanding ops fail, peers see a close.
  ~P2pRank();

  // Posts one op; `what` names it in errors ("send of 7 bytes to peer 1 (tag 3)").
  P2pWork send(int peer, int tag, const void* data, size_t bytes);
  P2pWork recv(int peer, int tag, void* data, size_t bytes);
  // Several ops as one post (a group), in this order.
  struct Post {
    bool send;
    int peer, tag;
    void* data;
    size_t bytes;
  };
  std::vector<P2pWork> postGroup(const std::vector<Post>& posts);

  // Waits for `work` until the case's deadline (RANK_CHECK); its error, if any.
  std::optional<Error> wait(const P2pWork& work, const char* what);
  // Waits for all of them and RANK_CHECKs that each succeeded.
  void expectDone(const std::vector<P2pWork>& works, const char* what);

  p2p::Engine& engine() { return *engine_; }
  void close() { engine_.reset(); }  // before the end of the body: a peer that leaves

  Endpoint& ep;

 private:
  p2p::Message message(bool send, int peer, int tag, void* data, size_t bytes);
  std::unique_ptr<bootstrap::StoreClient> store_;  // the engine's thread's alone
  std::unique_ptr<p2p::Engine> engine_;
  uint64_t next_sequence_ = 1;
};

// The runCase options of a p2p case: the body makes its transport (P2pRank).
CaseOptions p2pCase(int ranks = 2);

// Payload seed of message `index` from `from` to `to` with `tag`.
inline uint64_t p2pSeed(int from, int to, int tag, size_t index) {
  return ((static_cast<uint64_t>(from) * 64 + static_cast<uint64_t>(to)) * 4096 + static_cast<uint64_t>(tag)) * 65536 +
         index;
}

// RANK_CHECKs that the error exists, has `code` and contains each of `parts`.
void expectError(const std::optional<Error>& error, ErrorCode code, const std::vector<std::string>& parts,
                 const char* what);

}  // namespace coll::test
